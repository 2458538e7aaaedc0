package client

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// h1Transport is the SDK's own HTTP/1.1 transport. net/http's Transport
// writes each request and reads each response in two goroutines of the
// connection's own, so a round trip hands off between goroutines several
// times; on a small or virtual machine each hand-off to an idle thread is
// a wake-up that costs about as long as the loopback round trip itself
// (measured here: 230 µs per round trip through net/http's client against
// 120 µs for the same request written and read by the caller). An append
// is one small request and one small answer, waited for synchronously, so
// h1Transport writes the request and reads the answer in the caller's
// goroutine, over a pool of keep-alive connections.
//
// It speaks plain HTTP/1.1 straight to the server (http or https), which
// is all the SDK needs. A request that the environment sends through a
// proxy (HTTP_PROXY, HTTPS_PROXY, NO_PROXY) goes through net/http's
// Transport instead, and a Client given its own http.Client does not use
// h1Transport at all.
type h1Transport struct {
	tls     *tls.Config // nil: the default for https
	dialer  net.Dialer
	maxIdle int
	proxied http.RoundTripper // net/http's, for proxied requests

	// idleTimeout is idleTimeout below; tests shorten it.
	idleTimeout time.Duration

	mu    sync.Mutex
	idle  map[string][]*h1Conn // by scheme://host, oldest first
	sweep *time.Timer          // closes expired idle connections; nil when none are pooled
}

func newH1Transport(cfg *tls.Config) *h1Transport {
	std := http.DefaultTransport.(*http.Transport).Clone()
	if cfg != nil {
		std.TLSClientConfig = cfg.Clone()
	}
	return &h1Transport{
		proxied:     std,
		tls:         cfg,
		dialer:      net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second},
		maxIdle:     1024,
		idleTimeout: idleTimeout,
		idle:        map[string][]*h1Conn{},
	}
}

type h1Conn struct {
	key   string
	c     net.Conn
	br    *bufio.Reader
	bw    *bufio.Writer
	since time.Time // idle since
}

// idleTimeout drops pooled connections unused this long, below the
// server's default keep-alive timeout (api.idle_timeout, 2 minutes), so
// that a pooled connection is rarely one the server has just closed. A
// timer closes them even when the pool is not used again: after a burst
// of concurrent requests, a client that goes back to one at a time (or
// quiet) would otherwise keep the burst's sockets open, half-closed by
// the server, for as long as it runs.
const idleTimeout = 90 * time.Second

func (t *h1Transport) get(key string) *h1Conn {
	t.mu.Lock()
	defer t.mu.Unlock()
	for {
		conns := t.idle[key]
		if len(conns) == 0 {
			return nil
		}
		c := conns[len(conns)-1]
		t.idle[key] = conns[:len(conns)-1]
		if time.Since(c.since) < t.idleTimeout {
			return c
		}
		c.c.Close()
	}
}

func (t *h1Transport) put(c *h1Conn) {
	c.since = time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.idle[c.key]) >= t.maxIdle {
		c.c.Close()
		return
	}
	t.idle[c.key] = append(t.idle[c.key], c)
	if t.sweep == nil {
		t.sweep = time.AfterFunc(t.idleTimeout, t.sweepIdle)
	}
}

// sweepIdle closes the pooled connections idle for idleTimeout and runs
// again when the oldest of the others expires.
func (t *h1Transport) sweepIdle() {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	var next time.Duration
	for key, conns := range t.idle {
		// Each list is oldest first: put appends, get takes the newest.
		n := 0
		for n < len(conns) && now.Sub(conns[n].since) >= t.idleTimeout {
			conns[n].c.Close()
			n++
		}
		conns = append(conns[:0], conns[n:]...)
		if len(conns) == 0 {
			delete(t.idle, key)
			continue
		}
		t.idle[key] = conns
		if d := t.idleTimeout - now.Sub(conns[0].since); next == 0 || d < next {
			next = d
		}
	}
	if next == 0 {
		t.sweep = nil
		return
	}
	t.sweep.Reset(max(next, time.Millisecond))
}

// CloseIdleConnections closes the pooled connections (http.Client's
// method of the same name calls it).
func (t *h1Transport) CloseIdleConnections() {
	t.mu.Lock()
	for key, conns := range t.idle {
		for _, c := range conns {
			c.c.Close()
		}
		delete(t.idle, key)
	}
	if t.sweep != nil {
		t.sweep.Stop()
		t.sweep = nil
	}
	t.mu.Unlock()
	if ci, ok := t.proxied.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

func (t *h1Transport) dial(ctx context.Context, req *http.Request, key string) (*h1Conn, error) {
	addr := req.URL.Host
	if req.URL.Port() == "" {
		if req.URL.Scheme == "https" {
			addr = net.JoinHostPort(req.URL.Hostname(), "443")
		} else {
			addr = net.JoinHostPort(req.URL.Hostname(), "80")
		}
	}
	c, err := t.dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if req.URL.Scheme == "https" {
		cfg := &tls.Config{}
		if t.tls != nil {
			cfg = t.tls.Clone()
		}
		if cfg.ServerName == "" {
			cfg.ServerName = req.URL.Hostname()
		}
		cfg.NextProtos = []string{"http/1.1"}
		tc := tls.Client(c, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			c.Close()
			return nil, err
		}
		c = tc
	}
	return &h1Conn{key: key, c: c, br: bufio.NewReaderSize(c, 32<<10), bw: bufio.NewWriterSize(c, 32<<10)}, nil
}

// RoundTrip implements http.RoundTripper.
func (t *h1Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
		return nil, errors.New("client: only http and https URLs")
	}
	if p, err := http.ProxyFromEnvironment(req); err != nil || p != nil {
		return t.proxied.RoundTrip(req)
	}
	key := req.URL.Scheme + "://" + req.URL.Host
	for attempt := 0; ; attempt++ {
		c, reused := t.get(key), true
		if c == nil {
			var err error
			if c, err = t.dial(req.Context(), req, key); err != nil {
				return nil, err
			}
			reused = false
		}
		resp, err := t.roundTrip(c, req)
		if err == nil {
			return resp, nil
		}
		c.c.Close()
		// A pooled connection the server closed while it was idle fails
		// before the request was read; that one attempt is repeated on a
		// new connection when the body can be sent again. Anything else
		// goes to the Client's own retry policy.
		if !reused || attempt > 0 || !errors.Is(err, errStaleConn) || (req.Body != nil && req.GetBody == nil) {
			return nil, err
		}
		if req.GetBody != nil {
			body, gerr := req.GetBody()
			if gerr != nil {
				return nil, err
			}
			r2 := *req
			r2.Body = body
			req = &r2
		}
	}
}

// errStaleConn marks a connection that ended before any byte of an answer.
var errStaleConn = errors.New("client: connection closed before the answer began")

func (t *h1Transport) roundTrip(c *h1Conn, req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	c.c.SetDeadline(time.Time{})
	// The context's end (deadline or cancel) unblocks a read or write in
	// progress: the AfterFunc runs once ctx.Err is set, so the error the
	// caller sees is the context's.
	stop := context.AfterFunc(ctx, func() { c.c.SetDeadline(time.Unix(1, 0)) })
	if err := req.Write(c.bw); err != nil {
		stop()
		return nil, t.ctxErr(ctx, err)
	}
	if err := c.bw.Flush(); err != nil {
		stop()
		return nil, t.ctxErr(ctx, err)
	}
	if _, err := c.br.Peek(1); err != nil {
		stop()
		if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
			err = errors.Join(errStaleConn, err)
		}
		return nil, t.ctxErr(ctx, err)
	}
	resp, err := http.ReadResponse(c.br, req)
	if err != nil {
		stop()
		return nil, t.ctxErr(ctx, err)
	}
	keep := !resp.Close && !req.Close
	resp.Body = &h1Body{ReadCloser: resp.Body, t: t, c: c, keep: keep, stop: stop, ctx: ctx}
	return resp, nil
}

func (t *h1Transport) ctxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// h1Body returns its connection to the pool once the answer has been read
// to its end, and closes it otherwise.
type h1Body struct {
	io.ReadCloser
	t    *h1Transport
	c    *h1Conn
	keep bool
	stop func() bool
	ctx  context.Context
	done bool
}

func (b *h1Body) Read(p []byte) (int, error) {
	if b.done {
		return 0, io.EOF
	}
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) {
		b.release(true)
	} else if err != nil {
		b.release(false)
		err = b.t.ctxErr(b.ctx, err)
	}
	return n, err
}

// drainWait bounds how long Close waits for the unread rest of an answer.
const drainWait = 20 * time.Millisecond

// Close drains a short unread rest that is already arriving (a JSON
// decoder leaves the final newline) so that the connection can be reused.
// A long rest, or a stream that is still open (a follow read the caller
// stopped), is not waited for: the connection is closed instead.
func (b *h1Body) Close() error {
	if b.done {
		return nil
	}
	b.c.c.SetReadDeadline(time.Now().Add(drainWait))
	_, err := io.CopyN(io.Discard, b.ReadCloser, 64<<10)
	b.release(errors.Is(err, io.EOF))
	return nil
}

func (b *h1Body) release(reuse bool) {
	if b.done {
		return
	}
	b.done = true
	b.ReadCloser.Close()
	// stop reports false once the context was cancelled and the deadline
	// set in the past: such a connection is not reused.
	if b.stop() && reuse && b.keep {
		b.t.put(b.c)
		return
	}
	b.c.c.Close()
}
