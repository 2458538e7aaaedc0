package api

import (
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/silt-io/silt/internal/connlimit"
)

// At the API's cap, the lean server's newcomer displaces the idle
// keep-alive connection, never one whose request is running (net/http's
// states are checked in internal/httpserve).
func TestH1ReportsConnState(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			close(started)
			<-release
		}
		io.WriteString(w, "ok")
	})
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := connlimit.New(raw, connlimit.Options{Head: "api", Limits: connlimit.Limits{Max: 2, PerClient: 10}})
	srv := newH1Server(h, DefaultConfig(), zap.NewNop(), nil)
	served := make(chan error, 1)
	go func() { served <- srv.serve(ln) }()
	defer func() {
		srv.beginClose()
		ln.Close()
		<-served
		srv.shutdown(time.Second)
	}()
	url := "http://" + raw.Addr().String()
	client := func() *http.Client { return &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}} }
	busy, idle, newcomer := client(), client(), client()
	slow := make(chan error, 1)
	go func() {
		resp, err := busy.Get(url + "/slow")
		if err == nil {
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		slow <- err
	}()
	<-started
	getOK(t, idle, url)
	// The server marks the connection idle when it waits for the next
	// request, which may come after the client has the answer.
	for {
		if open, idle := ln.Counts(); open == 2 && idle == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	getOK(t, newcomer, url)
	close(release)
	if err := <-slow; err != nil {
		t.Fatalf("the busy connection's request failed: %v", err)
	}
	if open, _ := ln.Counts(); open != 2 {
		t.Fatalf("%d connections open, want 2", open)
	}
}

func getOK(t *testing.T, c *http.Client, url string) {
	t.Helper()
	resp, err := c.Get(url + "/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "ok" {
		t.Fatalf("GET: %q", b)
	}
}
