package groups

import (
	"context"
	"maps"
	"time"

	"github.com/silt-io/silt/core"
)

// SegmentLag is how far a group is behind in one segment.
type SegmentLag struct {
	Stream    string `json:"stream"`
	Segment   string `json:"segment"`
	Reader    string `json:"reader,omitempty"`
	Committed uint64 `json:"committed"`
	Next      uint64 `json:"next"`
	// EventsBehind is exact: offsets are dense within a segment.
	EventsBehind uint64 `json:"events_behind"`
	// BytesBehind is estimated: events behind times the mean size of the
	// segment's tier-1 records (headers included), since knowing it
	// exactly would mean reading the events. 0 when tier 1 holds none.
	BytesBehind int64 `json:"bytes_behind"`
	// SecondsBehind is the age of the oldest unread event, read from that
	// one event; 0 when nothing is unread.
	SecondsBehind float64 `json:"seconds_behind"`
}

// Lag is how far a group is behind: sums of events and bytes, and the
// largest age, over its segments.
type Lag struct {
	Tenant        string       `json:"tenant"`
	Group         string       `json:"group"`
	Generation    uint64       `json:"generation"`
	EventsBehind  uint64       `json:"events_behind"`
	BytesBehind   int64        `json:"bytes_behind"`
	SecondsBehind float64      `json:"seconds_behind"`
	Segments      []SegmentLag `json:"segments"`
}

// Lag computes a group's lag from its committed positions and each
// segment's end: per segment a lookup of the end, and one event read for
// the age, whatever the backlog; it is exact as soon as a commit returns.
// The age's event is read only when the position moved since the last
// lag (st.ages), so repeated lags (scrapes) of a group that is not
// reading open no idle segment log.
func (c *Coordinator) Lag(ctx context.Context, tenant, name string) (Lag, error) {
	st, err := c.lock(tenant, name)
	if err != nil {
		return Lag{}, err
	}
	streams, err := c.streams(ctx, st.g)
	if err != nil {
		st.mu.Unlock()
		return Lag{}, err
	}
	pos := make(map[SegmentRef]Position, len(st.pos))
	for r, p := range st.pos {
		pos[r] = p
	}
	owner := map[SegmentRef]string{}
	for _, m := range st.g.Members {
		for _, r := range m.Segments {
			owner[r] = m.ID
		}
	}
	ages := maps.Clone(st.ages)
	out := Lag{Tenant: tenant, Group: name, Generation: st.g.Generation, Segments: []SegmentLag{}}
	// The reads below may reach tier 2: not under the group's lock.
	st.mu.Unlock()

	now := c.now()
	read := map[SegmentRef]eventAge{}
	defer func() {
		// Keep what was read, also when a later segment failed.
		if len(read) == 0 {
			return
		}
		st.mu.Lock()
		defer st.mu.Unlock()
		if st.gone {
			return
		}
		if st.ages == nil {
			st.ages = map[SegmentRef]eventAge{}
		}
		maps.Copy(st.ages, read)
	}()
	for _, s := range streams {
		for _, sg := range s.Segments {
			r := SegmentRef{s.Name, sg.ID}
			age, cached := ages[r]
			l, _, err := c.segmentLag(ctx, s, sg, pos[r].Offset, now, &age, cached)
			if err != nil {
				return Lag{}, err
			}
			if age != ages[r] {
				read[r] = age
			}
			l.Reader = owner[r]
			out.EventsBehind += l.EventsBehind
			out.BytesBehind += l.BytesBehind
			out.SecondsBehind = max(out.SecondsBehind, l.SecondsBehind)
			out.Segments = append(out.Segments, l)
		}
	}
	return out, nil
}

// segmentLag is one segment's lag. age is the time of the oldest unread
// event as last read (valid when cached); when that event is another,
// segmentLag reads it and sets age. oldest is that event's append time,
// zero when nothing is unread or the event could not be read.
func (c *Coordinator) segmentLag(ctx context.Context, s core.Stream, sg core.SegmentInfo, committed uint64, now time.Time, age *eventAge, cached bool) (l SegmentLag, oldest time.Time, err error) {
	l = SegmentLag{Stream: s.Name, Segment: sg.ID, Committed: committed, Next: sg.NextOffset}
	from := committed
	if from < sg.FirstOffset {
		// Below tier 1: what retention removed from tier 2 is not behind.
		oldest, err := c.src.Oldest(ctx, s, sg)
		if err != nil {
			return l, time.Time{}, err
		}
		from = max(from, oldest)
	}
	if from >= sg.NextOffset {
		return l, time.Time{}, nil
	}
	l.EventsBehind = sg.NextOffset - from
	if held := sg.NextOffset - sg.FirstOffset; held > 0 && sg.Bytes > 0 {
		l.BytesBehind = int64(float64(sg.Bytes) / float64(held) * float64(l.EventsBehind))
	}
	if !cached || age.offset != from {
		ev, ok, err := c.src.EventAt(ctx, s.Tenant, s.Name, sg.ID, from)
		if err != nil || !ok {
			return l, time.Time{}, err
		}
		*age = eventAge{offset: from, time: ev.Time}
	}
	l.SecondsBehind = max(0, now.Sub(age.time).Seconds())
	return l, age.time, nil
}
