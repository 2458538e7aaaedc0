package tiering

import (
	"fmt"
	"path/filepath"
	"time"
)

// Config configures tiering.
type Config struct {
	Backend string   `koanf:"backend" help:"tier-2 backend: fs (a local or mounted directory)"`
	FS      FSConfig `koanf:"fs"`
	// MaxChunkBytes bounds a chunk; a single event larger than it still
	// makes a chunk of its own.
	MaxChunkBytes int64 `koanf:"max_chunk_bytes" help:"seal a chunk when it reaches this many encoded bytes"`
	// MaxLag is the lag ceiling: the longest an acknowledged event waits
	// before it is visible in tier 2. Chunks are sealed early enough
	// (MaxLag minus two scan intervals) to leave time for the upload.
	MaxLag   time.Duration `koanf:"max_lag" help:"longest an acknowledged event waits before it is visible in tier 2"`
	Interval time.Duration `koanf:"interval" help:"how often segments are checked for chunks to seal"`
	// MaxBacklogBytes is where Backpressure starts refusing appends, so
	// that a tier-2 outage fills neither the disk nor memory.
	MaxBacklogBytes int64       `koanf:"max_backlog_bytes" help:"encoded bytes of a stream not yet in tier 2 above which appends get 503"`
	Retry           RetryConfig `koanf:"retry"`
}

// FSConfig configures the fs backend.
type FSConfig struct {
	Dir string `koanf:"dir" help:"tier-2 directory; empty means <core.dir>/tier2"`
}

// RetryConfig is the capped exponential backoff after a failed upload.
type RetryConfig struct {
	Initial time.Duration `koanf:"initial" help:"wait after the first failed tier-2 upload"`
	Max     time.Duration `koanf:"max" help:"longest wait between tier-2 upload retries"`
}

// DefaultConfig returns the embedded defaults.
func DefaultConfig() Config {
	return Config{
		Backend:         "fs",
		MaxChunkBytes:   8 << 20,
		MaxLag:          2 * time.Second,
		Interval:        250 * time.Millisecond,
		MaxBacklogBytes: 1 << 30,
		Retry:           RetryConfig{Initial: 200 * time.Millisecond, Max: 30 * time.Second},
	}
}

// Validate checks the config.
func (c Config) Validate() error {
	switch c.Backend {
	case "fs":
	default:
		return fmt.Errorf("tiering: backend %q: only \"fs\" is available", c.Backend)
	}
	if c.MaxChunkBytes < 1 {
		return fmt.Errorf("tiering: max_chunk_bytes must be positive")
	}
	if c.Interval <= 0 || c.MaxLag < 4*c.Interval {
		return fmt.Errorf("tiering: need 0 < interval <= max_lag/4 (interval %s, max_lag %s), so a chunk can be sealed and uploaded within the lag ceiling", c.Interval, c.MaxLag)
	}
	if c.MaxBacklogBytes < c.MaxChunkBytes {
		return fmt.Errorf("tiering: max_backlog_bytes must be at least max_chunk_bytes")
	}
	if c.Retry.Initial <= 0 || c.Retry.Max < c.Retry.Initial {
		return fmt.Errorf("tiering: need 0 < retry.initial <= retry.max")
	}
	return nil
}

// sealAge is the age of a chunk's oldest event at which it is sealed.
func (c Config) sealAge() time.Duration { return c.MaxLag - 2*c.Interval }

// OpenBackend opens the configured backend; coreDir is the core data
// directory, the default parent of the fs backend's directory.
func OpenBackend(c Config, coreDir string) (Backend, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	dir := c.FS.Dir
	if dir == "" {
		dir = filepath.Join(coreDir, "tier2")
	}
	return OpenFS(dir)
}
