// Package xdr is the XDR reading and writing the NFS head uses: the
// functions of github.com/willscott/go-nfs-client/nfs/xdr, with every
// variable-length element a request claims bounded before it is allocated.
// The client package (and go-xdr underneath it) allocates whatever length
// a peer writes in front of an opaque or a string, up to 4 GiB from a
// request of a few bytes; a server must not.
package xdr

import (
	"bytes"
	"fmt"
	"io"

	xdr2 "github.com/rasky/go-xdr/xdr2"
	clientxdr "github.com/willscott/go-nfs-client/nfs/xdr"
)

// MaxElement bounds one opaque, string or array read from a stream whose
// length is not known (requests that are not buffered whole). NFSv3's
// largest variable-length request element a read-only server decodes is a
// path name (1024 bytes) or a file handle (64 bytes).
const MaxElement = 64 << 10

// limit is the most bytes one element read from r may hold: what is left
// of a buffered request, or MaxElement.
func limit(r io.Reader) uint {
	switch b := r.(type) {
	case *bytes.Reader:
		return uint(b.Len())
	case *io.LimitedReader:
		return uint(min(b.N, MaxElement))
	}
	return MaxElement
}

// Read decodes val from r, refusing any element longer than what r can
// still hold.
func Read(r io.Reader, val interface{}) error {
	_, err := xdr2.UnmarshalLimited(r, val, max(limit(r), 1))
	return err
}

// ReadUint32 decodes one unsigned integer.
func ReadUint32(r io.Reader) (uint32, error) { return clientxdr.ReadUint32(r) }

// ReadOpaque decodes a variable-length opaque, refusing a claimed length
// longer than what r can still hold.
func ReadOpaque(r io.Reader) ([]byte, error) {
	n, err := ReadUint32(r)
	if err != nil {
		return nil, err
	}
	if uint(n) > limit(r) {
		return nil, fmt.Errorf("xdr: opaque of %d bytes claimed, more than the request holds", n)
	}
	// Like the client package, the padding after the opaque is left to
	// the caller (the handlers read opaques last or of aligned sizes).
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// Write encodes val to w.
func Write(w io.Writer, val interface{}) error { return clientxdr.Write(w, val) }
