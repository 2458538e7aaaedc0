package groups

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/silt-io/silt/core"
)

// Source is what groups need to know of streams: core.Store's GetStream,
// and reads that see both tiers (the API wires its tier-aware reader).
type Source interface {
	GetStream(ctx context.Context, tenant, name string) (core.Stream, error)
	// Oldest is the oldest offset of the segment that either tier holds.
	Oldest(ctx context.Context, st core.Stream, seg core.SegmentInfo) (uint64, error)
	// EventAt reads the one event at offset; ok is false when neither
	// tier holds it.
	EventAt(ctx context.Context, tenant, stream, segment string, offset uint64) (ev core.Event, ok bool, err error)
}

// Coordinator keeps every group of the node. It is safe for concurrent use.
type Coordinator struct {
	cfg Config
	kv  KV
	src Source
	now func() time.Time
	met *metrics

	mu     sync.Mutex
	groups map[string]*state // key tenant/name
}

// state is one group: its catalog record and positions (a cache of the
// catalog) and when each member was last heard from (memory only).
type state struct {
	mu   sync.Mutex
	g    Group
	pos  map[SegmentRef]Position
	seen map[string]time.Time
	gone bool // deleted while a request waited for mu
	// Counted since the node started, for metrics.
	rebalances, commits uint64
	// advanced is how far commits moved positions forward: the events
	// the group has read and committed (re-reads after a move back count
	// again).
	advanced uint64
	// advancedBytes estimates the bytes of advanced, from each segment's
	// mean tier-1 record size at the commit (as lag's bytes are).
	advancedBytes uint64
	// ages caches, per segment, the append time of the oldest unread
	// event as Lag last read it, keyed by its offset: an event's time
	// never changes (the group's streams are fixed incarnations), so a
	// lag whose position has not moved reads no event and opens no idle
	// segment log. At most one entry per segment of the group.
	ages map[SegmentRef]eventAge
	// totals caches LagTotal's sums per stream with the stream version
	// (core.Store.StreamVersion) they were computed at. A commit drops
	// the entries of the streams it moved and a reset drops them all;
	// lagEpoch counts those drops, so that a sum computed across one is
	// not kept.
	totals   map[string]streamTotal
	lagEpoch uint64
}

// eventAge is the append time of the event at offset.
type eventAge struct {
	offset uint64
	time   time.Time
}

// New opens the coordinator over kv, loading every group it holds. Metrics
// are registered on reg when it is not nil.
func New(cfg Config, kv KV, src Source, reg prometheus.Registerer) (*Coordinator, error) {
	return newWithClock(cfg, kv, src, reg, time.Now)
}

func newWithClock(cfg Config, kv KV, src Source, reg prometheus.Registerer, now func() time.Time) (*Coordinator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Coordinator{cfg: cfg, kv: kv, src: src, now: now, groups: map[string]*state{}}
	gs, err := loadGroups(kv, "")
	if err != nil {
		return nil, fmt.Errorf("groups: load: %w", err)
	}
	start := c.now()
	for _, g := range gs {
		pos, err := loadPositions(kv, g.Tenant, g.Name)
		if err != nil {
			return nil, fmt.Errorf("groups: load %s/%s: %w", g.Tenant, g.Name, err)
		}
		st := &state{g: g, pos: pos, seen: map[string]time.Time{}}
		// Nobody could heartbeat while the node was down: every member
		// recorded gets a whole session from now.
		for _, m := range g.Members {
			st.seen[m.ID] = start
		}
		c.groups[g.Tenant+"/"+g.Name] = st
	}
	c.met = newMetrics(c)
	if reg != nil {
		if err := reg.Register(c.met); err != nil {
			return nil, fmt.Errorf("groups: register metrics: %w", err)
		}
	}
	return c, nil
}

func notFound(tenant, name string) error {
	return fmt.Errorf("%w: group %q in tenant %q", ErrNotFound, name, tenant)
}

// lock returns the group's state, locked.
func (c *Coordinator) lock(tenant, name string) (*state, error) {
	c.mu.Lock()
	st, ok := c.groups[tenant+"/"+name]
	c.mu.Unlock()
	if !ok {
		return nil, notFound(tenant, name)
	}
	st.mu.Lock()
	if st.gone {
		st.mu.Unlock()
		return nil, notFound(tenant, name)
	}
	return st, nil
}

// streams describes the group's streams, refusing a group one of whose
// streams was deleted (or deleted and created again).
func (c *Coordinator) streams(ctx context.Context, g Group) ([]core.Stream, error) {
	out := make([]core.Stream, 0, len(g.Streams))
	for _, name := range g.Streams {
		s, err := c.src.GetStream(ctx, g.Tenant, name)
		if errors.Is(err, core.ErrNotFound) || err == nil && s.Incarnation() != g.Incarnations[name] {
			return nil, fmt.Errorf("%w: stream %q of group %q was deleted; the group cannot be read or reset, only deleted", ErrConflict, name, g.Name)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func refsOf(streams []core.Stream) []SegmentRef {
	var out []SegmentRef
	for _, s := range streams {
		for _, sg := range s.Segments {
			out = append(out, SegmentRef{s.Name, sg.ID})
		}
	}
	return out
}

// Create creates a group at its start position.
func (c *Coordinator) Create(ctx context.Context, tenant string, req CreateRequest) (Group, error) {
	if err := checkName(req.Name); err != nil {
		return Group{}, err
	}
	if len(req.Streams) == 0 || len(req.Streams) > c.cfg.MaxStreams {
		return Group{}, fmt.Errorf("%w: a group reads 1 to %d streams, got %d", ErrInvalid, c.cfg.MaxStreams, len(req.Streams))
	}
	streams := slices.Clone(req.Streams)
	slices.Sort(streams)
	if i := firstDup(streams); i >= 0 {
		return Group{}, fmt.Errorf("%w: stream %q is named twice", ErrInvalid, streams[i])
	}
	timeout := req.SessionTimeout
	if timeout == 0 {
		timeout = c.cfg.DefaultSessionTimeout
	}
	if timeout < c.cfg.MinSessionTimeout || timeout > c.cfg.MaxSessionTimeout {
		return Group{}, fmt.Errorf("%w: session timeout %v is outside [%v, %v]", ErrInvalid, timeout, c.cfg.MinSessionTimeout, c.cfg.MaxSessionTimeout)
	}
	if err := req.Start.validate(); err != nil {
		return Group{}, err
	}
	g := Group{Tenant: tenant, Name: req.Name, Streams: streams, Created: c.now().UTC(),
		SessionTimeout: timeout, Members: []Member{}, Incarnations: map[string]int64{}}
	var descs []core.Stream
	for _, name := range streams {
		s, err := c.src.GetStream(ctx, tenant, name)
		if err != nil {
			return Group{}, err
		}
		g.Incarnations[name] = s.Incarnation()
		descs = append(descs, s)
	}
	pos, err := c.resolve(ctx, descs, req.Start)
	if err != nil {
		return Group{}, err
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	key := tenant + "/" + req.Name
	if _, ok := c.groups[key]; ok {
		return Group{}, fmt.Errorf("%w: group %q in tenant %q", ErrExists, req.Name, tenant)
	}
	set := map[string][]byte{recordKey(tenant, req.Name): encodeGroup(g)}
	for r, p := range pos {
		set[positionKey(tenant, req.Name, r)] = encodePosition(p)
	}
	// A crash between a delete and this create could not leave positions
	// behind (deletes are one commit), but a record written by another
	// node could exist: the catalog is the judge.
	if _, ok, err := c.kv.Get([]byte(recordKey(tenant, req.Name))); err != nil {
		return Group{}, err
	} else if ok {
		return Group{}, fmt.Errorf("%w: group %q in tenant %q", ErrExists, req.Name, tenant)
	}
	if err := c.kv.Commit(set, nil); err != nil {
		return Group{}, fmt.Errorf("create group %s: %w", req.Name, err)
	}
	c.groups[key] = &state{g: g, pos: pos, seen: map[string]time.Time{}}
	return cloneGroup(g), nil
}

func firstDup(sorted []string) int {
	for i := 1; i < len(sorted); i++ {
		if sorted[i] == sorted[i-1] {
			return i
		}
	}
	return -1
}

// List returns a tenant's groups in name order.
func (c *Coordinator) List(tenant string) []Group {
	c.mu.Lock()
	var sts []*state
	for _, st := range c.groups {
		sts = append(sts, st)
	}
	c.mu.Unlock()
	var out []Group
	for _, st := range sts {
		st.mu.Lock()
		if !st.gone && st.g.Tenant == tenant {
			out = append(out, cloneGroup(st.g))
		}
		st.mu.Unlock()
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Get returns a group's record, for access checks and listings.
func (c *Coordinator) Get(tenant, name string) (Group, error) {
	st, err := c.lock(tenant, name)
	if err != nil {
		return Group{}, err
	}
	defer st.mu.Unlock()
	return cloneGroup(st.g), nil
}

// MemberInfo is a member as Describe shows it.
type MemberInfo struct {
	Member
	LastHeartbeat time.Time `json:"last_heartbeat"`
}

// Description is a group with its members and positions.
type Description struct {
	Group
	Members   []MemberInfo `json:"members"`
	Positions []Position   `json:"positions"`
}

// Describe returns a group's state. Members whose session has expired are
// dropped first (and their segments handed out), so that what it shows is
// what a reader would get.
func (c *Coordinator) Describe(ctx context.Context, tenant, name string) (Description, error) {
	st, err := c.lock(tenant, name)
	if err != nil {
		return Description{}, err
	}
	defer st.mu.Unlock()
	if err := c.expire(ctx, st); err != nil && !errors.Is(err, ErrConflict) {
		return Description{}, err
	}
	d := Description{Group: cloneGroup(st.g), Members: []MemberInfo{}}
	for _, m := range st.g.Members {
		d.Members = append(d.Members, MemberInfo{Member: m, LastHeartbeat: st.seen[m.ID].UTC()})
	}
	d.Positions = sortedPositions(st.pos)
	return d, nil
}

func sortedPositions(m map[SegmentRef]Position) []Position {
	out := slices.Collect(maps.Values(m))
	sort.Slice(out, func(i, j int) bool { return out[i].ref().less(out[j].ref()) })
	return out
}

// Delete removes a group and its positions. While readers are live it is
// refused unless force is set; the readers then get 404 on their next
// request.
func (c *Coordinator) Delete(ctx context.Context, tenant, name string, force bool) error {
	st, err := c.lock(tenant, name)
	if err != nil {
		return err
	}
	defer st.mu.Unlock()
	if n := c.liveCount(st); n > 0 && !force {
		return fmt.Errorf("%w: group %q has %d live reader(s); stop them first, or delete with force", ErrConflict, name, n)
	}
	// The record goes last: after a failure part-way the group is still
	// there, and deleting it again finishes.
	var del []string
	for r := range st.pos {
		del = append(del, positionKey(tenant, name, r))
	}
	del = append(del, recordKey(tenant, name))
	if err := c.kv.DeleteKeys(del); err != nil {
		return fmt.Errorf("delete group %s: %w", name, err)
	}
	st.gone = true
	c.mu.Lock()
	delete(c.groups, tenant+"/"+name)
	c.mu.Unlock()
	return nil
}

// Reset moves every position of the group to start. While readers are
// live it is refused unless force is set; a forced reset drops the
// members (their next commit or heartbeat is fenced and they rejoin at
// the new positions).
func (c *Coordinator) Reset(ctx context.Context, tenant, name string, start Start, force bool) (Description, error) {
	if err := start.validate(); err != nil {
		return Description{}, err
	}
	st, err := c.lock(tenant, name)
	if err != nil {
		return Description{}, err
	}
	defer st.mu.Unlock()
	streams, err := c.streams(ctx, st.g)
	if err != nil {
		return Description{}, err
	}
	if n := c.liveCount(st); n > 0 && !force {
		return Description{}, fmt.Errorf("%w: group %q has %d live reader(s); stop them first, or reset with force (they then rejoin at the new positions)", ErrConflict, name, n)
	}
	pos, err := c.resolve(ctx, streams, start)
	if err != nil {
		return Description{}, err
	}
	g := cloneGroup(st.g)
	g.Members = []Member{}
	g.Generation++
	g.Resets++
	set := map[string][]byte{recordKey(tenant, name): encodeGroup(g)}
	for r, p := range pos {
		set[positionKey(tenant, name, r)] = encodePosition(p)
	}
	var del []string
	for r := range st.pos {
		if _, ok := pos[r]; !ok {
			del = append(del, positionKey(tenant, name, r))
		}
	}
	if err := c.kv.Commit(set, del); err != nil {
		return Description{}, fmt.Errorf("reset group %s: %w", name, err)
	}
	st.g, st.pos, st.seen = g, pos, map[string]time.Time{}
	st.totals = nil
	st.lagEpoch++
	st.rebalances++
	return Description{Group: cloneGroup(g), Members: []MemberInfo{}, Positions: sortedPositions(pos)}, nil
}

func cloneGroup(g Group) Group {
	g.Streams = slices.Clone(g.Streams)
	g.Incarnations = maps.Clone(g.Incarnations)
	ms := make([]Member, len(g.Members))
	for i, m := range g.Members {
		ms[i] = Member{ID: m.ID, Segments: slices.Clone(m.Segments)}
		if ms[i].Segments == nil {
			ms[i].Segments = []SegmentRef{}
		}
	}
	g.Members = ms
	return g
}

func newMemberID() string {
	var b [12]byte
	rand.Read(b[:])
	return "r-" + hex.EncodeToString(b[:])
}
