package metrics

import (
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
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
//
// The per-stream counters are not collectors of a registry: a registry
// checks and sorts every series it gathers, which at 10,000 streams is
// most of a scrape's time. They are kept in one map and turned into
// metric families by Gather, already sorted and valid by construction,
// and Set.Gatherer adds them to the registry's (the histogram is an
// ordinary registered collector).
type Producers struct {
	perStream bool
	seconds   *prometheus.HistogramVec
	mu        struct {
		sync.RWMutex
		series map[producerKey]*producerSeries
		sorted []*producerSeries // series in label order; nil when stale
	}
}

type producerKey struct{ tenant, stream string }

// producerSeries are one stream's counters (one tenant's, without
// PerStream). The label pairs are built once and shared by every scrape.
type producerSeries struct {
	key                       producerKey
	labels                    []*dto.LabelPair // sorted by name
	events, bytes, duplicates atomic.Uint64
	mu                        sync.Mutex
	errors                    map[string]uint64 // by reason; rare
}

// The producer families: name and help.
var (
	producerEvents     = family{"silt_producer_events_total", "Events stored by appends (retried duplicates not counted)."}
	producerBytes      = family{"silt_producer_bytes_total", "Event bytes stored by appends (retried duplicates not counted)."}
	producerDuplicates = family{"silt_producer_duplicates_total", "Appends recognised by writer id and sequence number as retries of a stored batch, acknowledged without storing it again."}
	producerErrors     = family{"silt_producer_errors_total", "Appends to an existing stream that failed, by reason (the native API's error code)."}
)

type family struct{ name, help string }

func newProducers(perStream bool) *Producers {
	p := &Producers{
		perStream: perStream,
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "silt_producer_append_duration_seconds", Help: "Time to store an append once its stream is known: reading the body, the fsync, the answer (successful appends and duplicates).",
			Buckets: []float64{.0002, .0005, .001, .002, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"tenant"}),
	}
	p.mu.series = map[producerKey]*producerSeries{}
	return p
}

// collectors are what the registry holds: the histogram only.
func (p *Producers) collectors() []prometheus.Collector {
	return []prometheus.Collector{p.seconds}
}

// PerStream reports whether the series carry a stream label.
func (p *Producers) PerStream() bool { return p.perStream }

func (p *Producers) get(tenant, stream string) *producerSeries {
	if !p.perStream {
		stream = ""
	}
	k := producerKey{tenant, stream}
	p.mu.RLock()
	s := p.mu.series[k]
	p.mu.RUnlock()
	if s != nil {
		return s
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if s = p.mu.series[k]; s == nil {
		s = &producerSeries{key: k}
		if p.perStream {
			s.labels = append(s.labels, labelPair("stream", stream))
		}
		s.labels = append(s.labels, labelPair("tenant", tenant))
		p.mu.series[k] = s
		p.mu.sorted = nil
	}
	return s
}

func labelPair(name, value string) *dto.LabelPair {
	return &dto.LabelPair{Name: &name, Value: &value}
}

// Appended counts a stored batch.
func (p *Producers) Appended(tenant, stream string, events int, bytes int64, took time.Duration) {
	s := p.get(tenant, stream)
	s.events.Add(uint64(events))
	s.bytes.Add(uint64(bytes))
	p.seconds.WithLabelValues(tenant).Observe(took.Seconds())
}

// Duplicate counts a retried batch that was already stored.
func (p *Producers) Duplicate(tenant, stream string, took time.Duration) {
	p.get(tenant, stream).duplicates.Add(1)
	p.seconds.WithLabelValues(tenant).Observe(took.Seconds())
}

// Failed counts a failed append to an existing stream.
func (p *Producers) Failed(tenant, stream, reason string) {
	s := p.get(tenant, stream)
	s.mu.Lock()
	if s.errors == nil {
		s.errors = map[string]uint64{}
	}
	s.errors[reason]++
	s.mu.Unlock()
}

// ForgetStream drops a deleted stream's series, so that streams created
// and deleted over time do not pile up series.
func (p *Producers) ForgetStream(tenant, stream string) {
	if !p.perStream {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.mu.series[producerKey{tenant, stream}]; ok {
		delete(p.mu.series, producerKey{tenant, stream})
		p.mu.sorted = nil
	}
}

// ForgetTenant drops a deleted tenant's series.
func (p *Producers) ForgetTenant(tenant string) {
	p.mu.Lock()
	for k := range p.mu.series {
		if k.tenant == tenant {
			delete(p.mu.series, k)
		}
	}
	p.mu.sorted = nil
	p.mu.Unlock()
	p.seconds.DeletePartialMatch(prometheus.Labels{"tenant": tenant})
}

// ordered returns the series sorted as their labels are (stream, then
// tenant: label names in order), sorting again only after a change.
func (p *Producers) ordered() []*producerSeries {
	p.mu.RLock()
	sorted := p.mu.sorted
	p.mu.RUnlock()
	if sorted != nil {
		return sorted
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.sorted == nil {
		s := make([]*producerSeries, 0, len(p.mu.series))
		for _, ps := range p.mu.series {
			s = append(s, ps)
		}
		sort.Slice(s, func(i, j int) bool {
			if c := strings.Compare(s[i].key.stream, s[j].key.stream); c != 0 {
				return c < 0
			}
			return s[i].key.tenant < s[j].key.tenant
		})
		p.mu.sorted = s
	}
	return p.mu.sorted
}

// Gather returns the producer counter families (those with a series),
// sorted by name, each family's series in label order.
func (p *Producers) Gather() ([]*dto.MetricFamily, error) {
	series := p.ordered()
	events, bytes := newFamily(producerEvents, len(series)), newFamily(producerBytes, len(series))
	dups, errs := newFamily(producerDuplicates, 0), newFamily(producerErrors, 0)
	// One backing array per scrape for the counters and metrics.
	counters := make([]dto.Counter, 0, 2*len(series))
	metrics := make([]dto.Metric, 0, 2*len(series))
	add := func(f *dto.MetricFamily, labels []*dto.LabelPair, v uint64) {
		counters = append(counters, dto.Counter{Value: proto(float64(v))})
		metrics = append(metrics, dto.Metric{Label: labels, Counter: &counters[len(counters)-1]})
		f.Metric = append(f.Metric, &metrics[len(metrics)-1])
	}
	for _, s := range series {
		// A series made by a failure alone has stored nothing: like a
		// CounterVec child never touched, it is not shown.
		if e := s.events.Load(); e > 0 || s.bytes.Load() > 0 {
			add(events, s.labels, e)
			add(bytes, s.labels, s.bytes.Load())
		}
		if d := s.duplicates.Load(); d > 0 {
			add(dups, s.labels, d)
		}
		s.mu.Lock()
		if len(s.errors) > 0 {
			reasons := make([]string, 0, len(s.errors))
			for r := range s.errors {
				reasons = append(reasons, r)
			}
			sort.Strings(reasons)
			for _, r := range reasons {
				// reason sorts before stream and tenant.
				add(errs, append([]*dto.LabelPair{labelPair("reason", r)}, s.labels...), s.errors[r])
			}
		}
		s.mu.Unlock()
	}
	var out []*dto.MetricFamily
	for _, f := range []*dto.MetricFamily{bytes, dups, errs, events} { // by name
		if len(f.Metric) > 0 {
			out = append(out, f)
		}
	}
	if len(errs.Metric) > 1 {
		// Errors were appended stream by stream, reason first within
		// each: put them in label order (reason, stream, tenant).
		sort.SliceStable(errs.Metric, func(i, j int) bool {
			return errs.Metric[i].Label[0].GetValue() < errs.Metric[j].Label[0].GetValue()
		})
	}
	return out, nil
}

func newFamily(f family, n int) *dto.MetricFamily {
	typ := dto.MetricType_COUNTER
	name, help := f.name, f.help
	return &dto.MetricFamily{Name: &name, Help: &help, Type: &typ, Metric: make([]*dto.Metric, 0, n)}
}

func proto(v float64) *float64 { return &v }
