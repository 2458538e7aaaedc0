package wal

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"go.uber.org/zap"

	"github.com/silt-io/silt/core/vfs"
)

// FilesOptions configure the local-files backend.
type FilesOptions struct {
	FS  vfs.FS
	Dir string
	// FileBytes is the size at which the active file is rolled.
	FileBytes int64
	// PreallocBytes is how far ahead of its data the active file is
	// zero-filled (see Files.write); 0 means 1 MiB, negative disables it.
	PreallocBytes int64
	// MaxFrameBytes bounds one frame body; a larger length read back is
	// damage.
	MaxFrameBytes int
	Log           *zap.Logger
}

// Files is the Backend of one node's local write-ahead log: files named
// <first position, 20 digits>.wal in one directory, and the checkpoint in
// CHECKPOINT beside them. Only the log's leader calls Write, so the active
// file needs no lock of its own; Recover runs before any Write.
type Files struct {
	opts FilesOptions
	log  *zap.Logger

	// startsMu guards starts, which the leader extends and truncation
	// shortens.
	startsMu sync.Mutex
	starts   []uint64 // first position of each file, ascending
	active   vfs.File // the last file, for writing
	start    uint64   // starts[len-1]
	size     int64    // bytes of frames in the active file
	// alloc is the active file's length on disk: its frames plus a
	// zero-filled region ahead of them. A commit that lands inside that
	// region changes no file metadata, so its fdatasync writes only data
	// blocks; on ext4 that saves about a third of a small commit's sync.
	alloc     int64
	avgCommit int64
	// failed is set after a failed Write: the next one first cuts the
	// active file back to size, so that no part of the failed write can
	// be read back behind later frames.
	failed bool
}

const (
	walSuffix      = ".wal"
	checkpointFile = "CHECKPOINT"
	checkpointTemp = "CHECKPOINT.tmp"
)

func walName(start uint64) string { return fmt.Sprintf("%020d%s", start, walSuffix) }

// OpenFiles opens (creating if needed) the log directory. Recover must be
// called before the first Write.
func OpenFiles(opts FilesOptions) (*Files, error) {
	if opts.FileBytes <= 0 {
		opts.FileBytes = 64 << 20
	}
	if opts.PreallocBytes == 0 {
		opts.PreallocBytes = 1 << 20
	}
	if opts.MaxFrameBytes <= 0 {
		opts.MaxFrameBytes = 128 << 20
	}
	if opts.Log == nil {
		opts.Log = zap.NewNop()
	}
	if err := vfs.MkdirAllDurable(opts.FS, opts.Dir); err != nil {
		return nil, fmt.Errorf("create wal dir %s: %w", opts.Dir, err)
	}
	return &Files{opts: opts, log: opts.Log}, nil
}

func (b *Files) path(start uint64) string { return filepath.Join(b.opts.Dir, walName(start)) }

func (b *Files) list() ([]uint64, error) {
	names, err := b.opts.FS.List(b.opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("list wal %s: %w", b.opts.Dir, err)
	}
	var out []uint64
	for _, n := range names {
		if !strings.HasSuffix(n, walSuffix) {
			continue
		}
		v, err := strconv.ParseUint(strings.TrimSuffix(n, walSuffix), 10, 64)
		if err == nil {
			out = append(out, v)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}

// CorruptionError reports damage the log cannot repair by cutting a torn
// tail: a frame inside a sealed file, or a file missing between two others.
type CorruptionError struct {
	File string
	Pos  uint64
	Err  error
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("wal: %s damaged at position %d: %v", e.File, e.Pos, e.Err)
}

func (e *CorruptionError) Unwrap() error { return e.Err }

// Recover implements Backend.
func (b *Files) Recover(from uint64, fn func(pos uint64, body []byte) error) (Recovery, error) {
	starts, err := b.list()
	if err != nil {
		return Recovery{}, err
	}
	rec := Recovery{Start: from, End: from}
	if len(starts) == 0 {
		// The first file is created now rather than at the first append,
		// so that appends need no new file (nor a free inode or block
		// for one) until the log rolls.
		b.starts, b.start, b.size, b.alloc = nil, from, 0, 0
		return rec, b.roll(from)
	}
	if from < starts[0] {
		return rec, &CorruptionError{File: walName(starts[0]), Pos: from, Err: fmt.Errorf("%w: the checkpoint is at %d but the oldest file starts at %d", ErrCorrupt, from, starts[0])}
	}
	// Files wholly below from are left by a truncation cut short.
	i := sort.Search(len(starts), func(i int) bool { return starts[i] > from }) - 1
	for _, s := range starts[:i] {
		if err := b.opts.FS.Remove(b.path(s)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return rec, fmt.Errorf("remove old wal file: %w", err)
		}
	}
	starts = starts[i:]
	pos := from
	for j, s := range starts {
		last := j == len(starts)-1
		if !last && starts[j+1] < pos {
			return rec, &CorruptionError{File: walName(starts[j+1]), Pos: pos, Err: fmt.Errorf("%w: file starts inside its predecessor", ErrCorrupt)}
		}
		if pos < s {
			return rec, &CorruptionError{File: walName(s), Pos: pos, Err: fmt.Errorf("%w: positions %d to %d are missing", ErrCorrupt, pos, s)}
		}
		end, n, torn, err := b.scan(s, pos, last, fn)
		if err != nil {
			return rec, err
		}
		rec.Frames += n
		rec.TornBytes += torn
		pos = end
		if !last && pos != starts[j+1] {
			return rec, &CorruptionError{File: walName(s), Pos: pos, Err: fmt.Errorf("%w: file ends at %d, the next starts at %d", ErrCorrupt, pos, starts[j+1])}
		}
	}
	rec.End = pos
	b.starts = starts
	b.start = starts[len(starts)-1]
	w, err := b.opts.FS.OpenRW(b.path(b.start))
	if err != nil {
		return rec, fmt.Errorf("open wal file: %w", err)
	}
	b.active = w
	b.size = int64(pos - b.start)
	if b.alloc, err = w.Size(); err != nil {
		return rec, fmt.Errorf("stat wal file: %w", err)
	}
	return rec, nil
}

// scan reads one file from position pos, passing each valid frame to fn,
// and returns the position after the last one. In the last file whatever
// follows the frames is cut off unless it is all zeros (preallocated).
func (b *Files) scan(start, pos uint64, last bool, fn func(uint64, []byte) error) (end uint64, frames int, torn int64, err error) {
	path := b.path(start)
	f, err := b.opts.FS.Open(path)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("open wal file: %w", err)
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return 0, 0, 0, fmt.Errorf("stat wal file: %w", err)
	}
	off := int64(pos - start)
	data := make([]byte, max(size-off, 0))
	if _, err := f.ReadAt(data, off); err != nil && !errors.Is(err, io.EOF) {
		return 0, 0, 0, fmt.Errorf("read wal file %s: %w", path, err)
	}
	p := 0
	for p < len(data) {
		body, cerr := checkFrame(data[p:], pos, b.opts.MaxFrameBytes)
		if cerr != nil {
			if allZero(data[p:]) {
				break
			}
			if !last {
				return 0, 0, 0, &CorruptionError{File: walName(start), Pos: pos, Err: cerr}
			}
			torn = int64(len(data) - p)
			if err := b.cut(path, off+int64(p)); err != nil {
				return 0, 0, 0, err
			}
			b.log.Warn("truncated torn tail of the write-ahead log",
				zap.String("file", path), zap.Uint64("position", pos), zap.Int64("dropped_bytes", torn), zap.Error(cerr))
			break
		}
		if err := fn(pos, body); err != nil {
			return 0, 0, 0, err
		}
		frames++
		n := FrameHeaderSize + len(body)
		p += n
		pos += uint64(n)
	}
	return pos, frames, torn, nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// cut truncates the file at path to size and syncs the cut.
func (b *Files) cut(path string, size int64) error {
	w, err := b.opts.FS.OpenRW(path)
	if err != nil {
		return fmt.Errorf("open %s to cut its tail: %w", path, err)
	}
	defer w.Close()
	if err := w.Truncate(size); err != nil {
		return fmt.Errorf("cut tail of %s: %w", path, err)
	}
	if err := w.Sync(); err != nil {
		return fmt.Errorf("sync cut of %s: %w", path, err)
	}
	return nil
}

// Write implements Backend.
func (b *Files) Write(pos uint64, bufs [][]byte, n int64) error {
	if pos != b.start+uint64(b.size) {
		return fmt.Errorf("wal: write at %d, the log ends at %d", pos, b.start+uint64(b.size))
	}
	if b.failed && b.active != nil {
		// Whatever the failed write left must go, and the cut must be
		// durable before anything is written after it.
		if err := b.active.Truncate(b.size); err != nil {
			return fmt.Errorf("cut failed write: %w", err)
		}
		if err := b.active.Sync(); err != nil {
			return fmt.Errorf("sync cut of failed write: %w", err)
		}
		b.alloc = b.size
		b.failed = false
	}
	if b.active == nil || b.size > 0 && b.size+n > b.opts.FileBytes {
		if err := b.roll(pos); err != nil {
			return err
		}
	}
	if err := b.write(bufs, n); err != nil {
		b.failed = true
		return err
	}
	if err := b.active.Sync(); err != nil {
		b.failed = true
		return fmt.Errorf("sync wal: %w", err)
	}
	b.size += n
	return nil
}

// roll seals the active file (cutting its zero-filled tail) and starts a
// new one at pos, whose directory entry is made durable before any frame
// goes into it.
func (b *Files) roll(pos uint64) error {
	if b.active != nil {
		if b.alloc > b.size {
			// Not synced: recovery reads zeros after the last frame as
			// the end of a file, so a lost cut is harmless.
			if err := b.active.Truncate(b.size); err != nil {
				return fmt.Errorf("cut preallocated tail of wal file: %w", err)
			}
		}
		b.active.Close()
		b.active = nil
	}
	w, err := b.opts.FS.Create(b.path(pos))
	if err != nil {
		return fmt.Errorf("create wal file: %w", err)
	}
	if err := b.opts.FS.SyncDir(b.opts.Dir); err != nil {
		w.Close()
		return fmt.Errorf("sync wal dir: %w", err)
	}
	b.active, b.start, b.size, b.alloc = w, pos, 0, 0
	b.startsMu.Lock()
	b.starts = append(b.starts, pos)
	b.startsMu.Unlock()
	return nil
}

// preallocMinCommit is the commit size from which zero-filling ahead no
// longer pays: a commit this large amortizes its metadata update, and
// filling ahead of it would write every byte twice.
const preallocMinCommit = 64 << 10

var zeros [1 << 20]byte

// write writes bufs at the end of the active file's frames. When a small
// commit of a log of small commits runs past the zero-filled region, the
// region is extended in the same burst (the rule core/segment used when
// each segment synced its own file, measured there: a log of large
// commits grows its file instead).
func (b *Files) write(bufs [][]byte, n int64) error {
	if b.avgCommit == 0 {
		b.avgCommit = n
	} else {
		b.avgCommit += (n - b.avgCommit) / 8
	}
	if err := b.active.WriteVAt(bufs, b.size); err != nil {
		return fmt.Errorf("write wal: %w", err)
	}
	end := b.size + n
	if end <= b.alloc {
		return nil
	}
	b.alloc = end
	if b.opts.PreallocBytes < 0 || n >= preallocMinCommit || b.avgCommit >= preallocMinCommit {
		return nil
	}
	target := min(end+b.opts.PreallocBytes, max(b.opts.FileBytes, end))
	for off := end; off < target; {
		k := int(min(int64(len(zeros)), target-off))
		if err := b.active.WriteVAt([][]byte{zeros[:k]}, off); err != nil {
			return fmt.Errorf("preallocate wal: %w", err)
		}
		off += int64(k)
	}
	b.alloc = target
	return nil
}

// TruncateBefore implements Backend. The active file is never removed.
func (b *Files) TruncateBefore(pos uint64) error {
	b.startsMu.Lock()
	defer b.startsMu.Unlock()
	n := 0
	for n < len(b.starts)-1 && b.starts[n+1] <= pos {
		n++
	}
	if n == 0 {
		return nil
	}
	for _, s := range b.starts[:n] {
		if err := b.opts.FS.Remove(b.path(s)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove wal file: %w", err)
		}
	}
	b.starts = append([]uint64(nil), b.starts[n:]...)
	// A removal lost in a crash is redone by Recover: the checkpoint,
	// written before this, is past these files.
	return b.opts.FS.SyncDir(b.opts.Dir)
}

// SaveCheckpoint implements Backend: temp file, fsync, rename, directory
// fsync.
func (b *Files) SaveCheckpoint(data []byte) error {
	if err := vfs.WriteFileDurable(b.opts.FS, b.opts.Dir, checkpointTemp, checkpointFile, data); err != nil {
		return fmt.Errorf("write wal checkpoint: %w", err)
	}
	return nil
}

// LoadCheckpoint implements Backend.
func (b *Files) LoadCheckpoint() ([]byte, error) {
	f, err := b.opts.FS.Open(filepath.Join(b.opts.Dir, checkpointFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open wal checkpoint: %w", err)
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, fmt.Errorf("stat wal checkpoint: %w", err)
	}
	data := make([]byte, size)
	if _, err := f.ReadAt(data, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read wal checkpoint: %w", err)
	}
	return data, nil
}

// Close implements Backend.
func (b *Files) Close() error {
	if b.active == nil {
		return nil
	}
	err := b.active.Close()
	b.active = nil
	return err
}
