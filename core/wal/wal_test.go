package wal

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/silt-io/silt/core/vfs"
)

// recWriter is a Writer with a fixed body that records its Done.
type recWriter struct {
	body [][]byte
	mu   sync.Mutex
	pos  uint64 // of its frame
	end  uint64 // after its frame
	err  error
	done chan struct{}
}

func newRecWriter(body ...[]byte) *recWriter {
	return &recWriter{body: body, done: make(chan struct{})}
}

func (w *recWriter) Seal() [][]byte { return w.body }
func (w *recWriter) Done(pos uint64, err error) {
	w.mu.Lock()
	w.pos, w.err = pos, err
	if err == nil {
		w.end = pos + FrameHeaderSize
		for _, b := range w.body {
			w.end += uint64(len(b))
		}
	}
	w.mu.Unlock()
	close(w.done)
}

// gateBackend counts writes and can hold the first one until released,
// so that a test can queue writers behind a round in flight.
type gateBackend struct {
	Backend
	mu      sync.Mutex
	writes  []int // frames per Write
	entered chan struct{}
	gate    chan struct{}
	failN   int // fail this many writes from the first
}

func (b *gateBackend) Write(pos uint64, bufs [][]byte, n int64) error {
	b.mu.Lock()
	first := len(b.writes) == 0
	frames := 0
	for _, buf := range bufs {
		if len(buf) == FrameHeaderSize {
			frames++
		}
	}
	b.writes = append(b.writes, frames)
	fail := len(b.writes) <= b.failN
	b.mu.Unlock()
	if first && b.gate != nil {
		close(b.entered)
		<-b.gate
	}
	if fail {
		return errors.New("injected write failure")
	}
	return b.Backend.Write(pos, bufs, n)
}

func openFiles(t *testing.T, fs vfs.FS, dir string, fileBytes int64) *Files {
	t.Helper()
	b, err := OpenFiles(FilesOptions{FS: fs, Dir: dir, FileBytes: fileBytes})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// recoverAll recovers b from from and returns the frame bodies by position.
func recoverAll(t *testing.T, b Backend, from uint64) (Recovery, map[uint64]string) {
	t.Helper()
	got := map[uint64]string{}
	rec, err := b.Recover(from, func(pos uint64, body []byte) error {
		got[pos] = string(body)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return rec, got
}

// TestGroupCommitAcrossWriters holds the first round's write until 100
// more writers are queued, then checks that all 100 went out in ONE write
// (one sync) and were acknowledged in log order.
func TestGroupCommitAcrossWriters(t *testing.T) {
	fb := openFiles(t, vfs.OS{}, t.TempDir(), 0)
	if _, err := fb.Recover(0, func(uint64, []byte) error { return nil }); err != nil {
		t.Fatal(err)
	}
	be := &gateBackend{Backend: fb, entered: make(chan struct{}), gate: make(chan struct{})}
	l := Open(Options{Backend: be}, 0)
	defer l.Close()

	first := newRecWriter([]byte("first"))
	lead, err := l.Enqueue(first)
	if err != nil || !lead {
		t.Fatalf("first writer: lead=%v err=%v", lead, err)
	}
	go l.Lead()
	<-be.entered
	const n = 100
	ws := make([]*recWriter, n)
	for i := range ws {
		ws[i] = newRecWriter([]byte(fmt.Sprintf("writer %d", i)))
		lead, err := l.Enqueue(ws[i])
		if err != nil || lead {
			t.Fatalf("writer %d: lead=%v err=%v (a leader is running)", i, lead, err)
		}
	}
	close(be.gate)
	<-first.done
	prev := first.end
	for i, w := range ws {
		<-w.done
		if w.err != nil {
			t.Fatalf("writer %d: %v", i, w.err)
		}
		if w.end <= prev {
			t.Fatalf("writer %d acknowledged at %d, not after %d", i, w.end, prev)
		}
		prev = w.end
	}
	be.mu.Lock()
	writes := append([]int(nil), be.writes...)
	be.mu.Unlock()
	if len(writes) != 2 || writes[0] != 1 || writes[1] != n {
		t.Fatalf("writes carried %v frames; want [1 %d]: one write and one sync for every writer queued behind the first", writes, n)
	}
	if got := l.End(); got != prev {
		t.Fatalf("End = %d, last acknowledged end %d", got, prev)
	}
}

// TestFailedRoundFailsQueuedWriters: a failed write fails its writers and
// those queued behind it; after the pause, the next write cuts the failed
// bytes away, and recovery reads only the frames written after.
func TestFailedRoundFailsQueuedWriters(t *testing.T) {
	dir := t.TempDir()
	fb := openFiles(t, vfs.OS{}, dir, 0)
	if _, err := fb.Recover(0, func(uint64, []byte) error { return nil }); err != nil {
		t.Fatal(err)
	}
	be := &gateBackend{Backend: fb, entered: make(chan struct{}), gate: make(chan struct{}), failN: 1}
	now := int64(0)
	var clockMu sync.Mutex
	clock := func() time.Time {
		clockMu.Lock()
		defer clockMu.Unlock()
		return time.Unix(0, now)
	}
	l := Open(Options{Backend: be, Now: clock}, 0)
	defer l.Close()

	a := newRecWriter([]byte("a"))
	if _, err := l.Enqueue(a); err != nil {
		t.Fatal(err)
	}
	go l.Lead()
	<-be.entered
	b := newRecWriter([]byte("b"))
	if _, err := l.Enqueue(b); err != nil {
		t.Fatal(err)
	}
	close(be.gate)
	<-a.done
	<-b.done
	for name, w := range map[string]*recWriter{"failed": a, "queued behind": b} {
		if !errors.Is(w.err, ErrUnavailable) {
			t.Errorf("%s writer: err = %v, want ErrUnavailable", name, w.err)
		}
	}
	if _, err := l.Enqueue(newRecWriter([]byte("c"))); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("enqueue right after the failure: %v, want ErrUnavailable", err)
	}
	clockMu.Lock()
	now += int64(2 * retryAfterFailure)
	clockMu.Unlock()
	d := newRecWriter([]byte("d"))
	lead, err := l.Enqueue(d)
	if err != nil || !lead {
		t.Fatalf("enqueue after the pause: lead=%v err=%v", lead, err)
	}
	l.Lead()
	<-d.done
	if d.err != nil {
		t.Fatal(d.err)
	}
	l.Close()
	_, got := recoverAll(t, openFiles(t, vfs.OS{}, dir, 0), 0)
	if len(got) != 1 || got[0] != "d" {
		t.Fatalf("recovered %v; want only d at 0", got)
	}
}

// TestFilesRecover covers the file backend's recovery cases.
func TestFilesRecover(t *testing.T) {
	type setup func(t *testing.T, dir string, ends []uint64)
	cases := map[string]struct {
		damage    setup
		wantN     int   // frames recovered (of 20)
		wantTorn  bool  // a torn tail was reported
		wantError error // Recover fails with this
	}{
		"clean": {damage: func(*testing.T, string, []uint64) {}, wantN: 20},
		"torn last frame": {damage: func(t *testing.T, dir string, ends []uint64) {
			cutAt(t, lastFile(t, dir), ends[19]-3)
		}, wantN: 19, wantTorn: true},
		"garbage after the frames": {damage: func(t *testing.T, dir string, ends []uint64) {
			p := lastFile(t, dir)
			cutAt(t, p, ends[19])
			appendTo(t, p, []byte("not a frame at all"))
		}, wantN: 20, wantTorn: true},
		"zeros after the frames": {damage: func(t *testing.T, dir string, ends []uint64) {
			p := lastFile(t, dir)
			cutAt(t, p, ends[19])
			appendTo(t, p, make([]byte, 5000))
		}, wantN: 20},
		"flipped byte in a sealed file": {damage: func(t *testing.T, dir string, ends []uint64) {
			flip(t, filepath.Join(dir, walName(0)), 30)
		}, wantError: ErrCorrupt},
		"missing middle file": {damage: func(t *testing.T, dir string, ends []uint64) {
			names, _ := vfs.OS{}.List(dir)
			os.Remove(filepath.Join(dir, names[1]))
		}, wantError: ErrCorrupt},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			b := openFiles(t, vfs.OS{}, dir, 1000) // several files
			if _, err := b.Recover(0, func(uint64, []byte) error { return nil }); err != nil {
				t.Fatal(err)
			}
			l := Open(Options{Backend: b}, 0)
			var ends []uint64
			for i := 0; i < 20; i++ {
				w := newRecWriter(bytes.Repeat([]byte{byte('a' + i)}, 100+i))
				if lead, err := l.Enqueue(w); err != nil || !lead {
					t.Fatal(lead, err)
				}
				l.Lead()
				<-w.done
				ends = append(ends, w.end)
			}
			l.Close()
			if names, _ := (vfs.OS{}).List(dir); len(names) < 3 {
				t.Fatalf("only %v: the test wants several files", names)
			}
			tc.damage(t, dir, ends)
			b = openFiles(t, vfs.OS{}, dir, 1000)
			got := map[uint64]string{}
			rec, err := b.Recover(0, func(pos uint64, body []byte) error {
				got[pos] = string(body)
				return nil
			})
			if tc.wantError != nil {
				if !errors.Is(err, tc.wantError) {
					t.Fatalf("Recover: %v, want %v", err, tc.wantError)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tc.wantN || rec.Frames != tc.wantN {
				t.Fatalf("recovered %d frames (reported %d), want %d", len(got), rec.Frames, tc.wantN)
			}
			if (rec.TornBytes > 0) != tc.wantTorn {
				t.Fatalf("torn bytes %d, want torn=%v", rec.TornBytes, tc.wantTorn)
			}
			if want := ends[tc.wantN-1]; rec.End != want {
				t.Fatalf("end %d, want %d", rec.End, want)
			}
			// The log goes on from the end, and what it writes is read
			// back whatever was cut.
			l = Open(Options{Backend: b}, rec.End)
			w := newRecWriter([]byte("after"))
			l.Enqueue(w)
			l.Lead()
			<-w.done
			if w.err != nil {
				t.Fatal(w.err)
			}
			l.Close()
			_, again := recoverAll(t, openFiles(t, vfs.OS{}, dir, 1000), 0)
			if len(again) != tc.wantN+1 || again[rec.End] != "after" {
				t.Fatalf("after a write: %d frames, at %d %q", len(again), rec.End, again[rec.End])
			}
		})
	}
}

// TestTruncateAndCheckpoint: files wholly below a position go, recovery
// reads from a checkpoint position in the middle of a file, and the
// checkpoint record round-trips.
func TestTruncateAndCheckpoint(t *testing.T) {
	dir := t.TempDir()
	b := openFiles(t, vfs.OS{}, dir, 1000)
	b.Recover(0, func(uint64, []byte) error { return nil })
	l := Open(Options{Backend: b}, 0)
	var ends []uint64
	for i := 0; i < 30; i++ {
		w := newRecWriter(bytes.Repeat([]byte{'x'}, 200))
		l.Enqueue(w)
		l.Lead()
		<-w.done
		ends = append(ends, w.end)
	}
	before, _ := vfs.OS{}.List(dir)
	cut := ends[14]
	if err := b.SaveCheckpoint([]byte("cp")); err != nil {
		t.Fatal(err)
	}
	if err := b.TruncateBefore(cut); err != nil {
		t.Fatal(err)
	}
	l.Close()
	after, _ := vfs.OS{}.List(dir)
	if len(after) >= len(before) {
		t.Fatalf("files before %v, after %v: nothing removed", before, after)
	}
	b = openFiles(t, vfs.OS{}, dir, 1000)
	if cp, err := b.LoadCheckpoint(); err != nil || string(cp) != "cp" {
		t.Fatalf("checkpoint %q, %v", cp, err)
	}
	rec, got := recoverAll(t, b, cut)
	if len(got) != 15 || rec.End != ends[29] {
		t.Fatalf("from %d: %d frames to %d, want 15 to %d", cut, len(got), rec.End, ends[29])
	}
}

// TestFilesCrash writes rounds on a CrashFS, crashes after each with a
// random torn tail, and checks every acknowledged frame is recovered.
func TestFilesCrash(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	fs := vfs.NewCrashFS()
	acked := map[uint64]string{}
	from := uint64(0)
	for round := 0; round < 30; round++ {
		b := openFiles(t, fs, "/wal", 4096)
		rec, got := recoverAll(t, b, from)
		for pos, body := range acked {
			if got[pos] != body {
				t.Fatalf("round %d: acknowledged frame at %d lost (%q)", round, pos, got[pos])
			}
		}
		l := Open(Options{Backend: b}, rec.End)
		for i := 0; i < 1+rng.IntN(20); i++ {
			body := fmt.Sprintf("r%d-%d-%s", round, i, bytes.Repeat([]byte{'y'}, rng.IntN(500)))
			w := newRecWriter([]byte(body))
			lead, err := l.Enqueue(w)
			if err != nil {
				t.Fatal(err)
			}
			if lead {
				l.Lead()
			}
			<-w.done
			if w.err == nil {
				acked[w.pos] = body
			}
		}
		fs = fs.Crash(rng)
	}
}

func lastFile(t *testing.T, dir string) string {
	names, err := vfs.OS{}.List(dir)
	if err != nil || len(names) == 0 {
		t.Fatal(names, err)
	}
	return filepath.Join(dir, names[len(names)-1])
}

// cutAt truncates the WAL file at path at log position pos, as a lost
// write would leave it.
func cutAt(t *testing.T, path string, pos uint64) {
	start, err := strconv.ParseUint(strings.TrimSuffix(filepath.Base(path), walSuffix), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, int64(pos-start)); err != nil {
		t.Fatal(err)
	}
}

func appendTo(t *testing.T, path string, b []byte) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
}

func flip(t *testing.T, path string, at int64) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var c [1]byte
	f.ReadAt(c[:], at)
	c[0] ^= 0xff
	f.WriteAt(c[:], at)
}

// seqWriter records when its Done ran in a sequence shared by a test.
type seqWriter struct {
	*recWriter
	seq   *atomic.Int64
	at    int64
	delay time.Duration
}

func (w *seqWriter) Done(pos uint64, err error) {
	time.Sleep(w.delay)
	w.at = w.seq.Add(1)
	w.recWriter.Done(pos, err)
}

// TestRoundsAcknowledgedInOrder: the writers of a large round are
// acknowledged by several goroutines, but every one of them before any
// writer of the next round (a segment's next frame must not reach its
// file before the previous one).
func TestRoundsAcknowledgedInOrder(t *testing.T) {
	fb := openFiles(t, vfs.OS{}, t.TempDir(), 0)
	if _, err := fb.Recover(0, func(uint64, []byte) error { return nil }); err != nil {
		t.Fatal(err)
	}
	be := &gateBackend{Backend: fb, entered: make(chan struct{}), gate: make(chan struct{})}
	l := Open(Options{Backend: be}, 0)
	defer l.Close()
	var seq atomic.Int64
	enqueue := func(w *seqWriter) {
		t.Helper()
		lead, err := l.Enqueue(w)
		if err != nil {
			t.Fatal(err)
		}
		if lead {
			go l.Lead()
		}
	}
	first := &seqWriter{recWriter: newRecWriter([]byte("first")), seq: &seq}
	enqueue(first)
	<-be.entered
	// Round 2: many slow writers, queued while round 1 is held.
	big := make([]*seqWriter, 3*applyParallel)
	for i := range big {
		big[i] = &seqWriter{recWriter: newRecWriter([]byte(fmt.Sprint("big ", i))), seq: &seq, delay: 5 * time.Millisecond}
		enqueue(big[i])
	}
	close(be.gate)
	// Round 3 is queued once round 2 is written, while its writers are
	// still being acknowledged.
	for {
		be.mu.Lock()
		n := len(be.writes)
		be.mu.Unlock()
		if n >= 2 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	last := &seqWriter{recWriter: newRecWriter([]byte("last")), seq: &seq}
	enqueue(last)
	<-last.done
	for i, w := range big {
		<-w.done
		if w.err != nil {
			t.Fatalf("writer %d: %v", i, w.err)
		}
		if w.at >= last.at {
			t.Fatalf("round 2's writer %d acknowledged %d-th, after round 3's writer (%d-th)", i, w.at, last.at)
		}
	}
	if first.at != 1 {
		t.Fatalf("round 1's writer acknowledged %d-th", first.at)
	}
}

// memBackend keeps nothing: it stands for a backend whose writes are
// instant, so that rounds end as fast as writers arrive.
type memBackend struct{ Backend }

func (memBackend) Write(uint64, [][]byte, int64) error { return nil }
func (memBackend) Close() error                        { return nil }

// TestLeaderHandOff has writers arrive while leaders end, over and over:
// every writer must be acknowledged. A writer enqueued just as the leader
// found the queue empty was told a leader ran and waited for ever.
func TestLeaderHandOff(t *testing.T) {
	l := Open(Options{Backend: memBackend{}}, 0)
	defer l.Close()
	const goroutines, each = 16, 4000
	var wg sync.WaitGroup
	var failed sync.Once
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				w := newRecWriter([]byte("x"))
				lead, err := l.Enqueue(w)
				if err != nil {
					failed.Do(func() { t.Errorf("enqueue: %v", err) })
					return
				}
				if lead {
					l.Lead()
				}
				<-w.done
				if w.err != nil {
					failed.Do(func() { t.Errorf("writer: %v", w.err) })
					return
				}
			}
		}()
	}
	wg.Wait()
	if got, want := l.End(), uint64(goroutines*each*(FrameHeaderSize+1)); got != want {
		t.Fatalf("log ends at %d; %d writers of one byte end at %d", got, goroutines*each, want)
	}
}

// sizedWriter is a recWriter that tells its size (Sizer).
type sizedWriter struct {
	*recWriter
	size int64
}

func (w sizedWriter) PendingBytes() int64 { return w.size }

// With a linger and a byte bound, the leader waits for more writers until
// the queue holds the bound, and then writes them all in one round: the
// round cannot go before the second writer arrives (the first holds less
// than the bound, and the linger is an hour).
func TestLingerUntilBytes(t *testing.T) {
	be := &gateBackend{Backend: memBackend{}}
	l := Open(Options{Backend: be, Linger: time.Hour, LingerBytes: 100}, 0)
	defer l.Close()
	w1 := sizedWriter{newRecWriter([]byte("one")), 60}
	w2 := sizedWriter{newRecWriter([]byte("two")), 60}
	lead, err := l.Enqueue(w1)
	if err != nil || !lead {
		t.Fatalf("first writer: lead %v, %v", lead, err)
	}
	led := make(chan struct{})
	go func() { l.Lead(); close(led) }()
	if lead, err := l.Enqueue(w2); err != nil || lead {
		t.Fatalf("second writer: lead %v, %v", lead, err)
	}
	select {
	case <-w2.done:
	case <-time.After(30 * time.Second): // a hang stop: the bound never ended the wait
		t.Fatal("the round was not written once the queue held the byte bound")
	}
	<-led
	be.mu.Lock()
	defer be.mu.Unlock()
	if len(be.writes) != 1 || be.writes[0] != 2 {
		t.Fatalf("writes (frames each): %v, want one write of both frames", be.writes)
	}
}
