package client

import "time"

// Stream encodings; see docs/api.md.
const (
	EncodingLines  = "lines"
	EncodingFramed = "framed"
)

// Tenant is the isolation unit; its name is a valid S3 bucket name.
type Tenant struct {
	Name     string            `json:"name"`
	Created  time.Time         `json:"created"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

// StreamSpec describes a stream to create. Zero fields take the server's
// defaults (encoding lines, the default segment count).
type StreamSpec struct {
	Name     string            `json:"name"`
	Encoding string            `json:"encoding,omitempty"`
	Segments int               `json:"segments,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
	// Set puts the stream in a stream set, for grants on
	// "tenant/set:<Set>".
	Set string `json:"set,omitempty"`
	// Deprecated: Group is the former name of Set; the server still
	// accepts it. Give Set.
	Group string `json:"group,omitempty"`
	// Retention, if set, bounds the stream's tier-2 history.
	Retention *Retention `json:"retention,omitempty"`
	// TierPrefix, if set, puts the stream's tier-2 objects under
	// <prefix>/<tenant>/<stream>/ in the server's tier-2 target.
	TierPrefix string `json:"tier_prefix,omitempty"`
}

// Retention bounds a stream's tier-2 history: whole chunks are deleted,
// oldest first, once their newest event is older than MaxAge or while the
// stream's tier-2 bytes exceed MaxBytes. Zero (empty) bounds keep forever.
type Retention struct {
	// MaxAge is a Go duration string ("720h").
	MaxAge   string `json:"max_age,omitempty"`
	MaxBytes int64  `json:"max_bytes,omitempty"`
}

// StreamConfig is a stream's configuration, fixed at creation.
type StreamConfig struct {
	Encoding string            `json:"encoding"`
	Segments int               `json:"segments"`
	Metadata map[string]string `json:"metadata,omitempty"`
	Set      string            `json:"set,omitempty"`
	// Deprecated: Group is Set under its former name, as servers before
	// the rename sent it.
	Group      string     `json:"group,omitempty"`
	Retention  *Retention `json:"retention,omitempty"`
	TierPrefix string     `json:"tier_prefix,omitempty"`
}

// Segment is one segment's state. It owns routing keys whose KeyHash is in
// [KeyLow, KeyHigh].
type Segment struct {
	ID          string `json:"id"`
	KeyLow      uint32 `json:"key_low"`
	KeyHigh     uint32 `json:"key_high"`
	FirstOffset uint64 `json:"first_offset"`
	NextOffset  uint64 `json:"next_offset"`
	Bytes       int64  `json:"bytes"`
}

// Stream describes a stream. Segments is filled by GetStream, not by
// ListStreams.
type Stream struct {
	Tenant   string       `json:"tenant"`
	Name     string       `json:"name"`
	Config   StreamConfig `json:"config"`
	Created  time.Time    `json:"created"`
	Segments []Segment    `json:"segments,omitempty"`
	// Tiering is set by GetStream when the server runs a tier policy.
	Tiering *Tiering `json:"tiering,omitempty"`
}

// Tiering is a stream's tier-2 state, per segment.
type Tiering struct {
	Segments []SegmentTiering `json:"segments"`
}

// SegmentTiering is one segment's tier-2 state.
type SegmentTiering struct {
	Segment      string `json:"segment"`
	TieredOffset uint64 `json:"tiered_offset"`
	// FirstTieredOffset is the oldest offset tier 2 still holds.
	FirstTieredOffset uint64    `json:"first_tiered_offset"`
	Chunks            int       `json:"chunks"`
	TieredBytes       int64     `json:"tiered_bytes"`
	PendingBytes      int64     `json:"pending_bytes"`
	LagNanos          int64     `json:"lag_ns"`
	LastSeal          time.Time `json:"last_seal,omitzero"`
	LastError         string    `json:"last_error,omitempty"`
}

// AppendOptions picks where a batch goes and makes it idempotent.
type AppendOptions struct {
	// Key routes the batch by hash; Segment names the segment directly.
	// Give at most one; with neither the server spreads batches
	// round-robin.
	Key, Segment string
	// WriterID and Seq make the append exactly-once: a batch whose Seq is
	// not above the last one the writer stored in the segment is not
	// stored again, and is acknowledged as a duplicate. They also make
	// the append safe to retry, so only then does the client retry it
	// after it may have reached the server.
	WriterID string
	Seq      uint64
}

// AppendResult acknowledges a durable append: the batch's events got
// offsets FirstOffset … FirstOffset+Count-1 in Segment.
type AppendResult struct {
	Segment     string `json:"segment"`
	FirstOffset uint64 `json:"first_offset"`
	Count       int    `json:"count"`
	Duplicate   bool   `json:"duplicate"`
}

// ReadOptions say where a read starts and how long it may wait.
type ReadOptions struct {
	// Cursor continues a read of every segment: "" starts at the
	// beginning, "end" at the current end, anything else is a NextCursor
	// from an earlier read.
	Cursor string
	// Segment reads one segment instead, from From (or from its end with
	// FromEnd). From 0 means its oldest retained event.
	Segment string
	From    uint64
	FromEnd bool
	// Max is the most events returned (server default 1000, cap 10000).
	Max int
	// Wait long-polls when nothing is there yet (capped by the server's
	// max_wait).
	Wait time.Duration
}

// Event is one stored event.
type Event struct {
	Segment string    `json:"segment"`
	Offset  uint64    `json:"offset"`
	Time    time.Time `json:"time"`
	Data    []byte    `json:"data"`
}

// Batch is the result of a read; pass NextCursor to the next read to
// continue where this one ended.
type Batch struct {
	Events     []Event
	NextCursor string
}

// Principal is a user or service account.
type Principal struct {
	Name    string    `json:"name"`
	Created time.Time `json:"created"`
}

// Token is a principal's bearer token. Secret is set only in the answer to
// IssueToken: the server does not keep it.
type Token struct {
	ID        string    `json:"id"`
	Principal string    `json:"principal"`
	Label     string    `json:"label,omitempty"`
	Created   time.Time `json:"created"`
	// Expires is zero for a token that never expires.
	Expires time.Time `json:"expires,omitzero"`
	Secret  string    `json:"token,omitempty"`
}

// Grant allows a principal an action ("read", "append", "admin") on a
// resource pattern ("*", "tenant", "tenant/stream", "tenant/glob*",
// "tenant/set:s"; "tenant/group:s" is the deprecated spelling of the
// last).
type Grant struct {
	ID        string    `json:"id"`
	Principal string    `json:"principal"`
	Action    string    `json:"action"`
	Resource  string    `json:"resource"`
	Created   time.Time `json:"created"`
}
