package nfs

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"
)

// nfsStat is the NFS status of an accepted reply.
func nfsStat(t *testing.T, rep rawReply) uint32 {
	t.Helper()
	if rep.denied || rep.stat != 0 || len(rep.body) < 4 {
		t.Fatalf("reply not accepted: %+v", rep)
	}
	return binary.BigEndian.Uint32(rep.body)
}

// A LOOKUP names one entry of a directory. A name holding '/' is no such
// name, whatever lies at the path it spells: the server must not walk it.
func TestLookupNameIsOneComponent(t *testing.T) {
	e := newEnv(t)
	addr, _ := e.serve(rootConfig(), testKey)
	c := dialRaw(t, addr)
	root := c.rootHandle("/")
	acme := c.lookupPath(root, "/acme")
	const (
		ok     = 0
		noent  = 2
		access = 13
	)
	for name, tc := range map[string]struct {
		dir  []byte
		name string
		want uint32
	}{
		"one component":          {root, "acme", ok},
		"missing":                {root, "nosuch", noent},
		"two components":         {root, "acme/clicks", access},
		"slash alone":            {root, "/", access},
		"leading slash":          {acme, "/clicks", access},
		"trailing slash":         {acme, "clicks/", access},
		"dot-dot walk":           {acme, "clicks/../clicks", access},
		"nul byte":               {acme, "clicks\x00x", access},
		"empty name":             {acme, "", noent},
		"to a missing path":      {root, "nosuch/x", access},
		"deep path to a chunk":   {root, chunk[1:], access},
		"dot still is the dir":   {acme, ".", ok},
		"dotdot still is parent": {acme, "..", ok},
	} {
		t.Run(name, func(t *testing.T) {
			rep := c.call(2, progNFS, 3, 3, append(xdrString(string(tc.dir)), xdrString(tc.name)...))
			if got := nfsStat(t, rep); got != tc.want {
				t.Fatalf("LOOKUP %q = status %d, want %d", tc.name, got, tc.want)
			}
		})
	}
}

// readReply decodes a READ3resok: count, eof and data after the
// status and post_op_attr.
func readReply(t *testing.T, rep rawReply) (count uint32, eof bool, data []byte) {
	t.Helper()
	if st := nfsStat(t, rep); st != 0 {
		t.Fatalf("READ status %d", st)
	}
	b := rep.body[4:]
	if binary.BigEndian.Uint32(b) == 1 {
		b = b[4+84:]
	} else {
		b = b[4:]
	}
	count, eofw, n := binary.BigEndian.Uint32(b), binary.BigEndian.Uint32(b[4:]), binary.BigEndian.Uint32(b[8:])
	if n != count {
		t.Fatalf("READ count %d but %d bytes of data", count, n)
	}
	return count, eofw == 1, b[12 : 12+n]
}

// A READ at or past the end of a file, at any offset up to 2^64-1, is 0
// bytes and EOF, as Linux's knfsd answers (it clamps the offset); the
// offset must not reach the view as a negative int64.
func TestReadAtHugeOffsets(t *testing.T) {
	e := newEnv(t)
	addr, _ := e.serve(rootConfig(), testKey)
	c := dialRaw(t, addr)
	root := c.rootHandle("/")
	small := e.files[chunk]
	for name, tc := range map[string]struct {
		path  string
		off   uint64
		count uint32
		want  []byte
	}{
		"2^64-1":                {chunk, math.MaxUint64, 10, nil},
		"2^64-1, count 0":       {chunk, math.MaxUint64, 0, nil},
		"2^63":                  {chunk, 1 << 63, 10, nil},
		"2^63-1":                {chunk, math.MaxInt64, 10, nil},
		"2^64-1, big file":      {bigChunk, math.MaxUint64, 1 << 20, nil},
		"end of file":           {chunk, uint64(len(small)), 10, nil},
		"just before the end":   {chunk, uint64(len(small) - 1), 10, small[len(small)-1:]},
		"whole file":            {chunk, 0, 100, small},
		"count 0 inside a file": {chunk, 1, 0, nil},
	} {
		t.Run(name, func(t *testing.T) {
			fh := c.lookupPath(root, tc.path)
			args := append(xdrString(string(fh)), binary.BigEndian.AppendUint64(nil, tc.off)...)
			rep := c.call(2, progNFS, 3, 6, append(args, be(tc.count)...))
			n, eof, data := readReply(t, rep)
			if int(n) != len(tc.want) || !bytes.Equal(data, tc.want) {
				t.Fatalf("READ at %d: %d bytes %q, want %q", tc.off, n, data, tc.want)
			}
			wantEOF := tc.off+uint64(tc.count) >= uint64(len(e.files[tc.path])) || tc.off >= math.MaxInt64
			if eof != wantEOF {
				t.Fatalf("READ at %d count %d: eof %v, want %v", tc.off, tc.count, eof, wantEOF)
			}
		})
	}
}
