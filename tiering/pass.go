package tiering

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/silt-io/silt/core"
)

// A pass costs in proportion to the segments with pending work, not to
// the streams the node holds: it takes core's Activity set (segments
// committed to since the last pass, and at open every segment with tier-1
// data) into its own work set, and a segment stays there until it has
// nothing left to tier — so a range waiting for the lag ceiling is sealed
// in time even if the segment gets no further commit. Stream-level work
// that falls due without a commit (retention by age, a manifest to
// rewrite, a failed deletion to retry) is kept in a due set with its time.
// A stream with neither is forgotten, its state reloaded from the catalog
// when it next has work.

// tier1 is what tiering uses of core.Store: a seam so that tests can count
// what a pass touches.
type tier1 interface {
	EachStream(fn func(core.Stream) error) error
	GetStream(ctx context.Context, tenant, name string) (core.Stream, error)
	StreamInfo(ctx context.Context, tenant, name string) (core.Stream, error)
	Scan(ctx context.Context, tenant, stream, segmentID string, from, to uint64, fn core.ScanFunc) error
	TruncateBefore(tenant, stream, segmentID string, offset uint64) error
	Roll(tenant, stream, segmentID string, offset uint64) (bool, error)
	Activity() *core.Activity
	Dir() string
	Tier2Changed(tenant, stream string)
}

// streamID names one incarnation of a stream.
type streamID struct {
	tenant, stream string
	inc            int64
}

func (id streamID) key() string { return id.tenant + "/" + id.stream }

// passGroup is one stream's share of a pass.
type passGroup struct {
	id   streamID
	segs []string // segments in the work set
	// Results, written by the worker that tiers the stream.
	left []string  // segments still with work
	due  time.Time // stream-level work due then; zero for none
	more bool      // a segment has more to seal at once
}

// scan runs one pass over the segments with pending work and the streams
// with work due; it reports whether some segment has more to seal right
// away than one pass may do.
func (t *Tierer) scan(ctx context.Context) (more bool) {
	for _, ref := range t.store.Activity().Take() {
		t.work[ref] = struct{}{}
	}
	now := t.now()
	groups := map[streamID]*passGroup{}
	group := func(id streamID) *passGroup {
		g := groups[id]
		if g == nil {
			g = &passGroup{id: id}
			groups[id] = g
		}
		return g
	}
	for ref := range t.work {
		g := group(streamID{ref.Tenant, ref.Stream, ref.Incarnation})
		g.segs = append(g.segs, ref.Segment)
	}
	for id, at := range t.due {
		if !now.Before(at) {
			group(id)
		}
	}
	// The incarnations of one name go to one worker, oldest first: the
	// removal of a deleted one's objects must not race the upload of its
	// successor's, which have the same keys.
	byName := map[string][]*passGroup{}
	for _, g := range groups {
		slices.Sort(g.segs)
		byName[g.id.key()] = append(byName[g.id.key()], g)
	}
	names := make([][]*passGroup, 0, len(byName))
	for _, gs := range byName {
		slices.SortFunc(gs, func(a, b *passGroup) int { return cmp.Compare(a.id.inc, b.id.inc) })
		names = append(names, gs)
	}
	// Streams are tiered by up to cfg.Streams workers; each stream is one
	// worker's for the whole pass, so its state needs no more locking than
	// before.
	var anyMore atomic.Bool
	work := make(chan []*passGroup)
	var wg sync.WaitGroup
	for range min(t.cfg.Streams, len(names)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for gs := range work {
				for _, g := range gs {
					t.passStream(ctx, g)
					if g.more {
						anyMore.Store(true)
					}
				}
			}
		}()
	}
	var done []*passGroup
	for _, gs := range names {
		if ctx.Err() != nil {
			break
		}
		work <- gs
		done = append(done, gs...)
	}
	close(work)
	wg.Wait()
	// Groups a cancelled pass never reached keep their work as it was.
	for _, g := range done {
		for _, seg := range g.segs {
			delete(t.work, core.SegmentRef{Tenant: g.id.tenant, Stream: g.id.stream, Segment: seg, Incarnation: g.id.inc})
		}
		for _, seg := range g.left {
			t.work[core.SegmentRef{Tenant: g.id.tenant, Stream: g.id.stream, Segment: seg, Incarnation: g.id.inc}] = struct{}{}
		}
		if g.due.IsZero() {
			delete(t.due, g.id)
		} else {
			t.due[g.id] = g.due
		}
		if len(g.left) == 0 && g.due.IsZero() {
			t.untrack(g.id)
		}
	}
	t.freeUnrolled()
	t.m.passes.Inc()
	if ctx.Err() != nil {
		return false
	}
	return anyMore.Load()
}

// passStream tiers one stream's segments in the work set, then applies
// retention and rewrites the manifest, and fills in g's results.
func (t *Tierer) passStream(ctx context.Context, g *passGroup) {
	id := g.id
	st, err := t.store.GetStream(ctx, id.tenant, id.stream)
	if errors.Is(err, core.ErrNotFound) || (err == nil && st.Incarnation() != id.inc) {
		if err := t.forget(ctx, id); err != nil {
			t.log.Warn("could not remove tier-2 data of a deleted stream; retried at next start", zap.String("stream", id.key()), zap.Error(err))
		}
		return
	}
	if err != nil {
		// The store is closing, or briefly unable to answer: try again.
		g.left, g.due = g.segs, t.now().Add(t.cfg.Interval)
		return
	}
	t.m.streamsVisited.Inc()
	ss, err := t.track(ctx, st)
	if err != nil {
		t.log.Warn("cannot track stream for tiering", zap.String("stream", id.key()), zap.Error(err))
		g.left, g.due = g.segs, t.now().Add(t.cfg.Retry.Max)
		return
	}
	sealed := ss.chunkChanges
	for i, info := range st.Segments {
		if !slices.Contains(g.segs, info.ID) {
			continue
		}
		t.m.segmentsVisited.Inc()
		seg := ss.segs[i]
		segMore := t.scanSegment(ctx, ss, seg, info)
		t.truncateTier1(ss, seg, !segMore)
		g.more = g.more || segMore
		if t.hasWork(seg, info) {
			g.left = append(g.left, info.ID)
		}
	}
	retryDeletes := t.retain(ctx, ss, st.Config.Retention)
	// A stream that sealed in this pass and still has more to seal is
	// busy; one that has caught up gets its manifest now.
	busy := ss.chunkChanges != sealed && len(g.left) > 0
	t.maybeWriteManifest(ctx, ss, busy)

	now := t.now()
	switch {
	case ss.manifestDirty:
		g.due = later(now.Add(t.cfg.Interval), ss.manifestRetry)
		if busy {
			g.due = later(g.due, ss.manifestWritten.Add(manifestEvery))
		}
	case retryDeletes:
		g.due = now.Add(t.cfg.Retry.Max)
	}
	if len(g.left) == 0 {
		if at, ok := t.nextExpiry(ss, st.Config.Retention); ok && (g.due.IsZero() || at.Before(g.due)) {
			g.due = at
		}
	}
}

// hasWork reports whether a segment must stay in the work set: events not
// yet tiered, uploads not committed, a failure to retry, or tier-1 files
// not yet truncated.
func (t *Tierer) hasWork(seg *segState, info core.SegmentInfo) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return seg.scanned < info.NextOffset || seg.pending > 0 || len(seg.cuts) > 0 || !seg.open.empty() ||
		len(seg.intents) > 0 || seg.lastErr != nil || seg.rec.Tiered > seg.truncated
}

// nextExpiry is when retention by age next deletes one of the stream's
// chunks: the oldest first chunk's newest event plus max_age.
func (t *Tierer) nextExpiry(ss *streamState, r core.Retention) (time.Time, bool) {
	if r.MaxAge <= 0 {
		return time.Time{}, false
	}
	var at time.Time
	for _, seg := range ss.segs {
		c, ok, err := firstChunk(t.cat, ss.tenant, ss.name, seg.id)
		if err != nil {
			// Unknown: look again after a retry interval.
			return t.now().Add(t.cfg.Retry.Max), true
		}
		if ok && (at.IsZero() || c.LastTime.Add(r.MaxAge).Before(at)) {
			at = c.LastTime.Add(r.MaxAge)
		}
	}
	return at, !at.IsZero()
}

// forget drops the state of a stream incarnation that core no longer
// holds and removes its tier-2 data, unless the catalog's record is of a
// later incarnation (whose tracking removes its predecessors itself).
func (t *Tierer) forget(ctx context.Context, id streamID) error {
	t.untrack(id)
	r, ok, err := GetStream(t.cat, id.tenant, id.stream)
	if err != nil || !ok || r.Incarnation != id.inc {
		return err
	}
	return t.removeStream(ctx, r)
}

// untrack drops a stream incarnation's in-memory state.
func (t *Tierer) untrack(id streamID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ss := t.mu.streams[id.key()]
	if ss == nil || ss.incarnation != id.inc {
		return
	}
	for _, seg := range ss.segs {
		delete(t.mu.failing, seg)
		t.backlog.Add(-seg.pending)
	}
	delete(t.mu.streams, id.key())
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
