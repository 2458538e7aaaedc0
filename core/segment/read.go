package segment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sort"
	"time"

	"go.uber.org/zap"

	"github.com/silt-io/silt/core/record"
	"github.com/silt-io/silt/core/vfs"
)

// State is a snapshot of the log's bounds.
type State struct {
	First, Next uint64
	Bytes       int64
}

// State returns the committed bounds: every offset in [First, Next) is
// durable and readable.
func (l *Log) State() State {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := State{Next: l.mu.committed}
	if len(l.mu.files) > 0 {
		st.First = l.mu.files[0].first
	}
	for _, f := range l.mu.files {
		st.Bytes += f.size
	}
	return st
}

// Read returns up to maxEvents events (and about maxBytes of data, at
// least one event) starting at offset from, and the offset to read next.
// Reading at the committed end returns no events.
func (l *Log) Read(from uint64, maxEvents, maxBytes int) ([]Event, uint64, error) {
	for try := 0; ; try++ {
		evs, next, err := l.read(from, maxEvents, maxBytes)
		if errors.Is(err, os.ErrNotExist) && try < 3 {
			// The file was truncated away after it was located: look
			// again, which now answers ErrOutOfRange.
			continue
		}
		return evs, next, err
	}
}

func (l *Log) read(from uint64, maxEvents, maxBytes int) ([]Event, uint64, error) {
	l.mu.Lock()
	if l.mu.closed {
		l.mu.Unlock()
		return nil, from, ErrClosed
	}
	committed := l.mu.committed
	files := l.mu.files
	first := uint64(0)
	if len(files) > 0 {
		first = files[0].first
	}
	if from < first || from > committed {
		l.mu.Unlock()
		return nil, from, fmt.Errorf("%w: offset %d, readable range is [%d, %d]", ErrOutOfRange, from, first, committed)
	}
	if from == committed {
		l.mu.Unlock()
		return nil, from, nil
	}
	_, f, size, start := locate(files, from)
	l.mu.Unlock()

	// Reading happens without the lock: the committed prefix of a file
	// never changes.
	h, err := l.opts.Files.acquire(f.path, false)
	if err != nil {
		return nil, from, err
	}
	defer l.opts.Files.release(h)
	rd := record.NewReader(h.f, start.pos, size, l.opts.MaxRecordBytes+record.HeaderSize)
	off := start.offset
	var out []Event
	bytes := 0
	for len(out) < maxEvents && (bytes < maxBytes || len(out) == 0) {
		rec, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, from, fmt.Errorf("read segment %s at offset %d: %w", l.opts.Dir, off, err)
		}
		// The events alias the reader's buffer, which the next record
		// reuses: they are copied into one slab per record rather than one
		// allocation each, which for small events is most of a read's cost.
		var slab []byte
		for _, e := range rec.Events {
			if off >= from && len(out) < maxEvents {
				if slab == nil {
					n := 0
					for _, e := range rec.Events {
						n += len(e)
					}
					slab = make([]byte, 0, n)
				}
				start := len(slab)
				slab = append(slab, e...)
				out = append(out, Event{Offset: off, Time: rec.TimeUnixNano, Data: slab[start:len(slab):len(slab)]})
				bytes += len(e)
			}
			off++
		}
	}
	next := from
	if len(out) > 0 {
		next = out[len(out)-1].Offset + 1
	} else if off > from {
		next = off
	}
	return out, next, nil
}

// locate finds the file holding offset from (files[i]), its committed
// size, and the last index entry at or before from, where reading starts.
// l.mu must be held: the active file's size and index grow with commits.
func locate(files []*file, from uint64) (i int, f *file, size int64, start indexEntry) {
	i = sort.Search(len(files), func(i int) bool { return files[i].first > from }) - 1
	f = files[i]
	j := sort.Search(len(f.index), func(j int) bool { return f.index[j].offset > from }) - 1
	return i, f, f.size, f.index[j]
}

// scanReadAhead is how much of a file Scan reads at a time.
const scanReadAhead = 1 << 20

// minMappedScan is the smallest stretch of a file Scan maps into memory
// instead of reading it: a mapping saves copying every byte into a
// read-ahead buffer, which for a tiering catch-up is one of the larger
// costs, but costs a few system calls of its own.
const minMappedScan = 1 << 20

// scanReader returns a record reader for [pos, end) of f, over a memory
// mapping of that range where the file can be mapped (release unmaps
// it), else reading ahead in 1 MiB steps.
func (l *Log) scanReader(f *file, pos, end int64) (rd *record.Reader, release func(), err error) {
	maxBody := l.opts.MaxRecordBytes + record.HeaderSize
	h, err := l.opts.Files.acquire(f.path, false)
	if err != nil {
		return nil, nil, err
	}
	if m, ok := h.f.(vfs.Mapper); ok && end-pos >= minMappedScan {
		base := pos &^ int64(os.Getpagesize()-1)
		if mem, unmap, err := m.Map(base, int(end-base)); err == nil {
			// A mapping outlives its descriptor: give the descriptor back.
			l.opts.Files.release(h)
			return record.NewMappedReader(mem, base, pos, end, maxBody), func() { unmap() }, nil
		}
	}
	rd = record.NewReader(h.f, pos, end, maxBody)
	rd.ReadAhead(scanReadAhead)
	return rd, func() { l.opts.Files.release(h) }, nil
}

// Scan calls fn, in order, for every record holding events in [from, to)
// (to is capped at the committed end), with the record's events clipped to
// that range; first is the offset of events[0]. Unlike Read it copies
// nothing: events alias a buffer that is reused once fn returns, so a
// caller that streams them onward (the tierer) touches each byte once. An
// error from fn stops the scan and is returned.
func (l *Log) Scan(from, to uint64, fn func(first uint64, timeUnixNano int64, events [][]byte) error) error {
	for gone := 0; from < to; {
		l.mu.Lock()
		if l.mu.closed {
			l.mu.Unlock()
			return ErrClosed
		}
		committed := l.mu.committed
		files := l.mu.files
		l.mu.Unlock()
		to = min(to, committed)
		if len(files) == 0 || from < files[0].first || from > committed {
			lo := uint64(0)
			if len(files) > 0 {
				lo = files[0].first
			}
			return fmt.Errorf("%w: offset %d, readable range is [%d, %d]", ErrOutOfRange, from, lo, committed)
		}
		if from >= to {
			return nil
		}
		next, err := l.scanRange(files, from, to, fn)
		if errors.Is(err, os.ErrNotExist) && gone < 3 {
			// Truncated away after it was located: the next round says so.
			gone++
			continue
		}
		if err != nil {
			return err
		}
		from = next
	}
	return nil
}

// scanRange is Scan within the file holding from; it returns the offset
// after the last event it passed on.
func (l *Log) scanRange(files []*file, from, to uint64, fn func(uint64, int64, [][]byte) error) (next uint64, err error) {
	l.mu.Lock()
	i, f, size, start := locate(files, from)
	l.mu.Unlock()

	rd, release, err := l.scanReader(f, start.pos, size)
	if err != nil {
		return from, err
	}
	defer release()
	// A mapped page of a file that shrank under the mapping would fault
	// when touched. Logs shrink only by cutting their preallocated tail,
	// which lies past every committed byte, so this cannot happen; should
	// it anyway, the scan fails instead of the process.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if _, fault := r.(interface{ Addr() uintptr }); !fault {
				panic(r)
			}
			next, err = from, fmt.Errorf("read segment %s: memory fault reading %s: %v", l.opts.Dir, f.name, r)
		}
	}()
	off := start.offset
	for off < to {
		rec, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return from, fmt.Errorf("read segment %s at offset %d: %w", l.opts.Dir, off, err)
		}
		evs := rec.Events
		end := off + uint64(len(evs))
		if end > from {
			lo := max(from, off) - off
			hi := min(end, to) - off
			if err := fn(off+lo, rec.TimeUnixNano, evs[lo:hi]); err != nil {
				return from, err
			}
		}
		off = end
	}
	if off <= from {
		// The file ended (it is complete up to its size) without reaching
		// from: the next file starts there.
		if i+1 < len(files) {
			return files[i+1].first, nil
		}
		return from, fmt.Errorf("read segment %s: offset %d not found", l.opts.Dir, from)
	}
	return min(off, to), nil
}

// Wait blocks until the committed end is above after, ctx ends or the
// timeout passes (0: no timeout). It reports whether the end moved past
// after.
func (l *Log) Wait(ctx context.Context, after uint64, timeout time.Duration) (bool, error) {
	var timer <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		timer = t.C
	}
	for {
		l.mu.Lock()
		if l.mu.closed {
			l.mu.Unlock()
			return false, ErrClosed
		}
		if l.mu.committed > after {
			l.mu.Unlock()
			return true, nil
		}
		ch := l.mu.notify
		l.mu.Unlock()
		select {
		case <-ch:
		case <-timer:
			return false, nil
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
}

// Changed returns a channel closed at the next commit (or Close).
func (l *Log) Changed() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.notify
}

func zapDir(d string) zap.Field  { return zap.String("segment_dir", d) }
func zapErr(err error) zap.Field { return zap.Error(err) }
