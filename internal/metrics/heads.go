package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Status classes of an answered request, the same for every head: HTTP
// heads map 1xx–3xx to ok, 4xx to client_error and 5xx to server_error;
// NFS maps NFS3_OK to ok, a failure of the server (I/O error, server
// fault) to server_error and any other error status to client_error.
const (
	StatusOK          = "ok"
	StatusClientError = "client_error"
	StatusServerError = "server_error"
)

// HTTPStatus is the class of an HTTP status code.
func HTTPStatus(code int) string {
	switch {
	case code >= 500:
		return StatusServerError
	case code >= 400:
		return StatusClientError
	default:
		return StatusOK
	}
}

// Heads are the request series of every protocol head. The op label is
// the head's operation (the native API's route pattern, the S3 action, the
// WebHDFS op, the NFS procedure): a bounded set per head, never a path.
// Open connections are silt_connections{head} (internal/connlimit).
type Heads struct {
	requests *prometheus.CounterVec
	seconds  *prometheus.HistogramVec
	bytes    *prometheus.CounterVec
}

func newHeads() *Heads {
	return &Heads{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "silt_head_requests_total", Help: "Requests answered by a head, by operation and status class (ok, client_error, server_error).",
		}, []string{"head", "op", "status"}),
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "silt_head_request_duration_seconds", Help: "Time from a request's arrival to the last byte of its answer, by head and operation (long-polls and follows included).",
			// Appends wait for an fsync and NFS reads of cached pages
			// take tens of microseconds, so the buckets start low.
			Buckets: []float64{.0001, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 10, 60},
		}, []string{"head", "op"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "silt_head_response_bytes_total", Help: "Bytes a head sent in answers (bodies for HTTP heads, whole replies for NFS).",
		}, []string{"head"}),
	}
}

func (h *Heads) collectors() []prometheus.Collector {
	return []prometheus.Collector{h.requests, h.seconds, h.bytes}
}

// Head returns the series of one head.
func (h *Heads) Head(name string) *Head {
	return &Head{h: h, name: name, bytes: h.bytes.WithLabelValues(name)}
}

// Head is one head's handle on the request series.
type Head struct {
	h     *Heads
	name  string
	bytes prometheus.Counter
}

// Name is the head label.
func (h *Head) Name() string { return h.name }

// Observe counts one answered request.
func (h *Head) Observe(op, status string, sent int64, took time.Duration) {
	h.h.requests.WithLabelValues(h.name, op, status).Inc()
	h.h.seconds.WithLabelValues(h.name, op).Observe(took.Seconds())
	if sent > 0 {
		h.bytes.Add(float64(sent))
	}
}
