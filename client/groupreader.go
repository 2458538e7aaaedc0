package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"
)

// GroupReaderOptions tune a GroupReader.
type GroupReaderOptions struct {
	// Member is the reader's session id; empty makes one up. A reader
	// that restarts with the same id takes its place back if its session
	// has not expired.
	Member string
	// Max is the most events one Next returns (default 1000).
	Max int
	// Wait is how long Next waits for events when none of the reader's
	// segments has any (default 500 ms; the server caps it).
	Wait time.Duration
	// HeartbeatInterval is how often the session is renewed (default a
	// third of the group's session timeout). Each heartbeat, retries
	// included, gets at most this long, so that a connection that hangs
	// does not hold back the next one.
	HeartbeatInterval time.Duration
	// RetryTimeout bounds how long Next, Commit and CommitPositions keep
	// retrying transient failures (network errors, 502/503/504) with the
	// client's backoff before they return the last error. 0 retries until
	// the call's context ends.
	RetryTimeout time.Duration
	// OnRetry, when set, is called before such a retry with the failed
	// attempt's error, its number and the wait before the next one. It
	// must not block.
	OnRetry func(err error, attempt int, wait time.Duration)
}

// GroupEvent is an event read through a group.
type GroupEvent struct {
	Stream string
	Event
}

// ErrRebalanced is returned by Commit when the group was rebalanced
// since the reader's last Next: nothing was committed. Nothing is lost —
// segments the reader still holds are committed by its next Commit,
// segments that moved are read by their new reader from their last
// commit — but events of moved segments may be read twice.
var ErrRebalanced = errors.New("silt: group rebalanced; positions not committed")

// GroupReader reads a share of a reader group's segments: the server
// assigns segments to live readers and moves them when readers come and
// go. Next reads the reader's segments from the group's committed
// positions, in order within each segment; Commit stores how far it got
// (at-least-once: what was read and not committed is read again by
// whoever reads the segment next). A heartbeat goroutine keeps the
// session alive until Close or until the context given to
// NewGroupReader ends — after which, unless Close left the group, the
// server hands the reader's segments to the others once its session
// times out.
//
// Connections that break are made again: every call retries transient
// failures with exponential backoff and full jitter, capped (WithRetry);
// Next, Commit and CommitPositions go on retrying for RetryTimeout, and
// heartbeats retry until the next one is due. A reader cut off for longer
// than the session timeout finds its generation over when it comes back,
// rejoins, and goes on from the group's committed positions (its own
// segments again if no other reader took them).
//
// A GroupReader is used by one goroutine at a time.
type GroupReader struct {
	c             *Client
	tenant, group string
	opts          GroupReaderOptions

	segs   []Position // assigned segments, Offset = next to read (local)
	resets uint64     // the group's reset count when segs were taken
	turn   int
	// dirty are the segments read past their last commit.
	dirty map[GroupSegment]bool

	mu struct {
		sync.Mutex
		gen    uint64
		rejoin bool
		err    error // fatal, from the heartbeat (group deleted)
	}
	stop context.CancelFunc
	done chan struct{}
}

// NewGroupReader joins the group and starts heartbeating until ctx ends
// or Close is called.
func (c *Client) NewGroupReader(ctx context.Context, tenant, group string, opts GroupReaderOptions) (*GroupReader, error) {
	if opts.Member == "" {
		var b [8]byte
		rand.Read(b[:])
		opts.Member = "r-" + hex.EncodeToString(b[:])
	}
	if opts.Max <= 0 {
		opts.Max = 1000
	}
	if opts.Wait <= 0 {
		opts.Wait = 500 * time.Millisecond
	}
	r := &GroupReader{c: c, tenant: tenant, group: group, opts: opts, dirty: map[GroupSegment]bool{}}
	var a Assignment
	err := r.retry(ctx, func() (err error) {
		a, err = c.JoinGroup(ctx, tenant, group, opts.Member)
		return err
	})
	if err != nil {
		return nil, err
	}
	r.adopt(a)
	interval := opts.HeartbeatInterval
	if interval <= 0 {
		d, err := time.ParseDuration(a.SessionTimeout)
		if err != nil || d <= 0 {
			d = 10 * time.Second
		}
		interval = d / 3
	}
	hctx, stop := context.WithCancel(ctx)
	r.stop, r.done = stop, make(chan struct{})
	go r.heartbeat(hctx, interval)
	return r, nil
}

// Member is the reader's session id.
func (r *GroupReader) Member() string { return r.opts.Member }

// Assigned returns the reader's segments and the positions it reads them
// from next.
func (r *GroupReader) Assigned() []Position { return append([]Position(nil), r.segs...) }

// adopt takes a new assignment: segments the reader keeps go on from
// where it read them, new ones from the group's committed position.
func (r *GroupReader) adopt(a Assignment) {
	local := map[GroupSegment]uint64{}
	if a.Resets == r.resets { // after a reset, only the group's positions count
		for _, p := range r.segs {
			local[GroupSegment{p.Stream, p.Segment}] = p.Offset
		}
	}
	r.resets = a.Resets
	dirty := map[GroupSegment]bool{}
	segs := make([]Position, 0, len(a.Segments))
	for _, p := range a.Segments {
		k := GroupSegment{p.Stream, p.Segment}
		if off, ok := local[k]; ok {
			p.Offset = off
			dirty[k] = r.dirty[k]
		}
		segs = append(segs, p)
	}
	r.segs, r.dirty = segs, dirty
	r.mu.Lock()
	r.mu.gen, r.mu.rejoin = a.Generation, false
	r.mu.Unlock()
}

func (r *GroupReader) heartbeat(ctx context.Context, every time.Duration) {
	defer close(r.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		r.mu.Lock()
		gen, rejoin := r.mu.gen, r.mu.rejoin
		r.mu.Unlock()
		// A beat that hangs (a stalled connection) gives up when the next
		// is due, so that one bad connection cannot cost the session.
		bctx, cancel := context.WithTimeout(ctx, every)
		if rejoin {
			// Next rejoins; until then keep the session alive by joining,
			// which for a live member changes nothing.
			if _, err := r.c.JoinGroup(bctx, r.tenant, r.group, r.opts.Member); err != nil && IsNotFound(err) {
				r.fail(err)
			}
			cancel()
			continue
		}
		_, err := r.c.GroupHeartbeat(bctx, r.tenant, r.group, r.opts.Member, gen)
		cancel()
		switch {
		case err == nil:
		case IsRejoin(err):
			r.mu.Lock()
			if r.mu.gen == gen {
				r.mu.rejoin = true
			}
			r.mu.Unlock()
		case IsNotFound(err) || IsForbidden(err) || IsConflict(err):
			r.fail(err)
		}
		// Other errors (network, 503, a beat cut short) are retried at
		// the next tick; the session outlives a few missed beats.
	}
}

func (r *GroupReader) fail(err error) {
	r.mu.Lock()
	if r.mu.err == nil {
		r.mu.err = err
	}
	r.mu.Unlock()
}

// sync rejoins when a heartbeat or commit learned of a rebalance.
func (r *GroupReader) sync(ctx context.Context) error {
	r.mu.Lock()
	rejoin, err := r.mu.rejoin, r.mu.err
	r.mu.Unlock()
	if err != nil {
		return err
	}
	if !rejoin {
		return nil
	}
	var a Assignment
	err = r.retry(ctx, func() (err error) {
		a, err = r.c.JoinGroup(ctx, r.tenant, r.group, r.opts.Member)
		return err
	})
	if err != nil {
		return err
	}
	r.adopt(a)
	return nil
}

// retry runs call again after transient failures, beyond the client's
// own few attempts, sleeping as the client's policy says (full jitter
// under an exponentially growing ceiling, capped), until it succeeds,
// fails for good, RetryTimeout passes or ctx ends. call must be safe to
// repeat; every call a GroupReader makes is.
func (r *GroupReader) retry(ctx context.Context, call func() error) error {
	start := time.Now()
	for attempt := 1; ; attempt++ {
		err := call()
		if err == nil || ctx.Err() != nil || !retryable(err) {
			return err
		}
		wait := r.c.retry.delay(attempt)
		if t := r.opts.RetryTimeout; t > 0 && time.Since(start)+wait > t {
			return err
		}
		if r.opts.OnRetry != nil {
			r.opts.OnRetry(err, attempt, wait)
		}
		if err := sleep(ctx, wait); err != nil {
			return err
		}
	}
}

// Next returns the next events of the reader's segments: from one
// segment at a time, taking turns, in order within each segment. It
// waits up to Wait when there are none and may then return an empty
// batch; it rejoins the group by itself after a rebalance.
func (r *GroupReader) Next(ctx context.Context) ([]GroupEvent, error) {
	if err := r.sync(ctx); err != nil {
		return nil, err
	}
	n := len(r.segs)
	if n == 0 {
		// Nothing assigned (more readers than segments): wait for a turn.
		return nil, sleep(ctx, r.opts.Wait)
	}
	for k := range n {
		i := (r.turn + k) % n
		var wait time.Duration
		if k == n-1 {
			wait = r.opts.Wait // every segment was empty: long-poll the last
		}
		evs, err := r.read(ctx, i, wait)
		if err != nil || len(evs) > 0 {
			r.turn = i + 1
			return evs, err
		}
	}
	r.turn++
	return nil, nil
}

func (r *GroupReader) read(ctx context.Context, i int, wait time.Duration) ([]GroupEvent, error) {
	p := r.segs[i]
	var b Batch
	err := r.retry(ctx, func() (err error) {
		b, err = r.c.Read(ctx, r.tenant, p.Stream, ReadOptions{Segment: p.Segment, From: p.Offset, Max: r.opts.Max, Wait: wait})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read %s/%s from %d: %w", p.Stream, p.Segment, p.Offset, err)
	}
	if len(b.Events) == 0 {
		return nil, nil
	}
	out := make([]GroupEvent, len(b.Events))
	for j, ev := range b.Events {
		out[j] = GroupEvent{Stream: p.Stream, Event: ev}
	}
	r.segs[i].Offset = b.Events[len(b.Events)-1].Offset + 1
	r.dirty[GroupSegment{p.Stream, p.Segment}] = true
	return out, nil
}

// Commit stores the positions after every event Next has returned. It
// returns ErrRebalanced, having committed nothing, when the group was
// rebalanced; the reader has then rejoined.
func (r *GroupReader) Commit(ctx context.Context) error {
	if err := r.sync(ctx); err != nil {
		return err
	}
	var pos []Position
	for _, p := range r.segs {
		if r.dirty[GroupSegment{p.Stream, p.Segment}] {
			pos = append(pos, Position{Stream: p.Stream, Segment: p.Segment, Offset: p.Offset})
		}
	}
	return r.commit(ctx, pos)
}

// CommitPositions commits the given positions (the next offsets to read)
// of the reader's segments instead of everything Next returned: for a
// reader that has handled only part of a batch. Errors as for Commit.
func (r *GroupReader) CommitPositions(ctx context.Context, pos []Position) error {
	if err := r.sync(ctx); err != nil {
		return err
	}
	return r.commit(ctx, pos)
}

func (r *GroupReader) commit(ctx context.Context, pos []Position) error {
	if len(pos) == 0 {
		return nil
	}
	r.mu.Lock()
	gen := r.mu.gen
	r.mu.Unlock()
	err := r.retry(ctx, func() error { return r.c.CommitGroup(ctx, r.tenant, r.group, r.opts.Member, gen, pos) })
	if IsRejoin(err) {
		r.mu.Lock()
		r.mu.rejoin = true
		r.mu.Unlock()
		if err := r.sync(ctx); err != nil {
			return err
		}
		return ErrRebalanced
	}
	if err != nil {
		return err
	}
	for _, p := range pos {
		k := GroupSegment{p.Stream, p.Segment}
		for _, s := range r.segs {
			if s.Stream == p.Stream && s.Segment == p.Segment && s.Offset == p.Offset {
				delete(r.dirty, k) // committed up to where it was read
			}
		}
	}
	return nil
}

// Close stops the heartbeat and leaves the group, so that the reader's
// segments go to the others at once. It does not commit.
func (r *GroupReader) Close(ctx context.Context) error {
	r.stop()
	<-r.done
	return r.c.LeaveGroup(ctx, r.tenant, r.group, r.opts.Member)
}
