// Package objwal is the write-ahead log's second backend (wal.Backend):
// the log kept as objects on shared storage, each Write one object, and
// its end recorded in a store of small records (etcd in cluster mode)
// under a fence, so that a node's log survives the node and a process
// that lost the log can never get a write acknowledged again
// (docs/format/wal.md, "Objects").
//
// The package sees storage through two narrow interfaces, Store (put,
// get, list, delete whole objects) and Fence (an epoch and the records
// guarded by it), so that core imports neither tiering's S3 client nor
// etcd; cluster provides both.
//
// Why the end is recorded apart from the objects: a PUT cannot be made
// conditional on who owns the log, so a writer that was taken over may
// still put objects after the fact. Only what the fence let it record is
// ever read back: Recover reads objects up to the recorded end and
// ignores whatever lies beyond it. Object keys carry the writer's epoch
// as well as the position, so a late PUT cannot replace the object of
// the writer that took over at the same position either, nor (the epoch
// being renewed after a failed write) that of the writer's own retry.
package objwal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/silt-io/silt/core/wal"
)

// Errors.
var (
	// ErrFenced means another process took the log over (a higher
	// epoch): this one may write nothing more to it.
	ErrFenced = errors.New("objwal: fenced: another process took this write-ahead log over")
	// ErrNotExist is returned (wrapped) by a Store for a missing key.
	ErrNotExist = errors.New("objwal: object does not exist")
)

// Store is the shared object storage the frames go to. A Put is atomic:
// the object exists whole or not at all, and is durable when Put returns.
type Store interface {
	Put(ctx context.Context, key string, bufs [][]byte, n int64) error
	// Get returns a whole object, or an error wrapping ErrNotExist.
	Get(ctx context.Context, key string) ([]byte, error)
	// List returns the keys starting with prefix, sorted.
	List(ctx context.Context, prefix string) ([]string, error)
	// Delete removes an object; a missing one is not an error.
	Delete(ctx context.Context, key string) error
}

// State is what the fence holds for one log.
type State struct {
	// Epoch is the writer's epoch, returned by Acquire.
	Epoch uint64
	// End is the recorded end of the log (0 for a new one).
	End uint64
	// Checkpoint is the recorded checkpoint value (nil if none).
	Checkpoint []byte
}

// Fence records a log's end and checkpoint under an epoch, in a store
// with transactions (etcd).
type Fence interface {
	// Acquire takes the log over in one transaction: the epoch is
	// incremented, so that every earlier writer is fenced, and the
	// records as they were are returned with the new epoch.
	Acquire(ctx context.Context) (State, error)
	// Commit records end as the log's end if epoch is still the current
	// one; otherwise it changes nothing and returns an error wrapping
	// ErrFenced. A commit whose answer was lost must not be able to take
	// effect after a later one (etcd: compare the record's revision too).
	Commit(ctx context.Context, epoch, end uint64) error
	// SaveCheckpoint records the checkpoint value under the same rule.
	SaveCheckpoint(ctx context.Context, epoch uint64, value []byte) error
	// Renew increments the epoch if epoch is still the current one and
	// returns the new one (ErrFenced otherwise): the writer goes on under
	// a new epoch, and its own requests still in flight under the old one
	// (a PUT or a transaction whose answer timed out) can no longer
	// take effect where they would overwrite later ones.
	Renew(ctx context.Context, epoch uint64) (uint64, error)
}

// Options configure a log on objects.
type Options struct {
	Store Store
	Fence Fence
	// Prefix is the keys' prefix in Store, e.g. "wal/<node id>/"; it
	// must end in "/".
	Prefix string
	// MaxFrameBytes bounds one frame body; 0 means 128 MiB.
	MaxFrameBytes int
	// Timeout bounds each PUT, GET, DELETE and fence transaction; 0
	// means 30s.
	Timeout time.Duration
	// InlineCheckpointBytes is the largest checkpoint kept in the fence
	// itself; a larger one goes to an object the fence points at (etcd
	// refuses large values). 0 means 64 KiB.
	InlineCheckpointBytes int
	Log                   *zap.Logger
}

// Objects is a wal.Backend on a Store and a Fence. As with wal.Files,
// only the log's leader calls Write, Recover runs before any Write, and
// checkpoints and truncation do not run concurrently with each other.
type Objects struct {
	opts Options
	log  *zap.Logger
	// epoch is the writer's: set by Open, renewed by the leader after a
	// failed Write, read by checkpoints.
	epoch atomic.Uint64
	// recordedEnd is the end the fence held when the log was taken over.
	recordedEnd uint64

	// The leader's: the next write position, and whether the last Write
	// failed (then the next one first records the end back at its
	// position, see Write).
	end    uint64
	failed bool
	// isFenced is set once the fence refused this writer: it then
	// writes, records and deletes nothing more.
	isFenced atomic.Bool

	mu struct {
		sync.Mutex
		// objs are the log's objects from the oldest kept, ascending.
		objs []object
		// pending are keys to delete that a deletion failed to remove
		// (or that Recover found outside the log); TruncateBefore
		// retries them.
		pending []string
	}

	// Checkpoint: the value held by the fence, and a sequence for the
	// names of checkpoint objects.
	ckValue []byte
	ckSeq   uint64
}

type object struct {
	start uint64
	key   string
}

// Checkpoint values in the fence: a tag byte, then the record itself or
// the key of the object holding it.
const (
	ckInline = 0
	ckObject = 1
)

// Open takes the log over (Fence.Acquire): from then on every process
// that had it is fenced. Recover must be called before the first Write.
func Open(opts Options) (*Objects, error) {
	if opts.Store == nil || opts.Fence == nil {
		return nil, errors.New("objwal: a store and a fence are required")
	}
	if !strings.HasSuffix(opts.Prefix, "/") || strings.HasPrefix(opts.Prefix, "/") {
		return nil, fmt.Errorf("objwal: prefix %q must end in / and not start with one", opts.Prefix)
	}
	if opts.MaxFrameBytes <= 0 {
		opts.MaxFrameBytes = 128 << 20
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Second
	}
	if opts.InlineCheckpointBytes <= 0 {
		opts.InlineCheckpointBytes = 64 << 10
	}
	if opts.Log == nil {
		opts.Log = zap.NewNop()
	}
	b := &Objects{opts: opts, log: opts.Log}
	ctx, cancel := b.ctx()
	defer cancel()
	st, err := opts.Fence.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("take over write-ahead log %s: %w", opts.Prefix, err)
	}
	b.epoch.Store(st.Epoch)
	b.recordedEnd, b.end, b.ckValue = st.End, st.End, st.Checkpoint
	b.log.Info("took the write-ahead log over", zap.String("prefix", opts.Prefix), zap.Uint64("epoch", st.Epoch), zap.Uint64("end", st.End))
	return b, nil
}

// Epoch is this writer's epoch.
func (b *Objects) Epoch() uint64 { return b.epoch.Load() }

func (b *Objects) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), b.opts.Timeout)
}

// objectKey names the object of a Write at pos by a writer of epoch: both
// zero-padded, so that keys sort by position, then epoch.
func (b *Objects) objectKey(pos, epoch uint64) string {
	return fmt.Sprintf("%s%020d.%020d", b.opts.Prefix, pos, epoch)
}

const checkpointDir = "checkpoint/"

func (b *Objects) checkpointKey(epoch, seq uint64) string {
	return fmt.Sprintf("%s%s%020d.%020d", b.opts.Prefix, checkpointDir, epoch, seq)
}

// parseKey splits a key below the prefix into position and epoch.
func parseKey(name string) (pos, epoch uint64, ok bool) {
	p, e, found := strings.Cut(name, ".")
	if !found || len(p) != 20 || len(e) != 20 {
		return 0, 0, false
	}
	pos, err1 := strconv.ParseUint(p, 10, 64)
	epoch, err2 := strconv.ParseUint(e, 10, 64)
	return pos, epoch, err1 == nil && err2 == nil
}

// Recover implements wal.Backend. It reads the objects holding positions
// from..end, end being the one the fence recorded: at each position the
// object of the highest epoch below this writer's (a lower one at the
// same position is a fenced writer's late PUT), each of whose frames must
// be valid and end where the next object starts. Objects at or beyond
// the end were never recorded, so never acknowledged, and are ignored
// (and deleted). A missing or damaged object inside the recorded range is
// an error: acknowledged frames would be lost.
func (b *Objects) Recover(from uint64, fn func(pos uint64, body []byte) error) (wal.Recovery, error) {
	rec := wal.Recovery{Start: from, End: from}
	end := b.recordedEnd
	ctx, cancel := b.ctx()
	keys, err := b.opts.Store.List(ctx, b.opts.Prefix)
	cancel()
	if err != nil {
		return rec, fmt.Errorf("list write-ahead objects %s: %w", b.opts.Prefix, err)
	}
	if from > end {
		return rec, &wal.CorruptionError{File: b.opts.Prefix, Pos: from, Err: fmt.Errorf("%w: the checkpoint is at %d but the recorded end is %d", wal.ErrCorrupt, from, end)}
	}
	best := map[uint64]object{}
	bestEpoch := map[uint64]uint64{}
	var stale []string
	for _, k := range keys {
		name := strings.TrimPrefix(k, b.opts.Prefix)
		if strings.HasPrefix(name, checkpointDir) {
			if b.ckObjectKey() != k {
				if e, _, ok := parseKey(strings.TrimPrefix(name, checkpointDir)); ok && e < b.Epoch() {
					stale = append(stale, k)
				}
			}
			continue
		}
		pos, epoch, ok := parseKey(name)
		if !ok || epoch >= b.Epoch() {
			// Not a log object, or one of a writer that took the log
			// over since: this writer is fenced and will find out.
			continue
		}
		if pos >= end {
			stale = append(stale, k)
			continue
		}
		if prev, ok := best[pos]; ok {
			if bestEpoch[pos] > epoch {
				stale = append(stale, k)
				continue
			}
			stale = append(stale, prev.key)
		}
		best[pos], bestEpoch[pos] = object{start: pos, key: k}, epoch
	}
	chain := make([]object, 0, len(best))
	for _, o := range best {
		chain = append(chain, o)
	}
	sort.Slice(chain, func(i, j int) bool { return chain[i].start < chain[j].start })
	// The object holding from is the last starting at or below it; those
	// before it are left by a truncation cut short.
	i := sort.Search(len(chain), func(i int) bool { return chain[i].start > from }) - 1
	if from < end && i < 0 {
		first := end
		if len(chain) > 0 {
			first = chain[0].start
		}
		return rec, &wal.CorruptionError{File: b.opts.Prefix, Pos: from, Err: fmt.Errorf("%w: positions %d to %d are recorded but no object holds them", wal.ErrCorrupt, from, first)}
	}
	if from == end {
		i = len(chain) // nothing to read: every object lies below from
	}
	for _, o := range chain[:max(i, 0)] {
		stale = append(stale, o.key)
	}
	chain = chain[max(i, 0):]
	pos := from
	for j, o := range chain {
		next := end
		if j+1 < len(chain) {
			next = chain[j+1].start
		}
		ctx, cancel := b.ctx()
		data, err := b.opts.Store.Get(ctx, o.key)
		cancel()
		if errors.Is(err, ErrNotExist) {
			return rec, &wal.CorruptionError{File: o.key, Pos: pos, Err: fmt.Errorf("%w: the object vanished while the log was read", wal.ErrCorrupt)}
		}
		if err != nil {
			return rec, fmt.Errorf("read write-ahead object %s: %w", o.key, err)
		}
		skip := pos - o.start
		if skip > uint64(len(data)) {
			return rec, &wal.CorruptionError{File: o.key, Pos: pos, Err: fmt.Errorf("%w: the object ends at %d, before position %d", wal.ErrCorrupt, o.start+uint64(len(data)), pos)}
		}
		got, n, err := wal.ReadFrames(data[skip:], pos, b.opts.MaxFrameBytes, fn)
		rec.Frames += n
		if err != nil {
			if errors.Is(err, wal.ErrCorrupt) {
				return rec, &wal.CorruptionError{File: o.key, Pos: got, Err: err}
			}
			return rec, err
		}
		if got != next {
			what := "the next object starts"
			if j+1 == len(chain) {
				what = "the recorded end is"
			}
			return rec, &wal.CorruptionError{File: o.key, Pos: got, Err: fmt.Errorf("%w: the object's frames end at %d, %s at %d (positions missing or overlapping)", wal.ErrCorrupt, got, what, next)}
		}
		pos = got
	}
	rec.End = end
	b.end = end
	b.mu.Lock()
	b.mu.objs = chain
	b.mu.pending = append(b.mu.pending, stale...)
	b.mu.Unlock()
	if len(stale) > 0 {
		b.log.Info("write-ahead objects outside the recorded log are deleted at the next truncation",
			zap.Int("objects", len(stale)), zap.Uint64("end", end))
	}
	return rec, nil
}

// Write implements wal.Backend: one object, then the new end recorded
// under the fence. It returns only once both are durable.
//
// After a failed Write, the PUT or the transaction may still take effect
// later (a request whose answer timed out), and the fence may hold the
// failed write's end (a commit whose answer was lost). So the next Write
// first renews the epoch — the late requests of the old one are fenced
// in etcd, and its late PUT loses to the new epoch's object at the same
// position — then records the end back at its position, so that a crash
// between its PUT and its commit never leaves an end that the objects'
// frames do not meet.
func (b *Objects) Write(pos uint64, bufs [][]byte, n int64) error {
	if b.isFenced.Load() {
		return b.fencedErr()
	}
	if pos != b.end {
		return fmt.Errorf("objwal: write at %d, the log ends at %d", pos, b.end)
	}
	if b.failed {
		if err := b.renew(); err != nil {
			return fmt.Errorf("renew the write-ahead log's epoch after a failed write: %w", err)
		}
		if err := b.commit(pos); err != nil {
			return fmt.Errorf("record the write-ahead log's end back at %d after a failed write: %w", pos, err)
		}
		b.failed = false
	}
	key := b.objectKey(pos, b.Epoch())
	ctx, cancel := b.ctx()
	err := b.opts.Store.Put(ctx, key, bufs, n)
	cancel()
	if err != nil {
		b.failed = true
		return fmt.Errorf("put write-ahead object %s: %w", key, err)
	}
	if err := b.commit(pos + uint64(n)); err != nil {
		b.failed = true
		return fmt.Errorf("record write-ahead object %s: %w", key, err)
	}
	b.end = pos + uint64(n)
	b.mu.Lock()
	b.mu.objs = append(b.mu.objs, object{start: pos, key: key})
	b.mu.Unlock()
	return nil
}

func (b *Objects) fencedErr() error {
	return fmt.Errorf("write-ahead log %s, epoch %d: %w", b.opts.Prefix, b.Epoch(), ErrFenced)
}

func (b *Objects) renew() error {
	ctx, cancel := b.ctx()
	defer cancel()
	old := b.Epoch()
	next, err := b.opts.Fence.Renew(ctx, old)
	if errors.Is(err, ErrFenced) {
		b.isFenced.Store(true)
		b.log.Error("write-ahead log taken over by another process; this one writes no more", zap.Uint64("epoch", old), zap.Error(err))
	}
	if err != nil {
		return err
	}
	b.epoch.Store(next)
	b.log.Info("write-ahead log epoch renewed after a failed write", zap.Uint64("from", old), zap.Uint64("to", next))
	return nil
}

func (b *Objects) commit(end uint64) error {
	ctx, cancel := b.ctx()
	defer cancel()
	err := b.opts.Fence.Commit(ctx, b.Epoch(), end)
	if errors.Is(err, ErrFenced) {
		b.isFenced.Store(true)
		b.log.Error("write-ahead log taken over by another process; this one writes no more", zap.Uint64("epoch", b.Epoch()), zap.Error(err))
	}
	return err
}

// TruncateBefore implements wal.Backend: objects whose frames all lie
// below pos are deleted. A deletion that fails is retried by the next
// call; the error names it, but the others go on.
func (b *Objects) TruncateBefore(pos uint64) error {
	b.mu.Lock()
	if b.isFenced.Load() {
		b.mu.Unlock()
		return b.fencedErr()
	}
	// An object ends where the next starts; the last one is kept, as
	// Files keeps its active file (its end is the leader's).
	n := 0
	for n+1 < len(b.mu.objs) && b.mu.objs[n+1].start <= pos {
		n++
	}
	keys := append([]string(nil), b.mu.pending...)
	for _, o := range b.mu.objs[:n] {
		keys = append(keys, o.key)
	}
	b.mu.objs = append([]object(nil), b.mu.objs[n:]...)
	b.mu.pending = nil
	b.mu.Unlock()
	var errs []error
	var failed []string
	for _, k := range keys {
		ctx, cancel := b.ctx()
		err := b.opts.Store.Delete(ctx, k)
		cancel()
		if err != nil {
			failed = append(failed, k)
			errs = append(errs, fmt.Errorf("delete write-ahead object %s: %w", k, err))
		}
	}
	if len(failed) > 0 {
		b.mu.Lock()
		b.mu.pending = append(b.mu.pending, failed...)
		b.mu.Unlock()
	}
	return errors.Join(errs...)
}

// SaveCheckpoint implements wal.Backend: in the fence when small,
// otherwise in an object the fence then points at (the previous
// checkpoint object is deleted once the fence no longer names it).
func (b *Objects) SaveCheckpoint(data []byte) error {
	if b.isFenced.Load() {
		return b.fencedErr()
	}
	var value []byte
	var key string
	epoch := b.Epoch()
	if len(data) <= b.opts.InlineCheckpointBytes {
		value = append([]byte{ckInline}, data...)
	} else {
		b.ckSeq++
		key = b.checkpointKey(epoch, b.ckSeq)
		ctx, cancel := b.ctx()
		err := b.opts.Store.Put(ctx, key, [][]byte{data}, int64(len(data)))
		cancel()
		if err != nil {
			return fmt.Errorf("put write-ahead log checkpoint %s: %w", key, err)
		}
		value = append([]byte{ckObject}, key...)
	}
	ctx, cancel := b.ctx()
	err := b.opts.Fence.SaveCheckpoint(ctx, epoch, value)
	cancel()
	if errors.Is(err, ErrFenced) && b.Epoch() == epoch {
		// Not the leader's own renewal meanwhile (then a later
		// checkpoint succeeds): another process has the log.
		b.isFenced.Store(true)
	}
	if err != nil {
		if key != "" {
			b.addPending(key)
		}
		return fmt.Errorf("record write-ahead log checkpoint: %w", err)
	}
	if old := b.ckObjectKey(); old != "" && old != key {
		b.addPending(old)
	}
	b.ckValue = value
	return nil
}

func (b *Objects) addPending(key string) {
	b.mu.Lock()
	b.mu.pending = append(b.mu.pending, key)
	b.mu.Unlock()
}

// ckObjectKey is the key of the object holding the checkpoint, if any.
func (b *Objects) ckObjectKey() string {
	if len(b.ckValue) > 0 && b.ckValue[0] == ckObject {
		return string(b.ckValue[1:])
	}
	return ""
}

// LoadCheckpoint implements wal.Backend.
func (b *Objects) LoadCheckpoint() ([]byte, error) {
	v := b.ckValue
	if len(v) == 0 {
		return nil, nil
	}
	switch v[0] {
	case ckInline:
		return bytes.Clone(v[1:]), nil
	case ckObject:
		ctx, cancel := b.ctx()
		defer cancel()
		data, err := b.opts.Store.Get(ctx, string(v[1:]))
		if err != nil {
			return nil, fmt.Errorf("read write-ahead log checkpoint %s: %w", v[1:], err)
		}
		return data, nil
	}
	return nil, fmt.Errorf("write-ahead log checkpoint: unknown tag %d: %w", v[0], wal.ErrCorrupt)
}

// Close implements wal.Backend. The epoch stays: the next process to
// open the log takes it over.
func (b *Objects) Close() error { return nil }

var _ wal.Backend = (*Objects)(nil)
