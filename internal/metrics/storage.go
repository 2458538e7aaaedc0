package metrics

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// A Tier is one storage tier's bytes per tenant, as a function that adds
// up sizes (segment files, the catalog's chunk records) without reading
// data; at hundreds of thousands of streams it still visits every
// segment, so Storage calls it on its own schedule and never during a
// scrape.
type Tier struct {
	Name    string // the tier label: "1" or "2"
	Measure func(ctx context.Context) (map[string]int64, error)
}

// Storage exports silt_storage_bytes{tenant,tier} from figures that a
// background loop refreshes every interval; a scrape only reads the last
// ones. Create it with StartStorage and stop it with Close.
type Storage struct {
	reg       prometheus.Registerer
	tiers     []Tier
	every     time.Duration
	bytes     *prometheus.Desc
	age       *prometheus.Desc
	errs      prometheus.Counter
	cancel    context.CancelFunc
	done      chan struct{}
	first     chan struct{} // closed after the first refresh
	closeOnce sync.Once
	mu        struct {
		sync.Mutex
		byTier map[string]map[string]int64
		at     time.Time
	}
}

// StartStorage registers the storage series on reg and starts the loop
// that measures every tier at once and then every interval. The first
// measurement is the loop's, not the caller's: measuring tier 1 walks
// every stream's files, which a start must not wait for.
func StartStorage(reg prometheus.Registerer, every time.Duration, tiers ...Tier) (*Storage, error) {
	s := &Storage{
		reg: reg, tiers: tiers, every: every,
		bytes: prometheus.NewDesc("silt_storage_bytes", "Bytes a tenant holds in a tier (1: the node's log files; 2: committed chunks), as of the last refresh (metrics.storage_refresh).", []string{"tenant", "tier"}, nil),
		age:   prometheus.NewDesc("silt_storage_refreshed_timestamp_seconds", "When silt_storage_bytes was last refreshed (Unix time; absent before the first refresh).", nil, nil),
		errs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "silt_storage_refresh_errors_total", Help: "Refreshes of silt_storage_bytes that failed for a tier (the tier keeps its previous figures).",
		}),
		done:  make(chan struct{}),
		first: make(chan struct{}),
	}
	if err := reg.Register(s); err != nil {
		return nil, fmt.Errorf("metrics: register storage series: %w", err)
	}
	var ctx context.Context
	ctx, s.cancel = context.WithCancel(context.Background())
	go s.run(ctx)
	return s, nil
}

// Close stops the loop, waits for it, and unregisters the series. It may
// be called more than once.
func (s *Storage) Close() {
	s.closeOnce.Do(func() {
		s.cancel()
		<-s.done
		s.reg.Unregister(s)
	})
}

func (s *Storage) run(ctx context.Context) {
	defer close(s.done)
	s.Refresh(ctx)
	close(s.first)
	t := time.NewTicker(s.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.Refresh(ctx)
		}
	}
}

// Refresh measures every tier now. The loop calls it; tests and
// benchmarks may too.
func (s *Storage) Refresh(ctx context.Context) {
	next := make(map[string]map[string]int64, len(s.tiers))
	for _, t := range s.tiers {
		m, err := t.Measure(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			s.errs.Inc()
			s.mu.Lock()
			m = s.mu.byTier[t.Name]
			s.mu.Unlock()
		}
		next[t.Name] = m
	}
	s.mu.Lock()
	s.mu.byTier, s.mu.at = next, time.Now()
	s.mu.Unlock()
}

// Describe is part of prometheus.Collector.
func (s *Storage) Describe(ch chan<- *prometheus.Desc) {
	ch <- s.bytes
	ch <- s.age
	s.errs.Describe(ch)
}

// Collect is part of prometheus.Collector: it sends the last figures.
func (s *Storage) Collect(ch chan<- prometheus.Metric) {
	s.errs.Collect(ch)
	s.mu.Lock()
	byTier, at := s.mu.byTier, s.mu.at
	s.mu.Unlock()
	if at.IsZero() {
		return
	}
	ch <- prometheus.MustNewConstMetric(s.age, prometheus.GaugeValue, float64(at.UnixNano())/1e9)
	for tier, tenants := range byTier {
		for tenant, n := range tenants {
			ch <- prometheus.MustNewConstMetric(s.bytes, prometheus.GaugeValue, float64(n), tenant, tier)
		}
	}
}
