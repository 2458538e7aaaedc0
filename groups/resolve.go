package groups

import (
	"context"
	"fmt"
	"slices"

	"github.com/silt-io/silt/core"
)

// resolve turns a start into one position per segment of streams.
func (c *Coordinator) resolve(ctx context.Context, streams []core.Stream, start Start) (map[SegmentRef]Position, error) {
	given := map[SegmentRef]uint64{}
	if start.Kind == StartPositions {
		for _, p := range start.Positions {
			r := p.ref()
			if _, dup := given[r]; dup {
				return nil, fmt.Errorf("%w: position of segment %s is given twice", ErrInvalid, r)
			}
			i := slices.IndexFunc(streams, func(s core.Stream) bool { return s.Name == r.Stream })
			if i < 0 {
				return nil, fmt.Errorf("%w: position names stream %q, which the group does not read", ErrInvalid, r.Stream)
			}
			if _, ok := segmentOf(streams, r); !ok {
				return nil, fmt.Errorf("%w: position names segment %q, which stream %q does not have", ErrInvalid, r.Segment, r.Stream)
			}
			given[r] = p.Offset
		}
	}
	out := map[SegmentRef]Position{}
	for _, s := range streams {
		for _, sg := range s.Segments {
			r := SegmentRef{s.Name, sg.ID}
			oldest, err := c.src.Oldest(ctx, s, sg)
			if err != nil {
				return nil, err
			}
			var off uint64
			switch start.Kind {
			case StartHead:
				off = oldest
			case StartTail:
				off = sg.NextOffset
			case StartTime:
				if off, err = c.firstAtOrAfter(ctx, s, sg, oldest, start); err != nil {
					return nil, err
				}
			case StartPositions:
				o, ok := given[r]
				switch {
				case !ok:
					o = oldest
				case o > sg.NextOffset:
					return nil, fmt.Errorf("%w: position %d of segment %s is past its end (next offset %d)", ErrInvalid, o, r, sg.NextOffset)
				case o < oldest:
					return nil, fmt.Errorf("%w: position %d of segment %s is before the oldest event still held (%d)", ErrInvalid, o, r, oldest)
				}
				off = o
			}
			out[r] = Position{Stream: s.Name, Segment: sg.ID, Offset: off}
		}
	}
	return out, nil
}

// firstAtOrAfter finds the first offset of the segment appended at or
// after start.Time by bisection over single-event reads: O(log n) reads,
// none of them a scan. Append times only grow within a segment.
func (c *Coordinator) firstAtOrAfter(ctx context.Context, s core.Stream, sg core.SegmentInfo, lo uint64, start Start) (uint64, error) {
	hi := sg.NextOffset
	for lo < hi {
		mid := lo + (hi-lo)/2
		ev, ok, err := c.src.EventAt(ctx, s.Tenant, s.Name, sg.ID, mid)
		if err != nil {
			return 0, fmt.Errorf("find time in segment %s/%s: %w", s.Name, sg.ID, err)
		}
		if !ok || ev.Time.Before(start.Time) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo, nil
}
