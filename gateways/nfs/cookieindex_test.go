package nfs

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/silt-io/silt/view/viewtest"
)

// Cookies the cache does not know — made up by a client here — cost one
// read of the directory in all, not one per call: the first builds the
// directory's index, the others are answered from it. Scanning for each
// read the 100,000-entry directory twenty times.
func TestReadDirUnknownCookiesReadTheDirectoryOnce(t *testing.T) {
	n := hugeCount
	if testing.Short() {
		n = 20_000
	}
	files := make(map[string][]byte, n)
	for i := range n {
		files[hugeDir+"/"+hugeName(i)] = nil
	}
	cv := &countingView{View: viewtest.NewMemView(viewtest.Fixture{Files: files}, mtime)}
	addr, _ := serveView(t, rootConfig(), cv)
	l := newLister(t, addr, hugeDir, false, 8<<10)
	before := cv.entries.Load()
	const calls = 20
	for i := range calls {
		p := l.page(uint64(1)<<63|uint64(0x5eed0000+i), 0)
		if p.status != 10003 { // NFS3ERR_BAD_COOKIE
			t.Fatalf("made-up cookie %d: status %d, want NFS3ERR_BAD_COOKIE", i, p.status)
		}
	}
	if read := cv.entries.Load() - before; read > int64(n)+1000 {
		t.Fatalf("%d unknown cookies read %d entries of a %d-entry directory", calls, read, n)
	}
	// A real cookie the cache has not seen (this listing's entry 4321)
	// resumes from the index without reading the directory again.
	before = cv.entries.Load()
	p := l.page(nameCookie(hugeName(4321)), 0)
	if p.status != 0 || len(p.names) == 0 || p.names[0] != hugeName(4322) {
		t.Fatalf("resume: status %d, names %q", p.status, p.names[:min(2, len(p.names))])
	}
	if read := cv.entries.Load() - before; read > 1000 {
		t.Fatalf("resuming from the index read %d entries", read)
	}
}

func TestDirIndexes(t *testing.T) {
	files := map[string][]byte{}
	for i := range 50 {
		files[fmt.Sprintf("/t/a/f%02d", i)] = nil
		files[fmt.Sprintf("/t/b/f%02d", i)] = nil
	}
	files["/t/small/x"] = nil
	ctx := context.Background()
	cases := map[string]func(t *testing.T, x *dirIndexes, cv *countingView, clock *time.Time){
		"one read for many lookups": func(t *testing.T, x *dirIndexes, cv *countingView, _ *time.Time) {
			for i := range 50 {
				name, ok, err := x.find(ctx, cv, 1, "/t/a", nameCookie(fmt.Sprintf("f%02d", i)))
				if err != nil || !ok || name != fmt.Sprintf("f%02d", i) {
					t.Fatalf("find %d: %q %v %v", i, name, ok, err)
				}
			}
			if cv.entries.Load() != 50 {
				t.Fatalf("read %d entries", cv.entries.Load())
			}
		},
		"unknown cookie rebuilds only after minAge": func(t *testing.T, x *dirIndexes, cv *countingView, clock *time.Time) {
			for range 3 {
				if _, ok, _ := x.find(ctx, cv, 1, "/t/a", 12345); ok {
					t.Fatal("found a made-up cookie")
				}
			}
			if cv.entries.Load() != 50 {
				t.Fatalf("read %d entries before minAge", cv.entries.Load())
			}
			*clock = clock.Add(2 * time.Minute)
			x.find(ctx, cv, 1, "/t/a", 12345)
			if cv.entries.Load() != 100 {
				t.Fatalf("read %d entries after minAge, want a rebuild", cv.entries.Load())
			}
		},
		"least recently used evicted beyond the bound": func(t *testing.T, x *dirIndexes, cv *countingView, _ *time.Time) {
			x.find(ctx, cv, 1, "/t/a", nameCookie("f01"))
			x.find(ctx, cv, 3, "/t/small", nameCookie("x"))
			x.find(ctx, cv, 2, "/t/b", nameCookie("f01")) // 101 names: a goes
			x.mu.Lock()
			_, hasA := x.mu.dirs[1]
			_, hasB := x.mu.dirs[2]
			total := x.mu.total
			x.mu.Unlock()
			if hasA || !hasB || total > x.maxEntries {
				t.Fatalf("a kept %v, b kept %v, %d names held", hasA, hasB, total)
			}
		},
		"too large to index": func(t *testing.T, x *dirIndexes, cv *countingView, _ *time.Time) {
			x.maxEntries = 10
			for range 2 {
				if name, ok, _ := x.find(ctx, cv, 1, "/t/a", nameCookie("f40")); !ok || name != "f40" {
					t.Fatalf("find: %q %v", name, ok)
				}
			}
			if cv.entries.Load() != 100 {
				t.Fatalf("read %d entries: a directory over the bound is scanned each time", cv.entries.Load())
			}
			x.mu.Lock()
			defer x.mu.Unlock()
			if len(x.mu.dirs) != 0 || x.mu.total != 0 {
				t.Fatalf("%d indexes, %d names held", len(x.mu.dirs), x.mu.total)
			}
		},
	}
	for name, run := range cases {
		t.Run(name, func(t *testing.T) {
			clock := time.Unix(1e9, 0)
			x := newDirIndexes(100, time.Minute)
			x.now = func() time.Time { return clock }
			cv := &countingView{View: viewtest.NewMemView(viewtest.Fixture{Files: files}, mtime)}
			run(t, x, cv, &clock)
		})
	}
}
