package api

import (
	"context"
	"errors"

	"github.com/silt-io/silt/core"
)

// Tiering is what the API needs from the tier policy: backpressure for
// appends while tier 2 falls behind, a stream's tiering state for
// describe, and reads of history that tier 1 no longer holds. The API does
// not import the tiering package; the server wiring passes the Tierer in.
type Tiering interface {
	// Backpressure returns an error wrapping core.ErrUnavailable when the
	// stream's backlog for tier 2 is over its bound, so that appends get
	// 503 with Retry-After instead of filling tier 1 without limit.
	Backpressure(tenant, stream string) error
	// StreamStatus returns a JSON-encodable description of the stream's
	// tiering state.
	StreamStatus(tenant, stream string) (any, error)
	// ReadTiered reads a segment's events from tier 2, as core.Store.Read
	// reads tier 1. At or above the tiered offset it returns no events and
	// next == from; below what tier 2 still holds, an error wrapping
	// core.ErrOutOfRange.
	ReadTiered(ctx context.Context, tenant, stream, segment string, from uint64, maxEvents, maxBytes int) (events []core.Event, next uint64, err error)
	// FirstTiered is the first offset of the segment tier 2 still holds;
	// ok is false when it holds none.
	FirstTiered(ctx context.Context, tenant, stream, segment string) (first uint64, ok bool, err error)
}

// oldestOffset is where a read "from the beginning" of a segment starts:
// the oldest event either tier holds.
func (s *Server) oldestOffset(ctx context.Context, tenant, stream string, sg core.SegmentInfo) (uint64, error) {
	if s.tiering == nil {
		return sg.FirstOffset, nil
	}
	first, ok, err := s.tiering.FirstTiered(ctx, tenant, stream, sg.ID)
	if err != nil {
		return 0, err
	}
	if ok && first < sg.FirstOffset {
		return first, nil
	}
	return sg.FirstOffset, nil
}

// UseTiering connects the tier policy. Call it before serving.
func (s *Server) UseTiering(t Tiering) { s.tiering = t }

// readSegment reads one segment from tier 1 and, when the offset is below
// tier 1's first (truncated once tiered), from tier 2, so that a reader
// walks from tier 2 into tier 1 without noticing the boundary.
func (s *Server) readSegment(ctx context.Context, req core.ReadRequest) (core.ReadResult, error) {
	res, err := s.store.Read(ctx, req)
	if err == nil || s.tiering == nil || !errors.Is(err, core.ErrOutOfRange) {
		return res, err
	}
	// Out of range is also past the end; only below the start is tier 2's.
	st, serr := s.store.GetStream(ctx, req.Tenant, req.Stream)
	if serr != nil {
		return res, err
	}
	if sg, ok := findSegment(st, req.Segment); !ok || req.From >= sg.FirstOffset {
		return res, err
	}
	evs, next, terr := s.tiering.ReadTiered(ctx, req.Tenant, req.Stream, req.Segment, req.From, req.MaxEvents, req.MaxBytes)
	if terr != nil {
		return core.ReadResult{}, terr
	}
	if len(evs) == 0 && next == req.From {
		// Neither tier holds the offset (tier 1 lost events tier 2 never
		// got): tier 1's answer names the readable range.
		return res, err
	}
	out := core.ReadResult{Events: evs, Next: next}
	// Fill what the bounds leave from tier 1, where tier 2 ends, so one
	// response crosses the boundary. If that fails (tier 2 stopped short
	// of tier 1), the next read continues from out.Next.
	size := 0
	for _, e := range evs {
		size += len(e.Data)
	}
	if n := req.MaxEvents - len(evs); n > 0 && size < req.MaxBytes {
		more := req
		more.From, more.MaxEvents, more.MaxBytes = next, n, req.MaxBytes-size
		if r1, err := s.store.Read(ctx, more); err == nil {
			out.Events = append(out.Events, r1.Events...)
			out.Next = r1.Next
		}
	}
	return out, nil
}
