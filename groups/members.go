package groups

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/silt-io/silt/core"
)

// Assignment is what a reader is told on join and heartbeat: the group's
// generation, and its segments with the positions to read them from.
type Assignment struct {
	Group      string `json:"group"`
	Member     string `json:"member"`
	Generation uint64 `json:"generation"`
	// Resets changes when an admin resets the group's positions; a reader
	// then reads from the positions given here, not from where it was.
	Resets uint64 `json:"resets"`
	// SessionTimeout is how long the reader may go without a heartbeat;
	// readers heartbeat well within it (a third is usual).
	SessionTimeout time.Duration `json:"session_timeout"`
	Segments       []Position    `json:"segments"`
}

func (st *state) assignment(member string) Assignment {
	a := Assignment{Group: st.g.Name, Member: member, Generation: st.g.Generation, Resets: st.g.Resets,
		SessionTimeout: st.g.SessionTimeout, Segments: []Position{}}
	for _, m := range st.g.Members {
		if m.ID != member {
			continue
		}
		for _, r := range m.Segments {
			p, ok := st.pos[r]
			if !ok {
				p = Position{Stream: r.Stream, Segment: r.Segment}
			}
			a.Segments = append(a.Segments, p)
		}
	}
	return a
}

func (st *state) member(id string) (Member, bool) {
	for _, m := range st.g.Members {
		if m.ID == id {
			return m, true
		}
	}
	return Member{}, false
}

// expired lists the members not heard from within the session timeout.
func (c *Coordinator) expired(st *state) []string {
	now := c.now()
	var out []string
	for _, m := range st.g.Members {
		if now.Sub(st.seen[m.ID]) > st.g.SessionTimeout {
			out = append(out, m.ID)
		}
	}
	return out
}

// liveCount is the number of members whose session has not expired.
func (c *Coordinator) liveCount(st *state) int { return len(st.g.Members) - len(c.expired(st)) }

// expire drops the members whose session expired and hands their segments
// to the others. Expiry is checked whenever the group is used: live
// readers heartbeat, so a dead one is noticed on the next heartbeat after
// its session runs out, without a timer per group.
func (c *Coordinator) expire(ctx context.Context, st *state) error {
	gone := c.expired(st)
	if len(gone) == 0 {
		return nil
	}
	streams, err := c.streams(ctx, st.g)
	if err != nil {
		return err
	}
	var ids []string
	for _, m := range st.g.Members {
		if !slices.Contains(gone, m.ID) {
			ids = append(ids, m.ID)
		}
	}
	return c.rebalance(st, streams, ids)
}

// rebalance assigns the group's segments over ids and stores the result
// under a new generation when anything changed.
func (c *Coordinator) rebalance(st *state, streams []core.Stream, ids []string) error {
	prev := map[string][]SegmentRef{}
	for _, m := range st.g.Members {
		prev[m.ID] = m.Segments
	}
	segs := assignable(refsOf(streams), func(SegmentRef) []SegmentRef { return nil },
		func(r SegmentRef) bool { return st.pos[r].Done })
	next := assign(segs, ids, prev)
	members := make([]Member, 0, len(ids))
	for _, id := range ids {
		members = append(members, Member{ID: id, Segments: nonNil(next[id])})
	}
	if sameMembers(st.g.Members, members) {
		return nil
	}
	g := cloneGroup(st.g)
	g.Members = members
	g.Generation++
	if err := c.kv.Commit(map[string][]byte{recordKey(g.Tenant, g.Name): encodeGroup(g)}, nil); err != nil {
		return fmt.Errorf("rebalance group %s: %w", g.Name, err)
	}
	for id := range st.seen {
		if !slices.Contains(ids, id) {
			delete(st.seen, id)
		}
	}
	st.g = g
	st.rebalances++
	return nil
}

func nonNil(s []SegmentRef) []SegmentRef {
	if s == nil {
		return []SegmentRef{}
	}
	return s
}

func sameMembers(a, b []Member) bool {
	return slices.EqualFunc(a, b, func(x, y Member) bool {
		return x.ID == y.ID && slices.Equal(x.Segments, y.Segments)
	})
}

// Join adds a reader to the group (an empty id gets one made up) and
// returns its assignment. Joining again with an id that is still live
// changes nothing and returns the current assignment, so a reader that
// was fenced simply joins again.
func (c *Coordinator) Join(ctx context.Context, tenant, name, member string) (Assignment, error) {
	if member == "" {
		member = newMemberID()
	} else if err := checkMemberID(member); err != nil {
		return Assignment{}, err
	}
	st, err := c.lock(tenant, name)
	if err != nil {
		return Assignment{}, err
	}
	defer st.mu.Unlock()
	streams, err := c.streams(ctx, st.g)
	if err != nil {
		return Assignment{}, err
	}
	gone := c.expired(st)
	var ids []string
	for _, m := range st.g.Members {
		if !slices.Contains(gone, m.ID) {
			ids = append(ids, m.ID)
		}
	}
	if !slices.Contains(ids, member) {
		if len(ids) >= c.cfg.MaxMembers {
			return Assignment{}, fmt.Errorf("%w: group %q already has %d live readers, the most allowed (groups.max_members)", ErrConflict, name, len(ids))
		}
		ids = append(ids, member)
	}
	if err := c.rebalance(st, streams, ids); err != nil {
		return Assignment{}, err
	}
	st.seen[member] = c.now()
	return st.assignment(member), nil
}

// fence checks that member is live in generation gen.
func (c *Coordinator) fence(ctx context.Context, st *state, member string, gen uint64) error {
	if err := c.expire(ctx, st); err != nil {
		return err
	}
	if _, ok := st.member(member); !ok {
		return fmt.Errorf("%w: reader %q is not a member of group %q (its session expired or it left); join again", ErrRejoin, member, st.g.Name)
	}
	if gen != st.g.Generation {
		return fmt.Errorf("%w: generation %d of group %q is over (now %d): the segments were rebalanced; join again", ErrRejoin, gen, st.g.Name, st.g.Generation)
	}
	return nil
}

// Heartbeat keeps a reader's session alive. It fails with ErrRejoin when
// the reader's generation is over, which is how a reader learns of a
// rebalance.
func (c *Coordinator) Heartbeat(ctx context.Context, tenant, name, member string, gen uint64) (Assignment, error) {
	st, err := c.lock(tenant, name)
	if err != nil {
		return Assignment{}, err
	}
	defer st.mu.Unlock()
	if err := c.fence(ctx, st, member, gen); err != nil {
		return Assignment{}, err
	}
	st.seen[member] = c.now()
	return st.assignment(member), nil
}

// Leave removes a reader at once and hands its segments to the others.
// Leaving twice, or after the session expired, is not an error.
func (c *Coordinator) Leave(ctx context.Context, tenant, name, member string) error {
	st, err := c.lock(tenant, name)
	if err != nil {
		return err
	}
	defer st.mu.Unlock()
	if _, ok := st.member(member); !ok {
		return nil
	}
	streams, err := c.streams(ctx, st.g)
	if err != nil {
		return err
	}
	gone := c.expired(st)
	var ids []string
	for _, m := range st.g.Members {
		if m.ID != member && !slices.Contains(gone, m.ID) {
			ids = append(ids, m.ID)
		}
	}
	return c.rebalance(st, streams, ids)
}

// Commit stores positions of segments assigned to member in generation
// gen, all or none. A position is the next offset to read; it may move
// back (a reader that re-reads), but not past the segment's end. It also
// counts as a heartbeat.
func (c *Coordinator) Commit(ctx context.Context, tenant, name, member string, gen uint64, positions []Position) error {
	if len(positions) == 0 {
		return fmt.Errorf("%w: a commit needs at least one position", ErrInvalid)
	}
	st, err := c.lock(tenant, name)
	if err != nil {
		return err
	}
	defer st.mu.Unlock()
	if err := c.fence(ctx, st, member, gen); err != nil {
		return err
	}
	m, _ := st.member(member)
	streams, err := c.streams(ctx, st.g)
	if err != nil {
		return err
	}
	now := c.now().UTC()
	set := make(map[string][]byte, len(positions))
	next := make(map[SegmentRef]Position, len(positions))
	mean := make(map[SegmentRef]float64, len(positions)) // bytes per event, for metrics
	for _, p := range positions {
		r := p.ref()
		if _, dup := next[r]; dup {
			return fmt.Errorf("%w: segment %s is committed twice in one request", ErrInvalid, r)
		}
		if !slices.Contains(m.Segments, r) {
			return fmt.Errorf("%w: segment %s is not assigned to reader %q in generation %d; join again", ErrRejoin, r, member, gen)
		}
		sg, _ := segmentOf(streams, r)
		if p.Offset > sg.NextOffset {
			return fmt.Errorf("%w: position %d of segment %s is past its end (next offset %d)", ErrInvalid, p.Offset, r, sg.NextOffset)
		}
		if held := sg.NextOffset - sg.FirstOffset; held > 0 && sg.Bytes > 0 {
			mean[r] = float64(sg.Bytes) / float64(held)
		}
		p.Committed, p.Done = now, st.pos[r].Done
		next[r] = p
		set[positionKey(tenant, name, r)] = encodePosition(p)
	}
	if err := c.kv.Commit(set, nil); err != nil {
		return fmt.Errorf("commit group %s: %w", name, err)
	}
	for r, p := range next {
		if old := st.pos[r].Offset; p.Offset > old {
			st.advanced += p.Offset - old
			st.advancedBytes += uint64(mean[r] * float64(p.Offset-old))
		}
		st.pos[r] = p
		delete(st.totals, r.Stream)
	}
	st.lagEpoch++
	st.seen[member] = c.now()
	st.commits++
	return nil
}

func segmentOf(streams []core.Stream, r SegmentRef) (core.SegmentInfo, bool) {
	for _, s := range streams {
		if s.Name != r.Stream {
			continue
		}
		for _, sg := range s.Segments {
			if sg.ID == r.Segment {
				return sg, true
			}
		}
	}
	return core.SegmentInfo{}, false
}
