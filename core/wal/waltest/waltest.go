// Package waltest is the contract every wal.Backend keeps, as one suite
// run against each implementation (the local files of core/wal and the
// objects of core/wal/objwal): frames written through a wal.Log are read
// back in order by the next process, from any frame position, after
// truncation, and the checkpoint round-trips.
package waltest

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/silt-io/silt/core/wal"
)

// Open returns a backend over one log's storage as a new process would
// open it (the suite closes the previous one first).
type Open func(t *testing.T) wal.Backend

// RunBackendSuite runs the contract against backends opened by
// newStorage(t)(t), which must give every case storage of its own and
// keep small units (so that truncation has something to drop).
func RunBackendSuite(t *testing.T, newStorage func(t *testing.T) Open) {
	t.Run("empty", func(t *testing.T) {
		open := newStorage(t)
		b := open(t)
		defer b.Close()
		if cp, err := b.LoadCheckpoint(); err != nil || cp != nil {
			t.Fatalf("checkpoint of a new log: %q, %v; want none", cp, err)
		}
		rec, got := recoverAll(t, b, 0)
		if rec.End != 0 || rec.Frames != 0 || len(got) != 0 {
			t.Fatalf("new log: %+v, %d frames", rec, len(got))
		}
	})
	t.Run("reopen", func(t *testing.T) {
		open := newStorage(t)
		b := open(t)
		recoverAll(t, b, 0)
		want := writeFrames(t, b, 0, 0, 20)
		b.Close()
		// A second process reads every frame in order, and goes on
		// writing after them.
		b = open(t)
		rec, got := recoverAll(t, b, 0)
		checkFrames(t, got, want)
		if rec.End != want[len(want)-1].end {
			t.Fatalf("end %d, want %d", rec.End, want[len(want)-1].end)
		}
		more := writeFrames(t, b, rec.End, 20, 5)
		b.Close()
		b = open(t)
		defer b.Close()
		_, got = recoverAll(t, b, 0)
		checkFrames(t, got, append(want, more...))
	})
	t.Run("recover from a frame", func(t *testing.T) {
		open := newStorage(t)
		b := open(t)
		recoverAll(t, b, 0)
		want := writeFrames(t, b, 0, 0, 20)
		b.Close()
		b = open(t)
		defer b.Close()
		from := want[7].pos
		rec, got := recoverAll(t, b, from)
		checkFrames(t, got, want[7:])
		if rec.Start != from || rec.End != want[19].end {
			t.Fatalf("recovery %+v, want start %d end %d", rec, from, want[19].end)
		}
	})
	t.Run("truncate and checkpoint", func(t *testing.T) {
		open := newStorage(t)
		b := open(t)
		recoverAll(t, b, 0)
		want := writeFrames(t, b, 0, 0, 30)
		cut := want[14].pos
		cp := []byte(fmt.Sprintf(`{"from":%d}`, cut))
		if err := b.SaveCheckpoint(cp); err != nil {
			t.Fatal(err)
		}
		if err := b.TruncateBefore(cut); err != nil {
			t.Fatal(err)
		}
		// Truncation twice, or below what is gone, is harmless.
		if err := b.TruncateBefore(cut); err != nil {
			t.Fatal(err)
		}
		b.Close()
		b = open(t)
		if got, err := b.LoadCheckpoint(); err != nil || !bytes.Equal(got, cp) {
			t.Fatalf("checkpoint %q, %v; want %q", got, err, cp)
		}
		rec, got := recoverAll(t, b, cut)
		checkFrames(t, got, want[14:])
		if rec.End != want[29].end {
			t.Fatalf("end %d, want %d", rec.End, want[29].end)
		}
		b.Close()
		// The frames below the cut are gone: reading from 0 finds the
		// hole and says so, instead of starting at the first kept one.
		b = open(t)
		defer b.Close()
		_, err := b.Recover(0, func(uint64, []byte) error { return nil })
		if !errors.Is(err, wal.ErrCorrupt) {
			t.Fatalf("recover from 0 after truncating before %d: %v, want ErrCorrupt", cut, err)
		}
	})
	t.Run("large checkpoint", func(t *testing.T) {
		open := newStorage(t)
		b := open(t)
		recoverAll(t, b, 0)
		big := bytes.Repeat([]byte("0123456789abcdef"), 1<<14) // 256 KiB
		for i := range 3 {
			cp := append([]byte(fmt.Sprint(i)), big...)
			if err := b.SaveCheckpoint(cp); err != nil {
				t.Fatal(err)
			}
			if got, err := b.LoadCheckpoint(); err != nil || !bytes.Equal(got, cp) {
				t.Fatalf("checkpoint %d read back: %d bytes, %v", i, len(got), err)
			}
		}
		b.Close()
		b = open(t)
		defer b.Close()
		if got, err := b.LoadCheckpoint(); err != nil || !bytes.Equal(got, append([]byte("2"), big...)) {
			t.Fatalf("checkpoint after reopen: %d bytes, %v", len(got), err)
		}
	})
}

// frame is a frame written by the suite.
type frame struct {
	pos, end uint64
	body     string
}

// recWriter is a wal.Writer with a fixed body.
type recWriter struct {
	body []byte
	pos  uint64
	err  error
	done chan struct{}
}

func (w *recWriter) Seal() [][]byte { return [][]byte{w.body} }
func (w *recWriter) Done(pos uint64, err error) {
	w.pos, w.err = pos, err
	close(w.done)
}

// writeFrames writes n frames through a wal.Log at end, one round each,
// numbering their bodies from first.
func writeFrames(t *testing.T, b wal.Backend, end uint64, first, n int) []frame {
	t.Helper()
	l := wal.Open(wal.Options{Backend: nopClose{b}}, end)
	defer l.Close()
	var out []frame
	for i := first; i < first+n; i++ {
		body := fmt.Sprintf("frame %d %s", i, bytes.Repeat([]byte{byte('a' + i%26)}, 100+i))
		w := &recWriter{body: []byte(body), done: make(chan struct{})}
		lead, err := l.Enqueue(w)
		if err != nil {
			t.Fatal(err)
		}
		if lead {
			l.Lead()
		}
		<-w.done
		if w.err != nil {
			t.Fatalf("frame %d: %v", i, w.err)
		}
		out = append(out, frame{pos: w.pos, end: w.pos + wal.FrameHeaderSize + uint64(len(body)), body: body})
	}
	return out
}

// nopClose keeps the backend open when the suite's wal.Log closes.
type nopClose struct{ wal.Backend }

func (nopClose) Close() error { return nil }

type got struct {
	pos  uint64
	body string
}

func recoverAll(t *testing.T, b wal.Backend, from uint64) (wal.Recovery, []got) {
	t.Helper()
	var out []got
	rec, err := b.Recover(from, func(pos uint64, body []byte) error {
		out = append(out, got{pos, string(body)})
		return nil
	})
	if err != nil {
		t.Fatalf("recover from %d: %v", from, err)
	}
	if rec.Frames != len(out) {
		t.Fatalf("recovery reports %d frames, passed %d", rec.Frames, len(out))
	}
	return rec, out
}

func checkFrames(t *testing.T, gotFrames []got, want []frame) {
	t.Helper()
	if len(gotFrames) != len(want) {
		t.Fatalf("recovered %d frames, want %d", len(gotFrames), len(want))
	}
	for i, w := range want {
		if gotFrames[i].pos != w.pos || gotFrames[i].body != w.body {
			t.Fatalf("frame %d: at %d %.20q, want at %d %.20q", i, gotFrames[i].pos, gotFrames[i].body, w.pos, w.body)
		}
	}
}
