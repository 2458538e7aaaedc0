package introspect

import (
	"errors"
	"fmt"
	"time"
)

// Config is the introspect section of the server configuration.
type Config struct {
	Enabled bool `koanf:"enabled" help:"record requests, denials, tiering outcomes and metric snapshots as events in the streams of tenant silt-system (docs/introspection.md)"`
	// Retention is the system streams' tier-2 retention. A stream's
	// retention is fixed when it is created, so a changed value applies
	// to the system streams created after the change.
	Retention      time.Duration `koanf:"retention" help:"how long the system streams keep events (their retention max_age)"`
	RetentionBytes int64         `koanf:"retention_bytes" help:"most tier-2 bytes each system stream keeps (0: only retention bounds it)"`
	QueueSize      int           `koanf:"queue_size" help:"events held in memory waiting to be written; when full, new events are dropped and counted (silt_introspect_events_dropped_total)"`
	FlushInterval  time.Duration `koanf:"flush_interval" help:"longest an event waits in the queue before its batch is written"`
	BatchEvents    int           `koanf:"batch_events" help:"most events written in one batch (one append per stream)"`
	// SnapshotInterval paces the metric snapshots; 0 turns them off.
	SnapshotInterval time.Duration `koanf:"snapshot_interval" help:"how often a snapshot of key metrics is written to server_wide.metrics (0: never)"`
}

// DefaultConfig records everything, keeping a week.
func DefaultConfig() Config {
	return Config{
		Enabled:          true,
		Retention:        7 * 24 * time.Hour,
		RetentionBytes:   1 << 30,
		QueueSize:        16384,
		FlushInterval:    time.Second,
		BatchEvents:      4096,
		SnapshotInterval: time.Minute,
	}
}

// Validate checks the bounds.
func (c Config) Validate() error {
	var errs []error
	if c.Retention < time.Minute {
		errs = append(errs, fmt.Errorf("introspect.retention %v: want at least 1m", c.Retention))
	}
	if c.RetentionBytes < 0 {
		errs = append(errs, fmt.Errorf("introspect.retention_bytes must not be negative"))
	}
	if c.QueueSize < 1 || c.QueueSize > 1<<22 {
		errs = append(errs, fmt.Errorf("introspect.queue_size %d: want 1 to %d", c.QueueSize, 1<<22))
	}
	if c.FlushInterval < time.Millisecond || c.FlushInterval > time.Minute {
		errs = append(errs, fmt.Errorf("introspect.flush_interval %v: want 1ms to 1m", c.FlushInterval))
	}
	if c.BatchEvents < 1 || c.BatchEvents > 1<<16 {
		errs = append(errs, fmt.Errorf("introspect.batch_events %d: want 1 to %d", c.BatchEvents, 1<<16))
	}
	if c.SnapshotInterval != 0 && c.SnapshotInterval < time.Second {
		errs = append(errs, fmt.Errorf("introspect.snapshot_interval %v: want 0 (off) or at least 1s", c.SnapshotInterval))
	}
	return errors.Join(errs...)
}
