package wal

import (
	"bytes"
	"testing"
)

// FuzzFrame feeds arbitrary bytes to the frame and segment-body decoders:
// they must reject or accept without panicking, and an accepted frame
// must re-encode to the same bytes.
func FuzzFrame(f *testing.F) {
	body := AppendSegmentHeader(nil, "t/s@1/0", 42)
	body = append(body, "records"...)
	hdr := make([]byte, FrameHeaderSize)
	frameHeader(hdr, 7, [][]byte{body})
	f.Add(append(hdr, body...), uint64(7))
	f.Add([]byte{}, uint64(0))
	f.Fuzz(func(t *testing.T, b []byte, pos uint64) {
		body, err := checkFrame(b, pos, 1<<20)
		if err != nil {
			return
		}
		again := make([]byte, FrameHeaderSize)
		frameHeader(again, pos, [][]byte{body})
		if !bytes.Equal(again, b[:FrameHeaderSize]) {
			t.Fatalf("accepted frame does not re-encode: %x vs %x", again, b[:FrameHeaderSize])
		}
		if sf, err := DecodeSegment(body); err == nil {
			re := append(AppendSegmentHeader(nil, sf.Name, sf.First), sf.Records...)
			if len(re) > len(body) {
				t.Fatalf("decoded segment frame re-encodes longer than its body")
			}
		}
	})
}
