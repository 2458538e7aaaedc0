package api

import (
	"bytes"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// bufferBeforeCommit is how much of a body h1Response holds before it
// sends the header: a handler that writes less and returns gets a
// Content-Length answer, a longer or flushed one a chunked answer.
const bufferBeforeCommit = 4 << 10

// h1Response is h1Server's http.ResponseWriter. It follows net/http's
// rules where handlers or clients can tell: the header is fixed at
// WriteHeader, small bodies get a Content-Length, unknown lengths are
// chunked (or, for HTTP/1.0, end with the connection), declared trailers
// follow a chunked body, HEAD and bodiless statuses send no body, a
// missing Content-Type is sniffed, and an unread request body is drained
// (up to maxDrainBytes) before the answer so that clients that send
// their whole request first do not deadlock.
type h1Response struct {
	c   *h1Conn
	req *http.Request

	header http.Header
	status int
	// head is the status line and the handler's header as they stood at
	// WriteHeader, without the framing headers that commit adds.
	head          *bytes.Buffer
	hasType       bool
	hasDate       bool
	contentLength int64 // from the handler's header; -1: unknown
	trailers      []string

	buf         []byte // body held before commit
	committed   bool   // the header is in c.bw
	chunked     bool
	written     int64 // body bytes accepted
	closeAfter  bool
	canContinue bool // the client waits for 100 Continue before its body
}

func (w *h1Response) reset(c *h1Conn, req *http.Request) {
	buf, head := w.buf[:0], w.head
	if head == nil {
		head = new(bytes.Buffer)
	}
	head.Reset()
	*w = h1Response{c: c, req: req, header: make(http.Header), buf: buf, head: head, contentLength: -1}
	w.closeAfter = req.Close || c.srv.isClosing()
	w.canContinue = req.ProtoAtLeast(1, 1) && req.ContentLength != 0 &&
		strings.EqualFold(req.Header.Get("Expect"), "100-continue")
}

func (w *h1Response) Header() http.Header { return w.header }

func (w *h1Response) WriteHeader(code int) {
	if w.status != 0 {
		return
	}
	if code < 100 || code > 999 {
		panic("api: invalid WriteHeader code " + strconv.Itoa(code))
	}
	if code < 200 {
		// Informational answers are not used by the API; net/http would
		// send them at once. Ignoring them keeps the final answer sane.
		return
	}
	w.status = code
	h := w.header
	if cl := h.Get("Content-Length"); cl != "" {
		if n, err := strconv.ParseInt(cl, 10, 64); err == nil && n >= 0 {
			w.contentLength = n
		}
	}
	if strings.Contains(strings.ToLower(h.Get("Connection")), "close") {
		w.closeAfter = true
	}
	_, w.hasType = h["Content-Type"]
	_, w.hasDate = h["Date"]
	for _, v := range h["Trailer"] {
		for _, k := range strings.Split(v, ",") {
			if k = strings.TrimSpace(k); k != "" {
				w.trailers = append(w.trailers, http.CanonicalHeaderKey(k))
			}
		}
	}
	text := http.StatusText(code)
	if text == "" {
		text = "status code " + strconv.Itoa(code)
	}
	w.head.WriteString("HTTP/1.1 ")
	w.head.WriteString(strconv.Itoa(code))
	w.head.WriteByte(' ')
	w.head.WriteString(text)
	w.head.WriteString("\r\n")
	exclude := framingHeaders
	for k := range h {
		if strings.HasPrefix(k, http.TrailerPrefix) {
			exclude = withTrailerKeys(h)
			break
		}
	}
	h.WriteSubset(w.head, exclude)
}

// framingHeaders are decided by the server, not taken from the handler.
var framingHeaders = map[string]bool{"Content-Length": true, "Transfer-Encoding": true, "Connection": true}

// withTrailerKeys is framingHeaders plus h's http.TrailerPrefix keys,
// which are trailers, not headers.
func withTrailerKeys(h http.Header) map[string]bool {
	m := map[string]bool{}
	for k := range framingHeaders {
		m[k] = true
	}
	for k := range h {
		if strings.HasPrefix(k, http.TrailerPrefix) {
			m[k] = true
		}
	}
	return m
}

// bodyAllowed reports whether the status may carry a body (RFC 9110 §15).
func (w *h1Response) bodyAllowed() bool {
	return w.status != http.StatusNoContent && w.status != http.StatusNotModified
}

func (w *h1Response) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if !w.bodyAllowed() {
		return 0, http.ErrBodyNotAllowed
	}
	if w.contentLength >= 0 && w.written+int64(len(p)) > w.contentLength {
		return 0, http.ErrContentLength
	}
	w.written += int64(len(p))
	if !w.committed {
		if len(w.buf)+len(p) <= bufferBeforeCommit {
			w.buf = append(w.buf, p...)
			return len(p), nil
		}
		w.commit(false)
	}
	return len(p), w.writeBody(p)
}

// writeBody sends body bytes after commit.
func (w *h1Response) writeBody(p []byte) error {
	if len(p) == 0 || w.req.Method == http.MethodHead {
		return nil
	}
	bw := w.c.bw
	if w.chunked {
		bw.WriteString(strconv.FormatInt(int64(len(p)), 16))
		bw.WriteString("\r\n")
		bw.Write(p)
		_, err := bw.WriteString("\r\n")
		return err
	}
	_, err := bw.Write(p)
	return err
}

// sendContinue tells a client that waits for it to send its body, on the
// handler's first read of the body.
func (w *h1Response) sendContinue() {
	if !w.canContinue {
		return
	}
	w.canContinue = false
	if w.committed {
		return
	}
	w.c.bw.WriteString("HTTP/1.1 100 Continue\r\n\r\n")
	w.c.bw.Flush()
}

// commit puts the header into the connection's buffer, followed by the
// body held so far. final is set when the handler has returned, so that
// the held body is all of it.
func (w *h1Response) commit(final bool) {
	if w.committed {
		return
	}
	w.committed = true
	if w.canContinue {
		// The client never sent its body: it would come now, where the
		// next request should.
		w.canContinue = false
		w.closeAfter = true
	}
	if !w.closeAfter && !w.c.body.drain() {
		w.closeAfter = true
	}
	if w.c.srv.isClosing() {
		w.closeAfter = true
	}
	bw := w.c.bw
	bw.Write(w.head.Bytes())
	if !w.hasDate {
		var b [len(http.TimeFormat)]byte
		bw.WriteString("Date: ")
		bw.Write(time.Now().UTC().AppendFormat(b[:0], http.TimeFormat))
		bw.WriteString("\r\n")
	}
	isHEAD := w.req.Method == http.MethodHead
	switch {
	case !w.bodyAllowed():
		// No body, so no framing.
	case w.contentLength >= 0:
		writeHeaderLine(bw, "Content-Length", strconv.FormatInt(w.contentLength, 10))
	case final && (!isHEAD || len(w.buf) > 0):
		w.contentLength = int64(len(w.buf))
		writeHeaderLine(bw, "Content-Length", strconv.FormatInt(w.contentLength, 10))
	case isHEAD:
	case w.req.ProtoAtLeast(1, 1):
		w.chunked = true
		bw.WriteString("Transfer-Encoding: chunked\r\n")
	default:
		// HTTP/1.0 has no chunks: the body ends with the connection.
		w.closeAfter = true
	}
	if !w.hasType && w.bodyAllowed() && len(w.buf) > 0 {
		writeHeaderLine(bw, "Content-Type", http.DetectContentType(w.buf))
	}
	switch {
	case w.closeAfter:
		bw.WriteString("Connection: close\r\n")
	case !w.req.ProtoAtLeast(1, 1):
		bw.WriteString("Connection: keep-alive\r\n")
	}
	bw.WriteString("\r\n")
	buf := w.buf
	w.buf = w.buf[:0]
	w.writeBody(buf)
}

func writeHeaderLine(bw interface{ WriteString(string) (int, error) }, k, v string) {
	bw.WriteString(k)
	bw.WriteString(": ")
	bw.WriteString(v)
	bw.WriteString("\r\n")
}

// Flush sends what is buffered to the client (http.Flusher), committing
// the header first.
func (w *h1Response) Flush() { w.FlushError() }

// FlushError is Flush that reports a failed write, for
// http.ResponseController.
func (w *h1Response) FlushError() error {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	w.commit(false)
	return w.c.bw.Flush()
}

// SetWriteDeadline bounds the writes of the answer, for
// http.ResponseController. There is no SetReadDeadline: the server bounds
// reading a request's header and body by api.read_timeout itself.
func (w *h1Response) SetWriteDeadline(t time.Time) error {
	return w.c.rwc.SetWriteDeadline(t)
}

// finish completes the answer once the handler has returned: the header
// if nothing was sent yet, the last chunk and trailers, and a flush.
func (w *h1Response) finish() {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	w.commit(true)
	bw := w.c.bw
	if w.chunked {
		bw.WriteString("0\r\n")
		w.writeTrailers()
		bw.WriteString("\r\n")
	}
	if w.contentLength >= 0 && w.written < w.contentLength && w.req.Method != http.MethodHead && w.bodyAllowed() {
		// The body is shorter than announced: the client would take the
		// next answer for the rest of it.
		w.closeAfter = true
	}
	if bw.Flush() != nil {
		w.closeAfter = true
	}
}

// writeTrailers sends the trailers the handler declared in its Trailer
// header, and those set with http.TrailerPrefix.
func (w *h1Response) writeTrailers() {
	var t http.Header
	add := func(k string, vv []string) {
		if t == nil {
			t = http.Header{}
		}
		t[k] = vv
	}
	for _, k := range w.trailers {
		if vv, ok := w.header[k]; ok {
			add(k, vv)
		}
	}
	for k, vv := range w.header {
		if strings.HasPrefix(k, http.TrailerPrefix) {
			add(http.CanonicalHeaderKey(strings.TrimPrefix(k, http.TrailerPrefix)), vv)
		}
	}
	if t != nil {
		t.Write(w.c.bw)
	}
}
