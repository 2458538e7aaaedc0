package httpserve

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/silt-io/silt/internal/connlimit"
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

// At a head's cap, a newcomer displaces the idle keep-alive connection,
// never the one whose request is running: Serve reports each
// connection's state to connlimit.
func TestServeReportsConnState(t *testing.T) {
	for name, useTLS := range map[string]bool{"plain": false, "TLS": true} {
		t.Run(name, func(t *testing.T) {
			raw, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			ln := connlimit.New(raw, connlimit.Options{Head: "test", Limits: connlimit.Limits{Max: 2, PerClient: 10}})
			started, release := make(chan struct{}), make(chan struct{})
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/slow" {
					close(started)
					<-release
				}
				io.WriteString(w, "ok")
			})
			srv := httptest.NewUnstartedServer(h)
			var tlsCfg *tls.Config
			if useTLS {
				srv.StartTLS() // only for its certificate and client
				srv.Close()
				tlsCfg = srv.TLS
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- Serve(ctx, &http.Server{Handler: h}, ln, tlsCfg, 5*time.Second, nil) }()
			defer func() {
				cancel()
				<-done
			}()
			scheme := "http"
			if useTLS {
				scheme = "https"
			}
			url := scheme + "://" + raw.Addr().String()
			// Each client has its own connection.
			client := func() *http.Client {
				tr := &http.Transport{MaxConnsPerHost: 1}
				if useTLS {
					tr.TLSClientConfig = srv.Client().Transport.(*http.Transport).TLSClientConfig
				}
				return &http.Client{Transport: tr}
			}
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
			get(t, idle, url) // then idle, kept alive
			// The server marks the connection idle just after the answer
			// is out, which the client may see first.
			for {
				if open, idle := ln.Counts(); open == 2 && idle == 1 {
					break
				}
				time.Sleep(time.Millisecond)
			}
			get(t, newcomer, url)
			close(release)
			if err := <-slow; err != nil {
				t.Fatalf("the busy connection's request failed: %v", err)
			}
			if got := ln.Open(); got != 2 {
				t.Fatalf("%d connections open, want 2", got)
			}
		})
	}
}

func get(t *testing.T, c *http.Client, url string) {
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

// The protocol heads' servers close idle keep-alive connections: with no
// IdleTimeout (nor ReadTimeout) net/http keeps them forever.
func TestHeadServerHasIdleTimeout(t *testing.T) {
	srv := headServer(http.NotFoundHandler(), nil)
	if srv.IdleTimeout <= 0 || srv.ReadHeaderTimeout <= 0 {
		t.Fatalf("IdleTimeout %v, ReadHeaderTimeout %v; want both set", srv.IdleTimeout, srv.ReadHeaderTimeout)
	}
}
