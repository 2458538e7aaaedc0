package segment

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/silt-io/silt/core/vfs"
)

func TestTruncateBefore(t *testing.T) {
	tests := []struct {
		name        string
		offset      uint64
		wantRemoved int
	}{
		{"zero keeps all", 0, 0},
		{"inside first file keeps all", 1, 0},
		{"past everything keeps active", 1000, -1},
		{"middle", 50, -2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := vfs.NewCrashFS()
			l := openT(t, fs, 200)
			defer l.Close()
			for i := 0; i < 100; i++ {
				if _, err := l.Append(context.Background(), Batch{Events: ev(fmt.Sprintf("event-%03d", i))}); err != nil {
					t.Fatal(err)
				}
			}
			l.mu.Lock()
			var firsts []uint64
			for _, f := range l.mu.files {
				firsts = append(firsts, f.first)
			}
			l.mu.Unlock()
			want := tc.wantRemoved
			switch want {
			case -1: // every file but the active one
				want = len(firsts) - 1
			case -2: // every file ending at or below offset
				want = 0
				for i := 0; i+1 < len(firsts) && firsts[i+1] <= tc.offset; i++ {
					want++
				}
			}
			n, err := l.TruncateBefore(tc.offset)
			if err != nil || n != want {
				t.Fatalf("TruncateBefore(%d) = %d, %v; want %d", tc.offset, n, err, want)
			}
			st := l.State()
			if st.First != firsts[want] || st.Next != 100 {
				t.Fatalf("state after truncation %+v, want first %d", st, firsts[want])
			}
			if st.First > 0 {
				if _, _, err := l.Read(st.First-1, 1, 1<<20); !errors.Is(err, ErrOutOfRange) {
					t.Fatalf("read below first: %v", err)
				}
			}
			got := readAll(t, l)
			if len(got) != int(100-st.First) || got[0] != fmt.Sprintf("event-%03d", st.First) {
				t.Fatalf("read back %d events from %v", len(got), got[:1])
			}
			// The removal is durable: a crash and reopen see the same start.
			after := fs.Crash(rand.New(rand.NewPCG(1, 2)))
			l2 := openT(t, after, 200)
			defer l2.Close()
			if st2 := l2.State(); st2.First != st.First || st2.Next != 100 {
				t.Fatalf("after crash %+v, want %+v", st2, st)
			}
		})
	}
}

// TestTruncateWhileReading checks that a reader inside a file being
// removed finishes its read instead of failing or crashing.
func TestTruncateWhileReading(t *testing.T) {
	fs := vfs.NewCrashFS()
	l := openT(t, fs, 200)
	defer l.Close()
	for i := 0; i < 100; i++ {
		if _, err := l.Append(context.Background(), Batch{Events: ev(fmt.Sprintf("event-%03d", i))}); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error)
	go func() {
		for i := 0; i < 200; i++ {
			first := l.State().First
			evs, _, err := l.Read(first, 5, 1<<20)
			if err != nil && !errors.Is(err, ErrOutOfRange) {
				done <- err
				return
			}
			if err == nil && len(evs) > 0 && evs[0].Offset != first {
				done <- fmt.Errorf("read at %d returned offset %d", first, evs[0].Offset)
				return
			}
		}
		done <- nil
	}()
	for off := uint64(0); off <= 100; off += 5 {
		if _, err := l.TruncateBefore(off); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestTruncateBeforeClosed(t *testing.T) {
	l := openT(t, vfs.NewCrashFS(), 200)
	l.Close()
	if _, err := l.TruncateBefore(10); !errors.Is(err, ErrClosed) {
		t.Fatalf("truncate after close: %v", err)
	}
}

// TestRoll: a fully tiered active file is rolled, so that TruncateBefore
// can remove it, and the log goes on at the same offset, across a
// reopen; one holding an event at or above the offset is not.
func TestRoll(t *testing.T) {
	tests := []struct {
		name       string
		offset     uint64
		wantRolled bool
	}{
		{"every event below the offset", 10, true},
		{"past the end", 1000, true},
		{"the last event not below it", 9, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := vfs.NewCrashFS()
			l := openT(t, fs, 1<<20)
			for i := 0; i < 10; i++ {
				if _, err := l.Append(context.Background(), Batch{Events: ev(fmt.Sprintf("event-%03d", i))}); err != nil {
					t.Fatal(err)
				}
			}
			rolled, err := l.Roll(tc.offset)
			if err != nil || rolled != tc.wantRolled {
				t.Fatalf("Roll(%d) = %v, %v; want %v", tc.offset, rolled, err, tc.wantRolled)
			}
			n, err := l.TruncateBefore(tc.offset)
			if err != nil {
				t.Fatal(err)
			}
			wantFirst := uint64(0)
			if tc.wantRolled {
				if n != 1 {
					t.Fatalf("TruncateBefore after a roll removed %d files, want the rolled one", n)
				}
				wantFirst = 10
				// An empty active file is not rolled again.
				if again, err := l.Roll(tc.offset); again || err != nil {
					t.Fatalf("second Roll = %v, %v", again, err)
				}
			}
			if st := l.State(); st.First != wantFirst || st.Next != 10 {
				t.Fatalf("state %+v, want first %d, next 10", st, wantFirst)
			}
			if res, err := l.Append(context.Background(), Batch{Events: ev("after")}); err != nil || res.FirstOffset != 10 {
				t.Fatalf("append after the roll: %+v, %v", res, err)
			}
			l.Close()
			l = openT(t, fs, 1<<20)
			defer l.Close()
			if st := l.State(); st.First != wantFirst || st.Next != 11 {
				t.Fatalf("state after reopening %+v, want first %d, next 11", st, wantFirst)
			}
			if evs, _, err := l.Read(10, 1, 1<<20); err != nil || len(evs) != 1 || string(evs[0].Data) != "after" {
				t.Fatalf("read of offset 10 after reopening: %v, %v", evs, err)
			}
		})
	}
}
