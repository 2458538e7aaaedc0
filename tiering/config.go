package tiering

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Config configures tiering.
type Config struct {
	Backend string     `koanf:"backend" help:"tier-2 backend: fs (a local or mounted directory), s3 (AWS S3 or an S3-compatible store) or hdfs"`
	FS      FSConfig   `koanf:"fs"`
	S3      S3Config   `koanf:"s3"`
	HDFS    HDFSConfig `koanf:"hdfs"`
	// MaxChunkBytes bounds a chunk; a single event larger than it still
	// makes a chunk of its own.
	MaxChunkBytes int64 `koanf:"max_chunk_bytes" help:"seal a chunk when it reaches this many encoded bytes"`
	// MaxLag is the lag ceiling: the longest an acknowledged event waits
	// before it is visible in tier 2. Chunks are sealed early enough
	// (MaxLag minus two scan intervals) to leave time for the upload.
	MaxLag   time.Duration `koanf:"max_lag" help:"longest an acknowledged event waits before it is visible in tier 2"`
	Interval time.Duration `koanf:"interval" help:"how often segments are checked for chunks to seal"`
	// MaxBacklogBytes, when set, is a fixed per-stream bound in place of
	// BacklogShare. Either way appends are refused (and slowed before)
	// as tier 1's free space nears MinFreeBytes (diskspace.go).
	MaxBacklogBytes int64 `koanf:"max_backlog_bytes" help:"encoded bytes of a stream not yet in tier 2 above which its appends get 503; 0 means a share of tier 1's free space instead (tiering.backlog_share)"`
	// BacklogShare bounds the node's backlog by the disk it is on, as
	// re-measured: a fixed byte count is either larger than a small disk
	// or too small for a large one.
	BacklogShare float64     `koanf:"backlog_share" help:"share (0 to 1) of tier 1's space (free space plus the backlog) that bytes not yet in tier 2 may take before appends get 503, when max_backlog_bytes is 0"`
	MinFreeBytes int64       `koanf:"min_free_bytes" help:"tier 1's filesystem must keep this many bytes free: below it appends get 503 and silt does not start; 0 means 5% of the filesystem (at least 4 MiB, at most 1 GiB)"`
	Retry        RetryConfig `koanf:"retry"`
	// Streams is how many streams a scan tiers at once. A stream's own
	// segments go one after another (their chunks commit in order); other
	// streams' uploads need not wait for it, which matters when an upload
	// takes tens of milliseconds (S3, HDFS) and many streams seal at once.
	Streams int `koanf:"streams" help:"streams tiered at once (their uploads overlap; one stream's segments go in turn)"`
	// ChunksInFlight is how many chunks are built and uploaded at once,
	// across all streams. A segment with a backlog of full chunks seals
	// up to this many together and commits them in one catalog batch;
	// each build holds about 2 MiB of buffers.
	ChunksInFlight int `koanf:"chunks_in_flight" help:"chunks built and uploaded at once across all streams (a backlog's full chunks go together)"`
}

// FSConfig configures the fs backend.
type FSConfig struct {
	Dir string `koanf:"dir" help:"tier-2 directory; empty means <core.dir>/tier2"`
}

// S3Config configures the s3 backend.
type S3Config struct {
	Endpoint string `koanf:"endpoint" help:"S3 endpoint URL (http:// or https://); empty means AWS"`
	Region   string `koanf:"region" help:"S3 region"`
	Bucket   string `koanf:"bucket" help:"bucket holding tier 2 (must exist)"`
	Prefix   string `koanf:"prefix" help:"key prefix in the bucket; objects are <prefix>/<tenant>/<stream>/segment=<id>/<chunk>"`
	// Static keys are for S3-compatible stores; on AWS the SDK's default
	// chain (environment, shared config, web identity, IMDS) is better.
	AccessKeyID     string `koanf:"access_key_id" help:"static access key id; empty means the AWS SDK's default credential chain"`
	SecretAccessKey string `koanf:"secret_access_key" secret:"true" help:"static secret access key (prefer SILT_TIERING_S3_SECRET_ACCESS_KEY over a flag)"`
	PathStyle       bool   `koanf:"path_style" help:"address the bucket in the path (http://host/bucket/key), as most S3-compatible stores need"`
	// PartSize is where an upload switches to multipart: a chunk above it
	// is streamed in parts of this size instead of buffered whole.
	PartSize int64 `koanf:"part_size" help:"uploads larger than this use multipart in parts of this size (5 MiB to 5 GiB)"`
}

// S3 bounds on multipart part sizes.
const (
	minS3PartSize = 5 << 20
	maxS3PartSize = 5 << 30
)

// Validate checks the s3 section; keys are named in full so that the
// operator knows which flag or variable to fix.
func (c S3Config) Validate() error {
	if c.Bucket == "" {
		return fmt.Errorf("tiering: backend s3 needs tiering.s3.bucket")
	}
	if c.Region == "" {
		return fmt.Errorf("tiering: tiering.s3.region must not be empty")
	}
	if c.Endpoint != "" {
		u, err := url.Parse(c.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("tiering: tiering.s3.endpoint %q: want http://host[:port] or https://host[:port]", c.Endpoint)
		}
	}
	if (c.AccessKeyID == "") != (c.SecretAccessKey == "") {
		return fmt.Errorf("tiering: set both tiering.s3.access_key_id and tiering.s3.secret_access_key, or neither (SDK default credential chain)")
	}
	if p := strings.Trim(c.Prefix, "/"); p != "" {
		for _, e := range strings.Split(p, "/") {
			if e == "" || e == "." || e == ".." {
				return fmt.Errorf("tiering: tiering.s3.prefix %q: invalid element %q", c.Prefix, e)
			}
		}
	}
	if c.PartSize < minS3PartSize || c.PartSize > maxS3PartSize {
		return fmt.Errorf("tiering: tiering.s3.part_size %d: must be between 5 MiB and 5 GiB (S3's part size limits)", c.PartSize)
	}
	return nil
}

// HDFSConfig configures the hdfs backend.
type HDFSConfig struct {
	Namenodes []string `koanf:"namenodes" help:"namenode RPC addresses (host:port, usually port 8020); list both of an HA pair and the active one is found"`
	User      string   `koanf:"user" help:"HDFS user tier 2 is written as (simple authentication); empty means the OS user running silt"`
	Dir       string   `koanf:"dir" help:"absolute HDFS directory holding tier 2; objects are <dir>/<tenant>/<stream>/segment=<id>/<chunk>"`
	// Timeout bounds each stall, not a whole transfer: a namenode or
	// datanode that stops answering must fail the attempt (retried with
	// backoff), not hang the tiering loop.
	Timeout time.Duration `koanf:"timeout" help:"longest a namenode or datanode connection may stall (connect, send or wait for an answer) before the attempt fails"`
}

// Validate checks the hdfs section, naming keys in full.
func (c HDFSConfig) Validate() error {
	if len(c.Namenodes) == 0 {
		return fmt.Errorf("tiering: backend hdfs needs tiering.hdfs.namenodes (the namenode RPC address, e.g. namenode.example:8020)")
	}
	for _, nn := range c.Namenodes {
		host, port, err := net.SplitHostPort(nn)
		if n, perr := strconv.Atoi(port); err != nil || host == "" || perr != nil || n < 1 || n > 65535 {
			return fmt.Errorf("tiering: tiering.hdfs.namenodes entry %q: want host:port", nn)
		}
	}
	if c.Dir == "" {
		return fmt.Errorf("tiering: backend hdfs needs tiering.hdfs.dir (an absolute HDFS directory such as /silt)")
	}
	if !strings.HasPrefix(c.Dir, "/") {
		return fmt.Errorf("tiering: tiering.hdfs.dir %q: must be an absolute path (start with /)", c.Dir)
	}
	if d := strings.Trim(c.Dir, "/"); d != "" {
		for _, e := range strings.Split(d, "/") {
			if e == "" || e == "." || e == ".." || strings.ContainsAny(e, ":") {
				return fmt.Errorf("tiering: tiering.hdfs.dir %q: invalid element %q", c.Dir, e)
			}
		}
	}
	if c.Timeout <= 0 {
		return fmt.Errorf("tiering: tiering.hdfs.timeout must be positive")
	}
	return nil
}

// RetryConfig is the capped exponential backoff after a failed upload.
type RetryConfig struct {
	Initial time.Duration `koanf:"initial" help:"wait after the first failed tier-2 upload"`
	Max     time.Duration `koanf:"max" help:"longest wait between tier-2 upload retries: bounds how long catch-up waits after tier 2 returns"`
}

// DefaultConfig returns the embedded defaults.
func DefaultConfig() Config {
	return Config{
		Backend:        "fs",
		S3:             S3Config{Region: "us-east-1", PartSize: 16 << 20},
		HDFS:           HDFSConfig{Timeout: 60 * time.Second},
		MaxChunkBytes:  8 << 20,
		MaxLag:         2 * time.Second,
		Interval:       250 * time.Millisecond,
		BacklogShare:   0.5,
		Streams:        4,
		ChunksInFlight: 8,
		// A short cap: a long one is how long catch-up waits after tier 2
		// returns (25.6 s after a 90 s outage with a 30 s cap).
		Retry: RetryConfig{Initial: 200 * time.Millisecond, Max: 2 * time.Second},
	}
}

// Validate checks the config.
func (c Config) Validate() error {
	switch c.Backend {
	case "fs":
	case "s3":
		if err := c.S3.Validate(); err != nil {
			return err
		}
	case "hdfs":
		if err := c.HDFS.Validate(); err != nil {
			return err
		}
	default:
		return fmt.Errorf("tiering: tiering.backend %q: want \"fs\", \"s3\" or \"hdfs\"", c.Backend)
	}
	if c.MaxChunkBytes < 1 {
		return fmt.Errorf("tiering: max_chunk_bytes must be positive")
	}
	if c.Interval <= 0 || c.MaxLag < 4*c.Interval {
		return fmt.Errorf("tiering: need 0 < interval <= max_lag/4 (interval %s, max_lag %s), so a chunk can be sealed and uploaded within the lag ceiling", c.Interval, c.MaxLag)
	}
	if c.Streams < 1 || c.Streams > 256 {
		return fmt.Errorf("tiering: streams must be 1 to 256, got %d", c.Streams)
	}
	if c.ChunksInFlight < 1 || c.ChunksInFlight > 64 {
		return fmt.Errorf("tiering: chunks_in_flight must be 1 to 64, got %d", c.ChunksInFlight)
	}
	if c.MaxBacklogBytes != 0 && c.MaxBacklogBytes < c.MaxChunkBytes {
		return fmt.Errorf("tiering: max_backlog_bytes must be 0 (a share of free space) or at least max_chunk_bytes")
	}
	if !(c.BacklogShare > 0 && c.BacklogShare <= 1) {
		return fmt.Errorf("tiering: backlog_share must be above 0 and at most 1, got %v", c.BacklogShare)
	}
	if c.MinFreeBytes < 0 {
		return fmt.Errorf("tiering: min_free_bytes must not be negative (0 means automatic)")
	}
	if c.Retry.Initial <= 0 || c.Retry.Max < c.Retry.Initial {
		return fmt.Errorf("tiering: need 0 < retry.initial <= retry.max")
	}
	return nil
}

// sealAge is the age of a chunk's oldest event at which it is sealed.
func (c Config) sealAge() time.Duration { return c.MaxLag - 2*c.Interval }

// legacyUploadDir is where older releases staged s3 uploads on tier 1's
// disk, and left part files behind when they stopped.
const legacyUploadDir = "s3-upload"

// OpenBackend opens the configured backend; coreDir is the core data
// directory, the default parent of the fs backend's directory. It does no
// network I/O: an unreachable S3 endpoint or namenode must not stop silt
// from starting, its errors surface in the Tierer's retries and status
// instead.
func OpenBackend(c Config, coreDir string) (Backend, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	// Uploads are no longer staged on tier 1; what older releases left
	// there only takes the space tiering needs to drain a full disk.
	if err := os.RemoveAll(filepath.Join(coreDir, legacyUploadDir)); err != nil {
		return nil, fmt.Errorf("remove the s3 upload staging of an older release: %w", err)
	}
	switch c.Backend {
	case "s3":
		return OpenS3(c.S3)
	case "hdfs":
		return OpenHDFS(c.HDFS)
	}
	dir := c.FS.Dir
	if dir == "" {
		dir = filepath.Join(coreDir, "tier2")
	}
	return OpenFS(dir)
}
