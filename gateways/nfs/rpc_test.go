package nfs

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"slices"
	"testing"
	"time"
)

// Raw ONC RPC calls, to check the reply framing itself (the Go client
// hides it, and libnfs rejects malformed replies as a whole).

const (
	progNFS   = 100003
	progMount = 100005
)

type rawReply struct {
	denied bool
	stat   uint32 // accept_stat, or reject_stat if denied
	body   []byte // what follows the status
}

type rawConn struct {
	t    *testing.T
	c    net.Conn
	xid  uint32
	cred []byte // opaque_auth sent with every call; nil: AUTH_NULL
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, c: c}
}

func be(vs ...uint32) []byte {
	b := make([]byte, 4*len(vs))
	for i, v := range vs {
		binary.BigEndian.PutUint32(b[4*i:], v)
	}
	return b
}

// xdrString is an XDR string: length, bytes, zero padding.
func xdrString(s string) []byte {
	b := be(uint32(len(s)))
	b = append(b, s...)
	return append(b, make([]byte, (4-len(s)%4)%4)...)
}

// call sends one call with the connection's credential (AUTH_NULL if
// none) and reads its reply.
func (r *rawConn) call(rpcvers, prog, vers, proc uint32, args []byte) rawReply {
	r.t.Helper()
	r.xid++
	cred := r.cred
	if cred == nil {
		cred = be(0, 0)
	}
	msg := slices.Concat(be(r.xid, 0, rpcvers, prog, vers, proc), cred, be(0, 0), args)
	frame := append(be(uint32(len(msg))|1<<31), msg...)
	r.c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := r.c.Write(frame); err != nil {
		r.t.Fatal(err)
	}
	var hdr [4]byte
	if _, err := io.ReadFull(r.c, hdr[:]); err != nil {
		r.t.Fatalf("reading reply: %v", err)
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n&(1<<31) == 0 {
		r.t.Fatalf("reply is not a last fragment: %#x", n)
	}
	body := make([]byte, n&^(1<<31))
	if _, err := io.ReadFull(r.c, body); err != nil {
		r.t.Fatalf("reading reply: %v", err)
	}
	u32 := func() uint32 {
		if len(body) < 4 {
			r.t.Fatalf("reply too short")
		}
		v := binary.BigEndian.Uint32(body)
		body = body[4:]
		return v
	}
	if xid, typ := u32(), u32(); xid != r.xid || typ != 1 {
		r.t.Fatalf("reply xid %d type %d, want %d 1", xid, typ, r.xid)
	}
	var rep rawReply
	switch u32() {
	case 0: // MSG_ACCEPTED: verifier, then accept_stat
		u32()
		vlen := u32()
		body = body[(vlen+3)&^3:]
	case 1:
		rep.denied = true
	default:
		r.t.Fatalf("bad reply_stat")
	}
	rep.stat = u32()
	rep.body = body
	return rep
}

func TestRPCReplyCodes(t *testing.T) {
	e := newEnv(t)
	addr, _ := e.serve(rootConfig(), testKey)
	c := dialRaw(t, addr)
	for _, tc := range []struct {
		name                string
		rpcvers, prog, vers uint32
		proc                uint32
		denied              bool
		stat                uint32
		body                []byte
	}{
		{"NFS3 NULL", 2, progNFS, 3, 0, false, 0, nil},
		{"MOUNT3 NULL", 2, progMount, 3, 0, false, 0, nil},
		{"unknown MOUNT procedure → PROC_UNAVAIL", 2, progMount, 3, 99, false, 3, nil},
		{"unknown NFS procedure → PROC_UNAVAIL", 2, progNFS, 3, 99, false, 3, nil},
		{"NFSv4 → PROG_MISMATCH 3..3", 2, progNFS, 4, 0, false, 2, be(3, 3)},
		{"NFSv2 → PROG_MISMATCH 3..3", 2, progNFS, 2, 0, false, 2, be(3, 3)},
		{"MOUNT v1 → PROG_MISMATCH 3..3", 2, progMount, 1, 0, false, 2, be(3, 3)},
		{"NLM → PROG_UNAVAIL", 2, 100021, 4, 0, false, 1, nil},
		{"portmapper → PROG_UNAVAIL", 2, 100000, 2, 0, false, 1, nil},
		{"RPC version 3 → denied RPC_MISMATCH 2..2", 3, progNFS, 3, 0, true, 0, be(2, 2)},
	} {
		got := c.call(tc.rpcvers, tc.prog, tc.vers, tc.proc, nil)
		if got.denied != tc.denied || got.stat != tc.stat || !bytes.Equal(got.body, tc.body) {
			t.Errorf("%s: got denied=%v stat=%d body=%x, want denied=%v stat=%d body=%x",
				tc.name, got.denied, got.stat, got.body, tc.denied, tc.stat, tc.body)
		}
	}
	// The connection survives all of that.
	if got := c.call(2, progNFS, 3, 0, nil); got.denied || got.stat != 0 {
		t.Fatalf("NULL after errors: %+v", got)
	}
}

// parseExports decodes a MOUNT EXPORT reply body into dir → groups.
func parseExportList(t *testing.T, b []byte) map[string][]string {
	t.Helper()
	u32 := func() uint32 {
		if len(b) < 4 {
			t.Fatalf("export list truncated")
		}
		v := binary.BigEndian.Uint32(b)
		b = b[4:]
		return v
	}
	str := func() string {
		n := u32()
		if uint32(len(b)) < (n+3)&^3 {
			t.Fatalf("export list truncated")
		}
		s := string(b[:n])
		b = b[(n+3)&^3:]
		return s
	}
	out := map[string][]string{}
	for u32() == 1 {
		dir := str()
		groups := []string{}
		for u32() == 1 {
			groups = append(groups, str())
		}
		out[dir] = groups
	}
	if len(b) != 0 {
		t.Fatalf("%d bytes after the export list", len(b))
	}
	return out
}

func TestMountExport(t *testing.T) {
	e := newEnv(t)
	addr, _ := e.serve(exportCfg(
		"path=/;principal=root",
		"path=/acme;principal=alice;allow=127.0.0.1/32",
		"path=/ghost;principal=root",              // no such tenant: left out
		"path=/other;principal=bob",               // bob cannot see it: left out
		"path=/x;principal=root;allow=10.0.0.0/8", // not for this client
	), testKey)
	c := dialRaw(t, addr)
	rep := c.call(2, progMount, 3, 5, nil)
	if rep.denied || rep.stat != 0 {
		t.Fatalf("EXPORT: %+v", rep)
	}
	got := parseExportList(t, rep.body)
	want := map[string][]string{"/": {"127.0.0.1/32", "::1/128"}, "/acme": {"127.0.0.1/32"}}
	if len(got) != len(want) {
		t.Fatalf("exports %v, want %v", got, want)
	}
	for dir, g := range want {
		if !slices.Equal(got[dir], g) {
			t.Errorf("export %s groups %v, want %v", dir, got[dir], g)
		}
	}
	// A listed export can be mounted.
	for dir := range want {
		mustMount(t, addr, dir)
	}
}

func TestMountDumpAndUmntAll(t *testing.T) {
	e := newEnv(t)
	addr, _ := e.serve(rootConfig(), testKey)
	c := dialRaw(t, addr)
	if rep := c.call(2, progMount, 3, 2, nil); rep.denied || rep.stat != 0 || !bytes.Equal(rep.body, be(0)) {
		t.Errorf("DUMP: %+v, want success with an empty list", rep)
	}
	if rep := c.call(2, progMount, 3, 4, nil); rep.denied || rep.stat != 0 || len(rep.body) != 0 {
		t.Errorf("UMNTALL: %+v, want success with no body", rep)
	}
	// MNT still works on the same connection.
	rep := c.call(2, progMount, 3, 1, xdrString("/acme"))
	if rep.denied || rep.stat != 0 || len(rep.body) < 8 || binary.BigEndian.Uint32(rep.body) != 0 {
		t.Errorf("MNT after DUMP/UMNTALL: %+v", rep)
	}
}

// rootHandle mounts dir over c and returns the root file handle.
func (r *rawConn) rootHandle(dir string) []byte {
	r.t.Helper()
	rep := r.call(2, progMount, 3, 1, xdrString(dir))
	if rep.denied || rep.stat != 0 || len(rep.body) < 8 || binary.BigEndian.Uint32(rep.body) != 0 {
		r.t.Fatalf("MNT %s: %+v", dir, rep)
	}
	n := binary.BigEndian.Uint32(rep.body[4:])
	return rep.body[8 : 8+n]
}

func TestWritesROFSExactReplies(t *testing.T) {
	e := newEnv(t)
	addr, _ := e.serve(rootConfig(), testKey)
	c := dialRaw(t, addr)
	root := string(c.rootHandle("/acme"))
	for _, tc := range []struct {
		name string
		proc uint32
		args []byte
		want []byte // NFS status and the resfail body
	}{
		// LINK3args: the file's handle, then the directory and name.
		{"LINK", 15, slices.Concat(xdrString(root), xdrString(root), xdrString("x")), append(be(30), make([]byte, 12)...)},
		// CREATE3args with how = EXCLUSIVE and an 8-byte verifier.
		{"CREATE EXCLUSIVE", 8, slices.Concat(xdrString(root), xdrString("x"), be(2), make([]byte, 8)), append(be(30), make([]byte, 8)...)},
		{"CREATE GUARDED", 8, slices.Concat(xdrString(root), xdrString("x"), be(1), make([]byte, 4*6)), append(be(30), make([]byte, 8)...)},
	} {
		rep := c.call(2, progNFS, 3, tc.proc, tc.args)
		if rep.denied || rep.stat != 0 || !bytes.Equal(rep.body, tc.want) {
			t.Errorf("%s: got %+v body %x, want body %x", tc.name, rep, rep.body, tc.want)
		}
	}
	// The connection is still in step.
	if rep := c.call(2, progNFS, 3, 0, nil); rep.denied || rep.stat != 0 {
		t.Fatalf("NULL after writes: %+v", rep)
	}
}
