package segment

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/silt-io/silt/core/vfs"
)

func openT(t *testing.T, fs vfs.FS, fileBytes int64) *Log {
	t.Helper()
	l, err := Open(Options{FS: fs, Dir: "/seg", FileBytes: fileBytes, MaxRecordBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func ev(s string) [][]byte { return [][]byte{[]byte(s)} }

func readAll(t *testing.T, l *Log) []string {
	t.Helper()
	var out []string
	st := l.State()
	for off := st.First; off < st.Next; {
		evs, next, err := l.Read(off, 7, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if next <= off {
			t.Fatalf("read at %d made no progress", off)
		}
		for _, e := range evs {
			out = append(out, string(e.Data))
		}
		off = next
	}
	return out
}

func TestAppendReadAcrossFilesAndReopen(t *testing.T) {
	fs := vfs.NewCrashFS()
	l := openT(t, fs, 200)
	ctx := context.Background()
	var want []string
	for i := 0; i < 100; i++ {
		e := fmt.Sprintf("event-%03d", i)
		res, err := l.Append(ctx, Batch{Events: ev(e)})
		if err != nil {
			t.Fatal(err)
		}
		if res.FirstOffset != uint64(i) {
			t.Fatalf("event %d got offset %d", i, res.FirstOffset)
		}
		want = append(want, e)
	}
	if n := len(l.mu.files); n < 5 {
		t.Fatalf("expected rolling into several files, got %d", n)
	}
	if got := readAll(t, l); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("read back %v", got)
	}
	evs, next, err := l.Read(57, 3, 1<<20)
	if err != nil || len(evs) != 3 || evs[0].Offset != 57 || string(evs[0].Data) != "event-057" || next != 60 {
		t.Fatalf("Read(57) = %v next %d err %v", evs, next, err)
	}
	if _, _, err := l.Read(101, 1, 1); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("read past end: %v", err)
	}
	l.Close()
	l = openT(t, fs, 200)
	defer l.Close()
	if got := readAll(t, l); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after reopen read back %v", got)
	}
	if res, err := l.Append(ctx, Batch{Events: ev("more")}); err != nil || res.FirstOffset != 100 {
		t.Fatalf("append after reopen: %+v %v", res, err)
	}
}

func TestIdempotentWriter(t *testing.T) {
	fs := vfs.NewCrashFS()
	l := openT(t, fs, 1<<20)
	ctx := context.Background()
	r1, err := l.Append(ctx, Batch{Events: [][]byte{[]byte("a"), []byte("b")}, WriterID: "w1", Seq: 1})
	if err != nil {
		t.Fatal(err)
	}
	dup, err := l.Append(ctx, Batch{Events: [][]byte{[]byte("a"), []byte("b")}, WriterID: "w1", Seq: 1})
	if err != nil || !dup.Duplicate || dup.FirstOffset != r1.FirstOffset || dup.Count != 2 {
		t.Fatalf("retry = %+v, %v", dup, err)
	}
	if _, err := l.Append(ctx, Batch{Events: ev("c"), WriterID: "w1", Seq: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(ctx, Batch{Events: ev("a"), WriterID: "w1", Seq: 1}); !errors.Is(err, ErrSeqConflict) {
		t.Fatalf("old sequence: %v", err)
	}
	l.Close()
	// The writer table is rebuilt from the log.
	l = openT(t, fs, 1<<20)
	defer l.Close()
	dup, err = l.Append(ctx, Batch{Events: ev("c"), WriterID: "w1", Seq: 2})
	if err != nil || !dup.Duplicate || dup.FirstOffset != 2 {
		t.Fatalf("retry after reopen = %+v, %v", dup, err)
	}
	if got := readAll(t, l); fmt.Sprint(got) != "[a b c]" {
		t.Fatalf("stored %v", got)
	}
}

func TestConcurrentAppendsShareSyncs(t *testing.T) {
	fs := vfs.NewCrashFS()
	l := openT(t, fs, 1<<16)
	defer l.Close()
	const writers, per = 32, 50
	var wg sync.WaitGroup
	ctx := context.Background()
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				if _, err := l.Append(ctx, Batch{Events: ev(fmt.Sprintf("%02d-%03d", w, i)), WriterID: fmt.Sprint(w), Seq: uint64(i + 1)}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { // a reader following the tail while writers run
		defer close(done)
		var off uint64
		for off < writers*per {
			if _, err := l.Wait(ctx, off, time.Second); err != nil {
				errs <- err
				return
			}
			evs, next, err := l.Read(off, 1000, 1<<20)
			if err != nil {
				errs <- err
				return
			}
			_ = evs
			off = next
		}
	}()
	wg.Wait()
	<-done
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got := readAll(t, l)
	if len(got) != writers*per {
		t.Fatalf("stored %d events, want %d", len(got), writers*per)
	}
	last := map[string]string{}
	for _, e := range got {
		w := e[:2]
		if e <= last[w] {
			t.Fatalf("writer %s out of order: %s after %s", w, e, last[w])
		}
		last[w] = e
	}
	syncs := fs.Ops()
	if syncs >= 2*writers*per {
		t.Logf("no sharing of syncs visible (%d ops for %d appends)", syncs, writers*per)
	}
}

// TestCrashMatrix crashes the filesystem at every k-th mutating operation
// while appends run, then recovers and checks that every acknowledged event
// is present, in order, exactly once, and that the log keeps working.
func TestCrashMatrix(t *testing.T) {
	const appends = 40
	for k := 1; ; k++ {
		fs := vfs.NewCrashFS()
		l := openT(t, fs, 300)
		fs.FailAt(k)
		acked := map[string]bool{}
		var order []string
		for i := 0; i < appends; i++ {
			e := fmt.Sprintf("e%03d", i)
			_, err := l.Append(context.Background(), Batch{Events: ev(e), WriterID: "w", Seq: uint64(i + 1)})
			if err == nil {
				acked[e] = true
				order = append(order, e)
			}
		}
		reached := fs.Ops() >= k
		l.Close()
		rng := rand.New(rand.NewPCG(uint64(k), 7))
		after := fs.Crash(rng)
		l2 := openT(t, after, 300)
		got := readAll(t, l2)
		seen := map[string]bool{}
		prev := ""
		for _, e := range got {
			if seen[e] {
				t.Fatalf("k=%d: %s stored twice: %v", k, e, got)
			}
			if e <= prev {
				t.Fatalf("k=%d: out of order %s after %s", k, e, prev)
			}
			seen[e], prev = true, e
		}
		for e := range acked {
			if !seen[e] {
				t.Fatalf("k=%d: acknowledged %s lost; have %v", k, e, got)
			}
		}
		if res, err := l2.Append(context.Background(), Batch{Events: ev("z-after"), WriterID: "w", Seq: appends + 1}); err != nil || res.Duplicate {
			t.Fatalf("k=%d: append after recovery: %+v %v", k, res, err)
		}
		l2.Close()
		if !reached {
			if k < 10 {
				t.Fatalf("crash matrix ended after only %d ops", k)
			}
			return // every operation of the run has been a crash point
		}
	}
}

func TestRecoversAfterWriteError(t *testing.T) {
	fs := vfs.NewCrashFS()
	now := time.Unix(1000, 0)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	l, err := Open(Options{FS: fs, Dir: "/seg", FileBytes: 1 << 20, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	if _, err := l.Append(ctx, Batch{Events: ev("ok")}); err != nil {
		t.Fatal(err)
	}
	fs.FailAt(1)
	if _, err := l.Append(ctx, Batch{Events: ev("lost")}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("append during disk failure: %v, want ErrUnavailable", err)
	}
	fs.FailAt(0)
	if _, err := l.Append(ctx, Batch{Events: ev("too-soon")}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("append right after failure: %v, want ErrUnavailable", err)
	}
	mu.Lock()
	now = now.Add(2 * time.Second)
	mu.Unlock()
	res, err := l.Append(ctx, Batch{Events: ev("back")})
	if err != nil || res.FirstOffset != 1 {
		t.Fatalf("append after recovery: %+v %v", res, err)
	}
	if got := readAll(t, l); fmt.Sprint(got) != "[ok back]" {
		t.Fatalf("stored %v", got)
	}
}

// TestRetryWhileInFlight sends every batch twice at once, as a producer
// does whose first attempt timed out while its commit was still under
// way: each batch is stored once and both answers give its offsets. (Run
// under -race it also covers the retry's look at the original's commit
// group while the leader finishes it.)
func TestRetryWhileInFlight(t *testing.T) {
	fs := vfs.NewCrashFS()
	l := openT(t, fs, 1<<16)
	defer l.Close()
	const writers, per = 16, 40
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				b := Batch{Events: ev(fmt.Sprintf("%02d-%03d", w, i)), WriterID: fmt.Sprint("w", w), Seq: uint64(i + 1)}
				var res [2]Result
				var errs2 [2]error
				var pair sync.WaitGroup
				for k := range 2 {
					pair.Add(1)
					go func() {
						defer pair.Done()
						res[k], errs2[k] = l.Append(ctx, b)
					}()
				}
				pair.Wait()
				if errs2[0] != nil || errs2[1] != nil {
					errs <- fmt.Errorf("batch %d/%d: %v, %v", w, i, errs2[0], errs2[1])
					return
				}
				if res[0].FirstOffset != res[1].FirstOffset || res[0].Duplicate == res[1].Duplicate {
					errs <- fmt.Errorf("batch %d/%d: answers %+v and %+v, want one original and one duplicate at the same offset", w, i, res[0], res[1])
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got := readAll(t, l)
	if len(got) != writers*per {
		t.Fatalf("stored %d events, want %d", len(got), writers*per)
	}
	seen := map[string]bool{}
	for _, e := range got {
		if seen[e] {
			t.Fatalf("%s stored twice", e)
		}
		seen[e] = true
	}
}
