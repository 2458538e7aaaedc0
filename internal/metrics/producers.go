package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Producers are the series of appends to existing streams, by tenant and
// (unless Config.PerStream is off) stream. Appends that fail before their
// stream is known (an unknown stream, a refused token) are not here:
// their names would be whatever a caller sends, so they are counted by
// the head's request series only.
//
// The append latency histogram is per tenant whatever PerStream says: a
// histogram is seventeen series, which per stream would make the scrape
// of 10,000 streams 170,000 series long.
type Producers struct {
	perStream                 bool
	events, bytes, duplicates *prometheus.CounterVec
	errors                    *prometheus.CounterVec
	seconds                   *prometheus.HistogramVec
}

func newProducers(perStream bool) *Producers {
	labels := []string{"tenant"}
	if perStream {
		labels = append(labels, "stream")
	}
	return &Producers{
		perStream: perStream,
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "silt_producer_events_total", Help: "Events stored by appends (retried duplicates not counted).",
		}, labels),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "silt_producer_bytes_total", Help: "Event bytes stored by appends (retried duplicates not counted).",
		}, labels),
		duplicates: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "silt_producer_duplicates_total", Help: "Appends recognised by writer id and sequence number as retries of a stored batch, acknowledged without storing it again.",
		}, labels),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "silt_producer_errors_total", Help: "Appends to an existing stream that failed, by reason (the native API's error code).",
		}, append(labels[:len(labels):len(labels)], "reason")),
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "silt_producer_append_duration_seconds", Help: "Time to store an append once its stream is known: reading the body, the fsync, the answer (successful appends and duplicates).",
			Buckets: []float64{.0002, .0005, .001, .002, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"tenant"}),
	}
}

func (p *Producers) collectors() []prometheus.Collector {
	return []prometheus.Collector{p.events, p.bytes, p.duplicates, p.errors, p.seconds}
}

// PerStream reports whether the series carry a stream label.
func (p *Producers) PerStream() bool { return p.perStream }

func (p *Producers) labels(tenant, stream string) []string {
	if p.perStream {
		return []string{tenant, stream}
	}
	return []string{tenant}
}

// Appended counts a stored batch.
func (p *Producers) Appended(tenant, stream string, events int, bytes int64, took time.Duration) {
	lv := p.labels(tenant, stream)
	p.events.WithLabelValues(lv...).Add(float64(events))
	p.bytes.WithLabelValues(lv...).Add(float64(bytes))
	p.seconds.WithLabelValues(tenant).Observe(took.Seconds())
}

// Duplicate counts a retried batch that was already stored.
func (p *Producers) Duplicate(tenant, stream string, took time.Duration) {
	p.duplicates.WithLabelValues(p.labels(tenant, stream)...).Inc()
	p.seconds.WithLabelValues(tenant).Observe(took.Seconds())
}

// Failed counts a failed append to an existing stream.
func (p *Producers) Failed(tenant, stream, reason string) {
	p.errors.WithLabelValues(append(p.labels(tenant, stream), reason)...).Inc()
}

// ForgetStream drops a deleted stream's series, so that streams created
// and deleted over time do not pile up series.
func (p *Producers) ForgetStream(tenant, stream string) {
	if !p.perStream {
		return
	}
	l := prometheus.Labels{"tenant": tenant, "stream": stream}
	for _, v := range []*prometheus.CounterVec{p.events, p.bytes, p.duplicates, p.errors} {
		v.DeletePartialMatch(l)
	}
}

// ForgetTenant drops a deleted tenant's series.
func (p *Producers) ForgetTenant(tenant string) {
	l := prometheus.Labels{"tenant": tenant}
	for _, v := range []*prometheus.CounterVec{p.events, p.bytes, p.duplicates, p.errors} {
		v.DeletePartialMatch(l)
	}
	p.seconds.DeletePartialMatch(l)
}
