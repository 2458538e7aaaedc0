// Package segment is one segment's tier-1 log: a directory of append-only
// files named by their first offset, each a sequence of core/record records.
//
// Appends use group commit: the first appender to find no commit in flight
// becomes the leader, writes every batch queued so far with one write and
// one fdatasync, acknowledges them all, and repeats while more arrived in
// the meantime. Nobody holds the segment lock during I/O, so appenders keep
// queueing while a sync is in flight.
//
// A write or sync error poisons the log: no later batch can be acknowledged
// on top of bytes whose durability is unknown. The next append after a
// short pause re-runs recovery (re-reading what is really on disk) and goes
// on from there.
package segment

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/silt-io/silt/core/record"
	"github.com/silt-io/silt/core/vfs"
	"github.com/silt-io/silt/core/wal"
)

// Errors. The Store maps them onto core's sentinels.
var (
	ErrClosed      = errors.New("segment: closed")
	ErrUnavailable = errors.New("segment: log unavailable after an I/O error")
	ErrOutOfRange  = errors.New("segment: offset out of range")
	ErrSeqConflict = errors.New("segment: sequence number already used")
	ErrWriterOwned = errors.New("segment: writer id belongs to another owner")
)

// Options configure a Log.
type Options struct {
	FS  vfs.FS
	Dir string
	// FileBytes is the size at which the active file is rolled.
	FileBytes int64
	// MaxRecordBytes bounds one record; larger lengths read back are
	// treated as corruption.
	MaxRecordBytes int
	// WriterRetention is how long an idempotent writer is remembered after
	// its last batch once the files holding that batch are truncated; 0
	// means 7 days. A retry older than that is stored again.
	WriterRetention time.Duration
	// PreallocBytes is how far ahead of its data the active file is
	// zero-filled when small commits reach the end of the filled region
	// (see Log.alloc); 0 means 1 MiB, negative disables it.
	PreallocBytes int64
	Log           *zap.Logger
	// Now is the clock (tests); nil means time.Now.
	Now func() time.Time
	// OnCommit, if set, is called after each commit and before its
	// batches are acknowledged, outside the log's locks (the store marks
	// the segment in its Activity set, which an acknowledged producer may
	// expect tiering to see).
	OnCommit func()
	// Files holds the log's open descriptors; nil gives the log a cache
	// of its own. A store shares one among all its logs, under its
	// descriptor budget.
	Files *FileCache
	// WAL, if set, is the node's write-ahead log: an append is
	// acknowledged once its record is durable there and written (not
	// synced) to the segment's file. Without it the log syncs its own
	// file at each commit, as a standalone log.
	WAL *wal.Log
	// Name identifies the segment in the write-ahead log's frames.
	Name string
	// OnWrite, with a WAL, is called on the WAL's leader after records
	// are written to the file at path, with the WAL position of their
	// frame: the file holds data not yet synced that a checkpoint must
	// sync before the WAL may drop that position.
	OnWrite func(path string, walPos uint64)
	// DeferDirSync, with a WAL, takes the directories whose new entries
	// the log would otherwise sync at once when it creates the segment's
	// directory or a file that appends go into: the WAL holds every
	// record written there and its replay recreates them, so the caller
	// syncs these directories before it lets the WAL drop those records
	// (a checkpoint). A fresh segment so costs no directory sync of its
	// own; files made by truncation are synced as before, since no WAL
	// record recreates them.
	DeferDirSync func(dirs []string)
	// OnLogged, with a WAL, is called once a group's frame is durable in
	// the WAL, before its records go to the file, with the frame's
	// position and the group's offsets [first, next): a log on shared
	// storage is kept from that position until tier 2 holds the offsets.
	OnLogged func(walPos, first, next uint64)
	// Base is the offset the first file starts at when the directory
	// holds none: a node rebuilding a segment whose earlier events are
	// in tier 2 only (cluster durability) continues its offsets.
	Base uint64
}

// Batch is one append.
type Batch struct {
	Events   [][]byte
	WriterID string
	Seq      uint64
	// Owner is who sends the batch. A writer id is bound to the first
	// owner that uses it; a batch from another owner fails with
	// ErrWriterOwned instead of being taken for that writer's retry. An
	// empty Owner is not checked and keeps the writer's binding.
	Owner string
}

// Result acknowledges a durable batch.
type Result struct {
	FirstOffset uint64
	Count       int
	Duplicate   bool
}

// Event is one stored event.
type Event struct {
	Offset uint64
	Time   int64 // unix nanoseconds of the append
	Data   []byte
}

// indexEvery is the spacing of the sparse in-memory index, in bytes.
const indexEvery = 64 << 10

// file is one log file. size is the committed size; readers never look
// past it. Its descriptor lives in the FileCache.
type file struct {
	first uint64 // offset of the first event in the file
	name  string
	path  string
	size  int64
	index []indexEntry // sorted by offset; index[0] is at pos 0
}

type indexEntry struct {
	offset uint64
	pos    int64
}

// writerState is the last batch seen from one idempotent writer.
type writerState struct {
	owner string // "" for writers from before owners were recorded
	seq   uint64
	first uint64
	count int
	time  int64  // unix nanoseconds of that batch's append
	g     *group // non-nil while that batch's commit is in flight
}

// group is the set of batches one leader writes and syncs together. The
// encoded records stay in their appenders' buffers and are written with one
// vectored write, so a group never copies or grows a buffer of its own.
type group struct {
	recs    [][]byte // encoded records, in offset order
	size    int64    // total bytes of recs
	first   uint64   // offset of the first event in recs
	next    uint64   // offset after the last event in recs
	records []indexEntry
	// writers are the states of the idempotent writers whose batches
	// are in recs; they point at the group until it is committed.
	writers []*writerState
	done    chan struct{}
	err     error
	// With a WAL: sealed once the WAL's leader has taken the group, after
	// which batches go to a new one; logged if its frame went into that
	// round; finished once done is closed.
	sealed, logged, finished bool
	// file, with a WAL, is the new file Seal created for the group when
	// it would not fit in the last one.
	file *file
}

// Log is one segment's log. It is safe for concurrent use.
type Log struct {
	opts Options
	log  *zap.Logger

	// alloc is the active file's length on disk: its committed data plus a
	// zero-filled region ahead of it. A small commit that lands inside
	// that region changes no file metadata, so its fdatasync writes only
	// the data block, which on ext4 costs about two thirds of an
	// append-then-fdatasync that must also journal the new file size.
	// Recovery reads an all-zero tail as the end of the data, and a file
	// is cut back to its data before the next file is created, so only
	// the active file ever has one. Owned by the leader; recovery sets it
	// while no leader runs.
	alloc int64

	// avgCommit is a moving average of commit sizes, which decides whether
	// the leader zero-fills ahead at all (Log.write). Owned by the leader.
	avgCommit int64

	// truncMu serializes TruncateBefore's checkpoint and removals.
	truncMu sync.Mutex

	mu struct {
		sync.Mutex
		files     []*file
		next      uint64 // next offset to assign
		committed uint64 // every offset below is durable
		pending   *group // queued, not yet being written
		leading   bool   // a leader is writing
		writers   map[string]*writerState
		failed    error
		failedAt  time.Time
		closed    bool
		notify    chan struct{} // closed and replaced on each commit
		// inflight counts WAL groups sealed and not yet done, during
		// which recovery must wait.
		inflight int
		// tail, with a WAL, is the size the last file will have once
		// every sealed group is written: Seal decides rolls by it.
		tail    int64
		drained chan struct{} // closed when inflight drops to 0, if set
		// unapplied holds, in order, the records of groups durable in
		// the WAL that could not be written to the file; recovery writes
		// them before the log takes appends again, since the WAL will
		// replay them at the next start.
		unapplied []unappliedGroup
	}
}

type unappliedGroup struct {
	first uint64
	recs  []byte
}

// Open opens or creates the log in opts.Dir and recovers it: every file is
// scanned, the sparse index rebuilt, and a torn or damaged tail of the last
// file truncated (and logged with the bytes dropped).
func Open(opts Options) (*Log, error) {
	if opts.Log == nil {
		opts.Log = zap.NewNop()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.FileBytes <= 0 {
		opts.FileBytes = 64 << 20
	}
	if opts.MaxRecordBytes <= 0 {
		opts.MaxRecordBytes = 64 << 20
	}
	if opts.WriterRetention <= 0 {
		opts.WriterRetention = 7 * 24 * time.Hour
	}
	if opts.PreallocBytes == 0 {
		opts.PreallocBytes = 1 << 20
	}
	if opts.Files == nil {
		opts.Files = NewFileCache(opts.FS, 16)
	}
	l := &Log{opts: opts, log: opts.Log}
	l.mu.notify = make(chan struct{})
	mkdir := func() error { return vfs.MkdirAllDurable(opts.FS, opts.Dir) }
	if l.deferDirs() {
		mkdir = func() error {
			changed, err := vfs.MkdirAllUnsynced(opts.FS, opts.Dir)
			if len(changed) > 0 {
				opts.DeferDirSync(changed)
			}
			return err
		}
	}
	if err := l.dirOp(mkdir); err != nil {
		return nil, fmt.Errorf("create segment dir %s: %w", opts.Dir, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.recoverLocked(); err != nil {
		l.closeFilesLocked()
		return nil, err
	}
	return l, nil
}

const suffix = ".log"

func fileName(first uint64) string { return fmt.Sprintf("%020d%s", first, suffix) }

// recoverLocked (re)builds the in-memory state from the files on disk.
func (l *Log) recoverLocked() error {
	l.closeFilesLocked()
	var names []string
	err := l.dirOp(func() (err error) { names, err = l.opts.FS.List(l.opts.Dir); return err })
	if err != nil {
		return fmt.Errorf("list segment %s: %w", l.opts.Dir, err)
	}
	var firsts []uint64
	for _, n := range names {
		if !strings.HasSuffix(n, suffix) {
			continue
		}
		v, err := strconv.ParseUint(strings.TrimSuffix(n, suffix), 10, 64)
		if err != nil {
			continue
		}
		firsts = append(firsts, v)
	}
	sort.Slice(firsts, func(i, j int) bool { return firsts[i] < firsts[j] })
	l.mu.writers = map[string]*writerState{}
	if err := l.dirOp(l.loadWriters); err != nil {
		return err
	}
	next := l.opts.Base
	if len(firsts) > 0 {
		next = firsts[0]
	}
	for i, first := range firsts {
		if first != next {
			return fmt.Errorf("segment %s: file %s starts at offset %d, previous file ends at %d: %w",
				l.opts.Dir, fileName(first), first, next, record.ErrCorrupt)
		}
		last := i == len(firsts)-1
		f, end, err := l.scanFile(first, last)
		if err != nil {
			return err
		}
		l.mu.files = append(l.mu.files, f)
		next = end
	}
	if len(l.mu.files) == 0 {
		// A segment without files is a fresh one (truncation always
		// leaves the active file): its first file holds only what the
		// WAL will log.
		f, err := l.createFile(next, l.deferDirs())
		if err != nil {
			return err
		}
		l.mu.files = []*file{f}
		l.alloc = 0
	} else {
		last := l.mu.files[len(l.mu.files)-1]
		h, err := l.opts.Files.acquire(last.path, false)
		if err != nil {
			return fmt.Errorf("open segment file %s: %w", last.name, err)
		}
		l.alloc, err = h.f.Size()
		l.opts.Files.release(h)
		if err != nil {
			return fmt.Errorf("stat segment file %s: %w", last.name, err)
		}
	}
	l.mu.next = next
	l.mu.committed = next
	l.mu.tail = l.mu.files[len(l.mu.files)-1].size
	if err := l.reapplyLocked(); err != nil {
		return err
	}
	l.mu.failed = nil
	return nil
}

// scanFile reads one file, building its index and the writer table. For
// the last file a damaged tail is truncated; elsewhere it is an error, since
// a sealed file was fully synced before the next one was created.
func (l *Log) scanFile(first uint64, last bool) (*file, uint64, error) {
	name := fileName(first)
	path := filepath.Join(l.opts.Dir, name)
	h, err := l.opts.Files.acquire(path, false)
	if err != nil {
		return nil, 0, fmt.Errorf("open segment file %s: %w", path, err)
	}
	defer l.opts.Files.release(h)
	r := h.f
	size, err := r.Size()
	if err != nil {
		return nil, 0, fmt.Errorf("stat segment file %s: %w", path, err)
	}
	f := &file{first: first, name: name, path: path}
	rd := record.NewReader(r, 0, size, l.opts.MaxRecordBytes+record.HeaderSize)
	rd.ReadAhead(scanReadAhead) // one read per MiB, not two per record
	off := first
	lastIndexed := int64(-indexEvery)
	for {
		pos := rd.Pos()
		rec, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if errors.Is(err, record.ErrCorrupt) {
			if zero, zerr := zeroTail(r, pos, size); zerr != nil {
				return nil, 0, fmt.Errorf("scan segment file %s: %w", path, zerr)
			} else if zero {
				// Preallocated space: the data ends here.
				break
			}
			if !last {
				return nil, 0, &CorruptionError{Dir: l.opts.Dir, File: name, Pos: pos, Err: err}
			}
			if err := l.truncateTail(r, path, pos, size, err); err != nil {
				return nil, 0, err
			}
			break
		}
		if err != nil {
			return nil, 0, fmt.Errorf("scan segment file %s: %w", path, err)
		}
		if pos-lastIndexed >= indexEvery {
			f.index = append(f.index, indexEntry{offset: off, pos: pos})
			lastIndexed = pos
		}
		if rec.WriterID != "" {
			owner := rec.Owner
			if owner == "" {
				// A batch sent without an owner keeps the writer's binding.
				if prev := l.mu.writers[rec.WriterID]; prev != nil {
					owner = prev.owner
				}
			}
			l.mu.writers[rec.WriterID] = &writerState{owner: owner, seq: rec.Seq, first: off, count: len(rec.Events), time: rec.TimeUnixNano}
		}
		off += uint64(len(rec.Events))
	}
	f.size = rd.Pos()
	if len(f.index) == 0 {
		f.index = []indexEntry{{offset: first, pos: 0}}
	}
	return f, off, nil
}

// zeroTail reports whether [pos, size) of r holds only zero bytes.
func zeroTail(r vfs.File, pos, size int64) (bool, error) {
	buf := make([]byte, 64<<10)
	for pos < size {
		n := int(min(int64(len(buf)), size-pos))
		m, err := r.ReadAt(buf[:n], pos)
		if m < n {
			if err == nil || errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return false, err
		}
		for _, b := range buf[:n] {
			if b != 0 {
				return false, nil
			}
		}
		pos += int64(n)
	}
	return true, nil
}

// truncateTail cuts a damaged tail off the last file and syncs the cut.
func (l *Log) truncateTail(w vfs.File, path string, pos, size int64, cause error) error {
	if err := w.Truncate(pos); err != nil {
		return fmt.Errorf("truncate torn tail of %s: %w", path, err)
	}
	if err := w.Sync(); err != nil {
		return fmt.Errorf("sync truncated %s: %w", path, err)
	}
	l.log.Warn("truncated torn tail of segment log",
		zap.String("file", path), zap.Int64("at", pos), zap.Int64("dropped_bytes", size-pos), zap.Error(cause))
	return nil
}

// CorruptionError reports damage inside a sealed log file, which recovery
// cannot repair by truncation without losing acknowledged events.
type CorruptionError struct {
	Dir, File string
	Pos       int64
	Err       error
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("segment %s: file %s damaged at byte %d: %v", e.Dir, e.File, e.Pos, e.Err)
}

func (e *CorruptionError) Unwrap() error { return e.Err }

// createFile creates the file for offset first, its directory entry made
// durable before any record goes into it, or with deferSync handed to
// Options.DeferDirSync to be made durable before the WAL drops the
// records that go into it. Its descriptor stays in the cache for the
// writes that follow.
func (l *Log) createFile(first uint64, deferSync bool) (*file, error) {
	name := fileName(first)
	path := filepath.Join(l.opts.Dir, name)
	h, err := l.opts.Files.acquire(path, true)
	if err != nil {
		return nil, fmt.Errorf("create segment file %s: %w", path, err)
	}
	l.opts.Files.release(h)
	if deferSync {
		l.opts.DeferDirSync([]string{l.opts.Dir})
	} else if err := l.dirOp(func() error { return l.opts.FS.SyncDir(l.opts.Dir) }); err != nil {
		return nil, fmt.Errorf("sync segment dir %s: %w", l.opts.Dir, err)
	}
	return &file{first: first, name: name, path: path, index: []indexEntry{{offset: first, pos: 0}}}, nil
}

// deferDirs reports whether new directory entries are synced by the
// WAL's owner rather than at once (Options.DeferDirSync).
func (l *Log) deferDirs() bool { return l.opts.WAL != nil && l.opts.DeferDirSync != nil }

// dirOp runs a directory operation that holds one descriptor at a time
// with it counted against the shared file budget.
func (l *Log) dirOp(fn func() error) error {
	return l.opts.Files.DirOp(1, fn)
}

func (l *Log) closeFilesLocked() {
	for _, f := range l.mu.files {
		l.opts.Files.forget(f.path)
	}
	l.mu.files = nil
}

// Close closes the log. Batches still queued fail with ErrClosed.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed {
		return nil
	}
	l.mu.closed = true
	// Groups the WAL has taken are written to the files before they
	// close: their offsets are in the WAL, and a log reopened on these
	// files must continue after them.
	for l.mu.inflight > 0 {
		if l.mu.drained == nil {
			l.mu.drained = make(chan struct{})
		}
		ch := l.mu.drained
		l.mu.Unlock()
		<-ch
		l.mu.Lock()
	}
	// A leader in flight still writes the active file; it notices closed
	// when it takes the lock again and closes the files then.
	if !l.mu.leading && l.mu.inflight == 0 {
		l.closeFilesLocked()
	}
	close(l.mu.notify)
	return nil
}
