package jobs

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the job manager's series: few and unlabelled but for the
// end state, so that their number does not grow with queries.
type metrics struct {
	running  prometheus.GaugeFunc
	ended    *prometheus.CounterVec
	refused  prometheus.Counter
	scanned  prometheus.Counter
	rowsOut  prometheus.Counter
	webhooks *prometheus.CounterVec
}

func newMetrics(m *Manager, reg prometheus.Registerer) (*metrics, error) {
	met := &metrics{
		running: prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "silt_query_jobs_running",
			Help: "Query jobs running now."}, func() float64 { return float64(m.Running()) }),
		ended: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "silt_query_jobs_ended_total",
			Help: "Query jobs ended since the node started, by end state (succeeded, failed, cancelled)."}, []string{"state"}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{Name: "silt_query_jobs_refused_total",
			Help: "Query submissions refused because query.max_concurrent jobs already ran."}),
		scanned: prometheus.NewCounter(prometheus.CounterOpts{Name: "silt_query_scanned_events_total",
			Help: "Events that ended query jobs scanned."}),
		rowsOut: prometheus.NewCounter(prometheus.CounterOpts{Name: "silt_query_result_rows_total",
			Help: "Result rows that ended query jobs appended to their result streams."}),
		webhooks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "silt_query_webhooks_total",
			Help: "Completion webhooks by outcome: delivered, or failed after every try."}, []string{"outcome"}),
	}
	// Every label value exists from the start, so that a rate over a
	// state that has not happened yet is 0 rather than absent.
	for _, s := range []State{Succeeded, Failed, Cancelled} {
		met.ended.WithLabelValues(string(s))
	}
	met.webhooks.WithLabelValues("delivered")
	met.webhooks.WithLabelValues("failed")
	if reg == nil {
		return met, nil
	}
	for _, c := range []prometheus.Collector{met.running, met.ended, met.refused, met.scanned, met.rowsOut, met.webhooks} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return met, nil
}
