package xdr

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"runtime"
	"testing"
)

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// claim is a request of a few bytes whose first element claims n bytes.
func claim(n uint32) []byte {
	return binary.BigEndian.AppendUint32(nil, n)
}

func TestReadOpaqueRefusesClaimsBeyondTheRequest(t *testing.T) {
	var err error
	n := allocated(func() { _, err = ReadOpaque(bytes.NewReader(claim(1 << 31))) })
	if err == nil {
		t.Fatal("a 2 GiB opaque claimed by an 4-byte request was accepted")
	}
	if n > 1<<20 {
		t.Fatalf("refusing it allocated %d bytes", n)
	}
	// A stream of unknown length gets MaxElement at most.
	if _, err := ReadOpaque(bufio.NewReader(io.MultiReader(bytes.NewReader(claim(MaxElement+1)), bytes.NewReader(make([]byte, MaxElement+1))))); err == nil {
		t.Fatal("an opaque above MaxElement was accepted from a stream")
	}
	// A well-formed opaque reads.
	got, err := ReadOpaque(bytes.NewReader(append(claim(3), 'a', 'b', 'c', 0)))
	if err != nil || string(got) != "abc" {
		t.Fatalf("ReadOpaque = %q, %v", got, err)
	}
}

func TestReadRefusesClaimsBeyondTheRequest(t *testing.T) {
	var v struct {
		Handle []byte
		Name   string
	}
	var err error
	n := allocated(func() { err = Read(bytes.NewReader(claim(1<<31)), &v) })
	if err == nil || n > 1<<20 {
		t.Fatalf("a 2 GiB handle claimed by a 4-byte request: err %v, %d bytes allocated", err, n)
	}
	var buf bytes.Buffer
	if err := Write(&buf, struct {
		Handle []byte
		Name   string
	}{[]byte{1, 2, 3, 4}, "file"}); err != nil {
		t.Fatal(err)
	}
	if err := Read(bytes.NewReader(buf.Bytes()), &v); err != nil || !bytes.Equal(v.Handle, []byte{1, 2, 3, 4}) || v.Name != "file" {
		t.Fatalf("round trip: %+v, %v", v, err)
	}
}
