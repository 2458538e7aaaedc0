package api

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	requests       *prometheus.CounterVec
	duration       *prometheus.HistogramVec
	appendedEvents prometheus.Counter
	appendedBytes  prometheus.Counter
	inflightBytes  prometheus.Gauge
	rejected       prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		// route is the ServeMux pattern, never the path: paths carry
		// tenant and stream names, which would make the series unbounded.
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "silt_api_requests_total",
			Help: "Native API requests by route pattern and status code.",
		}, []string{"route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "silt_api_request_duration_seconds",
			Help: "Native API request durations by route pattern (long-polls and follows included).",
			// Appends wait for an fsync: most take around a millisecond,
			// so the buckets start well below that.
			Buckets: []float64{.0002, .0005, .001, .002, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"route"}),
		appendedEvents: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "silt_api_appended_events_total",
			Help: "Events stored through the native API (retried duplicates not counted).",
		}),
		appendedBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "silt_api_appended_bytes_total",
			Help: "Event bytes stored through the native API (retried duplicates not counted).",
		}),
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
	if m.requests, err = register(reg, m.requests); err != nil {
		return nil, err
	}
	if m.duration, err = register(reg, m.duration); err != nil {
		return nil, err
	}
	if m.appendedEvents, err = register(reg, m.appendedEvents); err != nil {
		return nil, err
	}
	if m.appendedBytes, err = register(reg, m.appendedBytes); err != nil {
		return nil, err
	}
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

func (m *metrics) observe(route string, status int, d time.Duration) {
	m.requests.WithLabelValues(route, strconv.Itoa(status)).Inc()
	m.duration.WithLabelValues(route).Observe(d.Seconds())
}
