package segment

import (
	"errors"
	"fmt"
	"io"

	"github.com/silt-io/silt/core/record"
	"github.com/silt-io/silt/core/wal"
)

// walGroup is a segment's group as the WAL sees it.
type walGroup struct {
	l *Log
	g *group
}

func mapWALErr(err error) error {
	switch {
	case errors.Is(err, wal.ErrClosed):
		return fmt.Errorf("%w: %w", ErrClosed, err)
	case errors.Is(err, wal.ErrUnavailable):
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return err
}

// Seal implements wal.Writer: the group takes no more batches and its
// frame body is its records after the segment's name and first offset.
func (w walGroup) Seal() [][]byte {
	l, g := w.l, w.g
	l.mu.Lock()
	if l.mu.pending == g {
		l.mu.pending = nil
	}
	g.sealed = true
	if l.mu.closed {
		g.finishLocked(ErrClosed)
	}
	if g.finished || len(g.recs) == 0 {
		l.mu.Unlock()
		return nil
	}
	l.mu.inflight++
	g.logged = true
	roll := l.mu.tail > 0 && l.mu.tail+g.size > l.opts.FileBytes
	if !roll {
		l.mu.tail += g.size
	}
	l.mu.Unlock()
	if roll {
		// The group's file is created before the group is logged, so
		// that a disk that cannot give it one refuses the batches while
		// they are stored nowhere (a retry is then not a duplicate).
		// Only this leader seals this segment's groups: nobody else
		// decides a roll meanwhile.
		f, err := l.createFile(g.first, l.deferDirs())
		if err != nil {
			l.mu.Lock()
			g.logged = false
			l.doneInflightLocked()
			l.mu.Unlock()
			l.fail(g, err)
			return nil
		}
		l.mu.Lock()
		g.file = f
		l.mu.tail = g.size
		l.mu.Unlock()
	}
	body := make([][]byte, 0, len(g.recs)+1)
	body = append(body, wal.AppendSegmentHeader(nil, l.opts.Name, g.first))
	return append(body, g.recs...)
}

// PendingBytes implements wal.Sizer: the bytes of the group's records so
// far (it takes batches until sealed).
func (w walGroup) PendingBytes() int64 {
	w.l.mu.Lock()
	defer w.l.mu.Unlock()
	return w.g.size
}

// Done implements wal.Writer: once the group's frame is durable its
// records go into the segment's file (unsynced: the WAL holds them) and
// the batches are acknowledged.
func (w walGroup) Done(pos uint64, err error) {
	l, g := w.l, w.g
	l.mu.Lock()
	if g.finished {
		// Failed or closed before it was logged.
		l.mu.Unlock()
		return
	}
	if err != nil {
		if g.logged {
			l.doneInflightLocked()
		}
		l.mu.Unlock()
		l.fail(g, mapWALErr(err))
		return
	}
	if l.mu.failed != nil {
		// An earlier group failed its file write after it was logged
		// while this one was being logged: it must follow that group
		// into the file, at recovery.
		l.keepUnappliedLocked(g)
		err := l.mu.failed
		l.mu.Unlock()
		l.fail(g, err)
		return
	}
	cur := l.mu.files[len(l.mu.files)-1]
	l.mu.Unlock()
	if l.opts.OnLogged != nil {
		l.opts.OnLogged(pos, g.first, g.next)
	}

	if err := l.writeGroup(cur, g, pos); err != nil {
		// Durable in the WAL, missing from the file: the file must get
		// these records before any later ones, so they are kept for
		// recovery, and the batches fail (they may have been stored, as
		// a retry with the same writer id will be told).
		l.mu.Lock()
		l.keepUnappliedLocked(g)
		l.mu.Unlock()
		l.fail(g, err)
		return
	}
}

// keepUnappliedLocked keeps a logged group's records for recovery to
// write, and counts the group out.
func (l *Log) keepUnappliedLocked(g *group) {
	recs := make([]byte, 0, g.size)
	for _, r := range g.recs {
		recs = append(recs, r...)
	}
	l.mu.unapplied = append(l.mu.unapplied, unappliedGroup{first: g.first, recs: recs})
	l.doneInflightLocked()
}

// writeGroup writes g's records, logged at WAL position pos, at the end of
// the log's last file, or in the new file Seal created for them, and
// commits them.
func (l *Log) writeGroup(cur *file, g *group, pos uint64) error {
	if g.file != nil {
		// A file written by a release that preallocated may end in
		// zeros: cut them, so that every file but the last ends with
		// its data.
		if err := l.cutPrealloc(cur); err != nil {
			return err
		}
		// A sealed file is synced once, here: recovery can only cut a
		// torn tail off the last file, and a file left behind must hold
		// every record up to the next file's first offset.
		if err := l.opts.Files.Sync(cur.path); err != nil {
			return err
		}
		l.alloc = 0
		l.mu.Lock()
		l.mu.files = append(l.mu.files, g.file)
		l.mu.Unlock()
		cur = g.file
	}
	h, err := l.opts.Files.acquire(cur.path, false)
	if err != nil {
		return err
	}
	err = h.f.WriteVAt(g.recs, cur.size)
	l.opts.Files.release(h)
	if err != nil {
		return fmt.Errorf("write segment file %s: %w", cur.path, err)
	}
	if l.opts.OnWrite != nil {
		l.opts.OnWrite(cur.path, pos)
	}
	l.mu.Lock()
	l.committedLocked(cur, g)
	l.alloc = max(l.alloc, cur.size)
	if !l.mu.closed {
		close(l.mu.notify)
		l.mu.notify = make(chan struct{})
	}
	l.mu.Unlock()
	// Before the acknowledgement: whoever was acknowledged finds the
	// commit's effects (tiering's activity set) already in place.
	if l.opts.OnCommit != nil {
		l.opts.OnCommit()
	}
	l.mu.Lock()
	g.finishLocked(nil)
	l.doneInflightLocked()
	l.mu.Unlock()
	return nil
}

// doneInflightLocked counts a sealed group out; Close waits for none to
// be left, so that a log reopened after it never assigns offsets that a
// group still being written holds in the WAL.
func (l *Log) doneInflightLocked() {
	l.mu.inflight--
	if l.mu.inflight == 0 && l.mu.drained != nil {
		close(l.mu.drained)
		l.mu.drained = nil
	}
}

// FilePaths returns the paths of the log's files.
func (l *Log) FilePaths() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, len(l.mu.files))
	for i, f := range l.mu.files {
		out[i] = f.path
	}
	return out
}

// reapplyLocked writes the records of groups the WAL holds but the file
// missed (see Done), then rebuilds the state from the files again.
func (l *Log) reapplyLocked() error {
	if len(l.mu.unapplied) == 0 {
		return nil
	}
	var tail []byte
	for _, u := range l.mu.unapplied {
		b, err := l.missing(u.first, u.recs, l.mu.next+countEvents(tail))
		if err != nil {
			return err
		}
		tail = append(tail, b...)
	}
	if err := l.appendRaw(tail); err != nil {
		return err
	}
	if l.opts.OnWrite != nil && l.opts.WAL != nil && len(tail) > 0 {
		// Their frames may be anywhere in the WAL; marking the file dirty
		// at the WAL's current end makes the next checkpoint sync it
		// before it lets the WAL drop them.
		l.opts.OnWrite(l.mu.files[len(l.mu.files)-1].path, l.opts.WAL.Applied())
	}
	l.mu.unapplied = nil
	return l.recoverLocked()
}

// countEvents counts the events of well-formed records.
func countEvents(recs []byte) uint64 {
	n := uint64(0)
	rd := record.NewMappedReader(recs, 0, 0, int64(len(recs)), len(recs)+1)
	for {
		r, err := rd.Next()
		if err != nil {
			return n
		}
		n += uint64(len(r.Events))
	}
}

// missing returns the records of recs (whose first event has offset first)
// from offset next on: those before are in the files already. A gap
// between next and first means the files lost records the WAL no longer
// has, which no replay can repair.
func (l *Log) missing(first uint64, recs []byte, next uint64) ([]byte, error) {
	rd := record.NewMappedReader(recs, 0, 0, int64(len(recs)), len(recs)+1)
	off := first
	for {
		pos := rd.Pos()
		r, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		if err != nil {
			return nil, &CorruptionError{Dir: l.opts.Dir, File: "wal frame", Err: err}
		}
		k := uint64(len(r.Events))
		switch {
		case off+k <= next:
			off += k
			continue
		case off == next:
			return recs[pos:], nil
		default:
			return nil, &CorruptionError{Dir: l.opts.Dir, File: fileName(l.mu.files[len(l.mu.files)-1].first),
				Err: fmt.Errorf("%w: the write-ahead log continues at offset %d but the segment's files end at %d", record.ErrCorrupt, off, next)}
		}
	}
}

// appendRaw writes encoded records at the end of the last file.
func (l *Log) appendRaw(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	cur := l.mu.files[len(l.mu.files)-1]
	h, err := l.opts.Files.acquire(cur.path, false)
	if err != nil {
		return err
	}
	defer l.opts.Files.release(h)
	if err := h.f.WriteVAt([][]byte{b}, cur.size); err != nil {
		return fmt.Errorf("write segment file %s: %w", cur.path, err)
	}
	return nil
}

// Replay brings the log's files up to the frames the WAL holds for it
// (in log order): records the files lack are appended, those they hold
// are skipped. It is how start-up recovery repairs files that lost their
// unsynced tail; Sync then makes them durable.
func (l *Log) Replay(frames []wal.SegmentFrame) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed {
		return ErrClosed
	}
	var tail []byte
	for _, f := range frames {
		b, err := l.missing(f.First, f.Records, l.mu.next+countEvents(tail))
		if err != nil {
			return err
		}
		tail = append(tail, b...)
	}
	if len(tail) == 0 {
		return nil
	}
	if err := l.appendRaw(tail); err != nil {
		return err
	}
	return l.recoverLocked()
}

// Sync makes every file of the log durable.
func (l *Log) Sync() error {
	for _, p := range l.FilePaths() {
		if err := l.opts.Files.Sync(p); err != nil {
			return err
		}
	}
	return nil
}
