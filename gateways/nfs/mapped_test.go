package nfs

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/silt-io/silt/view"
)

// TestReadMappedFile reads a file on disk, which READ sends from a memory
// mapping, at offsets that end inside it, at its end and past it, with
// odd counts (padding), and checks each reply's count, eof flag and bytes
// against the same READs of the copied (in-memory) file.
func TestReadMappedFile(t *testing.T) {
	e := newEnv(t)
	want := e.files[bigChunk]
	p := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(p, want, 0o644); err != nil {
		t.Fatal(err)
	}
	srv, err := New(DefaultConfig(), &diskView{View: e.mem, path: bigChunk, file: p}, e.store, testKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	addr, _ := startServer(t, srv)
	memAddr, _ := serveView(t, DefaultConfig(), e.mem)

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
	k := openKey{0, bigChunk}
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
		"small": diskFile{f, 4},
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
