package api

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	smetrics "github.com/silt-io/silt/internal/metrics"
)

// metrics are the series of the API's own machinery. Its requests are
// counted in the series every head shares (silt_head_*, with op the route
// pattern) and its appends in the producer series (silt_producer_*), both
// from internal/metrics, which the server gets through UseMetrics.
type metrics struct {
	inflightBytes prometheus.Gauge
	rejected      prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		inflightBytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "silt_api_inflight_bytes",
			Help: "Append bytes currently held in memory, against max_inflight_bytes.",
		}),
		rejected: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "silt_api_overload_rejections_total",
			Help: "Appends refused with 503 because max_inflight_bytes was reached.",
		}),
	}
	var err error
	if m.inflightBytes, err = register(reg, m.inflightBytes); err != nil {
		return nil, err
	}
	if m.rejected, err = register(reg, m.rejected); err != nil {
		return nil, err
	}
	return m, nil
}

// register adds c to reg, or reuses the collector already registered under
// the same name, so that a server rebuilt on the same registry (a restart
// inside one process, tests) keeps counting instead of failing.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing, nil
			}
		}
		return c, fmt.Errorf("api: register metrics: %w", err)
	}
	return c, nil
}

// UseMetrics makes the server count its requests and appends in set's
// series (the server wiring shares one set between every head). Call it
// before Serve; without it the counts are kept but exported nowhere.
//
// set must be registered on the registry the server was built with:
// /metrics then serves that registry's series and the set's producer
// counters, which no registry holds (see smetrics.Producers).
func (s *Server) UseMetrics(set *smetrics.Set) {
	s.head, s.producers = set.Heads.Head("api"), set.Producers
	s.gather = set.Gatherer(s.gather)
}
