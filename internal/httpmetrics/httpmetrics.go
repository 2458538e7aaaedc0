// Package httpmetrics counts the requests of an HTTP protocol head (S3,
// WebHDFS) in the request series every head shares (internal/metrics):
// by operation and status class, with their duration and the body bytes
// sent. The heads' handlers stay free of metrics code; each head names
// its operations with a function of the request.
package httpmetrics

import (
	"context"
	"io"
	"net/http"
	"time"

	"github.com/silt-io/silt/internal/metrics"
)

// Wrap returns h counted in head's series, op naming each request's
// operation (from a bounded set: never a path or a name from it). When
// obs is not nil it is also told of every answered request, with who
// asked about what as the head noted it (Note).
func Wrap(head *metrics.Head, op func(*http.Request) string, obs Observer, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &recorder{ResponseWriter: w, code: http.StatusOK}
		var info *Info
		if obs != nil {
			info = new(Info)
			r = r.WithContext(context.WithValue(r.Context(), infoKey{}, info))
		}
		h.ServeHTTP(rec, r)
		took := time.Since(start)
		name := op(r)
		head.Observe(name, metrics.HTTPStatus(rec.code), rec.n, took)
		if obs != nil {
			obs(Request{Head: head.Name(), Op: name, Code: rec.code, Bytes: rec.n, Took: took, Client: r.RemoteAddr, Info: *info})
		}
	})
}

// Info is what a head learns about a request while serving it: the
// principal it authenticated and the tenant and stream it touches.
type Info struct{ Principal, Tenant, Stream string }

// Request is one answered request, for an Observer.
type Request struct {
	Head, Op string
	Code     int
	Bytes    int64
	Took     time.Duration
	Client   string
	Info
}

// An Observer is told of every answered request; it must not block
// (introspection queues the event and returns).
type Observer func(Request)

type infoKey struct{}

// Note records who asks about what for the observer of r's Wrap; empty
// arguments leave what was noted before. Without an observer it does
// nothing. Heads call it once they know (a request refused before
// authentication has no principal).
func Note(r *http.Request, principal, tenant, stream string) {
	info, _ := r.Context().Value(infoKey{}).(*Info)
	if info == nil {
		return
	}
	if principal != "" {
		info.Principal = principal
	}
	if tenant != "" {
		info.Tenant = tenant
	}
	if stream != "" {
		info.Stream = stream
	}
}

// recorder notes the status code and body bytes. It passes io.ReaderFrom
// through (sendfile for the large chunk bodies) and Flush for streaming.
type recorder struct {
	http.ResponseWriter
	code        int
	n           int64
	wroteHeader bool
}

func (r *recorder) WriteHeader(code int) {
	if !r.wroteHeader {
		r.code, r.wroteHeader = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(p []byte) (int, error) {
	r.wroteHeader = true
	n, err := r.ResponseWriter.Write(p)
	r.n += int64(n)
	return n, err
}

// ReadFrom keeps the sendfile path of the underlying writer for large
// bodies (http.ServeContent copies through io.ReaderFrom when it can).
func (r *recorder) ReadFrom(src io.Reader) (int64, error) {
	r.wroteHeader = true
	var n int64
	var err error
	if rf, ok := r.ResponseWriter.(io.ReaderFrom); ok {
		n, err = rf.ReadFrom(src)
	} else {
		n, err = io.Copy(writerOnly{r.ResponseWriter}, src)
	}
	r.n += n
	return n, err
}

// writerOnly hides any ReadFrom of w, so io.Copy does not recurse.
type writerOnly struct{ io.Writer }

func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the real writer.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
