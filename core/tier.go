package core

import (
	"context"
	"sort"
	"time"
)

// Hooks for the tiering package: it enumerates streams, waits for commits
// and truncates tier 1 once a range is durable in tier 2 and recorded in
// the catalog. They live apart from store.go because only tiering uses them.

// Streams returns every stream of every tenant, with live segment state,
// ordered by tenant and name. Created identifies the stream's incarnation:
// a stream deleted and re-created under the same name gets a new one.
func (s *Store) Streams() []Stream {
	s.mu.RLock()
	sts := make([]*stream, 0, len(s.mu.streams))
	for _, st := range s.mu.streams {
		sts = append(sts, st)
	}
	closed := s.mu.closed
	s.mu.RUnlock()
	if closed {
		return nil
	}
	out := make([]Stream, len(sts))
	for i, st := range sts {
		out[i] = s.describe(st)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Tenant != out[j].Tenant {
			return out[i].Tenant < out[j].Tenant
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// TruncateBefore drops the segment's tier-1 log files all of whose events
// are below offset (never the active file). Callers must have made those
// events durable elsewhere first; reads below the new first offset then
// fail with ErrOutOfRange.
func (s *Store) TruncateBefore(tenant, stream, segmentID string, offset uint64) error {
	log, err := s.segmentLog(tenant, stream, segmentID)
	if err != nil {
		return err
	}
	if _, err := log.TruncateBefore(offset); err != nil {
		return mapSegmentErr(err)
	}
	st, err := s.stream(tenant, stream)
	if err != nil {
		return err
	}
	ref := SegmentRef{Tenant: tenant, Stream: stream, Segment: segmentID, Incarnation: st.rec.Created.UnixNano()}
	return s.wal.tiered(ref, log, offset)
}

// Roll starts a new active file for the segment when all events of the
// current one are below offset (durable elsewhere, as for TruncateBefore),
// so that a following TruncateBefore(offset) can remove it: tiering uses
// it when tier 1 is short of space and a segment's only file, never full
// enough to roll by itself, holds nothing but tiered events. It reports
// whether it rolled.
func (s *Store) Roll(tenant, stream, segmentID string, offset uint64) (bool, error) {
	log, err := s.segmentLog(tenant, stream, segmentID)
	if err != nil {
		return false, err
	}
	rolled, err := log.Roll(offset)
	return rolled, mapSegmentErr(err)
}

// Activity returns the set of segments that may hold events not yet in
// tier 2: marked at open for every segment with tier-1 data, and after each
// commit. Tiering takes it instead of walking every stream.
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
	log, err := s.segmentLog(tenant, stream, segmentID)
	if err != nil {
		return err
	}
	var fnErr error
	err = log.Scan(from, to, func(first uint64, ns int64, events [][]byte) error {
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
// (or when the store closes), so a waiter over many segments can select on
// several of them without a goroutine each. Take the channel before reading
// the state it guards, so that a commit in between still wakes the waiter.
func (s *Store) Changed(tenant, stream, segmentID string) (<-chan struct{}, error) {
	log, err := s.segmentLog(tenant, stream, segmentID)
	if err != nil {
		return nil, err
	}
	return log.Changed(), nil
}

// Incarnation is a stable identity for one life of a stream, derived from
// its creation time; tiering keys its state by it so that data of a
// deleted stream is never mistaken for that of a re-created one.
func (st Stream) Incarnation() int64 { return st.Created.UnixNano() }
