package nfs

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/silt-io/silt/view"
)

// gatedView is a fault-injection wrapper: every ReadAt of a file it opens
// is held until the test releases it, and it records how many were held at
// once. Holding reads, rather than sleeping in them, lets a test count
// what overlapped however slow the machine is.
type gatedView struct {
	view.View
	arrived       chan chan struct{}
	inflight, max atomic.Int64
	// open lets every read through once a test has failed, so that the
	// reads it started still end.
	open atomic.Bool
}

func newGatedView(v view.View) *gatedView {
	return &gatedView{View: v, arrived: make(chan chan struct{}, 64)}
}

func (g *gatedView) Open(ctx context.Context, p string) (view.File, error) {
	f, err := g.View.Open(ctx, p)
	if err != nil {
		return nil, err
	}
	return gatedFile{f, g}, nil
}

type gatedFile struct {
	view.File
	g *gatedView
}

func (f gatedFile) ReadAt(b []byte, off int64) (int, error) {
	n := f.g.inflight.Add(1)
	for {
		m := f.g.max.Load()
		if n <= m || f.g.max.CompareAndSwap(m, n) {
			break
		}
	}
	if !f.g.open.Load() {
		release := make(chan struct{})
		f.g.arrived <- release
		<-release
	}
	f.g.inflight.Add(-1)
	return f.File.ReadAt(b, off)
}

// hangStop bounds a wait that only a hung server reaches; it is never
// what a test checks.
const hangStop = time.Minute

// releaseInRounds lets total reads through in rounds: each round waits
// until perRound reads are held in the view at once, then releases them
// together. Its channel yields nil when all went, or why not; on failure
// the gate opens, so the reads still end.
func releaseInRounds(g *gatedView, total, perRound int) <-chan error {
	res := make(chan error, 1)
	go func() {
		for released := 0; released < total; {
			want := min(perRound, total-released)
			held := make([]chan struct{}, 0, want)
			timeout := time.After(hangStop)
			for len(held) < want {
				select {
				case r := <-g.arrived:
					held = append(held, r)
				case <-timeout:
					g.open.Store(true)
					for _, r := range held {
						close(r)
					}
					for len(g.arrived) > 0 {
						close(<-g.arrived)
					}
					res <- fmt.Errorf("timed out waiting for %d READs in the view at once; %d arrived (%d released before)", want, len(held), released)
					return
				}
			}
			for _, r := range held {
				close(r)
			}
			released += want
		}
		res <- nil
	}()
	return res
}

// pipelinedReads reads 8 different ranges of bigChunk concurrently over
// one mount (one TCP connection: the Go client multiplexes calls on it by
// xid); each is one READ call.
func pipelinedReads(t *testing.T, addr string, want []byte) {
	t.Helper()
	tgt := mustMount(t, addr, "/")
	f, err := tgt.Open(bigChunk)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan string, pipelinedReaders)
	for i := range pipelinedReaders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			off := int64(i) * 30_000
			buf := make([]byte, 20_000)
			n, err := f.ReadAt(buf, off)
			if err != nil || !bytes.Equal(buf[:n], want[off:off+int64(n)]) || n != len(buf) {
				errs <- fmt.Sprintf("read at %d: %d bytes, %v, or content differs", off, n, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
}

const pipelinedReaders = 8

// Served one at a time, the 8 pipelined READs would never be in the view
// together.
func TestConcurrentReadsOneConnection(t *testing.T) {
	e := newEnv(t)
	g := newGatedView(e.mem)
	addr, _ := serveView(t, rootConfig(), g)
	rounds := releaseInRounds(g, pipelinedReaders, pipelinedReaders)
	pipelinedReads(t, addr, e.files[bigChunk])
	if err := <-rounds; err != nil {
		t.Fatal(err)
	}
	if got := g.max.Load(); got != pipelinedReaders {
		t.Fatalf("at most %d READs in the view at once, want %d", got, pipelinedReaders)
	}
}

// With max_inflight 2, the 8 pipelined READs reach the view two at a
// time.
func TestInflightBound(t *testing.T) {
	e := newEnv(t)
	g := newGatedView(e.mem)
	cfg := rootConfig()
	cfg.MaxInflight = 2
	addr, _ := serveView(t, cfg, g)
	rounds := releaseInRounds(g, pipelinedReaders, 2)
	pipelinedReads(t, addr, e.files[bigChunk])
	if err := <-rounds; err != nil {
		t.Fatal(err)
	}
	if got := g.max.Load(); got != 2 {
		t.Fatalf("%d requests in the view at once, want the bound 2", got)
	}
}

// TestRepliesWholeUnderLoad pipelines many READs on one raw connection
// and checks that every reply arrives as one well-formed record with its
// own xid and data, though concurrent handlers write them; from memory
// and from a file on disk.
func TestRepliesWholeUnderLoad(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	p := filepath.Join(dir, "big")
	if err := os.WriteFile(p, e.files[bigChunk], 0o644); err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]view.View{
		"copied": e.mem,
		"disk":   &diskView{View: e.mem, path: bigChunk, file: p},
	} {
		t.Run(name, func(t *testing.T) {
			addr, _ := serveView(t, rootConfig(), v)
			pipelineRawReads(t, addr, e.files[bigChunk])
		})
	}
}

// diskView serves one path of the view from a file on disk.
type diskView struct {
	view.View
	path, file string
	// noReadAt makes the file's ReadAt fail, so that only READs sent
	// from its descriptor succeed.
	noReadAt bool
}

type diskFile struct {
	*os.File
	size     int64
	noReadAt bool
}

func (f diskFile) Size() int64 { return f.size }

func (f diskFile) ReadAt(p []byte, off int64) (int, error) {
	if f.noReadAt && len(p) > 0 {
		return 0, errors.New("ReadAt of a file READ should send from its descriptor")
	}
	return f.File.ReadAt(p, off)
}

func (d *diskView) Open(ctx context.Context, p string) (view.File, error) {
	if p != d.path {
		return d.View.Open(ctx, p)
	}
	f, err := os.Open(d.file)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return diskFile{f, st.Size(), d.noReadAt}, nil
}

func pipelineRawReads(t *testing.T, addr string, want []byte) {
	c := dialRaw(t, addr)
	fh := c.lookupPath(c.rootHandle("/"), bigChunk)
	const calls = 64
	count := func(i int) uint32 { return uint32(20_000 + 997*i) } // odd sizes: padding
	offset := func(i int) uint64 { return uint64(3000 * i) }
	var frames []byte
	for i := range calls {
		args := append(xdrString(string(fh)), be(0, uint32(offset(i)), count(i))...)
		msg := append(be(uint32(5000+i), 0, 2, progNFS, 3, 6, 0, 0, 0, 0), args...)
		frames = append(frames, be(uint32(len(msg))|1<<31)...)
		frames = append(frames, msg...)
	}
	c.c.SetDeadline(time.Now().Add(20 * time.Second))
	go c.c.Write(frames) // replies start before the calls are all written
	seen := map[uint32]bool{}
	for range calls {
		var hdr [4]byte
		if _, err := ioReadFull(c, hdr[:]); err != nil {
			t.Fatal(err)
		}
		n := binary.BigEndian.Uint32(hdr[:]) &^ (1 << 31)
		body := make([]byte, n)
		if _, err := ioReadFull(c, body); err != nil {
			t.Fatal(err)
		}
		xid := binary.BigEndian.Uint32(body)
		i := int(xid) - 5000
		if i < 0 || i >= calls || seen[xid] {
			t.Fatalf("reply with xid %d", xid)
		}
		seen[xid] = true
		// xid, REPLY, MSG_ACCEPTED, verifier (2 words), SUCCESS, NFS3_OK,
		// post_op_attr (1+21 words), count, eof, data length, data.
		const dataAt = 4 * (6 + 1 + 22 + 3)
		got := binary.BigEndian.Uint32(body[dataAt-12:])
		off := offset(i)
		if got != count(i) || len(body) != dataAt+int((got+3)&^3) || !bytes.Equal(body[dataAt:dataAt+int(got)], want[off:off+uint64(got)]) {
			t.Fatalf("reply %d: count %d, %d bytes, or data differs", i, got, len(body))
		}
		if pad := body[dataAt+int(got):]; !bytes.Equal(pad, make([]byte, len(pad))) {
			t.Fatalf("reply %d: padding %x", i, pad)
		}
	}
}

func ioReadFull(c *rawConn, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := c.c.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
