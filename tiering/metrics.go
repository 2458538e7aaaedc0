package tiering

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	reg        prometheus.Registerer
	collectors []prometheus.Collector
	chunks     prometheus.Counter
	bytes      prometheus.Counter
	errors     prometheus.Counter
	retained   prometheus.Counter
	// What passes touch: in proportion to pending work, not to streams.
	passes          prometheus.Counter
	streamsVisited  prometheus.Counter
	segmentsVisited prometheus.Counter
	refused         prometheus.Counter
	slowed          prometheus.Counter
	rolls           prometheus.Counter
	uploadSeconds   prometheus.Histogram
	visibility      prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer, t *Tierer) (*metrics, error) {
	m := &metrics{
		reg: reg,
		chunks: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "silt_tier_chunks_sealed_total", Help: "Chunks sealed and committed to tier 2.",
		}),
		bytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "silt_tier_uploaded_bytes_total", Help: "Bytes of committed tier-2 chunks.",
		}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "silt_tier_errors_total", Help: "Failed tiering attempts (reads, uploads, commits); each is retried.",
		}),
		retained: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "silt_tier_chunks_retention_deleted_total", Help: "Tier-2 chunks deleted by stream retention.",
		}),
		passes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "silt_tier_passes_total", Help: "Tiering passes run.",
		}),
		streamsVisited: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "silt_tier_streams_visited_total", Help: "Streams a tiering pass worked on (those with pending or due work only).",
		}),
		segmentsVisited: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "silt_tier_segments_visited_total", Help: "Segments a tiering pass read tier 1 of (those with pending work only).",
		}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "silt_tier_backpressure_refused_total", Help: "Appends refused (503) because tier 1 is short of space or the backlog for tier 2 is over its bound.",
		}),
		rolls: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "silt_tier_active_file_rolls_total", Help: "Fully tiered active tier-1 files rolled and removed because tier 1 was short of space.",
		}),
		slowed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "silt_tier_backpressure_slowed_total", Help: "Appends slowed because tier 1 nears its space or backlog bound.",
		}),
		uploadSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "silt_tier_upload_seconds", Help: "Time to upload one chunk to tier 2.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10),
		}),
		// The measured lag ceiling: from the append of a chunk's oldest
		// event until the chunk is committed and visible.
		visibility: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "silt_tier_visibility_lag_seconds", Help: "Time from the append of a chunk's oldest event until the chunk is visible in tier 2.",
			Buckets: []float64{0.1, 0.25, 0.5, 1, 2, 3, 5, 10, 30, 60, 300},
		}),
	}
	backlog := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "silt_tier_backlog_bytes", Help: "Encoded bytes acknowledged but not yet in tier 2, all streams.",
	}, func() float64 {
		var n int64
		t.eachSegment(func(_ *streamState, s *segState) { n += s.pending })
		return float64(n)
	})
	lag := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "silt_tier_lag_seconds", Help: "Age of the oldest event not yet in tier 2, over all segments.",
	}, func() float64 {
		now := t.now()
		var max float64
		t.eachSegment(func(_ *streamState, s *segState) {
			if s.pending > 0 && !s.oldest.IsZero() {
				if d := now.Sub(s.oldest).Seconds(); d > max {
					max = d
				}
			}
		})
		return max
	})
	m.collectors = []prometheus.Collector{m.chunks, m.bytes, m.errors, m.retained, m.passes, m.streamsVisited, m.segmentsVisited, m.refused, m.slowed, m.rolls, m.uploadSeconds, m.visibility, backlog, lag}
	if reg == nil {
		return m, nil
	}
	for i, c := range m.collectors {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				err = errors.New("tiering: metrics already registered (one Tierer per registry)")
			}
			for _, done := range m.collectors[:i] {
				reg.Unregister(done)
			}
			return nil, err
		}
	}
	return m, nil
}

func (m *metrics) unregister() {
	if m.reg == nil {
		return
	}
	for _, c := range m.collectors {
		m.reg.Unregister(c)
	}
}
