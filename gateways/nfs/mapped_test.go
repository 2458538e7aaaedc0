package nfs

import (
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/silt-io/silt/view"
)

// TestReadMappedFile reads a file on disk, which READ sends from a memory
// mapping, at offsets that end inside it, at its end and past it, with
// odd counts (padding), and checks each reply's count, eof flag and bytes
// against the same READs of the copied (in-memory) file. The file's
// ReadAt fails, so a READ that took the copy path would fail.
func TestReadMappedFile(t *testing.T) {
	e := newEnv(t)
	want := e.files[bigChunk]
	p := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(p, want, 0o644); err != nil {
		t.Fatal(err)
	}
	srv, err := New(rootConfig(), &diskView{View: e.mem, path: bigChunk, file: p, noReadAt: true}, e.store, testKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	addr, _ := startServer(t, srv)
	memAddr, _ := serveView(t, rootConfig(), e.mem)

	size := uint64(len(want))
	reads := []struct {
		off   uint64
		count uint32
	}{
		{0, 1}, {1, 4097}, {4095, 65537}, {size - 3, 3}, {size - 5, 100},
		{size - 1, 1 << 20}, {size, 10}, {size + 4096, 10}, {0, 2 << 20}, {12345, 0},
	}
	c, mc := dialRaw(t, addr), dialRaw(t, memAddr)
	fh, mfh := c.lookupPath(c.rootHandle("/"), bigChunk), mc.lookupPath(mc.rootHandle("/"), bigChunk)
	for _, r := range reads {
		got := readRaw(c, fh, r.off, r.count)
		ref := readRaw(mc, mfh, r.off, r.count)
		if got != ref {
			t.Errorf("READ %d+%d: mapped %+v, copied %+v", r.off, r.count, got.summary(), ref.summary())
		}
		end := min(r.off+uint64(r.count), size, 1<<20)
		if r.off < size && !bytes.Equal([]byte(got.data), want[r.off:end]) {
			t.Errorf("READ %d+%d: %d bytes differ from the file's", r.off, r.count, len(got.data))
		}
	}

	// The replies above came from the mapping, which lives as long as the
	// file is open and goes with it.
	k := openKey{0, "root", bigChunk}
	of := srv.files.get(k)
	if of == nil || of.mem == nil {
		t.Fatalf("the file was not kept open and mapped: %+v", of)
	}
	srv.files.release(of)
	srv.files.close()
	if of.mem != nil {
		t.Fatal("the mapping outlived the file")
	}
}

// TestSmallOrMemoryFilesNotMapped keeps READ of small files and of
// files without a descriptor on the copy path.
func TestSmallOrMemoryFilesNotMapped(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small")
	if err := os.WriteFile(small, []byte("tiny"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(small)
	if err != nil {
		t.Fatal(err)
	}
	for name, vf := range map[string]view.File{
		"small": diskFile{f, 4, false},
		"mem":   closeCounter{bytes.NewReader(make([]byte, 1<<20)), nil},
	} {
		of := &openFile{f: vf, info: view.FileInfo{Size: vf.Size()}}
		if of.mapped() != nil {
			t.Errorf("%s file mapped", name)
		}
	}
	f.Close()
}

type rawRead struct {
	status, count, eof uint32
	data               string
	padOK              bool
}

func (r rawRead) summary() any {
	return struct{ status, count, eof, n uint32 }{r.status, r.count, r.eof, uint32(len(r.data))}
}

// readRaw sends one READ and decodes its reply.
func readRaw(c *rawConn, fh []byte, off uint64, count uint32) rawRead {
	c.t.Helper()
	rep := c.call(2, progNFS, 3, 6, append(xdrString(string(fh)), be(uint32(off>>32), uint32(off), count)...))
	b := rep.body
	if rep.stat != 0 || len(b) < 4 {
		c.t.Fatalf("READ %d+%d: %+v", off, count, rep)
	}
	r := rawRead{status: binary.BigEndian.Uint32(b)}
	if r.status != 0 {
		return r
	}
	// post_op_attr (1+21 words), count, eof, data length, data, padding.
	b = b[4+4*22:]
	r.count, r.eof = binary.BigEndian.Uint32(b), binary.BigEndian.Uint32(b[4:])
	n := binary.BigEndian.Uint32(b[8:])
	b = b[12:]
	if n != r.count || len(b) != int(n+3)&^3 {
		c.t.Fatalf("READ %d+%d: count %d, data length %d, %d bytes left", off, count, r.count, n, len(b))
	}
	r.data = string(b[:n])
	r.padOK = bytes.Equal(b[n:], make([]byte, len(b)-int(n)))
	if !r.padOK {
		c.t.Errorf("READ %d+%d: padding %x", off, count, b[n:])
	}
	return r
}

// TestMappedFileShrunk: a mapped file that shrank after it was opened
// (chunk files never do) cannot supply the bytes its reply's header
// promised: write(2) fails on the pages past the new end instead of the
// process faulting, the connection is closed rather than left with a
// short record, and a new connection is served.
func TestMappedFileShrunk(t *testing.T) {
	e := newEnv(t)
	p := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(p, e.files[bigChunk], 0o644); err != nil {
		t.Fatal(err)
	}
	addr, _ := serveView(t, rootConfig(), &diskView{View: e.mem, path: bigChunk, file: p})
	c := dialRaw(t, addr)
	fh := c.lookupPath(c.rootHandle("/"), bigChunk)
	readRaw(c, fh, 0, 4096) // opens and caches the file
	if err := os.Truncate(p, 70000); err != nil {
		t.Fatal(err)
	}
	args := append(xdrString(string(fh)), be(0, 100000, 65536)...)
	msg := append(be(77, 0, 2, progNFS, 3, 6, 0, 0, 0, 0), args...)
	c.c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.c.Write(append(be(uint32(len(msg))|1<<31), msg...)); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(c.c)
	if err != nil {
		t.Fatalf("reading the reply: %v, want the connection closed", err)
	}
	if len(got) >= 4 {
		if n := int(binary.BigEndian.Uint32(got) &^ (1 << 31)); len(got)-4 >= n {
			t.Fatalf("read a whole %d-byte record from a file that shrank", n)
		}
	}
	c2 := dialRaw(t, addr)
	if r := readRaw(c2, c2.lookupPath(c2.rootHandle("/"), bigChunk), 0, 100); r.status != 0 {
		t.Fatalf("READ on a new connection: status %d", r.status)
	}
}
