package groups

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/silt-io/silt/core"
)

// Versioner is what a Source implements (core.Store does) so that a
// group's total lag costs in proportion to its streams, not to its
// segments: StreamVersion changes whenever anything a stream's lag is
// computed from changes.
type Versioner interface {
	StreamVersion(tenant, name string) (incarnation int64, version uint64, err error)
}

// streamTotal is one stream's share of a group's lag.
type streamTotal struct {
	version uint64
	events  uint64
	bytes   int64
	oldest  time.Time // the oldest unread event's append time; zero for none
}

// LagTotal is Lag without the per-segment rows: the same sums, events and
// bytes behind and the largest age, exact after a commit returns. Each
// stream's share is kept with the stream's version and computed again
// only when the version moved (an append, a truncation, retention) or a
// commit or reset changed the group's positions in it, so a group whose
// streams are idle costs a version lookup per stream however many
// segments they have (the per-segment view costs a row per segment).
// Without a Versioner source it is Lag without the rows.
func (c *Coordinator) LagTotal(ctx context.Context, tenant, name string) (Lag, error) {
	vs, ok := c.src.(Versioner)
	if !ok {
		l, err := c.Lag(ctx, tenant, name)
		l.Segments = []SegmentLag{}
		return l, err
	}
	st, err := c.lock(tenant, name)
	if err != nil {
		return Lag{}, err
	}
	out := Lag{Tenant: tenant, Group: name, Generation: st.g.Generation, Segments: []SegmentLag{}}
	var oldest time.Time
	add := func(t streamTotal) {
		out.EventsBehind += t.events
		out.BytesBehind += t.bytes
		if !t.oldest.IsZero() && (oldest.IsZero() || t.oldest.Before(oldest)) {
			oldest = t.oldest
		}
	}
	stale := map[string]uint64{} // stream → its version now
	for _, s := range st.g.Streams {
		inc, ver, err := vs.StreamVersion(tenant, s)
		if errors.Is(err, core.ErrNotFound) || err == nil && inc != st.g.Incarnations[s] {
			st.mu.Unlock()
			return Lag{}, fmt.Errorf("%w: stream %q of group %q was deleted; the group cannot be read or reset, only deleted", ErrConflict, s, name)
		}
		if err != nil {
			st.mu.Unlock()
			return Lag{}, err
		}
		if t, ok := st.totals[s]; ok && t.version == ver {
			add(t)
			continue
		}
		stale[s] = ver
	}
	if len(stale) == 0 {
		st.mu.Unlock()
		if !oldest.IsZero() {
			out.SecondsBehind = max(0, c.now().Sub(oldest).Seconds())
		}
		return out, nil
	}
	g := st.g
	epoch := st.lagEpoch
	pos := make(map[SegmentRef]Position)
	for r, p := range st.pos {
		if _, ok := stale[r.Stream]; ok {
			pos[r] = p
		}
	}
	ages := maps.Clone(st.ages)
	// The reads below may reach tier 2: not under the group's lock.
	st.mu.Unlock()

	now := c.now()
	read := map[SegmentRef]eventAge{}
	fresh := map[string]streamTotal{}
	var ferr error
	for _, name := range g.Streams {
		ver, ok := stale[name]
		if !ok {
			continue
		}
		s, err := c.src.GetStream(ctx, g.Tenant, name)
		if errors.Is(err, core.ErrNotFound) || err == nil && s.Incarnation() != g.Incarnations[name] {
			ferr = fmt.Errorf("%w: stream %q of group %q was deleted; the group cannot be read or reset, only deleted", ErrConflict, name, g.Name)
			break
		}
		if err != nil {
			ferr = err
			break
		}
		t := streamTotal{version: ver}
		for _, sg := range s.Segments {
			r := SegmentRef{s.Name, sg.ID}
			age, cached := ages[r]
			l, at, err := c.segmentLag(ctx, s, sg, pos[r].Offset, now, &age, cached)
			if err != nil {
				ferr = err
				break
			}
			if age != ages[r] {
				read[r] = age
			}
			t.events += l.EventsBehind
			t.bytes += l.BytesBehind
			if !at.IsZero() && (t.oldest.IsZero() || at.Before(t.oldest)) {
				t.oldest = at
			}
		}
		if ferr != nil {
			break
		}
		fresh[name] = t
		add(t)
	}

	st.mu.Lock()
	if !st.gone {
		if st.ages == nil {
			st.ages = map[SegmentRef]eventAge{}
		}
		maps.Copy(st.ages, read)
		// A commit or reset meanwhile may have moved positions these sums
		// were computed from: they are not kept then.
		if st.lagEpoch == epoch {
			if st.totals == nil {
				st.totals = map[string]streamTotal{}
			}
			maps.Copy(st.totals, fresh)
		}
	}
	st.mu.Unlock()
	if ferr != nil {
		return Lag{}, ferr
	}
	if !oldest.IsZero() {
		out.SecondsBehind = max(0, now.Sub(oldest).Seconds())
	}
	return out, nil
}
