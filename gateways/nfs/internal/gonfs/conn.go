package nfs

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	xdr2 "github.com/rasky/go-xdr/xdr2"
	"github.com/silt-io/silt/gateways/nfs/internal/xdr"
	"github.com/willscott/go-nfs-client/nfs/rpc"
)

var (
	// ErrInputInvalid is returned when input cannot be parsed
	ErrInputInvalid = errors.New("invalid input")
	// ErrAlreadySent is returned when writing a header/status multiple times
	ErrAlreadySent = errors.New("response already started")
)

// ResponseCode is a combination of accept_stat and reject_stat.
type ResponseCode uint32

// ResponseCode Codes
//
// The accepted codes are RFC 5531's accept_stat values, written verbatim;
// RPCMismatch and AuthError are MSG_DENIED replies, written as the
// reject_stat values rejectRPCMismatch and rejectAuthError.
// (Patched: upstream numbered these off by one from PROC_UNAVAIL on and
// wrote the denied codes as accept_stat values.)
const (
	ResponseCodeSuccess ResponseCode = iota
	ResponseCodeProgUnavailable
	ResponseCodeProgMismatch
	ResponseCodeProcUnavailable
	ResponseCodeGarbageArgs
	ResponseCodeSystemErr
	ResponseCodeRPCMismatch ResponseCode = 1000 + iota
	ResponseCodeAuthError
)

// reject_stat values of a MSG_DENIED reply (RFC 5531).
const (
	rejectRPCMismatch uint32 = 0
	rejectAuthError   uint32 = 1
)

// supportedVersions are the program versions served (patched: upstream
// did not check the version at all).
var supportedVersions = map[uint32]uint32{nfsServiceID: 3, mountServiceID: 3}

// Patched: upstream served a connection's requests one at a time and
// queued each reply to a writer goroutine. Requests are now read whole
// and served concurrently, at most Server.MaxInflight per connection;
// the reader stops reading the socket while that many are in flight, so
// a client cannot make the server buffer without bound. Each reply is
// written whole, record mark included, with one Write under wmu, so
// replies of concurrent requests never interleave on the stream. RPC
// lets replies come back in any order: clients match them by xid.

// DefaultMaxInflight bounds concurrent requests per connection when
// Server.MaxInflight is not set.
const DefaultMaxInflight = 16

// maxBufferedRequest is the largest request record read into memory and
// served concurrently. Larger ones (only WRITE carries that much) are
// served in line from the stream, as upstream did, so that their size
// never has to be held in memory.
const maxBufferedRequest = 64 << 10

type conn struct {
	*Server
	net.Conn
	wmu sync.Mutex // held while a whole reply is written

	smu      sync.Mutex // orders the ConnState calls with the count
	inflight int        // requests read and not yet answered; guarded by smu
}

// begin counts a request read, end one answered; the first and the last
// of a busy spell are reported to ConnState.
func (c *conn) begin() {
	c.smu.Lock()
	defer c.smu.Unlock()
	c.inflight++
	if c.inflight == 1 && c.Server.ConnState != nil {
		c.Server.ConnState(c.Conn, ConnActive)
	}
}

func (c *conn) end() {
	c.smu.Lock()
	defer c.smu.Unlock()
	c.inflight--
	if c.inflight == 0 && c.Server.ConnState != nil {
		c.Server.ConnState(c.Conn, ConnIdle)
	}
}

// timedOut reports whether reading failed on the read deadline; the XDR
// decoder's errors do not unwrap.
func timedOut(err error) bool {
	var ue *xdr2.UnmarshalError
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return errors.Is(err, os.ErrDeadlineExceeded)
}

func (c *conn) busy() bool {
	c.smu.Lock()
	defer c.smu.Unlock()
	return c.inflight > 0
}

// awaitRequest waits for the first byte of the next request. With an
// IdleTimeout it gives up, closing the connection, once that long has
// passed with no request in flight; the rest of the request must then
// arrive within the timeout too, so that a client sending a request
// slowly, or half of one, holds the connection no longer than an idle
// client. It reports whether a request is coming.
func (c *conn) awaitRequest(bio *bufio.Reader) bool {
	d := c.Server.IdleTimeout
	if d <= 0 {
		return true // readRequestHeader blocks as upstream did
	}
	for {
		c.Conn.SetReadDeadline(time.Now().Add(d))
		_, err := bio.Peek(1)
		if err == nil {
			c.Conn.SetReadDeadline(time.Now().Add(d))
			return true
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			c.Close()
			return false
		}
		if c.busy() {
			// A request of this connection is still being served (a
			// slow READ, or a reply the client reads slowly): the
			// connection is not idle.
			continue
		}
		if c.Server.ConnState != nil {
			c.Server.ConnState(c.Conn, ConnIdleClosed)
		}
		Log.Debugf("closing connection from %v: no request for %v", c.Conn.RemoteAddr(), d)
		c.Close()
		return false
	}
}

func (c *conn) serve(ctx context.Context) {
	connCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		// In-flight requests see the cancellation, and their replies
		// fail to write once the connection is closed.
		cancel()
		wg.Wait()
	}()
	sem := make(chan struct{}, c.Server.maxInflight())

	bio := bufio.NewReaderSize(c.Conn, 64<<10)
	for {
		if !c.awaitRequest(bio) {
			return
		}
		w, err := c.readRequestHeader(connCtx, bio)
		if err != nil {
			// A clean close (EOF), a malformed or timed-out request:
			// either way the stream is done (patched: upstream left the
			// socket open on errors other than EOF).
			if timedOut(err) && c.Server.ConnState != nil {
				c.Server.ConnState(c.Conn, ConnIdleClosed)
			}
			c.Close()
			return
		}
		Log.Tracef("request: %v", w.req)
		c.begin()
		if _, buffered := w.req.Body.(*bytes.Reader); !buffered {
			// The handler reads the body from the stream: nothing else
			// may be read meanwhile.
			ok := c.serveOne(connCtx, w)
			c.end()
			if !ok {
				return
			}
			continue
		}
		select {
		case sem <- struct{}{}:
		case <-connCtx.Done():
			c.end()
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			defer c.end()
			if !c.serveOne(connCtx, w) {
				cancel()
			}
		}()
	}
}

// serveOne handles one request and writes its reply. It reports false,
// after closing the connection, if the connection cannot go on.
func (c *conn) serveOne(ctx context.Context, w *response) bool {
	start := time.Now()
	err := c.handle(ctx, w)
	respErr := w.finish(ctx)
	if c.Server.Observe != nil {
		failure := err
		for _, e := range []error{respErr, w.err} {
			if failure == nil {
				failure = e
			}
		}
		c.Server.Observe(Call{Proc: procName(w.req.Header.Prog, w.req.Header.Proc), Conn: c.Conn, Note: w.note}, time.Since(start), w.sent, failure)
	}
	if err != nil {
		Log.Errorf("error handling req: %v", err)
		// failure to handle at a level needing to close the connection.
		c.Close()
		return false
	}
	if respErr != nil {
		Log.Errorf("error sending response: %v", respErr)
		c.Close()
		return false
	}
	return true
}

// Handle a request. errors from this method indicate a failure to read or
// write on the network stream, and trigger a disconnection of the connection.
func (c *conn) handle(ctx context.Context, w *response) error {
	if rpcErr := checkProgram(w.req.Header); rpcErr != nil {
		if err := w.drain(ctx); err != nil {
			return err
		}
		return c.err(ctx, w, rpcErr)
	}
	// Patched in: the credential is checked before the procedure, as
	// libntirpc does, and kept for the Handler (see caller.go).
	caller, authErr := parseCaller(c.Conn, w.req.Header.Cred)
	if authErr != nil {
		if err := w.drain(ctx); err != nil {
			return err
		}
		return c.err(ctx, w, authErr)
	}
	caller.Note = &w.note
	w.caller = caller
	handler := c.Server.handlerFor(w.req.Header.Prog, w.req.Header.Proc)
	if handler == nil {
		Log.Errorf("No handler for %d.%d", w.req.Header.Prog, w.req.Header.Proc)
		if err := w.drain(ctx); err != nil {
			return err
		}
		return c.err(ctx, w, &ResponseCodeProcUnavailableError{})
	}
	appError := handler(ctx, w, c.Server.Handler)
	if drainErr := w.drain(ctx); drainErr != nil {
		return drainErr
	}
	if appError != nil && !w.responded {
		if err := c.err(ctx, w, appError); err != nil {
			return err
		}
	}
	if !w.responded {
		Log.Errorf("Handler did not indicate response status via writing or erroring")
		if err := c.err(ctx, w, &ResponseCodeSystemError{}); err != nil {
			return err
		}
	}
	return nil
}

// checkProgram refuses calls of another RPC version, of a program that is
// not served, or of a program version that is not served.
func checkProgram(h rpc.Header) RPCError {
	if h.Rpcvers != 2 {
		return &RPCMismatchError{Low: 2, High: 2}
	}
	v, ok := supportedVersions[h.Prog]
	if !ok {
		return &ResponseCodeProgUnavailableError{}
	}
	if h.Vers != v {
		return &ProgMismatchError{Low: v, High: v}
	}
	return nil
}

func (c *conn) err(ctx context.Context, w *response, err error) error {
	select {
	case <-ctx.Done():
		return nil
	default:
	}

	if w.err == nil {
		w.err = err
	}

	if w.responded {
		return nil
	}

	rpcErr := w.errorFmt(err)
	if writeErr := w.writeHeader(rpcErr.Code()); writeErr != nil {
		return writeErr
	}

	body, _ := rpcErr.MarshalBinary()
	return w.Write(body)
}

type request struct {
	xid uint32
	rpc.Header
	Body io.Reader
}

func (r *request) String() string {
	if r.Header.Prog == nfsServiceID {
		return fmt.Sprintf("RPC #%d (nfs.%s)", r.xid, NFSProcedure(r.Header.Proc))
	} else if r.Header.Prog == mountServiceID {
		return fmt.Sprintf("RPC #%d (mount.%s)", r.xid, MountProcedure(r.Header.Proc))
	}
	return fmt.Sprintf("RPC #%d (%d.%d)", r.xid, r.Header.Prog, r.Header.Proc)
}

type response struct {
	*conn
	writer    *replyBuf
	responded bool
	err       error
	errorFmt  func(error) RPCError
	req       *request
	caller    Caller   // who sent req (patched in)
	note      CallNote // what the Handler noted of req, for Observe (patched in)
	// tail is sent after the buffer (READ data from a mapped file), and
	// release runs once it has been.
	tail    []byte
	release func() error
	// sent is the size of the reply once written, for Observe.
	sent int64
}

func (w *response) writeXdrHeader() error {
	err := xdr.Write(w.writer, &w.req.xid)
	if err != nil {
		return err
	}
	respType := uint32(1)
	err = xdr.Write(w.writer, &respType)
	if err != nil {
		return err
	}
	return nil
}

func (w *response) writeHeader(code ResponseCode) error {
	if w.responded {
		return ErrAlreadySent
	}
	w.responded = true
	if err := w.writeXdrHeader(); err != nil {
		return err
	}

	var reject uint32
	switch code {
	case ResponseCodeRPCMismatch:
		reject = rejectRPCMismatch
	case ResponseCodeAuthError:
		reject = rejectAuthError
	default:
		status := uint32(rpc.MsgAccepted)
		if err := xdr.Write(w.writer, &status); err != nil {
			return err
		}
		// Write opaque_auth header.
		if err := xdr.Write(w.writer, &rpc.AuthNull); err != nil {
			return err
		}
		return xdr.Write(w.writer, &code)
	}
	status := uint32(rpc.MsgDenied)
	if err := xdr.Write(w.writer, &status); err != nil {
		return err
	}
	return xdr.Write(w.writer, &reject)
}

// Write a response to an xdr message
func (w *response) Write(dat []byte) error {
	if !w.responded {
		if err := w.writeHeader(ResponseCodeSuccess); err != nil {
			return err
		}
	}

	acc := 0
	for acc < len(dat) {
		n, err := w.writer.Write(dat[acc:])
		if err != nil {
			return err
		}
		acc += n
	}
	return nil
}

// drain reads the rest of the request frame if not consumed by the handler.
func (w *response) drain(ctx context.Context) error {
	if _, ok := w.req.Body.(*bytes.Reader); ok {
		return nil // read whole already
	}
	if reader, ok := w.req.Body.(*io.LimitedReader); ok {
		if reader.N == 0 {
			return nil
		}
		// todo: wrap body in a context reader.
		_, err := io.CopyN(io.Discard, w.req.Body, reader.N)
		if err == nil || err == io.EOF {
			return nil
		}
		return err
	}
	return io.ErrUnexpectedEOF
}

// finish writes the reply: the record mark goes into the 4 bytes
// reserved at the front of the buffer, so that the whole record is one
// Write.
func (w *response) finish(ctx context.Context) error {
	defer putReplyBuffer(w.writer)
	if w.release != nil {
		defer w.release()
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	b := w.writer.Bytes()
	pad := (4 - len(w.tail)%4) % 4
	if len(b)-recordMarkLen+len(w.tail)+pad > 1<<31-1 {
		return ErrInputInvalid
	}
	binary.BigEndian.PutUint32(b, uint32(len(b)-recordMarkLen+len(w.tail)+pad)|1<<31)
	w.conn.wmu.Lock()
	defer w.conn.wmu.Unlock()
	if d := w.conn.Server.IdleTimeout; d > 0 {
		// A client that reads no reply for that long is as good as
		// gone, and would otherwise hold its connection busy forever.
		w.conn.Conn.SetWriteDeadline(time.Now().Add(d))
	}
	if w.tail == nil {
		n, err := w.conn.Conn.Write(b)
		w.sent = int64(n)
		return err
	}
	var zeros [3]byte
	bufs := net.Buffers{b, w.tail, zeros[:pad]}
	var err error
	if bw, ok := w.conn.Conn.(interface {
		WriteBuffers(*net.Buffers) (int64, error)
	}); ok {
		w.sent, err = bw.WriteBuffers(&bufs)
	} else {
		w.sent, err = bufs.WriteTo(w.conn.Conn)
	}
	unmapPages(w.tail)
	return err
}

// unmapPages drops the pages of a mapped range just sent from the
// process's page tables. They were mapped only for write(2) to copy them
// into the socket; without this a server that has sent a few large files
// shows their size in its RSS. The pages stay in the page cache, and a
// later READ of them (or one sending them now: the range is widened to
// whole pages) maps them again with a minor fault.
func unmapPages(b []byte) {
	if len(b) == 0 {
		return
	}
	page := os.Getpagesize()
	p := unsafe.Pointer(unsafe.SliceData(b))
	lead := int(uintptr(p) % uintptr(page))
	n := (lead + len(b) + page - 1) / page * page
	unix.Madvise(unsafe.Slice((*byte)(unsafe.Add(p, -lead)), n), unix.MADV_DONTNEED)
}

// recordMarkLen is the RPC record mark (RFC 5531 section 11) in front of
// every reply buffer.
const recordMarkLen = 4

// replyBuf is a reply being built. Unlike a bytes.Buffer it can be
// extended by bytes that are then filled in place, which lets READ read
// file data straight into the reply.
type replyBuf struct{ b []byte }

func (r *replyBuf) Write(p []byte) (int, error) {
	r.b = append(r.b, p...)
	return len(p), nil
}

func (r *replyBuf) Bytes() []byte { return r.b }
func (r *replyBuf) Len() int      { return len(r.b) }

// extend appends n bytes to the reply and returns them to be filled in.
func (r *replyBuf) extend(n int) []byte {
	r.b = slices.Grow(r.b, n)
	l := len(r.b)
	r.b = r.b[:l+n]
	return r.b[l:]
}

// truncate cuts the reply to n bytes.
func (r *replyBuf) truncate(n int) { r.b = r.b[:n] }

var replyBuffers = sync.Pool{New: func() any { return new(replyBuf) }}

func getReplyBuffer() *replyBuf {
	r := replyBuffers.Get().(*replyBuf)
	r.b = append(r.b[:0], 0, 0, 0, 0) // room for the record mark
	return r
}

// putReplyBuffer keeps buffers up to a large READ reply's size for reuse.
func putReplyBuffer(r *replyBuf) {
	if cap(r.b) <= 2<<20 {
		replyBuffers.Put(r)
	}
}

func (c *conn) readRequestHeader(ctx context.Context, reader *bufio.Reader) (w *response, err error) {
	fragment, err := xdr.ReadUint32(reader)
	if err != nil {
		if xdrErr, ok := err.(*xdr2.UnmarshalError); ok {
			if xdrErr.Err == io.EOF {
				return nil, io.EOF
			}
		}
		return nil, err
	}
	if fragment&(1<<31) == 0 {
		Log.Warnf("Warning: haven't implemented fragment reconstruction.\n")
		return nil, ErrInputInvalid
	}
	reqLen := fragment - uint32(1<<31)
	if reqLen < 40 {
		return nil, ErrInputInvalid
	}

	var r io.Reader
	if reqLen <= maxBufferedRequest {
		buf := make([]byte, reqLen)
		if _, err := io.ReadFull(reader, buf); err != nil {
			return nil, err
		}
		r = bytes.NewReader(buf)
	} else {
		r = &io.LimitedReader{R: reader, N: int64(reqLen)}
	}

	xid, err := xdr.ReadUint32(r)
	if err != nil {
		return nil, err
	}
	reqType, err := xdr.ReadUint32(r)
	if err != nil {
		return nil, err
	}
	if reqType != 0 { // 0 = request, 1 = response
		return nil, ErrInputInvalid
	}

	req := request{
		xid,
		rpc.Header{},
		r,
	}
	if err = xdr.Read(r, &req.Header); err != nil {
		return nil, err
	}

	w = &response{
		conn:     c,
		req:      &req,
		errorFmt: basicErrorFormatter,
		writer:   getReplyBuffer(),
	}
	return w, nil
}
