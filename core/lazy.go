package core

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/silt-io/silt/core/segment"
)

// Segments are lazy: start-up reads the catalog's stream records and opens
// no segment log. A segment's log is opened by its first use (append, read,
// scan, wait, truncation, or a description that needs its state) and closed
// again once nobody has used it for Config.IdleClose, so that an idle stream
// holds no descriptor and no open segment.Log, only its record and a few
// words of state per segment.

// segSlot is one segment of a stream: its log while open, and while closed
// what is known of its bounds.
type segSlot struct {
	// mu is held while the log is opened or closed (file I/O), so that two
	// first uses open it once; only users of this one segment wait for it.
	mu    sync.Mutex
	log   *segment.Log // nil while closed
	users int32        // uses between acquire and release
	// idleSince is when users last fell to 0 (unix nanoseconds).
	idleSince int64
	// state holds the bounds of a closed log. They are exact: nothing
	// changes a segment while its log is closed.
	state segment.State
	// known is false only for a segment that has tier-1 files and has not
	// been opened since start; its bounds are learned by opening it.
	known bool
	// dead is set once the stream is deleted or the store closed; no use
	// opens the log again.
	dead bool
}

// lazyState is the Store's bookkeeping of open logs.
type lazyState struct {
	mu sync.Mutex
	// open holds every slot whose log is open, so that the idle sweep
	// costs in proportion to open segments, not to all of them.
	open   map[*segSlot]*stream
	closed bool
	// opens counts log opens since start (tests, metrics).
	opens atomic.Int64
	// warm holds the segments marked by reference at start whose bounds
	// are still to be learned in the background.
	warm   []segRef
	cancel context.CancelFunc
	done   chan struct{}
	// gone is closed and replaced when a stream is deleted or the store
	// closes, waking the waiters that hold logs open, which then look
	// whether theirs went.
	gone chan struct{}
}

// goneCh returns the channel the next deletion or Close closes.
func (s *Store) goneCh() <-chan struct{} {
	s.lazy.mu.Lock()
	defer s.lazy.mu.Unlock()
	return s.lazy.gone
}

func (s *Store) wakeWaiters() {
	s.lazy.mu.Lock()
	close(s.lazy.gone)
	s.lazy.gone = make(chan struct{})
	s.lazy.mu.Unlock()
}

type segRef struct {
	st *stream
	i  int
}

// segRef names slot i of st for the Activity set.
func (st *stream) ref(i int) SegmentRef {
	return SegmentRef{Tenant: st.rec.Tenant, Stream: st.rec.Name, Segment: st.rec.Segments[i].ID, Incarnation: st.rec.Created.UnixNano()}
}

// acquire returns segment i's log, opening it if needed, and counts a use
// that release ends. A use keeps the log open.
func (s *Store) acquire(st *stream, i int) (*segment.Log, error) {
	sl := &st.segs[i]
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if sl.log == nil {
		if err := s.openSlot(st, i); err != nil {
			return nil, err
		}
	}
	atomic.AddInt32(&sl.users, 1)
	return sl.log, nil
}

// release ends a use begun by acquire.
func (s *Store) release(st *stream, i int) {
	sl := &st.segs[i]
	sl.mu.Lock()
	last := false
	if atomic.AddInt32(&sl.users, -1) == 0 {
		sl.idleSince = time.Now().UnixNano()
		if sl.dead {
			last = s.closeSlotLocked(st, sl)
		}
	}
	sl.mu.Unlock()
	if last {
		st.dropOwners()
	}
}

// openSlot opens segment i's log; sl.mu is held.
func (s *Store) openSlot(st *stream, i int) error {
	sl := &st.segs[i]
	if sl.dead || st.deleted.Load() {
		return fmt.Errorf("%w: stream %q in tenant %q", ErrNotFound, st.rec.Name, st.rec.Tenant)
	}
	ref := st.ref(i)
	dir := filepath.Join(s.streamDir(st.rec), ref.Segment)
	base, err := s.segmentBase(ref, dir)
	if err != nil {
		return err
	}
	l, err := segment.Open(s.wal.segmentOptions(segment.Options{
		Base:            base,
		OnCommit:        func() { st.version.Add(1); s.activity.Mark(ref) },
		FS:              s.fs,
		Dir:             dir,
		FileBytes:       s.cfg.SegmentFileBytes,
		MaxRecordBytes:  s.cfg.Limits.MaxBatchBytes + 64<<10,
		WriterRetention: writerRetention,
		Log:             s.log.With(zap.String("tenant", ref.Tenant), zap.String("stream", ref.Stream), zap.String("segment", ref.Segment)),
	}, st.rec, ref.Segment, ref))
	if err != nil {
		return mapOpenErr(fmt.Errorf("open stream %s/%s segment %s: %w", ref.Tenant, ref.Stream, ref.Segment, err))
	}
	s.lazy.opens.Add(1)
	s.lazy.mu.Lock()
	if s.lazy.closed {
		s.lazy.mu.Unlock()
		l.Close()
		return ErrClosed
	}
	s.lazy.open[sl] = st
	st.openSegs.Add(1)
	s.lazy.mu.Unlock()
	sl.log = l
	sl.known = true
	sl.idleSince = time.Now().UnixNano()
	return nil
}

// closeSlotLocked closes an open log and keeps its bounds; sl.mu is held.
// It reports whether that was the stream's last open log. A log in use is
// left for its last user's release to close (once sl.dead is set): a
// segment.Log must not be closed under a commit in flight.
func (s *Store) closeSlotLocked(st *stream, sl *segSlot) (last bool) {
	if sl.log == nil || sl.users > 0 {
		return false
	}
	sl.state = sl.log.State()
	sl.log.Close()
	sl.log = nil
	s.lazy.mu.Lock()
	delete(s.lazy.open, sl)
	s.lazy.mu.Unlock()
	return st.openSegs.Add(-1) == 0
}

// dropOwners forgets an idle stream's writer table; the next
// owner-checked append rebuilds it from the logs. It runs without any
// slot lock held, since ownersFor takes slot locks under ownersMu.
func (st *stream) dropOwners() {
	st.ownersMu.Lock()
	if st.openSegs.Load() == 0 {
		st.owners = nil
	}
	st.ownersMu.Unlock()
}

// mapOpenErr makes the failures of opening a log that more resources or a
// moment cure (descriptors, space, memory) answer ErrUnavailable; damage
// stays an internal error.
func mapOpenErr(err error) error {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		switch errno {
		case syscall.EMFILE, syscall.ENFILE, syscall.ENOSPC, syscall.EDQUOT, syscall.ENOMEM, syscall.EAGAIN, syscall.EIO:
			return fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
	}
	if errors.Is(err, segment.ErrUnavailable) {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return err
}

// closeIdle closes the logs nobody has used since before now-IdleClose.
// A slot busy opening is skipped; the next sweep sees it.
func (s *Store) closeIdle(now time.Time) int {
	cutoff := now.Add(-s.cfg.IdleClose).UnixNano()
	s.lazy.mu.Lock()
	cands := make([]segRef, 0, len(s.lazy.open))
	for sl, st := range s.lazy.open {
		if atomic.LoadInt32(&sl.users) == 0 {
			cands = append(cands, segRef{st: st, i: st.slotIndex(sl)})
		}
	}
	s.lazy.mu.Unlock()
	n := 0
	for _, c := range cands {
		sl := &c.st.segs[c.i]
		if !sl.mu.TryLock() {
			continue
		}
		last := false
		if sl.log != nil && sl.users == 0 && sl.idleSince <= cutoff {
			last = s.closeSlotLocked(c.st, sl)
			n++
		}
		sl.mu.Unlock()
		if last {
			c.st.dropOwners()
		}
	}
	return n
}

func (st *stream) slotIndex(sl *segSlot) int {
	for i := range st.segs {
		if &st.segs[i] == sl {
			return i
		}
	}
	return -1
}

// OpenSegments is the number of segment logs open now.
func (s *Store) OpenSegments() int {
	s.lazy.mu.Lock()
	defer s.lazy.mu.Unlock()
	return len(s.lazy.open)
}

// run closes idle logs and learns the bounds of the segments marked at
// start, until ctx ends.
func (s *Store) run(ctx context.Context) {
	defer close(s.lazy.done)
	every := min(max(s.cfg.IdleClose/4, 10*time.Millisecond), time.Minute)
	tick := time.NewTicker(every)
	defer tick.Stop()
	s.warmUp(ctx, tick.C)
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			s.closeIdle(now)
		}
	}
}

// warmUp learns, one at a time, the bounds of the segments that were
// marked at start without being opened, so that Streams reports them
// without a caller having to open them. Each log is closed again at once
// unless someone is using it; the idle sweep goes on meanwhile, since a
// directory of an earlier release has every segment marked.
func (s *Store) warmUp(ctx context.Context, tick <-chan time.Time) {
	s.lazy.mu.Lock()
	warm := s.lazy.warm
	s.lazy.warm = nil
	s.lazy.mu.Unlock()
	for _, w := range warm {
		select {
		case <-ctx.Done():
			return
		case now := <-tick:
			s.closeIdle(now)
		default:
		}
		if _, err := s.learn(w.st, w.i); err != nil && !errors.Is(err, ErrClosed) && !errors.Is(err, ErrNotFound) {
			s.log.Warn("cannot open segment log to learn its bounds; retried at its next use",
				zap.String("stream", w.st.rec.Tenant+"/"+w.st.rec.Name), zap.String("segment", w.st.rec.Segments[w.i].ID), zap.Error(err))
		}
	}
}

// learn returns segment i's bounds, opening its log if they are not known
// and closing it again at once unless someone uses it meanwhile.
func (s *Store) learn(st *stream, i int) (segment.State, error) {
	sl := &st.segs[i]
	sl.mu.Lock()
	if sl.log != nil || sl.known {
		defer sl.mu.Unlock()
		if sl.log != nil {
			return sl.log.State(), nil
		}
		return sl.state, nil
	}
	// A segment without a directory has never been used: empty, and
	// opening it would make its files.
	var segDirs []string
	err := s.dirOp(1, func() (err error) { segDirs, err = s.fs.List(s.streamDir(st.rec)); return err })
	if err != nil {
		sl.mu.Unlock()
		return segment.State{}, fmt.Errorf("list %s: %w", s.streamDir(st.rec), err)
	}
	if !slices.Contains(segDirs, st.rec.Segments[i].ID) && s.sharedWAL == nil {
		sl.known = true
		state := sl.state
		sl.mu.Unlock()
		return state, nil
	}
	if err := s.openSlot(st, i); err != nil {
		sl.mu.Unlock()
		return segment.State{}, err
	}
	state := sl.log.State()
	last := false
	if sl.users == 0 {
		last = s.closeSlotLocked(st, sl)
	}
	sl.mu.Unlock()
	if last {
		st.dropOwners()
	}
	return state, nil
}

// markUntiered records that segment i of st may hold events not yet in
// tier 2, without opening its log: the Activity set gets it by reference
// (its consumer checks each), and the background warm-up learns its
// bounds. It is the seam for seeding at start: seedFromDirs calls it for
// every segment with tier-1 files; a write-ahead log's replay calls it for
// the segments written since its checkpoint instead.
func (s *Store) markUntiered(st *stream, i int) {
	sl := &st.segs[i]
	sl.mu.Lock()
	if sl.log == nil {
		// An open log's bounds are live; a closed one's are learned again
		// by its next description.
		sl.known = false
	}
	sl.mu.Unlock()
	s.activity.Mark(st.ref(i))
	s.lazy.mu.Lock()
	s.lazy.warm = append(s.lazy.warm, segRef{st: st, i: i})
	s.lazy.mu.Unlock()
}

// seedFromDirs marks every segment that has a tier-1 directory. A stream
// or segment without one has never been used (directories are made by the
// first use), so it is known to be empty. present holds the streams whose
// directory is on disk.
func (s *Store) seedFromDirs(present []*stream) error {
	for _, st := range present {
		dir := s.streamDir(st.rec)
		var segDirs []string
		err := s.dirOp(1, func() (err error) { segDirs, err = s.fs.List(dir); return err })
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return fmt.Errorf("list %s: %w", dir, err)
		}
		has := make(map[string]bool, len(segDirs))
		for _, d := range segDirs {
			has[d] = true
		}
		for i, seg := range st.rec.Segments {
			if has[seg.ID] {
				s.markUntiered(st, i)
				s.wal.untiered(st.ref(i))
			}
		}
	}
	return nil
}

// startLazy starts the goroutine that closes idle logs.
func (s *Store) startLazy() {
	ctx, cancel := context.WithCancel(context.Background())
	s.lazy.cancel = cancel
	s.lazy.done = make(chan struct{})
	go s.run(ctx)
}

// closeAllLogs stops the sweeper and closes every open log; no log opens
// after it.
func (s *Store) closeAllLogs() {
	if s.lazy.cancel != nil {
		s.lazy.cancel()
		<-s.lazy.done
	}
	s.wakeWaiters()
	s.lazy.mu.Lock()
	s.lazy.closed = true
	open := make([]segRef, 0, len(s.lazy.open))
	for sl, st := range s.lazy.open {
		open = append(open, segRef{st: st, i: st.slotIndex(sl)})
	}
	s.lazy.mu.Unlock()
	for _, o := range open {
		sl := &o.st.segs[o.i]
		sl.mu.Lock()
		sl.dead = true
		s.closeSlotLocked(o.st, sl)
		sl.mu.Unlock()
	}
}

// segmentIndex resolves an explicit segment id.
func (st *stream) segmentIndex(id string) (int, error) {
	i, err := strconv.Atoi(id)
	if err != nil || i < 0 || i >= len(st.segs) || strconv.Itoa(i) != id {
		return 0, fmt.Errorf("%w: segment %q in stream %s/%s (segments are 0 to %d)", ErrNotFound, id, st.rec.Tenant, st.rec.Name, len(st.segs)-1)
	}
	return i, nil
}

// withSegment runs fn with segment id's log of the stream, open for the
// duration of the call.
func (s *Store) withSegment(tenant, stream, id string, fn func(*segment.Log) error) error {
	st, err := s.stream(tenant, stream)
	if err != nil {
		return err
	}
	i, err := st.segmentIndex(id)
	if err != nil {
		return err
	}
	l, err := s.acquire(st, i)
	if err != nil {
		return err
	}
	defer s.release(st, i)
	return fn(l)
}

// ownersFor returns the stream-wide writer table, building it from every
// segment's log the first time an owner-checked append needs it since the
// stream was last idle.
func (s *Store) ownersFor(st *stream) (*writerOwners, error) {
	st.ownersMu.Lock()
	defer st.ownersMu.Unlock()
	if st.owners != nil {
		return st.owners, nil
	}
	logs := make([]*segment.Log, 0, len(st.segs))
	for i := range st.segs {
		l, err := s.acquire(st, i)
		if err != nil {
			for j := range logs {
				s.release(st, j)
			}
			return nil, err
		}
		logs = append(logs, l)
	}
	st.owners = newWriterOwners(logs)
	for i := range logs {
		s.release(st, i)
	}
	return st.owners, nil
}
