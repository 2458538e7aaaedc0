package segment

import (
	"context"
	"fmt"
	"math/bits"
	"sync"
	"time"

	"github.com/silt-io/silt/core/record"
	"github.com/silt-io/silt/core/vfs"
)

// retryAfterFailure is how long a poisoned log waits before an append may
// trigger recovery, so that a full disk is not hammered by every request.
const retryAfterFailure = time.Second

// Append stores b durably and returns once it is synced. If ctx ends first
// the batch may or may not be stored; it is not acknowledged.
func (l *Log) Append(ctx context.Context, b Batch) (Result, error) {
	if len(b.Events) == 0 {
		return Result{}, fmt.Errorf("segment: empty batch")
	}
	// Encoding (copy + CRC) happens before the lock: offsets are implicit
	// in the record order, so nothing here depends on the log's state.
	now := l.opts.Now().UnixNano()
	buf := getBuf(record.Size(b.WriterID, b.Owner, b.Events))
	rec := record.Append((*buf)[:0], record.Record{
		TimeUnixNano: now, WriterID: b.WriterID, Owner: b.Owner, Seq: b.Seq, Events: b.Events,
	})
	*buf = rec
	if len(rec)-record.HeaderSize > l.opts.MaxRecordBytes {
		putBuf(buf)
		return Result{}, fmt.Errorf("segment: batch of %d bytes exceeds the record limit %d", len(rec), l.opts.MaxRecordBytes)
	}

	l.mu.Lock()
	if err := l.usableLocked(); err != nil {
		l.mu.Unlock()
		putBuf(buf)
		return Result{}, err
	}
	owner := b.Owner
	if b.WriterID != "" {
		ws, ok := l.mu.writers[b.WriterID]
		if ok && ws.owner != "" && owner != "" && ws.owner != owner {
			// Checked before the sequence number: another owner's batch
			// must neither be stored as this writer's nor answered as its
			// duplicate, which would tell the owner's retry it was stored.
			l.mu.Unlock()
			putBuf(buf)
			return Result{}, fmt.Errorf("%w: writer %q", ErrWriterOwned, b.WriterID)
		}
		if ok && owner == "" {
			owner = ws.owner
		}
		if ok && b.Seq <= ws.seq {
			// ws.g is cleared by the leader under the lock: read it here.
			inflight := ws.g
			l.mu.Unlock()
			putBuf(buf)
			return l.duplicate(ctx, b, ws, inflight)
		}
	}
	g := l.mu.pending
	walLead := false
	if g == nil {
		g = &group{first: l.mu.next, next: l.mu.next, done: make(chan struct{})}
		if l.opts.WAL != nil {
			// Queued in the WAL at once: it keeps taking batches until
			// the WAL's leader seals it, and the WAL orders this
			// segment's groups as their offsets are.
			var err error
			if walLead, err = l.opts.WAL.Enqueue(walGroup{l, g}); err != nil {
				l.mu.Unlock()
				putBuf(buf)
				return Result{}, mapWALErr(err)
			}
		}
		l.mu.pending = g
	}
	res := Result{FirstOffset: l.mu.next, Count: len(b.Events)}
	g.records = append(g.records, indexEntry{offset: l.mu.next, pos: g.size})
	g.recs = append(g.recs, rec)
	g.size += int64(len(rec))
	l.mu.next += uint64(len(b.Events))
	g.next = l.mu.next
	if b.WriterID != "" {
		ws := &writerState{owner: owner, seq: b.Seq, first: res.FirstOffset, count: res.Count, time: now, g: g}
		l.mu.writers[b.WriterID] = ws
		g.writers = append(g.writers, ws)
	}
	lead := l.opts.WAL == nil && !l.mu.leading
	if lead {
		l.mu.leading = true
	}
	l.mu.Unlock()

	if lead {
		l.lead()
	}
	if walLead {
		l.opts.WAL.Lead()
	}
	select {
	case <-g.done:
		// The leader is done with rec: it may be reused.
		putBuf(buf)
		if g.err != nil {
			return Result{}, g.err
		}
		return res, nil
	case <-ctx.Done():
		// rec may still be being written; it is left to the GC.
		return Result{}, fmt.Errorf("append not acknowledged: %w", ctx.Err())
	}
}

// duplicate answers a retried batch: with the original's offsets when it is
// the writer's latest batch (waiting for its commit if still in flight),
// with ErrSeqConflict for an older sequence number.
// inflight is the group that holds the original, if it is not committed.
func (l *Log) duplicate(ctx context.Context, b Batch, ws *writerState, inflight *group) (Result, error) {
	if b.Seq != ws.seq {
		return Result{}, fmt.Errorf("%w: writer %q sent sequence %d, last stored is %d", ErrSeqConflict, b.WriterID, b.Seq, ws.seq)
	}
	if inflight != nil {
		select {
		case <-inflight.done:
			if inflight.err != nil {
				return Result{}, inflight.err
			}
		case <-ctx.Done():
			return Result{}, fmt.Errorf("append not acknowledged: %w", ctx.Err())
		}
	}
	return Result{FirstOffset: ws.first, Count: ws.count, Duplicate: true}, nil
}

// usableLocked reports why the log cannot take appends, running recovery
// if it failed long enough ago.
func (l *Log) usableLocked() error {
	if l.mu.closed {
		return ErrClosed
	}
	if l.mu.failed == nil {
		return nil
	}
	if l.mu.leading || l.mu.inflight > 0 || l.opts.Now().Sub(l.mu.failedAt) < retryAfterFailure {
		return l.mu.failed
	}
	cause := l.mu.failed
	if err := l.recoverLocked(); err != nil {
		l.mu.failed = fmt.Errorf("%w: recovery failed: %w", ErrUnavailable, err)
		l.mu.failedAt = l.opts.Now()
		return l.mu.failed
	}
	l.log.Info("segment log recovered after I/O error", zapDir(l.opts.Dir), zapErr(cause))
	return nil
}

// lead writes and syncs queued groups until none is left. Only one leader
// runs at a time (mu.leading), and it alone touches the active file.
func (l *Log) lead() {
	for {
		l.mu.Lock()
		g := l.mu.pending
		if g == nil || l.mu.closed {
			l.mu.leading = false
			if l.mu.closed {
				l.closeFilesLocked()
				if g != nil {
					l.mu.pending = nil
					g.finishLocked(ErrClosed)
				}
			}
			l.mu.Unlock()
			return
		}
		l.mu.pending = nil
		cur := l.mu.files[len(l.mu.files)-1]
		roll := cur.size > 0 && cur.size+g.size > l.opts.FileBytes
		l.mu.Unlock()

		if roll {
			// The file being sealed loses its zero-filled tail first, so
			// that every file but the active one ends with its data.
			err := l.cutPrealloc(cur)
			var f *file
			if err == nil {
				f, err = l.createFile(g.first, false)
			}
			if err != nil {
				l.fail(g, err)
				continue
			}
			l.alloc = 0
			l.mu.Lock()
			l.mu.files = append(l.mu.files, f)
			cur = f
			l.mu.Unlock()
		}
		h, err := l.opts.Files.acquire(cur.path, false)
		if err != nil {
			l.fail(g, err)
			continue
		}
		active := h.f
		l.noteCommit(g.size)
		err = l.write(active, cur.size, g.recs, g.size)
		if err == nil {
			err = active.Sync()
		}
		l.opts.Files.release(h)
		if err != nil {
			l.fail(g, err)
			continue
		}
		l.mu.Lock()
		l.committedLocked(cur, g)
		if !l.mu.closed { // Close closed notify already
			close(l.mu.notify)
			l.mu.notify = make(chan struct{})
		}
		l.mu.Unlock()
		// Before the acknowledgement, as in writeGroup.
		if l.opts.OnCommit != nil {
			l.opts.OnCommit()
		}
		l.mu.Lock()
		g.finishLocked(nil)
		l.mu.Unlock()
	}
}

// fail poisons the log after an I/O error: g and everything queued behind
// it fail, and state is rebuilt from disk by the next append's recovery.
// The cause stays wrapped, so that callers can tell a full disk (ENOSPC)
// from other I/O errors without parsing text.
func (l *Log) fail(g *group, err error) {
	err = fmt.Errorf("%w: %w", ErrUnavailable, err)
	l.mu.Lock()
	l.mu.failed = err
	l.mu.failedAt = l.opts.Now()
	groups := []*group{g}
	if l.mu.pending != nil {
		groups = append(groups, l.mu.pending)
		l.mu.pending = nil
	}
	// Offsets handed out past the last commit are void; recovery resets
	// next from what is really on disk.
	l.mu.next = l.mu.committed
	l.mu.Unlock()
	l.log.Error("segment log write failed; appends fail until it recovers", zapDir(l.opts.Dir), zapErr(err))
	l.mu.Lock()
	for _, x := range groups {
		x.finishLocked(err)
	}
	l.mu.Unlock()
}

// finishLocked ends g's wait, once, with err. l.mu must be held.
func (g *group) finishLocked(err error) {
	if g.finished {
		return
	}
	g.finished = true
	g.err = err
	close(g.done)
}

// preallocMinCommit is the commit size from which zero-filling ahead stops
// paying: a commit this large amortizes its metadata update, and filling
// ahead of it would write every byte twice.
const preallocMinCommit = 64 << 10

// zeros is the source of zero-fill writes.
var zeros [1 << 20]byte

// noteCommit folds a commit of n bytes into the moving average avgCommit.
func (l *Log) noteCommit(n int64) {
	if l.avgCommit == 0 {
		l.avgCommit = n
		return
	}
	l.avgCommit += (n - l.avgCommit) / 8
}

// write writes bufs (n bytes in all) at pos of the active file. When a
// small commit of a log of small commits runs past the zero-filled region,
// the region is extended in the same write burst, so that the next commits
// overwrite zeros instead of growing the file. A log whose commits are
// large on average grows its file instead, its small commits included:
// large commits would consume most of each region, so that it is refilled
// every few commits, and each refill is a commit that writes and syncs a
// megabyte more than its own data. Many concurrent producers make such a
// log, their group sizes varying around the average; measured with 256
// producers, a refilling commit took 1.9 ms at the median, one that grew
// the file 0.7 ms, and one commit in twenty was a refill.
func (l *Log) write(w vfs.File, pos int64, bufs [][]byte, n int64) error {
	if err := w.WriteVAt(bufs, pos); err != nil {
		return err
	}
	end := pos + n
	if end <= l.alloc {
		return nil
	}
	l.alloc = end
	if l.opts.PreallocBytes < 0 || n >= preallocMinCommit || l.avgCommit >= preallocMinCommit {
		return nil
	}
	target := min(end+l.opts.PreallocBytes, max(l.opts.FileBytes, end))
	for off := end; off < target; {
		n := int(min(int64(len(zeros)), target-off))
		if err := w.WriteVAt([][]byte{zeros[:n]}, off); err != nil {
			return err
		}
		off += int64(n)
	}
	l.alloc = target
	return nil
}

// cutPrealloc truncates the active file to its data and syncs the cut.
func (l *Log) cutPrealloc(cur *file) error {
	size := cur.size
	if l.alloc <= size {
		return nil
	}
	h, err := l.opts.Files.acquire(cur.path, false)
	if err != nil {
		return fmt.Errorf("cut preallocated tail: %w", err)
	}
	defer l.opts.Files.release(h)
	w := h.f
	if err := w.Truncate(size); err != nil {
		return fmt.Errorf("cut preallocated tail: %w", err)
	}
	if err := w.Sync(); err != nil {
		return fmt.Errorf("sync cut of preallocated tail: %w", err)
	}
	l.alloc = size
	return nil
}

// Record buffers are pooled by size class: a commit's buffers go back to
// the pool once the leader has written them, so that steady appends reuse
// memory instead of handing the GC a new batch-sized buffer per request.
// Classes are 4 KiB, then four per power of two up to maxPooled, so a
// buffer wastes at most a quarter of its size.
const (
	logMinPooled = 12 // 4 KiB
	logMaxPooled = 22 // 4 MiB
	minPooled    = 1 << logMinPooled
	maxPooled    = 1 << logMaxPooled
)

var bufPools [4*(logMaxPooled-logMinPooled) + 1]sync.Pool

// bufClass returns the pool index and capacity for an n-byte buffer, or
// -1 when n is too large to pool.
func bufClass(n int) (int, int) {
	if n <= minPooled {
		return 0, minPooled
	}
	if n > maxPooled {
		return -1, n
	}
	k := bits.Len(uint(n - 1)) // 2^(k-1) < n <= 2^k
	base := 1 << (k - 1)
	step := base / 4
	j := (n - base + step - 1) / step // 1..4
	return 4*(k-1-logMinPooled) + j, base + j*step
}

// getBuf returns an empty buffer with capacity for at least n bytes.
func getBuf(n int) *[]byte {
	i, c := bufClass(n)
	if i >= 0 {
		if b, ok := bufPools[i].Get().(*[]byte); ok {
			return b
		}
	}
	b := make([]byte, 0, c)
	return &b
}

// putBuf returns b to its pool; buffers of no class (too large, or grown
// by a caller) are left to the GC so that one huge batch does not stay
// resident.
func putBuf(b *[]byte) {
	i, c := bufClass(cap(*b))
	if i < 0 || c != cap(*b) {
		return
	}
	*b = (*b)[:0]
	bufPools[i].Put(b)
}

// committedLocked makes g, just written at the end of cur, readable: the
// sparse index grows over its records, and its writers' batches are no
// longer in flight.
func (l *Log) committedLocked(cur *file, g *group) {
	base := cur.size
	last := cur.index[len(cur.index)-1].pos
	for _, r := range g.records {
		if base+r.pos-last >= indexEvery {
			cur.index = append(cur.index, indexEntry{offset: r.offset, pos: base + r.pos})
			last = base + r.pos
		}
	}
	cur.size += g.size
	l.mu.committed = g.next
	for _, ws := range g.writers {
		ws.g = nil
	}
}
