package wal

import (
	"bytes"
	"errors"
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

// FuzzReadFrames feeds arbitrary bytes to ReadFrames, which reads whole
// objects of the object backend: it must not panic, must stop at the
// first bad frame, and the frames it passes must cover exactly the bytes
// up to the position it returns.
func FuzzReadFrames(f *testing.F) {
	var good []byte
	pos := uint64(100)
	for _, s := range []string{"one", "two frames", "three"} {
		hdr := make([]byte, FrameHeaderSize)
		frameHeader(hdr, pos, [][]byte{[]byte(s)})
		good = append(append(good, hdr...), s...)
		pos += uint64(FrameHeaderSize + len(s))
	}
	f.Add(good, uint64(100))
	f.Add(good[:len(good)-2], uint64(100))
	f.Add([]byte{}, uint64(0))
	f.Fuzz(func(t *testing.T, b []byte, start uint64) {
		covered := uint64(0)
		end, n, err := ReadFrames(b, start, 1<<20, func(p uint64, body []byte) error {
			if p != start+covered {
				t.Fatalf("frame at %d, expected at %d", p, start+covered)
			}
			covered += uint64(FrameHeaderSize + len(body))
			return nil
		})
		if end != start+covered {
			t.Fatalf("returned end %d, frames cover up to %d", end, start+covered)
		}
		if err == nil && covered != uint64(len(b)) {
			t.Fatalf("no error, but frames cover %d of %d bytes", covered, len(b))
		}
		if err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("error %v is not ErrCorrupt", err)
		}
		if n < 0 || (n == 0 && covered != 0) {
			t.Fatalf("%d frames for %d bytes", n, covered)
		}
	})
}
