package core

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"time"

	"github.com/silt-io/silt/core/segment"
)

// Hooks for the tiering package: it enumerates streams, waits for commits
// and truncates tier 1 once a range is durable in tier 2 and recorded in
// the catalog. They live apart from store.go because only tiering uses them.

// EachStream calls fn with every stream's catalog record, ordered by
// tenant and name, without segment state (the segments' ranges only): it
// loads no stream and opens no log, so that tiering's one walk at start
// costs a catalog scan, not a description of every stream. Created
// identifies the stream's incarnation: a stream deleted and re-created
// under the same name gets a new one.
func (s *Store) EachStream(fn func(Stream) error) error {
	if s.isClosed() {
		return ErrClosed
	}
	return s.cat.Scan([]byte(keyStream), nil, func(k, v []byte) error {
		var r streamRecord
		if err := json.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("decode stream record %s: %w", k, err)
		}
		return fn(r.Stream)
	})
}

// TruncateBefore drops the segment's tier-1 log files all of whose events
// are below offset (never the active file). Callers must have made those
// events durable elsewhere first; reads below the new first offset then
// fail with ErrOutOfRange.
func (s *Store) TruncateBefore(tenant, stream, segmentID string, offset uint64) error {
	st, err := s.stream(tenant, stream)
	if err != nil {
		return err
	}
	i, err := st.segmentIndex(segmentID)
	if err != nil {
		return err
	}
	log, err := s.acquire(st, i)
	if err != nil {
		return err
	}
	defer s.release(st, i)
	if _, err := log.TruncateBefore(offset); err != nil {
		return mapSegmentErr(err)
	}
	st.version.Add(1)
	return s.wal.tiered(st.ref(i), log, offset)
}

// StreamVersion returns a stream's incarnation and its version, a number
// that changes whenever a segment's bounds (first and next offset, bytes)
// change or Tier2Changed is called for it, so that a reader can keep what
// it derived from the bounds until the version moves. It costs a map
// lookup, whatever the stream's segments.
func (s *Store) StreamVersion(tenant, name string) (incarnation int64, version uint64, err error) {
	st, err := s.stream(tenant, name)
	if err != nil {
		return 0, 0, err
	}
	return st.rec.Created.UnixNano(), st.version.Load(), nil
}

// StreamConfig returns a stream's configuration (its set, encoding,
// retention…) from its record, without its segments' state: what an
// access check needs, at the cost of a map lookup whatever the segments.
func (s *Store) StreamConfig(tenant, name string) (StreamConfig, error) {
	st, err := s.stream(tenant, name)
	if err != nil {
		return StreamConfig{}, err
	}
	cfg := st.rec.Config
	cfg.Metadata = maps.Clone(cfg.Metadata)
	return cfg, nil
}

// Tier2Changed is how tiering tells StreamVersion's readers that what tier
// 2 holds of a stream changed other than by a truncation of tier 1 (a
// deletion by retention).
func (s *Store) Tier2Changed(tenant, name string) {
	if st, err := s.stream(tenant, name); err == nil {
		st.version.Add(1)
	}
}

// Roll starts a new active file for the segment when all events of the
// current one are below offset (durable elsewhere, as for TruncateBefore),
// so that a following TruncateBefore(offset) can remove it: tiering uses
// it when tier 1 is short of space and a segment's only file, never full
// enough to roll by itself, holds nothing but tiered events. It reports
// whether it rolled.
func (s *Store) Roll(tenant, stream, segmentID string, offset uint64) (bool, error) {
	var rolled bool
	err := s.withSegment(tenant, stream, segmentID, func(log *segment.Log) error {
		var err error
		rolled, err = log.Roll(offset)
		return mapSegmentErr(err)
	})
	return rolled, err
}

// Activity returns the set of segments that may hold events not yet in
// tier 2: marked after each commit, and at start by reference, without
// opening them, for every segment with tier-1 files (markUntiered); its
// consumer checks each. Tiering takes it instead of walking every stream.
func (s *Store) Activity() *Activity { return s.activity }

// ScanFunc receives one stored batch of events from Scan: first is the
// offset of events[0], at their append time. The slices are valid only
// until it returns.
type ScanFunc func(first uint64, at time.Time, events [][]byte) error

// Scan passes the segment's events in [from, to) (to capped at the
// committed end) to fn batch by batch, in offset order, without copying
// them: the way to stream a range onward that Read, which returns owned
// copies, makes twice as expensive. An error from fn ends the scan and is
// returned as it is.
func (s *Store) Scan(ctx context.Context, tenant, stream, segmentID string, from, to uint64, fn ScanFunc) error {
	return s.withSegment(tenant, stream, segmentID, func(log *segment.Log) error {
		return scan(ctx, log, from, to, fn)
	})
}

func scan(ctx context.Context, log *segment.Log, from, to uint64, fn ScanFunc) error {
	var fnErr error
	err := log.Scan(from, to, func(first uint64, ns int64, events [][]byte) error {
		if err := ctx.Err(); err != nil {
			fnErr = err
			return err
		}
		if err := fn(first, time.Unix(0, ns).UTC(), events); err != nil {
			fnErr = err
			return err
		}
		return nil
	})
	if fnErr != nil {
		return fnErr
	}
	if err != nil {
		return mapSegmentErr(err)
	}
	return nil
}

// Changed returns a channel that is closed at the segment's next commit
// (or when the store closes, or the segment's log is closed for being
// idle: a waiter then looks again), so a waiter over many segments can
// select on several of them without a goroutine each. Take the channel
// before reading the state it guards, so that a commit in between still
// wakes the waiter.
func (s *Store) Changed(tenant, stream, segmentID string) (<-chan struct{}, error) {
	var ch <-chan struct{}
	err := s.withSegment(tenant, stream, segmentID, func(log *segment.Log) error {
		ch = log.Changed()
		return nil
	})
	return ch, err
}

// Incarnation is a stable identity for one life of a stream, derived from
// its creation time; tiering keys its state by it so that data of a
// deleted stream is never mistaken for that of a re-created one.
func (st Stream) Incarnation() int64 { return st.Created.UnixNano() }
