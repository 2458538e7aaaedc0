package segment

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/silt-io/silt/core/vfs"
)

// fillAndTruncate appends writer w's batch 1..3, then enough other events
// to roll several files, and truncates every file holding w's batches.
func fillAndTruncate(t *testing.T, l *Log) Result {
	t.Helper()
	ctx := context.Background()
	var last Result
	for seq := uint64(1); seq <= 3; seq++ {
		r, err := l.Append(ctx, Batch{Events: ev(fmt.Sprintf("w-%d", seq)), WriterID: "w", Seq: seq})
		if err != nil {
			t.Fatal(err)
		}
		last = r
	}
	for i := 0; i < 40; i++ {
		if _, err := l.Append(ctx, Batch{Events: ev(fmt.Sprintf("other-%02d", i))}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.TruncateBefore(l.State().Next - 1); err != nil {
		t.Fatal(err)
	}
	if first := l.State().First; first <= last.FirstOffset {
		t.Fatalf("truncation kept offset %d (first %d); the test needs w's batches gone", last.FirstOffset, first)
	}
	return last
}

// A retry of a writer's last batch after the files holding it were
// truncated and the log reopened is still answered as a duplicate.
func TestWriterRememberedAcrossTruncation(t *testing.T) {
	fs := vfs.NewCrashFS()
	l := openT(t, fs, 200)
	last := fillAndTruncate(t, l)
	l.Close()

	l2 := openT(t, fs.Crash(nil), 200)
	defer l2.Close()
	next := l2.State().Next
	res, err := l2.Append(context.Background(), Batch{Events: ev("w-3"), WriterID: "w", Seq: 3})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Duplicate || res.FirstOffset != last.FirstOffset {
		t.Fatalf("retry after truncation: %+v, want a duplicate of offset %d", res, last.FirstOffset)
	}
	if l2.State().Next != next {
		t.Fatalf("the retry was stored again: next offset %d, was %d", l2.State().Next, next)
	}
	if _, err := l2.Append(context.Background(), Batch{Events: ev("w-2"), WriterID: "w", Seq: 2}); err == nil {
		t.Fatal("an older sequence number after truncation was accepted")
	}
}

// A crash at any step of a truncation leaves a log that opens and still
// knows the writer: either the files are still there or the checkpoint is.
func TestTruncationCrashKeepsWriters(t *testing.T) {
	for k := 1; ; k++ {
		fs := vfs.NewCrashFS()
		l := openT(t, fs, 200)
		ctx := context.Background()
		var last Result
		for seq := uint64(1); seq <= 3; seq++ {
			last, _ = l.Append(ctx, Batch{Events: ev(fmt.Sprintf("w-%d", seq)), WriterID: "w", Seq: seq})
		}
		for i := 0; i < 40; i++ {
			l.Append(ctx, Batch{Events: ev(fmt.Sprintf("other-%02d", i))})
		}
		fs.FailAt(k)
		_, terr := l.TruncateBefore(l.State().Next - 1)
		reached := fs.Ops() >= k
		l.Close()
		l2 := openT(t, fs.Crash(nil), 200)
		res, err := l2.Append(ctx, Batch{Events: ev("w-3"), WriterID: "w", Seq: 3})
		if err != nil || !res.Duplicate || res.FirstOffset != last.FirstOffset {
			t.Fatalf("k=%d (truncate: %v): retry after crash: %+v %v, want a duplicate of offset %d", k, terr, res, err, last.FirstOffset)
		}
		l2.Close()
		if !reached {
			if k < 4 {
				t.Fatalf("truncation took only %d operations", k)
			}
			return
		}
	}
}

// Writers idle for longer than the retention are forgotten at the next
// checkpoint, so the table does not grow forever.
func TestIdleWritersExpire(t *testing.T) {
	fs := vfs.NewCrashFS()
	now := time.Unix(1_000_000, 0)
	clock := func() time.Time { return now }
	l, err := Open(Options{FS: fs, Dir: "/seg", FileBytes: 200, Now: clock, WriterRetention: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := l.Append(ctx, Batch{Events: ev("old"), WriterID: "idle", Seq: 1}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Hour)
	fillAndTruncate(t, l)
	l.Close()
	l2, err := Open(Options{FS: fs.Crash(nil), Dir: "/seg", FileBytes: 200, Now: clock, WriterRetention: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	l2.mu.Lock()
	_, idle := l2.mu.writers["idle"]
	_, active := l2.mu.writers["w"]
	l2.mu.Unlock()
	if idle || !active {
		t.Fatalf("after truncation: idle writer kept %v, active writer kept %v; want false, true", idle, active)
	}
}

// TestWriterOwner checks that a writer id belongs to the owner that first
// used it: another owner's batch with the same id, whatever its sequence
// number, is refused and not stored, so that the owner's retry is still
// answered as its own duplicate. The binding survives a reopen, both from
// the records and from the truncation checkpoint.
func TestWriterOwner(t *testing.T) {
	ctx := context.Background()
	reopen := map[string]func(t *testing.T, fs *vfs.CrashFS, l *Log) *Log{
		"same log": func(t *testing.T, fs *vfs.CrashFS, l *Log) *Log { return l },
		"reopened from the records": func(t *testing.T, fs *vfs.CrashFS, l *Log) *Log {
			l.Close()
			return openT(t, fs.Crash(nil), 200)
		},
		"reopened from the checkpoint": func(t *testing.T, fs *vfs.CrashFS, l *Log) *Log {
			for i := 0; i < 40; i++ {
				if _, err := l.Append(ctx, Batch{Events: ev(fmt.Sprintf("other-%02d", i))}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := l.TruncateBefore(l.State().Next - 1); err != nil {
				t.Fatal(err)
			}
			if l.State().First <= 1 {
				t.Fatal("truncation kept alice's batches; the case needs them gone")
			}
			l.Close()
			return openT(t, fs.Crash(nil), 200)
		},
	}
	for name, re := range reopen {
		t.Run(name, func(t *testing.T) {
			fs := vfs.NewCrashFS()
			l := openT(t, fs, 200)
			if _, err := l.Append(ctx, Batch{Events: ev("alice-1"), WriterID: "w", Seq: 1, Owner: "alice"}); err != nil {
				t.Fatal(err)
			}
			if _, err := l.Append(ctx, Batch{Events: ev("alice-2"), WriterID: "w", Seq: 2, Owner: "alice"}); err != nil {
				t.Fatal(err)
			}
			l = re(t, fs, l)
			defer l.Close()
			next := l.State().Next
			for _, seq := range []uint64{1, 2, 3, 1000} {
				res, err := l.Append(ctx, Batch{Events: ev("mallory"), WriterID: "w", Seq: seq, Owner: "mallory"})
				if !errors.Is(err, ErrWriterOwned) {
					t.Fatalf("mallory's seq %d with alice's writer id: %+v, %v; want ErrWriterOwned", seq, res, err)
				}
			}
			if l.State().Next != next {
				t.Fatalf("a refused batch was stored: next %d, was %d", l.State().Next, next)
			}
			// Alice's retry is hers, and her next batch goes on.
			res, err := l.Append(ctx, Batch{Events: ev("alice-2"), WriterID: "w", Seq: 2, Owner: "alice"})
			if err != nil || !res.Duplicate {
				t.Fatalf("alice's retry: %+v, %v; want a duplicate", res, err)
			}
			if res, err := l.Append(ctx, Batch{Events: ev("alice-3"), WriterID: "w", Seq: 3, Owner: "alice"}); err != nil || res.Duplicate {
				t.Fatalf("alice's next batch: %+v, %v", res, err)
			}
			// Mallory's own writer id is independent.
			if _, err := l.Append(ctx, Batch{Events: ev("mallory"), WriterID: "m", Seq: 1, Owner: "mallory"}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestWriterWithoutOwner checks writers from before owners were recorded,
// and callers that pass none: the first owner to use such a writer binds
// it, and a batch without an owner keeps the binding it finds.
func TestWriterWithoutOwner(t *testing.T) {
	ctx := context.Background()
	fs := vfs.NewCrashFS()
	l := openT(t, fs, 200)
	if _, err := l.Append(ctx, Batch{Events: ev("legacy-1"), WriterID: "w", Seq: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(ctx, Batch{Events: ev("bob-2"), WriterID: "w", Seq: 2, Owner: "bob"}); err != nil {
		t.Fatalf("first owner of a legacy writer: %v", err)
	}
	if _, err := l.Append(ctx, Batch{Events: ev("anon-3"), WriterID: "w", Seq: 3}); err != nil {
		t.Fatalf("ownerless batch: %v", err)
	}
	l.Close()
	l = openT(t, fs.Crash(nil), 200)
	defer l.Close()
	if _, err := l.Append(ctx, Batch{Events: ev("eve-4"), WriterID: "w", Seq: 4, Owner: "eve"}); !errors.Is(err, ErrWriterOwned) {
		t.Fatalf("another owner after an ownerless batch and a reopen: %v, want ErrWriterOwned", err)
	}
}
