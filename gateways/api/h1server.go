package api

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/silt-io/silt/internal/connlimit"
)

// h1Server is the API's own HTTP/1.1 server (api.http_server: lean).
//
// net/http's server starts a goroutine per request that reads the
// connection in the background once the request body is consumed, so as
// to notice a client that goes away, and stops it again when the handler
// returns. Each start and stop is a hand-off between goroutines, and on a
// small or virtual machine each hand-off to an idle thread is a wake-up
// that costs about as long as the loopback round trip itself. A producer
// appending synchronously pays that on every append. h1Server reads and
// answers each connection's requests in that connection's goroutine, and
// watches for a departed client only once a request has run for
// watchDelay (long-polls and follows), which no short request reaches.
//
// It implements what the API's handlers and clients use: keep-alive,
// pipelining, Content-Length and chunked bodies both ways, trailers,
// Expect: 100-continue, HEAD, Connection: close, HTTP/1.0, read, idle and
// header timeouts, a header size limit, TLS, and net/http's answers to
// malformed requests.
type h1Server struct {
	handler http.Handler
	cfg     Config
	log     *zap.Logger
	tls     *tls.Config // nil: plain TCP

	// base is the parent of every request context; cancelled when
	// shutdown gives up waiting.
	base       context.Context
	cancelBase context.CancelFunc

	mu struct {
		sync.Mutex
		closing bool
		conns   map[*h1Conn]bool // true while waiting for a request
	}
	conns sync.WaitGroup
}

const (
	// maxHeaderBytes bounds a request line and headers, as net/http's
	// default does; the slack is what a read may buffer past them.
	maxHeaderBytes = http.DefaultMaxHeaderBytes + 4096
	// maxDrainBytes is how much of a body its handler left unread the
	// server reads so as to keep the connection (net/http's bound); with
	// more left it closes the connection instead.
	maxDrainBytes = 256 << 10
	// watchDelay is how long a request runs before its connection is
	// watched for a client that went away. Appends and other short
	// requests end well before it and pay nothing for the watch.
	watchDelay = 50 * time.Millisecond
	// lingerTimeout bounds how long a connection closed with request
	// bytes still unread waits for the client to read the answer (see
	// closeLingering).
	lingerTimeout = 500 * time.Millisecond
	// errorWriteTimeout bounds writing an answer to a malformed request.
	errorWriteTimeout = 5 * time.Second
)

// aLongTimeAgo is a deadline in the past, to interrupt a blocked read.
var aLongTimeAgo = time.Unix(1, 0)

func newH1Server(h http.Handler, cfg Config, log *zap.Logger, tlsCfg *tls.Config) *h1Server {
	if tlsCfg != nil && len(tlsCfg.NextProtos) > 0 {
		// This server speaks HTTP/1.1 only: never let ALPN agree on h2.
		tlsCfg = tlsCfg.Clone()
		tlsCfg.NextProtos = slices.DeleteFunc(slices.Clone(tlsCfg.NextProtos), func(p string) bool { return p != "http/1.1" })
	}
	srv := &h1Server{handler: h, cfg: cfg, log: log, tls: tlsCfg}
	srv.base, srv.cancelBase = context.WithCancel(context.Background())
	srv.mu.conns = map[*h1Conn]bool{}
	return srv
}

// serve accepts connections until ln fails or is closed by shutdown.
func (srv *h1Server) serve(ln net.Listener) error {
	var backoff time.Duration
	for {
		rwc, err := ln.Accept()
		if err != nil {
			if srv.isClosing() {
				return nil
			}
			// Running out of file descriptors and the like pass; wait
			// as net/http does instead of failing the server.
			if te, ok := err.(interface{ Temporary() bool }); ok && te.Temporary() {
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				srv.log.Debug("accept failed; retrying", zap.Error(err), zap.Duration("backoff", backoff))
				time.Sleep(backoff)
				continue
			}
			return err
		}
		backoff = 0
		c := srv.newConn(rwc)
		if !srv.track(c) {
			rwc.Close()
			continue
		}
		go c.serve()
	}
}

func (srv *h1Server) isClosing() bool {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	return srv.mu.closing
}

// track registers a new connection, or refuses it once shutdown began.
func (srv *h1Server) track(c *h1Conn) bool {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.mu.closing {
		return false
	}
	srv.mu.conns[c] = true
	srv.conns.Add(1)
	return true
}

func (srv *h1Server) untrack(c *h1Conn) {
	srv.mu.Lock()
	delete(srv.mu.conns, c)
	srv.mu.Unlock()
	srv.conns.Done()
}

// setIdle records whether c waits for a request, which is when shutdown
// may close it. It reports false once shutdown began: an idle connection
// must then close rather than wait.
func (srv *h1Server) setIdle(c *h1Conn, idle bool) bool {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.mu.closing {
		return false
	}
	srv.mu.conns[c] = idle
	return true
}

// shutdown stops idle connections at once and lets busy ones finish their
// request (answered with Connection: close) within grace; then it closes
// what is left and cancels its requests. The listener must be closed
// first. It returns once every connection's goroutine has ended.
func (srv *h1Server) shutdown(grace time.Duration) error {
	srv.beginClose()
	done := make(chan struct{})
	go func() {
		srv.conns.Wait()
		close(done)
	}()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
		srv.cancelBase()
		return nil
	case <-t.C:
	}
	srv.closeAll()
	<-done
	return fmt.Errorf("shutdown: %w", context.DeadlineExceeded)
}

// beginClose refuses new connections and closes idle ones; busy ones close
// after their current request.
func (srv *h1Server) beginClose() {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	srv.mu.closing = true
	for c, idle := range srv.mu.conns {
		if idle {
			// Wakes the read waiting for the next request.
			c.rwc.SetReadDeadline(aLongTimeAgo)
		}
	}
}

// closeAll closes every connection and cancels their requests.
func (srv *h1Server) closeAll() {
	srv.mu.Lock()
	srv.mu.closing = true
	for c := range srv.mu.conns {
		c.rwc.Close()
	}
	srv.mu.Unlock()
	srv.cancelBase()
}

// h1Conn is one client connection, served by one goroutine.
type h1Conn struct {
	srv    *h1Server
	rwc    net.Conn
	cr     connReader
	br     *bufio.Reader
	bw     *bufio.Writer
	remote string
	tls    *tls.ConnectionState

	// lastMethod allows the stray CRLF some clients send after a POST
	// body, as net/http does.
	lastMethod string
	// Reused by each request in turn.
	res  h1Response
	body h1Body

	watch connWatch
}

func (srv *h1Server) newConn(rwc net.Conn) *h1Conn {
	c := &h1Conn{srv: srv, rwc: rwc, remote: rwc.RemoteAddr().String()}
	if srv.tls != nil {
		c.rwc = tls.Server(rwc, srv.tls)
	}
	c.cr.c, c.cr.remain = c.rwc, -1
	c.br = bufio.NewReaderSize(&c.cr, 4<<10)
	c.bw = bufio.NewWriterSize(c.rwc, 4<<10)
	c.watch.c = c
	return c
}

func (c *h1Conn) serve() {
	c.watch.init()
	defer c.srv.untrack(c)
	defer func() {
		if v := recover(); v != nil && v != http.ErrAbortHandler {
			c.srv.log.Error("panic serving request", zap.String("remote", c.remote), zap.Any("panic", v), zap.Stack("stack"))
		}
		c.rwc.Close()
		// After a panic the watch may still run; the closed connection
		// ends its read.
		c.watch.stop()
	}()
	// The first request (and the TLS handshake) must come within the
	// read timeout, later ones within the idle timeout.
	c.rwc.SetReadDeadline(time.Now().Add(c.srv.cfg.ReadTimeout))
	if tc, ok := c.rwc.(*tls.Conn); ok && !c.handshake(tc) {
		return
	}
	for first := true; ; first = false {
		if !first {
			c.rwc.SetReadDeadline(time.Now().Add(c.srv.cfg.IdleTimeout))
		}
		if !c.awaitRequest() {
			return
		}
		if !c.serveOne() {
			return
		}
	}
}

// handshake runs the TLS handshake, answering plain HTTP sent to the TLS
// port as net/http does.
func (c *h1Conn) handshake(tc *tls.Conn) bool {
	if err := tc.HandshakeContext(c.srv.base); err != nil {
		var re tls.RecordHeaderError
		if errors.As(err, &re) && re.Conn != nil && looksLikeHTTP(re.RecordHeader) {
			re.Conn.SetWriteDeadline(time.Now().Add(errorWriteTimeout))
			io.WriteString(re.Conn, "HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n")
			re.Conn.Close()
		}
		c.srv.log.Debug("TLS handshake failed", zap.String("remote", c.remote), zap.Error(err))
		return false
	}
	st := tc.ConnectionState()
	c.tls = &st
	return true
}

func looksLikeHTTP(hdr [5]byte) bool {
	switch string(hdr[:]) {
	case "GET /", "HEAD ", "POST ", "PUT /", "OPTIO":
		return true
	}
	return false
}

// awaitRequest waits for the first byte of the next request while the
// connection counts as idle, so that shutdown can close it meanwhile.
func (c *h1Conn) awaitRequest() bool {
	if !c.srv.setIdle(c, true) {
		return false
	}
	// At the head's cap an idle connection may be closed for a newcomer
	// (internal/connlimit); it stays idle there until a whole request
	// head is in, so that a client sending one slowly is not protected.
	connlimit.Idle(c.rwc)
	_, err := c.br.Peek(1)
	if !c.srv.setIdle(c, false) || err != nil {
		return false
	}
	c.rwc.SetReadDeadline(time.Now().Add(c.srv.cfg.ReadTimeout))
	if c.lastMethod == http.MethodPost {
		peek, _ := c.br.Peek(min(c.br.Buffered(), 4))
		c.br.Discard(leadingCRLF(peek))
	}
	return true
}

func leadingCRLF(b []byte) int {
	n := 0
	for n < len(b) && (b[n] == '\r' || b[n] == '\n') {
		n++
	}
	return n
}

// serveOne reads, serves and answers one request. It reports whether the
// connection may serve another.
func (c *h1Conn) serveOne() bool {
	c.cr.remain = maxHeaderBytes
	req, err := http.ReadRequest(c.br)
	headerTooLarge := c.cr.remain == 0
	c.cr.remain = -1
	if err != nil {
		if headerTooLarge {
			// The client may still be sending its headers.
			c.replyError(http.StatusRequestHeaderFieldsTooLarge, "")
			c.closeLingering()
		} else {
			c.replyReadError(err)
		}
		return false
	}
	c.lastMethod = req.Method
	connlimit.Active(c.rwc)
	if status, msg := checkRequest(req); status != 0 {
		c.replyError(status, msg)
		return false
	}
	ctx, cancel := context.WithCancel(c.srv.base)
	defer cancel()
	req = req.WithContext(ctx)
	req.RemoteAddr = c.remote
	req.TLS = c.tls

	if exp := req.Header.Get("Expect"); exp != "" && !strings.EqualFold(exp, "100-continue") {
		c.replyError(http.StatusExpectationFailed, "")
		if req.ContentLength != 0 {
			c.closeLingering()
		}
		return false
	}
	w := &c.res
	w.reset(c, req)
	c.body.reset(c, cancel)
	if req.ContentLength != 0 {
		c.body.r, c.body.length = req.Body, req.ContentLength
		req.Body = &c.body
	} else {
		// No body to finish reading: the request may be watched as
		// soon as it runs long enough.
		c.watch.arm(cancel)
	}
	c.handle(w, req)
	c.watch.stop()
	w.finish()
	if c.watch.clientGone || w.closeAfter {
		if c.body.unread() {
			c.closeLingering()
		}
		return false
	}
	return true
}

// handle runs the handler. A panic ends the connection without an answer,
// as net/http does: the serve loop's recover logs it.
func (c *h1Conn) handle(w *h1Response, req *http.Request) {
	if req.RequestURI == "*" && req.Method == http.MethodOptions {
		w.Header().Set("Content-Length", "0")
		w.WriteHeader(http.StatusOK)
		return
	}
	c.srv.handler.ServeHTTP(w, req)
}

// checkRequest applies the rules net/http's server adds to ReadRequest's
// parsing. ReadRequest has already moved the Host header to req.Host, so
// a repeated Host header goes unnoticed (its first value counts); the API
// routes by path only.
func checkRequest(req *http.Request) (int, string) {
	switch {
	case req.ProtoMajor != 1:
		return http.StatusHTTPVersionNotSupported, "unsupported protocol version"
	case req.ProtoAtLeast(1, 1) && req.Host == "" && req.Method != http.MethodConnect:
		return http.StatusBadRequest, "missing required Host header"
	case !validHost(req.Host):
		return http.StatusBadRequest, "malformed Host header"
	}
	return 0, ""
}

// validHost is httpguts.ValidHostHeader: lenient, it refuses only bytes
// that no form of host[:port] contains.
func validHost(h string) bool {
	for i := 0; i < len(h); i++ {
		b := h[i]
		if b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || strings.IndexByte("!$%&'()*+,-.:;=[]_~", b) >= 0 {
			continue
		}
		return false
	}
	return true
}

// replyReadError answers a request that could not be read, unless the
// client is simply gone or slow (then there is no one to tell).
func (c *h1Conn) replyReadError(err error) {
	var ne net.Error
	switch {
	case err == io.EOF, errors.Is(err, net.ErrClosed), errors.As(err, &ne) && ne.Timeout():
		// Gone before a request, or too slow to send one.
		return
	case strings.HasPrefix(err.Error(), "unsupported transfer encoding"):
		c.replyError(http.StatusNotImplemented, "Unsupported transfer encoding")
		return
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "read" {
		return
	}
	c.srv.log.Debug("malformed request", zap.String("remote", c.remote), zap.Error(err))
	c.replyError(http.StatusBadRequest, "")
}

// replyError sends net/http's plain-text answer to a request the server
// refuses before any handler sees it, and ends the connection.
func (c *h1Conn) replyError(status int, msg string) {
	text := fmt.Sprintf("%d %s", status, http.StatusText(status))
	if msg != "" {
		text += ": " + msg
	}
	c.rwc.SetWriteDeadline(time.Now().Add(errorWriteTimeout))
	fmt.Fprintf(c.bw, "HTTP/1.1 %s\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n%s", text, text)
	c.bw.Flush()
}

// closeLingering closes a connection whose client may still be sending a
// body the server did not read. Closing at once would make the kernel
// reset the connection, and a reset can destroy the answer before the
// client reads it; so the server closes its side, then discards what
// arrives until the client closes or lingerTimeout passes.
func (c *h1Conn) closeLingering() {
	c.bw.Flush()
	if cw, ok := c.rwc.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	c.rwc.SetReadDeadline(time.Now().Add(lingerTimeout))
	io.Copy(io.Discard, io.LimitReader(c.rwc, 4<<20))
}

// connReader is what requests are parsed from: the connection, after a
// byte that the disconnect watch may have read first, and with a limit
// while a request's headers are read (remain < 0: none).
type connReader struct {
	c       net.Conn
	remain  int64
	hasByte bool
	byteBuf [1]byte
}

func (r *connReader) Read(p []byte) (int, error) {
	if r.remain == 0 {
		return 0, io.EOF
	}
	if r.remain > 0 && int64(len(p)) > r.remain {
		p = p[:r.remain]
	}
	if len(p) == 0 {
		return 0, nil
	}
	if r.hasByte {
		p[0] = r.byteBuf[0]
		r.hasByte = false
		if r.remain > 0 {
			r.remain--
		}
		return 1, nil
	}
	n, err := r.c.Read(p)
	if r.remain > 0 {
		r.remain -= int64(n)
	}
	return n, err
}

// h1Body is a request body as handlers see it. Closing it does not read
// the rest (the server decides what to do with that); reaching its end
// lets the connection be watched.
type h1Body struct {
	c      *h1Conn
	r      io.ReadCloser
	cancel context.CancelFunc
	// length is the declared Content-Length (-1: chunked), read what the
	// handler has read of it.
	length, read int64
	sawEOF       bool
	failed       bool // a read error: what follows on the wire is unknown
	closed       bool
}

func (b *h1Body) reset(c *h1Conn, cancel context.CancelFunc) {
	*b = h1Body{c: c, cancel: cancel}
}

func (b *h1Body) Read(p []byte) (int, error) {
	if b.closed {
		return 0, http.ErrBodyReadAfterClose
	}
	if b.sawEOF {
		return 0, io.EOF
	}
	b.c.res.sendContinue()
	n, err := b.r.Read(p)
	b.read += int64(n)
	switch {
	case err == io.EOF:
		b.sawEOF = true
		b.c.watch.arm(b.cancel)
	case err != nil:
		b.failed = true
	}
	return n, err
}

func (b *h1Body) Close() error {
	b.closed = true
	return nil
}

// unread reports whether the client may have sent body bytes that were
// not read.
func (b *h1Body) unread() bool { return b.r != nil && !b.sawEOF }

// drain reads what the handler left of the body, up to maxDrainBytes, and
// reports whether the body's end was reached, so that the connection can
// serve the next request.
func (b *h1Body) drain() bool {
	if b.r == nil || b.sawEOF {
		return true
	}
	if b.failed || b.length >= 0 && b.length-b.read > maxDrainBytes {
		return false
	}
	_, err := io.CopyN(io.Discard, b.r, maxDrainBytes+1)
	if err == io.EOF {
		b.sawEOF = true
		return true
	}
	return false
}

// connWatch notices a client that goes away during a long request: it
// reads the connection in the background and cancels the request when
// the read fails. It starts only once a request's body has been read and
// the request has run for watchDelay.
type connWatch struct {
	c     *h1Conn
	timer *time.Timer

	mu         sync.Mutex
	armed      bool
	running    bool
	aborted    bool
	cancel     context.CancelFunc
	done       chan struct{}
	clientGone bool
}

func (w *connWatch) init() {
	w.timer = time.AfterFunc(time.Hour, w.run)
	w.timer.Stop()
}

// arm lets the watch start after watchDelay. A request whose next one is
// already buffered (pipelining) is not watched: reading would consume it.
func (w *connWatch) arm(cancel context.CancelFunc) {
	if w.c.br.Buffered() > 0 {
		return
	}
	w.mu.Lock()
	w.armed, w.cancel = true, cancel
	w.mu.Unlock()
	w.timer.Reset(watchDelay)
}

func (w *connWatch) run() {
	w.mu.Lock()
	if !w.armed || w.running {
		w.mu.Unlock()
		return
	}
	w.running, w.done = true, make(chan struct{})
	// Under the lock, so that stop's deadline in the past cannot come
	// first and be undone here.
	w.c.rwc.SetReadDeadline(time.Time{})
	w.mu.Unlock()

	n, err := w.c.rwc.Read(w.c.cr.byteBuf[:])

	w.mu.Lock()
	if n == 1 {
		// The start of a pipelined request: keep it for the parser.
		w.c.cr.hasByte = true
	}
	if err != nil && !w.aborted {
		w.clientGone = true
		w.cancel()
	}
	w.running = false
	close(w.done)
	w.mu.Unlock()
}

// stop ends the watch when the handler has returned, waiting for its read
// to give up.
func (w *connWatch) stop() {
	w.timer.Stop()
	w.mu.Lock()
	w.armed = false
	done := w.done
	if w.running {
		w.aborted = true
		w.c.rwc.SetReadDeadline(aLongTimeAgo)
	}
	w.mu.Unlock()
	if done != nil {
		<-done
	}
	w.mu.Lock()
	w.done, w.aborted, w.cancel = nil, false, nil
	w.mu.Unlock()
}
