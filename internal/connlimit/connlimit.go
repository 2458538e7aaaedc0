// Package connlimit admits the TCP connections of silt's protocol heads.
// Every head (native API, S3, NFS, WebHDFS) accepts from a Listener,
// which
//
//   - keeps accepting through temporary failures such as running out of
//     file descriptors (EMFILE), backing off from 5 ms to 1 s as net/http
//     does, instead of returning the error and ending the head;
//   - bounds the connections one client address holds (an IPv6 client is
//     its /64: one host usually has a whole one), closing the client's
//     surplus at once so that the kernel's accept backlog does not fill;
//   - bounds the connections of the head: at the cap it closes the
//     connection that has been idle longest to admit the newcomer, and
//     refuses the newcomer only when every connection is serving a request.
//
// Refusing newcomers at the cap would let one client with many idle
// connections, from as many source addresses as it likes, lock everybody
// else out. Closing an idle connection instead is what nginx does when it
// runs out of connections (ngx_drain_connections): an idle keep-alive
// connection costs its client only a reconnect, and NFS clients reconnect
// transparently. For that the Listener must know which connections are
// idle: the servers report it through Active and Idle (HTTPConnState for
// net/http). A connection that has not sent a complete request yet counts
// as idle, so connections that connect and say nothing, or say it slowly,
// are the first to go.
package connlimit

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Backoff after a failed accept, as net/http's Server.Serve.
const (
	minBackoff = 5 * time.Millisecond
	maxBackoff = time.Second
)

// logEvery is how often each kind of refusal or failure is logged at
// most; the metrics count every one. Under attack a line per connection
// would cost more than the connection.
const logEvery = 10 * time.Second

// Reasons in the refused and evicted counters.
const (
	// ReasonPerClient: the client address already held its
	// max_connections_per_client.
	ReasonPerClient = "per_client"
	// ReasonMax: the head held max_connections (refused: none of them
	// idle; evicted: the longest-idle one, closed to admit a newcomer).
	ReasonMax = "max_connections"
	// ReasonIdleTimeout: the server closed the connection after it sent
	// no request for its idle timeout (NFS).
	ReasonIdleTimeout = "idle_timeout"
)

// Options configure a Listener.
type Options struct {
	// Head names the head in metrics and logs ("api", "s3", "nfs",
	// "webhdfs").
	Head string
	// Limits are the head's caps; both must be positive.
	Limits Limits
	// Metrics receives the head's series; nil keeps them unexported.
	Metrics *Metrics
	// Log gets refusals and accept failures, sampled; nil: no logs.
	Log *zap.Logger
}

// Listener is a net.Listener that admits connections within a head's
// limits. Its connections are *Conn.
type Listener struct {
	net.Listener
	head   string
	limits Limits
	met    headMetrics
	log    *zap.Logger
	// sleep waits d, or less once the listener is closed.
	sleep func(d time.Duration)

	done      chan struct{}
	closeOnce sync.Once

	mu struct {
		sync.Mutex
		open    int
		clients map[netip.Addr]int
		idle    idleList // oldest idle first
	}
}

// New wraps ln. It panics on limits that are not positive: callers
// resolve them from validated config first.
func New(ln net.Listener, o Options) *Listener {
	if o.Limits.Max <= 0 || o.Limits.PerClient <= 0 {
		panic("connlimit: limits must be positive")
	}
	if o.Metrics == nil {
		o.Metrics = NewMetrics()
	}
	log := o.Log
	if log == nil {
		log = zap.NewNop()
	}
	// One line per message per logEvery: the first of a burst is
	// logged, the rest only counted.
	log = log.WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core {
		return zapcore.NewSamplerWithOptions(c, logEvery, 1, 0)
	}))
	l := &Listener{
		Listener: ln,
		head:     o.Head,
		limits:   o.Limits,
		met:      o.Metrics.head(o.Head, o.Limits),
		log:      log.With(zap.String("head", o.Head)),
		done:     make(chan struct{}),
	}
	l.sleep = l.sleepUnlessClosed
	l.mu.clients = map[netip.Addr]int{}
	return l
}

// Limits returns the caps the listener applies.
func (l *Listener) Limits() Limits { return l.limits }

// Accept returns the next admitted connection. Temporary failures are
// retried with backoff, so it returns an error only once the listener
// is closed or failed for good.
func (l *Listener) Accept() (net.Conn, error) {
	var backoff time.Duration
	for {
		nc, err := l.Listener.Accept()
		if err != nil {
			if !temporary(err) {
				return nil, err
			}
			backoff = min(max(2*backoff, minBackoff), maxBackoff)
			l.met.acceptErrors.Inc()
			l.log.Warn("accept failed; retrying (see silt_connections_accept_errors_total for how often)",
				zap.Error(err), zap.Duration("backoff", backoff))
			l.sleep(backoff)
			continue
		}
		backoff = 0
		if c := l.admit(nc); c != nil {
			return c, nil
		}
	}
}

// Close closes the listener and ends a backoff in progress. Connections
// already accepted stay open: they belong to the server.
func (l *Listener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

func (l *Listener) sleepUnlessClosed(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-l.done:
	}
}

// temporary reports whether an accept error may pass: a lack of
// descriptors, buffers or memory, or a failure of that one connection
// (aborted before it was accepted; EPERM is a firewall rule refusing
// it). net/http tests the deprecated Temporary method, which covers
// EMFILE, ENFILE and ECONNABORTED but not ENOBUFS or ENOMEM.
func temporary(err error) bool {
	if errors.Is(err, net.ErrClosed) {
		return false
	}
	for _, e := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM,
		syscall.ECONNABORTED, syscall.EPERM} {
		if errors.Is(err, e) {
			return true
		}
	}
	var te interface{ Temporary() bool }
	return errors.As(err, &te) && te.Temporary()
}

// admit applies the caps to a new connection: it returns the connection
// to serve, or nil after closing it.
func (l *Listener) admit(nc net.Conn) *Conn {
	c := &Conn{Conn: nc, l: l, client: clientOf(nc.RemoteAddr())}
	l.mu.Lock()
	if l.mu.clients[c.client] >= l.limits.PerClient {
		l.mu.Unlock()
		// Counted before the close, so that whoever sees the close sees
		// the count too.
		l.met.refusedPerClient.Inc()
		nc.Close()
		l.log.Warn("connection refused: the client address holds max_connections_per_client (see silt_connections_refused_total)",
			zap.String("remote", nc.RemoteAddr().String()), zap.Int("max_connections_per_client", l.limits.PerClient))
		return nil
	}
	var victim *Conn
	if l.mu.open >= l.limits.Max {
		victim = l.mu.idle.front()
		if victim == nil {
			l.mu.Unlock()
			l.met.refusedMax.Inc()
			nc.Close()
			l.log.Warn("connection refused: the head holds max_connections, all serving requests (see silt_connections_refused_total)",
				zap.String("remote", nc.RemoteAddr().String()), zap.Int("max_connections", l.limits.Max))
			return nil
		}
		l.releaseLocked(victim)
	}
	l.mu.open++
	l.mu.clients[c.client]++
	l.mu.idle.pushBack(c)
	l.met.open.Inc()
	l.mu.Unlock()
	if victim != nil {
		// Outside the lock: closing a socket is a system call, and the
		// victim's server sees its read fail and ends the connection.
		l.met.evictedMax.Inc()
		victim.Conn.Close()
		l.log.Info("closed the longest-idle connection to admit a new one: the head holds max_connections (see silt_connections_evicted_total)",
			zap.String("closed", victim.RemoteAddr().String()), zap.String("admitted", nc.RemoteAddr().String()),
			zap.Int("max_connections", l.limits.Max))
	}
	return c
}

// release forgets c; it reports false if c was forgotten already.
func (l *Listener) release(c *Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.closed {
		return false
	}
	l.releaseLocked(c)
	return true
}

func (l *Listener) releaseLocked(c *Conn) {
	c.closed = true
	if !c.active {
		l.mu.idle.remove(c)
	}
	l.mu.open--
	if n := l.mu.clients[c.client] - 1; n > 0 {
		l.mu.clients[c.client] = n
	} else {
		delete(l.mu.clients, c.client)
	}
	l.met.open.Dec()
}

// setActive moves c out of the idle list while it serves a request, and
// to the idle list's end (the youngest idle) when it is done.
func (l *Listener) setActive(c *Conn, active bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.closed || c.active == active {
		return
	}
	c.active = active
	if active {
		l.mu.idle.remove(c)
	} else {
		l.mu.idle.pushBack(c)
	}
}

// Open returns how many admitted connections are open.
func (l *Listener) Open() int {
	open, _ := l.Counts()
	return open
}

// Counts returns how many admitted connections are open, and how many of
// those are idle (walking the idle list: for tests and diagnostics).
func (l *Listener) Counts() (open, idle int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for c := l.mu.idle.front(); c != nil; c = c.next {
		idle++
	}
	return l.mu.open, idle
}

// clientOf is the key the per-client cap counts under: the IPv4 address,
// or the /64 of an IPv6 address. Addresses that do not parse (not TCP)
// share one key.
func clientOf(a net.Addr) netip.Addr {
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return netip.Addr{}
	}
	ip := ap.Addr().Unmap()
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.Addr()
	}
	return ip
}

// Conn is a connection admitted by a Listener. Closing it frees its place.
type Conn struct {
	net.Conn
	l      *Listener
	client netip.Addr

	// Guarded by l.mu.
	closed     bool
	active     bool
	prev, next *Conn // in l.mu.idle while !active && !closed
}

// Close frees the connection's place and closes it.
func (c *Conn) Close() error {
	c.l.release(c)
	return c.Conn.Close()
}

// NetConn returns the wrapped connection.
func (c *Conn) NetConn() net.Conn { return c.Conn }

// ReadFrom keeps the wrapped connection's sendfile and splice: net/http
// sends file bodies through the connection's io.ReaderFrom when it has
// one.
func (c *Conn) ReadFrom(r io.Reader) (int64, error) {
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(writerOnly{c.Conn}, r)
}

// WriteBuffers writes bufs with one writev(2) where the wrapped
// connection can: net.Buffers does so only for the net package's own
// connection types.
func (c *Conn) WriteBuffers(bufs *net.Buffers) (int64, error) {
	return bufs.WriteTo(c.Conn)
}

// CloseWrite half-closes the connection where the wrapped one can, as
// servers do before lingering on a connection they refuse to read.
func (c *Conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

type writerOnly struct{ io.Writer }

// Active tells c's Listener that c is serving a request, so that it is
// not closed to admit another connection. c is a connection the Listener
// returned or one wrapping it (TLS); for any other it does nothing.
func Active(c net.Conn) {
	if lc := find(c); lc != nil {
		lc.l.setActive(lc, true)
	}
}

// Idle tells c's Listener that c waits for its next request: at the
// head's cap it may be closed to admit another connection.
func Idle(c net.Conn) {
	if lc := find(c); lc != nil {
		lc.l.setActive(lc, false)
	}
}

// HTTPConnState is an http.Server's ConnState hook reporting to the
// Listener. A new connection is idle until its first request's headers
// are in; a hijacked one is out of net/http's hands and never evicted.
func HTTPConnState(c net.Conn, s http.ConnState) {
	switch s {
	case http.StateActive, http.StateHijacked:
		Active(c)
	case http.StateIdle:
		Idle(c)
	}
}

// ClosedIdle counts that the server closed c because it sent no request
// for the server's idle timeout.
func ClosedIdle(c net.Conn) {
	if lc := find(c); lc != nil {
		lc.l.met.evictedIdle.Inc()
	}
}

// find unwraps c down to the Listener's Conn.
func find(c net.Conn) *Conn {
	for range 8 { // wrappers do not nest deeper; a cycle must not hang
		switch v := c.(type) {
		case *Conn:
			return v
		case interface{ NetConn() net.Conn }:
			c = v.NetConn()
		default:
			return nil
		}
	}
	return nil
}

// idleList is an intrusive doubly linked list of idle connections in
// the order they became idle, so that the longest-idle one is found and
// any one removed in constant time at every accept and request.
type idleList struct{ head, tail *Conn }

func (q *idleList) front() *Conn { return q.head }

func (q *idleList) pushBack(c *Conn) {
	c.prev, c.next = q.tail, nil
	if q.tail != nil {
		q.tail.next = c
	} else {
		q.head = c
	}
	q.tail = c
}

func (q *idleList) remove(c *Conn) {
	if c.prev != nil {
		c.prev.next = c.next
	} else if q.head == c {
		q.head = c.next
	}
	if c.next != nil {
		c.next.prev = c.prev
	} else if q.tail == c {
		q.tail = c.prev
	}
	c.prev, c.next = nil, nil
}
