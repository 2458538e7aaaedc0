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
	// The server answers only when the test ends, so the request can
	// return before then only through its context.
	errc := make(chan error, 1)
	go func() {
		_, err := hc.Do(req)
		errc <- err
	}()
	select {
	case err := <-errc:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err %v, want the context's deadline", err)
		}
	case <-time.After(hangStop):
		t.Fatal("the request outlived its context")
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
	// The stream ends only when the test does, so a Close that read it
	// to its end would not return.
	closed := make(chan error, 1)
	go func() { closed <- resp.Body.Close() }()
	select {
	case <-closed:
	case <-time.After(hangStop):
		t.Fatal("Close of an open stream waited for the stream's end")
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

// hangStop bounds a wait that only a hung transport or server reaches;
// it is never what a test checks.
const hangStop = time.Minute

// Connections pooled after a burst are closed once idle for idleTimeout,
// though the pool is not used again; CloseIdleConnections closes the rest.
// The test ages the pooled connections itself and runs the sweep the
// timer would run, so that what expires does not depend on how fast the
// machine serves the requests in between.
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
	// Never reached by the timer during the test: the sweeps below are
	// the test's own.
	tr.idleTimeout = time.Hour
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
	// age makes every pooled connection idle for d longer.
	age := func(d time.Duration) {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		for _, conns := range tr.idle {
			for _, c := range conns {
				c.since = c.since.Add(-d)
			}
		}
	}
	pool := func() (pooled int, sweeping bool) {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		for _, conns := range tr.idle {
			pooled += len(conns)
		}
		return pooled, tr.sweep != nil
	}
	waitClosed := func(want int64, what string) {
		t.Helper()
		for deadline := time.Now().Add(hangStop); closed.Load() < want; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d connections closed, want %d (opened %d)", what, closed.Load(), want, open.Load())
			}
		}
	}
	// A burst of 8 concurrent requests leaves 8 pooled connections.
	done := make(chan struct{})
	for range 8 {
		go func() { get("?wait=1"); done <- struct{}{} }()
	}
	for deadline := time.Now().Add(hangStop); open.Load() < 8; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for the burst's 8 connections; %d opened", open.Load())
		}
	}
	close(release)
	for range 8 {
		<-done
	}
	if pooled, sweeping := pool(); pooled != 8 || !sweeping {
		t.Fatalf("after the burst: %d pooled, sweep timer set %v; want 8 and set", pooled, sweeping)
	}
	// Half the timeout on, one request reuses one connection; the other
	// seven reach the timeout half a timeout later and are swept, while
	// the one in use stays.
	age(tr.idleTimeout / 2)
	get("")
	age(tr.idleTimeout / 2)
	tr.sweepIdle()
	waitClosed(7, "swept while one stayed in use")
	if pooled, sweeping := pool(); pooled != 1 || !sweeping || open.Load() != 8 {
		t.Fatalf("after the sweep: %d pooled, sweep timer set %v, %d opened; want 1, set, 8", pooled, sweeping, open.Load())
	}
	// Idle with no requests at all: the last one goes too, and the timer
	// is not rearmed for an empty pool.
	age(tr.idleTimeout)
	tr.sweepIdle()
	waitClosed(8, "swept after the pool sat idle")
	if pooled, sweeping := pool(); pooled != 0 || sweeping {
		t.Fatalf("after the sweep: %d pool entries, timer set %v", pooled, sweeping)
	}

	get("")
	hc.CloseIdleConnections()
	waitClosed(9, "CloseIdleConnections")
	if n := closed.Load(); n != 9 {
		t.Fatalf("CloseIdleConnections: %d closed, want 9", n)
	}
}
