// Package groups keeps silt's reader groups: named sets of readers that
// share the reading of one or more streams of a tenant, with the
// positions they committed, the spread of segments over the live readers,
// and how far behind they are.
//
// Everything durable (a group's streams and settings, its generation, its
// members and their segments, the committed positions) lives in the
// catalog under "groups/", written with one synced commit per change, so
// that the state moves unchanged to another implementation of the same
// key-value seam (etcd in cluster mode). The Coordinator's memory is a
// cache of those keys plus the time each reader was last heard from; it
// is rebuilt from the catalog on start, where every member recorded gets
// a full session timeout to be heard from again.
package groups

import (
	"errors"
	"fmt"
	"time"

	"github.com/silt-io/silt/core/names"
)

// Errors of the package. The API maps them to statuses (404, 409, 400).
var (
	ErrNotFound = errors.New("groups: not found")
	ErrExists   = errors.New("groups: already exists")
	ErrInvalid  = errors.New("groups: invalid argument")
	// ErrConflict is a request that the group's state refuses: a reset or
	// delete while readers are live, or a group whose stream was deleted.
	ErrConflict = errors.New("groups: conflict")
	// ErrRejoin fences a reader: its generation is no longer the group's,
	// or its session expired. The reader must join again and read from
	// the positions the join returns.
	ErrRejoin = errors.New("groups: rejoin the group")
)

// Config bounds what groups may ask for.
type Config struct {
	DefaultSessionTimeout time.Duration `koanf:"default_session_timeout" help:"how long a reader of a group may go without a heartbeat before its segments go to the others, when the group does not set its own"`
	MinSessionTimeout     time.Duration `koanf:"min_session_timeout" help:"shortest session timeout a group may set"`
	MaxSessionTimeout     time.Duration `koanf:"max_session_timeout" help:"longest session timeout a group may set"`
	MaxMembers            int           `koanf:"max_members" help:"most live readers one group may have"`
	MaxStreams            int           `koanf:"max_streams" help:"most streams one group may read"`
}

// DefaultConfig returns the embedded defaults.
func DefaultConfig() Config {
	return Config{
		DefaultSessionTimeout: 10 * time.Second,
		MinSessionTimeout:     time.Second,
		MaxSessionTimeout:     5 * time.Minute,
		MaxMembers:            1000,
		MaxStreams:            64,
	}
}

// Validate checks the config.
func (c Config) Validate() error {
	if c.MinSessionTimeout <= 0 || c.MaxSessionTimeout < c.MinSessionTimeout {
		return fmt.Errorf("groups: need 0 < min_session_timeout <= max_session_timeout")
	}
	if c.DefaultSessionTimeout < c.MinSessionTimeout || c.DefaultSessionTimeout > c.MaxSessionTimeout {
		return fmt.Errorf("groups: default_session_timeout %v is outside [%v, %v]", c.DefaultSessionTimeout, c.MinSessionTimeout, c.MaxSessionTimeout)
	}
	if c.MaxMembers <= 0 || c.MaxStreams <= 0 {
		return fmt.Errorf("groups: max_members and max_streams must be positive")
	}
	return nil
}

// SegmentRef names one segment of one stream of a group's tenant.
type SegmentRef struct {
	Stream  string `json:"stream"`
	Segment string `json:"segment"`
}

func (r SegmentRef) String() string { return r.Stream + "/" + r.Segment }

func (r SegmentRef) less(o SegmentRef) bool {
	if r.Stream != o.Stream {
		return r.Stream < o.Stream
	}
	if len(r.Segment) != len(o.Segment) { // numeric ids sort as numbers
		return len(r.Segment) < len(o.Segment)
	}
	return r.Segment < o.Segment
}

// Position is where a group reads a segment next.
type Position struct {
	Stream  string `json:"stream"`
	Segment string `json:"segment"`
	// Offset is the next offset to read: every event below it is done.
	Offset uint64 `json:"offset"`
	// Done is set once the segment is sealed (after a split or merge) and
	// read to its end. A segment's successors are handed out only when
	// all of its predecessors are done (see assignable), so that events of
	// one routing key are read in order across a scaling event.
	Done bool `json:"done,omitempty"`
	// Committed is when the position was last stored.
	Committed time.Time `json:"committed,omitzero"`
}

func (p Position) ref() SegmentRef { return SegmentRef{p.Stream, p.Segment} }

// Start kinds: where a group, or a reset, begins.
const (
	StartHead      = "head"      // the oldest event either tier still holds
	StartTail      = "tail"      // only events appended from now on
	StartTime      = "time"      // the first event appended at or after Time
	StartPositions = "positions" // the given positions; other segments at head
)

// Start is where a group, or a reset, begins.
type Start struct {
	Kind      string     `json:"kind"`
	Time      time.Time  `json:"time,omitzero"`
	Positions []Position `json:"positions,omitempty"`
}

func (s Start) validate() error {
	switch s.Kind {
	case StartHead, StartTail:
	case StartTime:
		if s.Time.IsZero() {
			return fmt.Errorf("%w: start %q needs a time (RFC 3339)", ErrInvalid, s.Kind)
		}
	case StartPositions:
		if len(s.Positions) == 0 {
			return fmt.Errorf("%w: start %q needs positions", ErrInvalid, s.Kind)
		}
	default:
		return fmt.Errorf("%w: start %q: want head, tail, time or positions", ErrInvalid, s.Kind)
	}
	return nil
}

// Member is a live reader and the segments it reads.
type Member struct {
	ID       string       `json:"id"`
	Segments []SegmentRef `json:"segments"`
}

// Group is what the catalog keeps for a group (besides positions).
type Group struct {
	Tenant  string    `json:"tenant"`
	Name    string    `json:"name"`
	Streams []string  `json:"streams"`
	Created time.Time `json:"created"`
	// SessionTimeout is how long a member may go unheard before its
	// segments are handed to the others.
	SessionTimeout time.Duration `json:"session_timeout"`
	// Generation changes with every change of membership or assignment;
	// commits and heartbeats from an older one are refused.
	Generation uint64   `json:"generation"`
	Members    []Member `json:"members"`
	// Resets counts the resets: a reader that sees it change drops the
	// positions it kept locally and reads from the group's.
	Resets uint64 `json:"resets,omitempty"`
	// Incarnations are the streams' incarnations at creation: a stream
	// deleted and created again under its name is not the group's stream.
	Incarnations map[string]int64 `json:"incarnations"`
}

// CreateRequest creates a group.
type CreateRequest struct {
	Name           string
	Streams        []string
	SessionTimeout time.Duration // 0: the configured default
	Start          Start
}

// memberIDRule bounds reader session ids: they are echoed in answers,
// logs and catalog keys.
const memberIDRule = "1 to 128 characters of letters, digits, '.', '_' and '-'"

func checkMemberID(id string) error {
	ok := len(id) >= 1 && len(id) <= 128
	for i := 0; ok && i < len(id); i++ {
		c := id[i]
		ok = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
	}
	if !ok {
		return fmt.Errorf("%w: reader session id %q: want %s", ErrInvalid, id, memberIDRule)
	}
	return nil
}

// checkName applies the stream-name rule to group names, so that a group
// name is safe in paths and keys the same way.
func checkName(name string) error {
	if err := names.Stream(name); err != nil {
		return fmt.Errorf("%w: group %q: want %s", ErrInvalid, name, names.StreamRule)
	}
	return nil
}
