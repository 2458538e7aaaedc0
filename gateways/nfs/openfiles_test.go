package nfs

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/silt-io/silt/view"
)

type closeCounter struct {
	*bytes.Reader
	closed *atomic.Int64
}

func (c closeCounter) Close() error { c.closed.Add(1); return nil }

func TestOpenFilesTTLAndRefs(t *testing.T) {
	o := newOpenFiles()
	now := time.Unix(0, 0)
	o.now = func() time.Time { return now }
	var closed atomic.Int64
	file := func() view.File { return closeCounter{bytes.NewReader([]byte("x")), &closed} }

	k := openKey{0, "root", "/a"}
	f := o.put(k, file(), view.FileInfo{Name: "a"})
	if g := o.get(k); g != f {
		t.Fatal("a fresh file is not served from the cache")
	}
	now = now.Add(openFileTTL)
	if g := o.get(k); g != nil {
		t.Fatal("a file past its TTL is served from the cache")
	}
	if closed.Load() != 0 {
		t.Fatal("an expired file was closed while two readers still hold it")
	}
	o.release(f)
	o.release(f)
	if closed.Load() != 1 {
		t.Fatalf("expired file closed %d times after its last reader, want 1", closed.Load())
	}

	// At the limit the oldest is dropped (and closed: nobody holds it).
	for i := range openFileLimit + 1 {
		now = now.Add(time.Millisecond)
		o.release(o.put(openKey{0, "root", fmt.Sprint(i)}, file(), view.FileInfo{}))
	}
	if n := len(o.mu.files); n != openFileLimit {
		t.Fatalf("%d files cached, want the limit %d", n, openFileLimit)
	}
	if o.get(openKey{0, "root", "0"}) != nil || closed.Load() != 2 {
		t.Fatalf("the oldest file was not dropped and closed (closed %d)", closed.Load())
	}
	o.close()
	if closed.Load() != 2+openFileLimit {
		t.Fatalf("close: %d files closed in all, want %d", closed.Load(), 2+openFileLimit)
	}
	o.release(o.put(openKey{0, "root", "late"}, file(), view.FileInfo{}))
	if len(o.mu.files) != 0 || closed.Load() != 3+openFileLimit {
		t.Fatal("a file opened after close was cached or not closed")
	}
}

// openCounter counts view Opens and Stats.
type openCounter struct {
	view.View
	opens, stats atomic.Int64
}

func (c *openCounter) Open(ctx context.Context, p string) (view.File, error) {
	c.opens.Add(1)
	return c.View.Open(ctx, p)
}

func (c *openCounter) Stat(ctx context.Context, p string) (view.FileInfo, error) {
	c.stats.Add(1)
	return c.View.Stat(ctx, p)
}

// TestReadsShareOpenFile: sequential READs of one file open it once and
// need no Stat of their own.
func TestReadsShareOpenFile(t *testing.T) {
	e := newEnv(t)
	oc := &openCounter{View: e.mem}
	addr, _ := serveView(t, rootConfig(), oc)
	f, err := mustMount(t, addr, "/").Open(bigChunk)
	if err != nil {
		t.Fatal(err)
	}
	stats := oc.stats.Load()
	buf := make([]byte, 10_000)
	for off := int64(0); off < 200_000; off += int64(len(buf)) {
		if n, err := f.ReadAt(buf, off); err != nil || !bytes.Equal(buf[:n], e.files[bigChunk][off:off+int64(n)]) {
			t.Fatalf("ReadAt(%d): %d, %v", off, n, err)
		}
	}
	// 20 READs within well under openFileTTL.
	if opens, st := oc.opens.Load(), oc.stats.Load()-stats; opens != 1 || st > 1 {
		t.Fatalf("20 READs: %d view Opens and %d Stats, want 1 and at most 1", opens, st)
	}
}
