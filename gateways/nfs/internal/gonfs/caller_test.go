package nfs

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/willscott/go-nfs-client/nfs/rpc"
)

// FuzzParseAuthSys: any body decodes or is refused, never panics, and a
// body that decodes holds at least the fixed fields it was read from.
func FuzzParseAuthSys(f *testing.F) {
	f.Add(rpc.NewAuthUnix("client", 1000, 1000).Auth().Body)
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{0xff}, 24))
	f.Fuzz(func(t *testing.T, b []byte) {
		uid, gid, ok := parseAuthSys(b)
		if !ok {
			return
		}
		if len(b) < 20 {
			t.Fatalf("a %d-byte body decoded", len(b))
		}
		n := binary.BigEndian.Uint32(b[4:])
		at := 8 + int(n+(4-n%4)%4)
		if binary.BigEndian.Uint32(b[at:]) != uid || binary.BigEndian.Uint32(b[at+4:]) != gid {
			t.Fatalf("uid %d gid %d not the body's", uid, gid)
		}
	})
}
