package segment

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/silt-io/silt/core/vfs"
	"github.com/silt-io/silt/core/wal"
)

// failingBackend fails its next Write once armed.
type failingBackend struct {
	wal.Backend
	fail atomic.Bool
}

func (b *failingBackend) Write(pos uint64, bufs [][]byte, n int64) error {
	if b.fail.CompareAndSwap(true, false) {
		return errors.New("injected wal failure")
	}
	return b.Backend.Write(pos, bufs, n)
}

// openWAL returns a WAL on fs in /wal, recovered, and its backend.
func openWAL(t *testing.T, fs vfs.FS, now func() time.Time) (*wal.Log, *failingBackend) {
	t.Helper()
	fb, err := wal.OpenFiles(wal.FilesOptions{FS: fs, Dir: "/wal"})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := fb.Recover(0, func(uint64, []byte) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	be := &failingBackend{Backend: fb}
	return wal.Open(wal.Options{Backend: be, Now: now}, rec.End), be
}

// TestLegacyFilesCarryOver opens, through a WAL, a segment written by a
// log that synced and preallocated its own files (as releases before the
// WAL did): its zero-filled tail reads as the end, appends overwrite it,
// and a roll cuts it.
func TestLegacyFilesCarryOver(t *testing.T) {
	ctx := context.Background()
	fs := vfs.NewCrashFS()
	old, err := Open(Options{FS: fs, Dir: "/seg", FileBytes: 600, PreallocBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := 0; i < 3; i++ {
		e := strings.Repeat("o", 50)
		if _, err := old.Append(ctx, Batch{Events: ev(e)}); err != nil {
			t.Fatal(err)
		}
		want = append(want, e)
	}
	old.Close()
	w, _ := openWAL(t, fs, nil)
	defer w.Close()
	l, err := Open(Options{FS: fs, Dir: "/seg", FileBytes: 600, WAL: w, Name: "t/s@1/0"})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		e := strings.Repeat("n", 40)
		if _, err := l.Append(ctx, Batch{Events: ev(e)}); err != nil {
			t.Fatal(err)
		}
		want = append(want, e)
	}
	l.Close()
	l, err = Open(Options{FS: fs, Dir: "/seg", FileBytes: 600, WAL: w, Name: "t/s@1/0"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if got := readAll(t, l); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("read back %d events, want %d: %v", len(got), len(want), got)
	}
	if n := len(l.FilePaths()); n < 2 {
		t.Fatalf("%d files: the test wants a roll past the preallocated file", n)
	}
}

// TestWALFailureFailsEveryBatch: a failed WAL round fails the batches of
// every segment in it and acknowledges none; after the pause both
// segments continue from their last commit, with no gap in offsets.
func TestWALFailureFailsEveryBatch(t *testing.T) {
	ctx := context.Background()
	fs := vfs.NewCrashFS()
	var mu sync.Mutex
	now := time.Unix(1000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	w, be := openWAL(t, fs, clock)
	defer w.Close()
	var logs []*Log
	for _, name := range []string{"a", "b"} {
		l, err := Open(Options{FS: fs, Dir: "/seg-" + name, WAL: w, Name: name, Now: clock})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if _, err := l.Append(ctx, Batch{Events: ev(name + "1")}); err != nil {
			t.Fatal(err)
		}
		logs = append(logs, l)
	}
	be.fail.Store(true)
	for _, l := range logs {
		if _, err := l.Append(ctx, Batch{Events: ev("lost")}); !errors.Is(err, ErrUnavailable) {
			t.Fatalf("append in a failed round: %v, want ErrUnavailable", err)
		}
	}
	mu.Lock()
	now = now.Add(2 * time.Second)
	mu.Unlock()
	for i, l := range logs {
		res, err := l.Append(ctx, Batch{Events: ev("back")})
		if err != nil || res.FirstOffset != 1 {
			t.Fatalf("log %d after the pause: %+v %v; want offset 1", i, res, err)
		}
		if got := strings.Join(readAll(t, l), ","); !strings.HasSuffix(got, "1,back") {
			t.Fatalf("log %d holds %s", i, got)
		}
	}
}

// gatedBackend holds every Write until gate is closed.
type gatedBackend struct {
	wal.Backend
	entered chan struct{}
	gate    chan struct{}
	once    sync.Once
}

func (b *gatedBackend) Write(pos uint64, bufs [][]byte, n int64) error {
	b.once.Do(func() { close(b.entered) })
	<-b.gate
	return b.Backend.Write(pos, bufs, n)
}

// TestCloseWaitsForLoggedGroups: a log closed while its group is being
// logged returns only once that group is in its file, so that a log
// reopened on the same files continues after it instead of reusing its
// offsets.
func TestCloseWaitsForLoggedGroups(t *testing.T) {
	ctx := context.Background()
	fs := vfs.NewCrashFS()
	fb, err := wal.OpenFiles(wal.FilesOptions{FS: fs, Dir: "/wal"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fb.Recover(0, func(uint64, []byte) error { return nil }); err != nil {
		t.Fatal(err)
	}
	be := &gatedBackend{Backend: fb, entered: make(chan struct{}), gate: make(chan struct{})}
	w := wal.Open(wal.Options{Backend: be}, 0)
	l, err := Open(Options{FS: fs, Dir: "/seg", WAL: w, Name: "s"})
	if err != nil {
		t.Fatal(err)
	}
	go l.Append(ctx, Batch{Events: ev("in flight")})
	<-be.entered // the group is sealed and being written
	closed := make(chan struct{})
	go func() { l.Close(); close(closed) }()
	time.Sleep(20 * time.Millisecond) // let Close reach its wait
	close(be.gate)
	<-closed
	l, err = Open(Options{FS: fs, Dir: "/seg"})
	if err != nil {
		t.Fatal(err)
	}
	next := l.State().Next
	l.Close()
	w.Close()
	if next != 1 {
		t.Fatalf("the closed log's files end at offset %d; the WAL holds the batch at offset 0, so a reopened log must continue at 1", next)
	}
}

// TestOnCommitBeforeAck: a producer that was acknowledged finds OnCommit
// already called for its commit, with and without a WAL (tiering learns
// of new data through it, and a test or a client that appends and then
// asks for a tiering pass must not find the segment missing).
func TestOnCommitBeforeAck(t *testing.T) {
	for _, withWAL := range []bool{false, true} {
		t.Run(map[bool]string{false: "own-sync", true: "wal"}[withWAL], func(t *testing.T) {
			fs := vfs.NewCrashFS()
			var commits atomic.Int64
			// The callback is slow, so that an acknowledgement sent before
			// it would be seen before the count moves.
			opts := Options{FS: fs, Dir: "/seg", OnCommit: func() {
				time.Sleep(time.Millisecond)
				commits.Add(1)
			}}
			if withWAL {
				w, _ := openWAL(t, fs, nil)
				defer w.Close()
				opts.WAL, opts.Name = w, "t/s@1/0"
			}
			l, err := Open(opts)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			for i := range 20 {
				if _, err := l.Append(context.Background(), Batch{Events: ev("x")}); err != nil {
					t.Fatal(err)
				}
				if n := commits.Load(); n < int64(i+1) {
					t.Fatalf("append %d acknowledged with %d commits reported", i+1, n)
				}
			}
		})
	}
}
