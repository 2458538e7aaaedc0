package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

func countConns(srv *httptest.Server) *atomic.Int64 {
	var n atomic.Int64
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			n.Add(1)
		}
	}
	return &n
}

func TestH1TransportReusesConnections(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.URL.Query().Get("chunked") != "" {
			w.(http.Flusher).Flush() // no Content-Length: chunked
		}
		fmt.Fprintf(w, "%s %s", r.Method, b)
	}))
	conns := countConns(srv)
	srv.Start()
	defer srv.Close()
	hc := &http.Client{Transport: newH1Transport(nil)}
	for i := 0; i < 20; i++ {
		q := ""
		if i%2 == 1 {
			q = "?chunked=1"
		}
		resp, err := hc.Post(srv.URL+q, "text/plain", bytes.NewReader([]byte(fmt.Sprint(i))))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := fmt.Sprintf("POST %d", i); string(b) != want {
			t.Fatalf("answer %q, want %q", b, want)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("20 sequential requests used %d connections, want 1", n)
	}
}

// A pooled connection the server closed while idle is replaced without
// the caller seeing an error.
func TestH1TransportStaleConnection(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Write([]byte("ok"))
	}))
	conns := countConns(srv)
	srv.Start()
	defer srv.Close()
	hc := &http.Client{Transport: newH1Transport(nil)}
	post := func() error {
		req, _ := http.NewRequest("POST", srv.URL, bytes.NewReader([]byte("x")))
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		_, err = io.ReadAll(resp.Body)
		return err
	}
	if err := post(); err != nil {
		t.Fatal(err)
	}
	srv.CloseClientConnections()
	time.Sleep(50 * time.Millisecond)
	if err := post(); err != nil {
		t.Fatalf("request after the server closed the idle connection: %v", err)
	}
	if n := conns.Load(); n != 2 {
		t.Fatalf("%d connections, want 2", n)
	}
}

func TestH1TransportContextCancel(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
	}))
	defer srv.Close()
	defer close(release)
	hc := &http.Client{Transport: newH1Transport(nil)}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
	start := time.Now()
	_, err := hc.Do(req)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v, want the context's deadline", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("cancelled request returned after %v", d)
	}
}

func TestH1TransportTLS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("secure"))
	}))
	defer srv.Close()
	pool := srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	hc := &http.Client{Transport: newH1Transport(&tls.Config{RootCAs: pool})}
	resp, err := hc.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "secure" {
		t.Fatalf("answer %q", b)
	}
	// Without the CA the handshake fails.
	if _, err := (&http.Client{Transport: newH1Transport(nil)}).Get(srv.URL); err == nil {
		t.Fatal("a server with an unknown CA was accepted")
	}
}

// Closing the body of an answer that is still streaming (a follow the
// caller stopped reading) returns at once and does not reuse the
// connection.
func TestH1TransportCloseOfAnOpenStream(t *testing.T) {
	stop := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("first line\n"))
		w.(http.Flusher).Flush()
		select {
		case <-stop:
		case <-r.Context().Done():
		}
	}))
	conns := countConns(srv)
	srv.Start()
	defer srv.Close()
	defer close(stop)
	hc := &http.Client{Transport: newH1Transport(nil)}
	resp, err := hc.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := io.ReadFull(resp.Body, buf); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	resp.Body.Close()
	if d := time.Since(start); d > time.Second {
		t.Fatalf("Close of an open stream took %v", d)
	}
	resp, err = hc.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if n := conns.Load(); n != 2 {
		t.Fatalf("%d connections; the stopped stream's connection must not be reused", n)
	}
}

// Connections pooled after a burst are closed once idle for idleTimeout,
// though the pool is not used again; CloseIdleConnections closes the rest.
func TestH1TransportClosesIdleConnections(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("wait") != "" {
			<-release
		}
		io.WriteString(w, "ok")
	}))
	var open, closed atomic.Int64
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			open.Add(1)
		case http.StateClosed:
			closed.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	tr := newH1Transport(nil)
	tr.idleTimeout = 200 * time.Millisecond
	hc := &http.Client{Transport: tr}
	get := func(q string) {
		resp, err := hc.Get(srv.URL + q)
		if err != nil {
			t.Error(err)
			return
		}
		io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	// A burst of 8 concurrent requests leaves 8 pooled connections.
	done := make(chan struct{})
	for range 8 {
		go func() { get("?wait=1"); done <- struct{}{} }()
	}
	for open.Load() < 8 {
		time.Sleep(time.Millisecond)
	}
	close(release)
	for range 8 {
		<-done
	}
	// Then one request at a time, faster than the timeout, for a while:
	// it keeps reusing one connection, and the other seven expire.
	deadline := time.Now().Add(4 * tr.idleTimeout)
	for time.Now().Before(deadline) {
		get("")
		time.Sleep(tr.idleTimeout / 10)
	}
	if n := closed.Load(); n != 7 {
		t.Fatalf("%d of the burst's connections closed while one stayed in use, want 7 (opened %d)", n, open.Load())
	}
	// Idle with no requests at all: the last one goes too.
	for end := time.Now().Add(10 * tr.idleTimeout); closed.Load() < 8 && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
	}
	if n := closed.Load(); n != 8 {
		t.Fatalf("%d connections closed after the pool sat idle, want 8", n)
	}
	tr.mu.Lock()
	pooled, sweeping := len(tr.idle), tr.sweep != nil
	tr.mu.Unlock()
	if pooled != 0 || sweeping {
		t.Fatalf("after the sweep: %d pool entries, timer set %v", pooled, sweeping)
	}

	get("")
	hc.CloseIdleConnections()
	for end := time.Now().Add(2 * time.Second); closed.Load() < 9 && time.Now().Before(end); {
		time.Sleep(5 * time.Millisecond)
	}
	if n := closed.Load(); n != 9 {
		t.Fatalf("CloseIdleConnections: %d closed, want 9", n)
	}
}
