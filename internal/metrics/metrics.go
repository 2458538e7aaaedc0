// Package metrics holds the Prometheus series that several parts of silt
// share, so that they have one name and one set of labels wherever they
// are counted: the request series of every protocol head (labelled by
// head), the producer series of the native API, and the storage each
// tenant holds in tier 1 and tier 2. Packages with series of their own
// (tiering, groups, connection admission) keep them; docs/metrics.md lists
// every series the server exposes.
package metrics

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Config is the metrics section of the server configuration.
type Config struct {
	// PerStream bounds the series count: per-stream series grow with the
	// streams of the node (two or three series for each), which a node
	// with hundreds of thousands of streams may not want in Prometheus.
	PerStream bool `koanf:"per_stream" help:"label producer series with the stream as well as the tenant; false drops the stream label and sums per tenant, for nodes with many streams (docs/metrics.md)"`
	// StorageRefresh paces the walk over every segment that the storage
	// series need (Storage): a scrape never does it.
	StorageRefresh time.Duration `koanf:"storage_refresh" help:"how often the bytes each tenant holds in tier 1 and tier 2 (silt_storage_bytes) are added up again from the sizes of segment files and the catalog"`
}

// DefaultConfig labels producer series by stream.
func DefaultConfig() Config { return Config{PerStream: true, StorageRefresh: 30 * time.Second} }

// Validate checks the refresh interval.
func (c Config) Validate() error {
	if c.StorageRefresh < time.Second {
		return fmt.Errorf("metrics: storage_refresh %v: want at least 1s", c.StorageRefresh)
	}
	return nil
}

// Set is the shared series of one server, registered on one registry.
type Set struct {
	Heads     *Heads
	Producers *Producers
}

// New registers the shared series on reg.
func New(cfg Config, reg prometheus.Registerer) (*Set, error) {
	s := &Set{Heads: newHeads(), Producers: newProducers(cfg.PerStream)}
	for _, c := range append(s.Heads.collectors(), s.Producers.collectors()...) {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				return nil, fmt.Errorf("metrics: registered twice on one registry: %w", err)
			}
			return nil, fmt.Errorf("metrics: register: %w", err)
		}
	}
	return s, nil
}

// Gatherer returns what /metrics serves: base's families (the registry the
// set was registered on) and the producer counters, which the registry
// does not hold (see Producers), in name order.
func (s *Set) Gatherer(base prometheus.Gatherer) prometheus.Gatherer {
	return prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		mfs, err := base.Gather()
		pm, perr := s.Producers.Gather()
		mfs = append(mfs, pm...)
		sort.Slice(mfs, func(i, j int) bool { return mfs[i].GetName() < mfs[j].GetName() })
		return mfs, errors.Join(err, perr)
	})
}

// NewUnregistered returns series that are kept but exported nowhere, for
// a part built without a registry (tests, embedded use).
func NewUnregistered(cfg Config) *Set {
	return &Set{Heads: newHeads(), Producers: newProducers(cfg.PerStream)}
}
