package webhdfs

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/silt-io/silt/acl"
)

// A signed data URL carries sigParam = "<unix expiry>~<principal>~<mac>".
// The MAC binds expiry, principal and path, so the URL reads exactly one
// file as exactly one principal for a bounded time. Offset and length stay
// outside it: they select bytes the principal may read anyway, and Hadoop
// rewrites offset on every seek.

func (s *Server) mac(exp int64, principal, p string) string {
	m := hmac.New(sha256.New, s.signingKey)
	fmt.Fprintf(m, "webhdfs-open\x00%d\x00%s\x00%s", exp, principal, p)
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func (s *Server) sign(principal, p string) string {
	exp := s.now().Add(s.cfg.RedirectTTL).Unix()
	return fmt.Sprintf("%d~%s~%s", exp, principal, s.mac(exp, principal, p))
}

// verify authenticates a data-URL request by its signature alone, so that
// it works whether or not the client re-sends its credential.
func (s *Server) verify(sig, p string) (acl.Principal, error) {
	expS, rest, ok := strings.Cut(sig, "~")
	i := strings.LastIndexByte(rest, '~')
	if !ok || i < 0 {
		return acl.Principal{}, errAuth("malformed signed data URL; request the file again with op=OPEN")
	}
	principal, mac := rest[:i], rest[i+1:]
	exp, err := strconv.ParseInt(expS, 10, 64)
	if err != nil || !hmac.Equal([]byte(mac), []byte(s.mac(exp, principal, p))) {
		return acl.Principal{}, errAuth("invalid signature on data URL; request the file again with op=OPEN")
	}
	if !s.now().Before(time.Unix(exp, 0)) {
		return acl.Principal{}, errAuth("signed data URL expired; request the file again with op=OPEN")
	}
	return acl.Principal{Name: principal}, nil
}

// open serves op=OPEN: for a plain request what a NameNode answers (a
// redirect, or with noredirect=true its Location as JSON), for a signed
// data URL what a DataNode answers (the bytes).
func (h *handler) open() error {
	if h.q.signature != "" {
		return h.data()
	}
	if !validName(h.raw) {
		return errInvalidPath(h.raw)
	}
	fi, err := h.v.Stat(h.ctx(), h.path)
	if err != nil {
		return err
	}
	// The NameNode checks the offset of a non-empty file only, and nothing
	// else: a directory or an empty file is redirected, and the DataNode
	// refuses it on the read.
	if fi.Size > 0 && h.q.offset >= fi.Size {
		return errRange(h.q.offset, fi.Size, h.raw)
	}
	loc := h.dataURL()
	if h.q.noRedirect {
		return h.json(map[string]string{"Location": loc})
	}
	h.w.Header().Set("Location", loc)
	h.w.Header().Set("Content-Type", "application/octet-stream")
	h.w.WriteHeader(http.StatusTemporaryRedirect)
	return nil
}

// dataURL points back at this server, as the client reached it, so that
// it works through the same name, port and TLS.
func (h *handler) dataURL() string {
	scheme := "http"
	if h.r.TLS != nil {
		scheme = "https"
	}
	q := url.Values{}
	q.Set("op", "OPEN")
	q.Set(sigParam, h.s.sign(h.principal.Name, h.path))
	q.Set("offset", strconv.FormatInt(h.q.offset, 10))
	if h.q.length >= 0 {
		q.Set("length", strconv.FormatInt(h.q.length, 10))
	}
	u := url.URL{Scheme: scheme, Host: h.r.Host, Path: prefix + h.path, RawQuery: q.Encode()}
	return u.String()
}

// copyBufs holds OPEN's 1 MiB copy buffers: Hadoop re-requests the data
// URL on every seek, so reads come often.
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 1<<20); return &b }}

// data sends the requested bytes with an exact Content-Length: Hadoop
// takes the file length as offset + Content-Length. As on a DataNode, a
// read at the very end is empty and one past it fails with EOFException.
func (h *handler) data() error {
	f, err := h.v.Open(h.ctx(), h.path)
	if err != nil {
		return err
	}
	defer f.Close()
	size := f.Size()
	if size < h.q.offset {
		return errEOF(h.q.offset, size)
	}
	n := size - h.q.offset
	if h.q.length >= 0 && h.q.length < n {
		n = h.q.length
	}
	hd := h.w.Header()
	hd.Set("Content-Type", "application/octet-stream")
	hd.Set("Content-Length", strconv.FormatInt(n, 10))
	h.w.WriteHeader(http.StatusOK)
	if h.r.Method == http.MethodHead {
		return nil
	}
	// Large reads and writes: one syscall per MiB rather than per 32 KiB,
	// which is what io.Copy through the ResponseWriter would use. The
	// writer is wrapped so that its ReadFrom does not take over the copy.
	buf := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(buf)
	if _, err := io.CopyBuffer(struct{ io.Writer }{h.w}, io.NewSectionReader(f, h.q.offset, n), *buf); err != nil {
		// Headers are gone; aborting makes the client see a short body
		// against Content-Length instead of a silently truncated file.
		h.s.log.Debug("webhdfs: open: copy failed")
		panic(http.ErrAbortHandler)
	}
	return nil
}
