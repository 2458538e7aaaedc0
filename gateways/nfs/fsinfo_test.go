package nfs

import (
	"encoding/binary"
	"errors"
	"os"
	"strings"
	"testing"
)

// u64s decodes n XDR hypers from b.
func u64s(b []byte, n int) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = binary.BigEndian.Uint64(b[8*i:])
	}
	return out
}

func TestFSInfo(t *testing.T) {
	e := newEnv(t)
	addr, _ := e.serve(rootConfig(), testKey)
	fi, err := mustMount(t, addr, "/").FSInfo()
	if err != nil {
		t.Fatal(err)
	}
	if fi.RTMax != 1<<20 || fi.RTPref != 1<<20 || fi.RTMult != 4096 || fi.DTPref != 32<<10 {
		t.Fatalf("FSINFO rtmax %d rtpref %d rtmult %d dtpref %d; want 1 MiB, 1 MiB, 4096, 32 KiB",
			fi.RTMax, fi.RTPref, fi.RTMult, fi.DTPref)
	}
	if fi.Properties&0x10 != 0 {
		t.Fatalf("FSINFO properties %#x claim CANSETTIME on a read-only export", fi.Properties)
	}
}

// TestReadMaxCount: a READ for more than rtmax is served rtmax bytes.
func TestReadMaxCount(t *testing.T) {
	e := newEnv(t)
	addr, _ := e.serve(rootConfig(), testKey)
	c := dialRaw(t, addr)
	fh := c.lookupPath(c.rootHandle("/"), bigChunk)
	// 300,000-byte file, count 4 MiB: all of it, eof.
	rep := c.call(2, progNFS, 3, 6, append(append(xdrString(string(fh)), make([]byte, 8)...), be(4<<20)...))
	const at = 4 * (1 + 22)
	if rep.stat != 0 || binary.BigEndian.Uint32(rep.body) != 0 {
		t.Fatalf("READ: %+v", rep)
	}
	if n, eof := binary.BigEndian.Uint32(rep.body[at:]), binary.BigEndian.Uint32(rep.body[at+4:]); n != 300_000 || eof != 1 {
		t.Fatalf("READ of 4 MiB from a 300,000-byte file: count %d eof %d", n, eof)
	}
}

func TestFSStat(t *testing.T) {
	e := newEnv(t)
	addr, _ := e.serve(rootConfig(), testKey)
	c := dialRaw(t, addr)
	rep := c.call(2, progNFS, 3, 18, xdrString(string(c.rootHandle("/"))))
	// status, post_op_attr (flag + 21 words), six hypers, invarsec.
	const at = 4 * (1 + 22)
	if rep.stat != 0 || binary.BigEndian.Uint32(rep.body) != 0 || len(rep.body) != at+6*8+4 {
		t.Fatalf("FSSTAT: stat %d, %d body bytes (want %d)", rep.stat, len(rep.body), at+6*8+4)
	}
	v := u64s(rep.body[at:], 6)
	tbytes, fbytes, abytes, tfiles, ffiles, afiles := v[0], v[1], v[2], v[3], v[4], v[5]
	if tbytes == 0 || tfiles == 0 || fbytes != 0 || abytes != 0 || ffiles != 0 || afiles != 0 {
		t.Fatalf("FSSTAT = %v; want non-zero totals and nothing free on a read-only export", v)
	}
	if inv := binary.BigEndian.Uint32(rep.body[at+48:]); inv != 0 {
		t.Fatalf("FSSTAT invarsec %d, want 0 (the tree changes at any time)", inv)
	}
}

func TestPathConf(t *testing.T) {
	e := newEnv(t)
	addr, _ := e.serve(rootConfig(), testKey)
	c := dialRaw(t, addr)
	rep := c.call(2, progNFS, 3, 20, xdrString(string(c.rootHandle("/"))))
	const at = 4 * (1 + 22)
	if rep.stat != 0 || binary.BigEndian.Uint32(rep.body) != 0 || len(rep.body) != at+6*4 {
		t.Fatalf("PATHCONF: %+v", rep)
	}
	if nameMax, noTrunc := binary.BigEndian.Uint32(rep.body[at+4:]), binary.BigEndian.Uint32(rep.body[at+8:]); nameMax != 255 || noTrunc != 1 {
		t.Fatalf("PATHCONF name_max %d no_trunc %d, want 255 and true", nameMax, noTrunc)
	}
}

func TestNameTooLong(t *testing.T) {
	e := newEnv(t)
	addr, _ := e.serve(rootConfig(), testKey)
	v := mustMount(t, addr, "/")
	long := "/acme/" + strings.Repeat("n", 256)
	_, _, err := v.Lookup(long)
	wantNFSErr(t, err, "NFS3ERR_NAMETOOLONG")
	if _, _, err = v.Lookup("/acme/" + strings.Repeat("n", 255)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("LOOKUP of a missing 255-byte name: %v, want NOENT", err)
	}
	_, err = v.Create(long, 0o644)
	wantNFSErr(t, err, "NFS3ERR_NAMETOOLONG")
	_, err = v.Mkdir(long, 0o755)
	wantNFSErr(t, err, "NFS3ERR_NAMETOOLONG")
	wantNFSErr(t, v.Remove(long), "NFS3ERR_NAMETOOLONG")
	wantNFSErr(t, v.Rename(chunk, long), "NFS3ERR_NAMETOOLONG")

	// Raw, for the procedures the client does not have: MKNOD, LINK.
	c := dialRaw(t, addr)
	root := string(c.rootHandle("/"))
	name := strings.Repeat("x", 300)
	for _, tc := range []struct {
		name string
		proc uint32
		args []byte
	}{
		{"LINK", 15, append(append(xdrString(root), xdrString(root)...), xdrString(name)...)},
		{"MKNOD", 11, append(append(xdrString(root), xdrString(name)...), be(7)...)}, // NF3FIFO, attrs omitted
		{"RMDIR", 13, append(xdrString(root), xdrString(name)...)},
	} {
		rep := c.call(2, progNFS, 3, tc.proc, tc.args)
		if rep.stat != 0 || len(rep.body) < 4 || binary.BigEndian.Uint32(rep.body) != 63 {
			t.Errorf("%s with a 300-byte name: %+v, want NFS3ERR_NAMETOOLONG", tc.name, rep)
		}
	}
}

// lookupPath LOOKUPs each element of p below dir.
func (r *rawConn) lookupPath(dir []byte, p string) []byte {
	r.t.Helper()
	fh := dir
	for _, name := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
		rep := r.call(2, progNFS, 3, 3, append(xdrString(string(fh)), xdrString(name)...))
		if rep.stat != 0 || binary.BigEndian.Uint32(rep.body) != 0 {
			r.t.Fatalf("LOOKUP %s: %+v", name, rep)
		}
		n := binary.BigEndian.Uint32(rep.body[4:])
		fh = rep.body[8 : 8+n]
	}
	return fh
}
