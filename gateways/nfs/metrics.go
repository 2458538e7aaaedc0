package nfs

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the head's Prometheus series: calls by procedure (with
// failures apart), their latency, and the open connections.
type metrics struct {
	requests *prometheus.CounterVec
	failed   *prometheus.CounterVec
	seconds  *prometheus.HistogramVec
	conns    prometheus.Gauge
}

func newMetrics() *metrics {
	return &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "silt_nfs_requests_total", Help: "NFS and MOUNT calls answered, by procedure.",
		}, []string{"proc"}),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "silt_nfs_request_errors_total", Help: "NFS and MOUNT calls answered with an error status, by procedure.",
		}, []string{"proc"}),
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "silt_nfs_request_seconds", Help: "Time from a call's arrival to its answer being written, by procedure.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 9), // 100 µs to 6.5 s
		}, []string{"proc"}),
		conns: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "silt_nfs_connections", Help: "Open NFS/MOUNT client connections.",
		}),
	}
}

func (m *metrics) observe(proc string, took time.Duration, failed bool) {
	m.requests.WithLabelValues(proc).Inc()
	if failed {
		m.failed.WithLabelValues(proc).Inc()
	}
	m.seconds.WithLabelValues(proc).Observe(took.Seconds())
}

// RegisterMetrics registers the head's series with reg. Call it before
// Serve; without it they are kept but not exported.
func (s *Server) RegisterMetrics(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{s.met.requests, s.met.failed, s.met.seconds, s.met.conns} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
