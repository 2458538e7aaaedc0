package core

import (
	"errors"
	"fmt"
	"time"
)

// Errors returned by the Store. Callers map them to protocol errors with
// errors.Is; the wrapped message names the tenant, stream or limit involved.
var (
	ErrNotFound    = errors.New("core: not found")
	ErrExists      = errors.New("core: already exists")
	ErrInvalid     = errors.New("core: invalid argument")
	ErrTooLarge    = errors.New("core: too large")
	ErrUnavailable = errors.New("core: temporarily unavailable")
	ErrClosed      = errors.New("core: store closed")
	ErrOutOfRange  = errors.New("core: offset out of range")
	ErrSeqConflict = errors.New("core: sequence already used")
	ErrNotEmpty    = errors.New("core: not empty")
	ErrWriterOwned = errors.New("core: writer id in use by another principal")
	// ErrLimit refuses a request that a configured limit forbids; the
	// message names the limit. Retrying does not help until streams are
	// deleted or the limit is raised.
	ErrLimit = errors.New("core: limit reached")
)

// Encoding is how a stream's events become bytes in tier 2 and on reads.
type Encoding string

const (
	// EncodingLines stores each event as one line terminated by '\n'.
	// Events containing '\n' are rejected.
	EncodingLines Encoding = "lines"
	// EncodingFramed stores each event as a 4-byte big-endian length
	// followed by the event bytes.
	EncodingFramed Encoding = "framed"
)

// Valid reports whether e is a known encoding.
func (e Encoding) Valid() bool { return e == EncodingLines || e == EncodingFramed }

// Tenant is the isolation unit; its name is a valid S3 bucket name.
type Tenant struct {
	Name     string            `json:"name"`
	Created  time.Time         `json:"created"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

// StreamConfig is fixed at creation except where noted.
type StreamConfig struct {
	Encoding Encoding          `json:"encoding"`
	Segments int               `json:"segments"`
	Metadata map[string]string `json:"metadata,omitempty"`
	// Set names the stream set the stream belongs to, for grants on
	// "<tenant>/set:<name>". It is stored under its first name, "group",
	// so that catalogs written before the rename read unchanged.
	Set string `json:"group,omitempty"`
	// Retention bounds how much of the stream tier 2 keeps.
	Retention Retention `json:"retention,omitzero"`
	// TierPrefix, if set, puts the stream's tier-2 objects under
	// <prefix>/<tenant>/<stream>/ within the configured backend target
	// (tiering.s3.prefix, tiering.hdfs.dir, tiering.fs.dir) instead of
	// <tenant>/<stream>/. It does not change the path the heads show.
	TierPrefix string `json:"tier_prefix,omitempty"`
}

// Retention bounds a stream's tier-2 history; the tier policy deletes
// whole chunks, oldest first, once either bound is exceeded. Zero fields
// keep forever. Tier 1 is never trimmed by retention: it holds only what
// is not yet in tier 2.
type Retention struct {
	// MaxAge drops a chunk once its newest event is older than this.
	MaxAge time.Duration `json:"max_age,omitempty"`
	// MaxBytes bounds the stream's tiered bytes summed over all its
	// segments; the globally oldest chunks go first.
	MaxBytes int64 `json:"max_bytes,omitempty"`
}

// Stream describes a stream and its segments.
type Stream struct {
	Tenant   string        `json:"tenant"`
	Name     string        `json:"name"`
	Config   StreamConfig  `json:"config"`
	Created  time.Time     `json:"created"`
	Segments []SegmentInfo `json:"segments,omitempty"`
}

// SegmentInfo is the state of one segment. A segment owns the routing-key
// hash range [KeyLow, KeyHigh] (inclusive, over the 32-bit FNV-1a hash).
type SegmentInfo struct {
	ID      string `json:"id"`
	KeyLow  uint32 `json:"key_low"`
	KeyHigh uint32 `json:"key_high"`
	// FirstOffset is the oldest offset still readable from tier 1.
	FirstOffset uint64 `json:"first_offset"`
	// NextOffset is the offset the next appended event will get; every
	// offset below it is durable.
	NextOffset uint64 `json:"next_offset"`
	// Bytes is the size of the segment's tier-1 log files.
	Bytes int64 `json:"bytes"`
	// The offsets and Bytes are live state: current for a segment in use,
	// and for an idle one (its log closed) as they were when it was last
	// used, which nothing changes while it is closed. They are not kept
	// in the catalog.
}

// AppendRequest appends a batch of events to one segment of a stream.
type AppendRequest struct {
	Tenant string
	Stream string
	// RoutingKey picks the segment by hash; order is kept per key. An empty
	// key spreads batches across segments round-robin, unless Segment is set.
	RoutingKey string
	// Segment, if set, names the segment directly and overrides RoutingKey.
	Segment string
	Events  [][]byte
	// WriterID and Seq make the append idempotent: a writer's batches carry
	// strictly increasing sequence numbers per segment, and a batch whose
	// Seq is not above the last one stored for that writer is not stored
	// again. An empty WriterID disables the check.
	WriterID string
	Seq      uint64
	// Owner is who sends the batch (the API passes the principal's name).
	// A writer id belongs to the first owner that used it on the stream:
	// a batch from another owner with the same id fails with
	// ErrWriterOwned, so that it can neither be stored as that writer's
	// nor make the owner's retry look like a duplicate. An empty Owner is
	// not checked (embedded callers that trust themselves).
	Owner string
}

// AppendResult is the acknowledgement of a durable append.
type AppendResult struct {
	Segment     string `json:"segment"`
	FirstOffset uint64 `json:"first_offset"`
	Count       int    `json:"count"`
	// Duplicate is true when the batch had already been stored (a retry);
	// the offsets are then those of the original batch when known.
	Duplicate bool `json:"duplicate,omitempty"`
}

// Event is one stored event.
type Event struct {
	Offset uint64
	// Time is when the batch holding the event was appended.
	Time time.Time
	Data []byte
}

// ReadRequest reads events of one segment starting at an offset.
type ReadRequest struct {
	Tenant, Stream, Segment string
	From                    uint64
	// MaxEvents and MaxBytes bound the batch returned (0 = server default).
	MaxEvents int
	MaxBytes  int
}

// ReadResult holds the events read and the offset to continue from.
type ReadResult struct {
	Events []Event
	Next   uint64
}

// Limits bound what one request may carry.
type Limits struct {
	MaxEventBytes int `koanf:"max_event_bytes" help:"largest single event accepted, in bytes"`
	MaxBatchBytes int `koanf:"max_batch_bytes" help:"largest append batch accepted, in bytes"`
	// MaxBatchEvents bounds the events of one batch: each costs memory and
	// index work beyond its bytes, so that a batch of millions of one-byte
	// events is refused as such rather than by the in-flight byte budget.
	MaxBatchEvents int `koanf:"max_batch_events" help:"most events one append batch may hold"`
	MaxSegments    int `koanf:"max_segments" help:"most segments a stream may have"`
	// MaxStreams bounds the node's stream table: each stream costs memory
	// (about a kilobyte when idle) and a catalog record whether used or not.
	MaxStreams          int `koanf:"max_streams" help:"most streams this node holds, over all tenants (0: no limit)"`
	MaxStreamsPerTenant int `koanf:"max_streams_per_tenant" help:"most streams one tenant may have (0: only max_streams bounds it)"`
}

func (l Limits) validate() error {
	if l.MaxEventBytes <= 0 || l.MaxBatchBytes < l.MaxEventBytes {
		return fmt.Errorf("core: limits: need 0 < max_event_bytes <= max_batch_bytes")
	}
	if l.MaxBatchEvents <= 0 {
		return fmt.Errorf("core: limits: max_batch_events must be positive")
	}
	if l.MaxSegments <= 0 {
		return fmt.Errorf("core: limits: max_segments must be positive")
	}
	if l.MaxStreams < 0 || l.MaxStreamsPerTenant < 0 {
		return fmt.Errorf("core: limits: max_streams and max_streams_per_tenant must not be negative (0: no limit)")
	}
	return nil
}
