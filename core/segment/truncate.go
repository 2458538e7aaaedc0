package segment

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// TruncateBefore removes the log files all of whose events are below
// offset, oldest first, and returns how many it removed. The active (last)
// file is never removed, so a segment keeps at least one file. Once it
// returns, a Read below the new First fails with ErrOutOfRange.
//
// The caller must only pass an offset whose events are safe elsewhere (for
// silt: durable in tier 2 and recorded in the catalog).
func (l *Log) TruncateBefore(offset uint64) (int, error) {
	l.mu.Lock()
	if l.mu.closed {
		l.mu.Unlock()
		return 0, ErrClosed
	}
	if l.mu.failed != nil {
		// Recovery will rebuild the file list from disk; removing files
		// under it would race with that rebuild.
		err := l.mu.failed
		l.mu.Unlock()
		return 0, err
	}
	files := l.mu.files
	n := 0
	for n < len(files)-1 && files[n+1].first <= offset {
		n++
	}
	if n == 0 {
		l.mu.Unlock()
		return 0, nil
	}
	detached := files[:n:n]
	l.mu.files = append([]*file(nil), files[n:]...)
	boundary := l.mu.files[0].first
	writers := l.committedWritersLocked()
	l.mu.Unlock()

	// A reader still inside a detached file keeps its descriptor until it
	// is done; a reader that located it but has not opened it yet finds
	// it gone and looks again.
	defer func() {
		for _, f := range detached {
			l.opts.Files.forget(f.path)
		}
	}()
	// The writer table is rebuilt from the records at the next start; the
	// records about to go must be remembered first, or a retry of a batch
	// whose only trace was in them would be stored twice.
	l.truncMu.Lock()
	defer l.truncMu.Unlock()
	if err := l.dirOp(func() error { return l.saveWriters(writers) }); err != nil {
		return 0, err
	}
	return l.removeBelow(boundary)
}

// removeBelow unlinks every log file starting below boundary in ascending
// order, syncing the directory after each one, so that a crash at any point
// leaves a contiguous run of files (recovery refuses a gap). Listing the
// directory rather than trusting the detached set keeps that true even if
// two truncations overlap: each removes, in order, whatever lower file is
// still there, and ENOENT from the other's removal is not an error.
func (l *Log) removeBelow(boundary uint64) (int, error) {
	var names []string
	err := l.dirOp(func() (err error) { names, err = l.opts.FS.List(l.opts.Dir); return err })
	if err != nil {
		return 0, fmt.Errorf("list segment %s: %w", l.opts.Dir, err)
	}
	removed := 0
	for _, name := range names { // List is sorted, and names are zero-padded
		if !strings.HasSuffix(name, suffix) {
			continue
		}
		first, err := strconv.ParseUint(strings.TrimSuffix(name, suffix), 10, 64)
		if err != nil || first >= boundary {
			continue
		}
		err = l.opts.FS.Remove(filepath.Join(l.opts.Dir, name))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return removed, fmt.Errorf("remove tiered segment file %s: %w", name, err)
		}
		if err := l.dirOp(func() error { return l.opts.FS.SyncDir(l.opts.Dir) }); err != nil {
			return removed, fmt.Errorf("sync segment dir %s: %w", l.opts.Dir, err)
		}
		removed++
	}
	return removed, nil
}

// Roll starts a new, empty active file when every event of the current
// one is below offset (already safe elsewhere, as for TruncateBefore), so
// that TruncateBefore can then remove it: a segment whose single file
// holds everything it was ever given could otherwise free nothing until
// the file reaches FileBytes, which a small disk may never give it. It
// reports whether it rolled; it does not while anything is being written
// (that data is not below offset anyway) or the active file is empty.
//
// The file is created under the log's lock, the one I/O done there: a
// roll happens only when tier 1 is short of space and the segment fully
// tiered, when no appender is waiting on this segment.
func (l *Log) Roll(offset uint64) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed {
		return false, ErrClosed
	}
	if l.mu.failed != nil {
		return false, l.mu.failed
	}
	cur := l.mu.files[len(l.mu.files)-1]
	if cur.size == 0 || l.mu.next > offset || l.mu.committed != l.mu.next ||
		l.mu.leading || l.mu.inflight > 0 || l.mu.pending != nil {
		return false, nil
	}
	// As at any roll: the file left behind ends with its data and is
	// synced, since recovery can cut a torn tail off the last file only.
	if err := l.cutPrealloc(cur); err != nil {
		return false, err
	}
	if err := l.opts.Files.Sync(cur.path); err != nil {
		return false, err
	}
	f, err := l.createFile(l.mu.next, false)
	if err != nil {
		return false, err
	}
	l.alloc = 0
	l.mu.files = append(l.mu.files, f)
	l.mu.tail = 0
	return true, nil
}
