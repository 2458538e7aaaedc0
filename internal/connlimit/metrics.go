package connlimit

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the connection series of every head, labelled by head.
type Metrics struct {
	open         *prometheus.GaugeVec
	limit        *prometheus.GaugeVec
	refused      *prometheus.CounterVec
	evicted      *prometheus.CounterVec
	acceptErrors *prometheus.CounterVec
}

// NewMetrics returns unregistered series; see Register.
func NewMetrics() *Metrics {
	return &Metrics{
		open: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "silt_connections", Help: "Open client connections, by head.",
		}, []string{"head"}),
		limit: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "silt_connections_limit", Help: "A head's connection caps: limit=max_connections or max_connections_per_client.",
		}, []string{"head", "limit"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "silt_connections_refused_total", Help: "Connections closed on accept, by head and reason (per_client: the address held its cap; max_connections: the head was full with no idle connection).",
		}, []string{"head", "reason"}),
		evicted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "silt_connections_evicted_total", Help: "Idle connections the server closed, by head and reason (max_connections: to admit a newcomer at the cap; idle_timeout: no request for the idle timeout).",
		}, []string{"head", "reason"}),
		acceptErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "silt_connections_accept_errors_total", Help: "Temporary accept failures (such as running out of file descriptors) retried after a backoff, by head.",
		}, []string{"head"}),
	}
}

// Register registers the series with reg.
func (m *Metrics) Register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.open, m.limit, m.refused, m.evicted, m.acceptErrors} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// headMetrics are one head's children, looked up once.
type headMetrics struct {
	open                         prometheus.Gauge
	refusedPerClient, refusedMax prometheus.Counter
	evictedMax, evictedIdle      prometheus.Counter
	acceptErrors                 prometheus.Counter
}

func (m *Metrics) head(head string, lim Limits) headMetrics {
	m.limit.WithLabelValues(head, "max_connections").Set(float64(lim.Max))
	m.limit.WithLabelValues(head, "max_connections_per_client").Set(float64(lim.PerClient))
	return headMetrics{
		open:             m.open.WithLabelValues(head),
		refusedPerClient: m.refused.WithLabelValues(head, ReasonPerClient),
		refusedMax:       m.refused.WithLabelValues(head, ReasonMax),
		evictedMax:       m.evicted.WithLabelValues(head, ReasonMax),
		evictedIdle:      m.evicted.WithLabelValues(head, ReasonIdleTimeout),
		acceptErrors:     m.acceptErrors.WithLabelValues(head),
	}
}
