package segment

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/silt-io/silt/core/vfs"
)

func fileSizes(t *testing.T, fs vfs.FS) map[string]int64 {
	t.Helper()
	names, err := fs.List("/seg")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, n := range names {
		f, err := fs.Open(filepath.Join("/seg", n))
		if err != nil {
			t.Fatal(err)
		}
		sz, err := f.Size()
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		out[n] = sz
	}
	return out
}

// Small commits land in a zero-filled region ahead of the data; reopening
// reads the zeros as the end of the log, quietly, and appends go on into
// the same region.
func TestPreallocatedTailIsNotATornTail(t *testing.T) {
	fs := vfs.NewCrashFS()
	core, logs := observer.New(zap.DebugLevel)
	opts := Options{FS: fs, Dir: "/seg", FileBytes: 1 << 20, PreallocBytes: 4096, Log: zap.New(core)}
	l, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var want []string
	for i := 0; i < 10; i++ {
		e := fmt.Sprintf("event-%02d", i)
		if _, err := l.Append(ctx, Batch{Events: ev(e)}); err != nil {
			t.Fatal(err)
		}
		want = append(want, e)
	}
	data := l.State().Bytes
	sizes := fileSizes(t, fs)
	// The first commit filled 4096 bytes past its end; the other nine
	// landed inside that region.
	if got := sizes[fileName(0)]; len(sizes) != 1 || got <= data+1000 || got > data+4096 {
		t.Fatalf("file sizes %v with %d bytes of data: want the data plus up to 4096 zero bytes", sizes, data)
	}
	l.Close()

	after := fs.Crash(nil)
	l2, err := Open(Options{FS: after, Dir: "/seg", FileBytes: 1 << 20, PreallocBytes: 4096, Log: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if got := readAll(t, l2); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after reopen: %v, want %v", got, want)
	}
	if n := logs.FilterMessage("truncated torn tail of segment log").Len(); n != 0 {
		t.Fatalf("preallocated zeros were reported as a torn tail (%d times)", n)
	}
	before := fileSizes(t, after)[fileName(0)]
	if _, err := l2.Append(ctx, Batch{Events: ev("more")}); err != nil {
		t.Fatal(err)
	}
	if got := fileSizes(t, after)[fileName(0)]; got != before {
		t.Fatalf("a small append after reopen grew the file from %d to %d bytes instead of using the zeroed region", before, got)
	}
}

// Every file but the active one ends with its last record, and a large
// commit is written without zero-filling ahead of it.
func TestPreallocationCutAtRollAndSkippedForLargeCommits(t *testing.T) {
	fs := vfs.NewCrashFS()
	l, err := Open(Options{FS: fs, Dir: "/seg", FileBytes: 300, PreallocBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := 0; i < 60; i++ {
		if _, err := l.Append(ctx, Batch{Events: ev(fmt.Sprintf("e%02d", i))}); err != nil {
			t.Fatal(err)
		}
	}
	l.mu.Lock()
	files := append([]*file(nil), l.mu.files...)
	l.mu.Unlock()
	if len(files) < 3 {
		t.Fatalf("only %d files with FileBytes 300", len(files))
	}
	sizes := fileSizes(t, fs)
	for _, f := range files[:len(files)-1] {
		if sizes[f.name] != f.size {
			t.Fatalf("sealed file %s is %d bytes on disk, %d of data: its zero tail was not cut", f.name, sizes[f.name], f.size)
		}
	}
	if last := files[len(files)-1]; sizes[last.name] != 300 {
		t.Fatalf("active file %s is %d bytes, want it zero-filled up to FileBytes (300)", last.name, sizes[last.name])
	}
	l.Close()

	big := vfs.NewCrashFS()
	l, err = Open(Options{FS: big, Dir: "/seg", FileBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Append(ctx, Batch{Events: [][]byte{bytes.Repeat([]byte("x"), preallocMinCommit)}}); err != nil {
		t.Fatal(err)
	}
	if got, data := fileSizes(t, big)[fileName(0)], l.State().Bytes; got != data {
		t.Fatalf("a %d-byte commit left a %d-byte file for %d bytes of data", preallocMinCommit, got, data)
	}
}

// Buffer classes cover every size up to maxPooled with at most a quarter
// wasted, and a class's capacity maps back to the same class.
func TestBufClasses(t *testing.T) {
	prev := -1
	for n := 1; n <= maxPooled; n += 1 + n/97 {
		i, c := bufClass(n)
		if i < 0 || i >= len(bufPools) {
			t.Fatalf("size %d: class %d out of range", n, i)
		}
		if c < n || (n > minPooled && float64(c) > 1.25*float64(n)+1) {
			t.Fatalf("size %d: capacity %d", n, c)
		}
		if i < prev {
			t.Fatalf("size %d: class %d below the previous %d", n, i, prev)
		}
		prev = i
		if j, c2 := bufClass(c); j != i || c2 != c {
			t.Fatalf("capacity %d of class %d maps to class %d (%d)", c, i, j, c2)
		}
	}
	if i, _ := bufClass(maxPooled + 1); i != -1 {
		t.Fatalf("size above maxPooled pooled in class %d", i)
	}
}

// A log whose commits are large on average does not zero-fill ahead of its
// occasional small commit either: the zeros would mostly be overwritten by
// large commits, each refill costing a megabyte in some commit's sync.
func TestNoZeroFillAmongLargeCommits(t *testing.T) {
	fs := vfs.NewCrashFS()
	l, err := Open(Options{FS: fs, Dir: "/seg", FileBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	for i := 0; i < 4; i++ {
		if _, err := l.Append(ctx, Batch{Events: [][]byte{bytes.Repeat([]byte("x"), 2*preallocMinCommit)}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.Append(ctx, Batch{Events: ev("small")}); err != nil {
		t.Fatal(err)
	}
	if got, data := fileSizes(t, fs)[fileName(0)], l.State().Bytes; got != data {
		t.Fatalf("a small commit after large ones left a %d-byte file for %d bytes of data", got, data)
	}
	if got := readAll(t, l); len(got) != 5 || got[4] != "small" {
		t.Fatalf("read %d events", len(got))
	}
}
