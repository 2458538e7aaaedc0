package segment

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/silt-io/silt/core/vfs"
)

// scanAll collects what Scan passes for [from, to), checking that offsets
// are contiguous from from.
func scanAll(t *testing.T, l *Log, from, to uint64) []string {
	t.Helper()
	var out []string
	next := from
	err := l.Scan(from, to, func(first uint64, _ int64, events [][]byte) error {
		if first != next {
			t.Fatalf("batch starts at %d, want %d", first, next)
		}
		if len(events) == 0 {
			t.Fatalf("empty batch at %d", first)
		}
		for _, e := range events {
			out = append(out, string(e)) // copies: the slices are reused
		}
		next += uint64(len(events))
		return nil
	})
	if err != nil {
		t.Fatalf("Scan(%d, %d): %v", from, to, err)
	}
	return out
}

func TestScanMatchesReadOverFilesAndBatches(t *testing.T) {
	l := openT(t, vfs.NewCrashFS(), 300)
	defer l.Close()
	ctx := context.Background()
	var want []string
	// Batches of 1 to 4 events, rolled over many small files.
	for i := 0; len(want) < 120; i++ {
		var b [][]byte
		for k := 0; k <= i%4; k++ {
			e := fmt.Sprintf("event-%03d", len(want))
			b = append(b, []byte(e))
			want = append(want, e)
		}
		if _, err := l.Append(ctx, Batch{Events: b}); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(l.mu.files); n < 5 {
		t.Fatalf("expected several files, got %d", n)
	}
	end := uint64(len(want))
	for _, r := range [][2]uint64{{0, end}, {0, 1}, {1, 2}, {5, 77}, {37, end}, {end - 1, end}, {10, end + 50}} {
		got := scanAll(t, l, r[0], r[1])
		hi := min(r[1], end)
		if fmt.Sprint(got) != fmt.Sprint(want[r[0]:hi]) {
			t.Fatalf("Scan(%d, %d) = %v, want %v", r[0], r[1], got, want[r[0]:hi])
		}
	}
	if got := scanAll(t, l, end, end+10); len(got) != 0 {
		t.Fatalf("scan at the end passed %v", got)
	}
	if err := l.Scan(end+1, end+2, func(uint64, int64, [][]byte) error { return nil }); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("scan past the end: %v", err)
	}
}

func TestScanStopsOnCallbackErrorAndAfterTruncation(t *testing.T) {
	l := openT(t, vfs.NewCrashFS(), 200)
	defer l.Close()
	ctx := context.Background()
	for i := 0; i < 60; i++ {
		if _, err := l.Append(ctx, Batch{Events: ev(fmt.Sprintf("event-%03d", i))}); err != nil {
			t.Fatal(err)
		}
	}
	stop := errors.New("stop")
	calls := 0
	err := l.Scan(0, 60, func(uint64, int64, [][]byte) error {
		calls++
		if calls == 3 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || calls != 3 {
		t.Fatalf("Scan = %v after %d calls, want the callback's error after 3", err, calls)
	}
	if _, err := l.TruncateBefore(30); err != nil {
		t.Fatal(err)
	}
	first := l.State().First
	if first == 0 {
		t.Fatal("truncation dropped nothing")
	}
	if err := l.Scan(0, 60, func(uint64, int64, [][]byte) error { return nil }); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("scan below the first offset: %v", err)
	}
	got := scanAll(t, l, first, 60)
	if len(got) != int(60-first) || got[0] != fmt.Sprintf("event-%03d", first) {
		t.Fatalf("scan after truncation = %v", got)
	}
}

// TestScanMappedOSFiles scans logs on the OS filesystem, whose files Scan
// maps into memory once a stretch is 1 MiB or more: ranges starting at
// the front, in the middle and near the end of files, across files, the
// active file included, and with appends landing while a scan runs.
func TestScanMappedOSFiles(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(Options{FS: vfs.OS{}, Dir: dir, FileBytes: 3 << 20, MaxRecordBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	var want []string
	event := func(i int) []byte {
		b := make([]byte, 700+i%600)
		for k := range b {
			b[k] = byte('a' + (i+k)%26)
		}
		copy(b, fmt.Sprintf("%07d", i))
		return b
	}
	for len(want) < 10_000 { // ~10 MiB: several files
		var b [][]byte
		for k := 0; k < 1+len(want)%40; k++ {
			e := event(len(want))
			b = append(b, e)
			want = append(want, string(e))
		}
		if _, err := l.Append(ctx, Batch{Events: b}); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(l.mu.files); n < 3 {
		t.Fatalf("expected several files, got %d", n)
	}
	h, err := l.opts.Files.acquire(l.mu.files[0].path, false)
	if err != nil {
		t.Fatal(err)
	}
	_, ok := h.f.(vfs.Mapper)
	l.opts.Files.release(h)
	if !ok {
		t.Fatal("OS files do not map: the test would not cover the mapped path")
	}
	end := uint64(len(want))
	for _, r := range [][2]uint64{{0, end}, {1, 3000}, {2999, 7001}, {5000, end}, {end - 3, end}, {end - 1500, end + 10}} {
		got := scanAll(t, l, r[0], r[1])
		hi := min(r[1], end)
		if len(got) != int(hi-r[0]) {
			t.Fatalf("Scan(%d, %d) passed %d events, want %d", r[0], r[1], len(got), hi-r[0])
		}
		for i, g := range got {
			if g != want[int(r[0])+i] {
				t.Fatalf("Scan(%d, %d): event %d differs", r[0], r[1], int(r[0])+i)
			}
		}
	}

	// Appends go on while a scan of the active file runs; the scan sees
	// what was committed when it started, and the next scan the rest.
	done := make(chan error, 1)
	go func() {
		for i := 0; i < 200; i++ {
			if _, err := l.Append(ctx, Batch{Events: [][]byte{event(int(end) + i)}}); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for i := 0; i < 20; i++ {
		next := l.State().Next
		if got := scanAll(t, l, end-2000, next); len(got) != int(next-(end-2000)) {
			t.Fatalf("scan during appends passed %d events of %d", len(got), next-(end-2000))
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
