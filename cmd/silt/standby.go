package main

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"go.uber.org/zap"
)

// A standby (cluster.standby) waits for the serving lock before it opens
// its store. Its API port is bound from the start; without an answer a
// client connecting to it would wait for its own timeout. While it waits,
// the port answers every request 503 unavailable with Retry-After (and
// /readyz 503), then it is handed to the real API server: connections
// accepted by the waiting server are answered and closed, later ones go to
// the real one.

// connFeed accepts from a listener in one goroutine and hands the
// connections out through feedListeners, one after the other.
type connFeed struct {
	ln    net.Listener
	conns chan net.Conn
	done  chan struct{} // closed when the accept loop ends
	err   error         // why it ended, set before done is closed
	stop  chan struct{} // closed by the owner's Close
}

func newConnFeed(ln net.Listener) *connFeed {
	f := &connFeed{ln: ln, conns: make(chan net.Conn), done: make(chan struct{}), stop: make(chan struct{})}
	go func() {
		defer close(f.done)
		for {
			c, err := ln.Accept()
			if err != nil {
				if !errors.Is(err, net.ErrClosed) {
					// EMFILE and the like pass: back off and go on, as
					// the heads' own accept loops do.
					select {
					case <-time.After(10 * time.Millisecond):
						continue
					case <-f.stop:
					}
				}
				f.err = err
				return
			}
			select {
			case f.conns <- c:
			case <-f.stop:
				c.Close()
				return
			}
		}
	}()
	return f
}

// feedListener is a net.Listener on a connFeed. Closing it stops its
// Accept; closing the last one (owner) closes the feed's listener too.
type feedListener struct {
	f      *connFeed
	owner  bool
	once   sync.Once
	closed chan struct{}
}

func (f *connFeed) listener(owner bool) *feedListener {
	return &feedListener{f: f, owner: owner, closed: make(chan struct{})}
}

func (l *feedListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.f.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	case <-l.f.done:
		if l.f.err != nil {
			return nil, l.f.err
		}
		return nil, net.ErrClosed
	}
}

func (l *feedListener) Close() error {
	var err error
	l.once.Do(func() {
		close(l.closed)
		if l.owner {
			close(l.f.stop)
			err = l.f.ln.Close()
		}
	})
	return err
}

func (l *feedListener) Addr() net.Addr { return l.f.ln.Addr() }

// answerWhileStandby serves ln with 503s until the returned stop is
// called, and returns the listener the real API server takes over.
func answerWhileStandby(ln net.Listener, tlsCfg *tls.Config, log *zap.Logger) (net.Listener, func()) {
	feed := newConnFeed(ln)
	waiting := feed.listener(false)
	var wl net.Listener = waiting
	if tlsCfg != nil {
		wl = tls.NewListener(waiting, tlsCfg)
	}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Retry-After", "1")
			w.Header().Set("Connection", "close")
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"error":{"code":"unavailable","message":"this node is a standby: it waits for the serving lock and serves once it holds it"}}` + "\n"))
		}),
		ReadHeaderTimeout: 10 * time.Second,
		// Request bodies are not read: a producer's batch is refused
		// without being buffered.
		MaxHeaderBytes: 64 << 10,
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := srv.Serve(wl); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("standby answering stopped", zap.Error(err))
		}
	}()
	return feed.listener(true), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		<-served
	}
}
