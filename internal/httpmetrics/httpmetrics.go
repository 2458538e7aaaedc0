// Package httpmetrics instruments an HTTP head with Prometheus metrics:
// requests by method and status code, request duration, and response
// bytes, labelled with the head's name. The native API has its own, finer
// route-level metrics; this is for the protocol heads (S3, WebHDFS), whose
// handlers stay free of metrics code.
package httpmetrics

import (
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics holds the collectors shared by every wrapped head.
type Metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	bytes    *prometheus.CounterVec
}

// New registers the collectors on reg.
func New(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "silt_head_requests_total", Help: "HTTP requests served by a protocol head, by method and status code.",
		}, []string{"head", "method", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "silt_head_request_duration_seconds", Help: "Time to serve a protocol head's request, to the last byte.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10),
		}, []string{"head", "method"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "silt_head_response_bytes_total", Help: "Response body bytes sent by a protocol head.",
		}, []string{"head"}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.duration, m.bytes} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Wrap returns h instrumented under the head label.
func (m *Metrics) Wrap(head string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &recorder{ResponseWriter: w, code: http.StatusOK}
		h.ServeHTTP(rec, r)
		method := r.Method
		switch method {
		case http.MethodGet, http.MethodHead, http.MethodPut, http.MethodPost, http.MethodDelete, http.MethodOptions:
		default:
			method = "other" // bound the label's values
		}
		m.requests.WithLabelValues(head, method, strconv.Itoa(rec.code)).Inc()
		m.duration.WithLabelValues(head, method).Observe(time.Since(start).Seconds())
		m.bytes.WithLabelValues(head).Add(float64(rec.n))
	})
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
