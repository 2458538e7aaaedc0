package httpserve

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

func TestServeAndGracefulShutdown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	release, arrived := make(chan struct{}), make(chan struct{})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			close(arrived)
			<-release
		}
		io.WriteString(w, "ok")
	})}
	ctx, cancel := context.WithCancel(context.Background())
	hooked := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, srv, ln, nil, 5*time.Second, func() { close(hooked) }) }()
	url := "http://" + ln.Addr().String()
	resp, err := http.Get(url + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	slow := make(chan string, 1)
	go func() {
		resp, err := http.Get(url + "/slow")
		if err != nil {
			slow <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		slow <- string(b)
	}()
	// Shutdown must begin while the request is in flight.
	select {
	case <-arrived:
	case got := <-slow:
		t.Fatalf("slow request ended before shutdown: %q", got)
	case <-time.After(time.Minute):
		t.Fatal("timed out waiting for the slow request to reach the handler")
	}
	cancel()
	<-hooked
	close(release) // the in-flight request finishes during the grace period
	if got := <-slow; got != "ok" {
		t.Fatalf("in-flight request during shutdown: %q", got)
	}
	if err := <-done; err != nil {
		t.Fatalf("clean shutdown returned %v", err)
	}
}

func TestServeReportsListenerFailure(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	if err := Serve(context.Background(), &http.Server{}, ln, nil, time.Second, nil); err == nil {
		t.Fatal("serving on a closed listener returned nil")
	}
}
