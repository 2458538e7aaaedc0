package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// FrameHeaderSize is the fixed part before each frame body: length, CRC32C
// and the frame's own position in the log.
const FrameHeaderSize = 16

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt marks a frame that fails its checks.
var ErrCorrupt = errors.New("wal: corrupt frame")

// KindSegment is the body kind of a frame holding one segment's records.
const KindSegment = 1

// frameHeader fills hdr (FrameHeaderSize bytes) for a body made of parts,
// stored at pos. The position is covered by the checksum, so a frame read
// back at any other position (an older frame left in a reused file or
// behind a torn write) fails its check instead of being replayed.
func frameHeader(hdr []byte, pos uint64, parts [][]byte) {
	n := 0
	binary.LittleEndian.PutUint64(hdr[8:], pos)
	crc := crc32.Update(0, castagnoli, hdr[8:16])
	for _, p := range parts {
		crc = crc32.Update(crc, castagnoli, p)
		n += len(p)
	}
	binary.LittleEndian.PutUint32(hdr[0:], uint32(n))
	binary.LittleEndian.PutUint32(hdr[4:], crc)
}

// checkFrame validates the frame at the start of b, expected at pos, and
// returns its body. It returns ErrCorrupt for a damaged, torn or misplaced
// frame and errShort when b holds less than the header says.
func checkFrame(b []byte, pos uint64, maxBody int) (body []byte, err error) {
	if len(b) < FrameHeaderSize {
		return nil, errShort
	}
	n := binary.LittleEndian.Uint32(b)
	if n == 0 || int64(n) > int64(maxBody) {
		return nil, fmt.Errorf("%w: bad length %d at %d", ErrCorrupt, n, pos)
	}
	if got := binary.LittleEndian.Uint64(b[8:]); got != pos {
		return nil, fmt.Errorf("%w: frame of position %d found at %d", ErrCorrupt, got, pos)
	}
	if len(b) < FrameHeaderSize+int(n) {
		return nil, errShort
	}
	body = b[FrameHeaderSize : FrameHeaderSize+int(n)]
	crc := crc32.Update(0, castagnoli, b[8:16])
	if crc32.Update(crc, castagnoli, body) != binary.LittleEndian.Uint32(b[4:]) {
		return nil, fmt.Errorf("%w: checksum mismatch at %d", ErrCorrupt, pos)
	}
	return body, nil
}

var errShort = errors.New("wal: short frame")

// AppendSegmentHeader appends the head of a KindSegment body: the segment's
// name and the offset of the first event of the records that follow it.
// The records themselves (core/record encoding, each with its own length
// and CRC) complete the body.
func AppendSegmentHeader(dst []byte, name string, first uint64) []byte {
	dst = append(dst, KindSegment)
	dst = binary.AppendUvarint(dst, uint64(len(name)))
	dst = append(dst, name...)
	return binary.AppendUvarint(dst, first)
}

// SegmentFrame is a decoded KindSegment body.
type SegmentFrame struct {
	Name  string
	First uint64
	// Records are the segment's records, as written to its files.
	Records []byte
}

// DecodeSegment decodes a frame body of kind KindSegment. Records alias
// body.
func DecodeSegment(body []byte) (SegmentFrame, error) {
	var f SegmentFrame
	if len(body) < 1 || body[0] != KindSegment {
		return f, fmt.Errorf("%w: unknown frame kind", ErrCorrupt)
	}
	p := body[1:]
	nl, k := binary.Uvarint(p)
	if k <= 0 || nl > uint64(len(p)-k) {
		return f, fmt.Errorf("%w: bad segment name", ErrCorrupt)
	}
	p = p[k:]
	f.Name = string(p[:nl])
	p = p[nl:]
	first, k := binary.Uvarint(p)
	if k <= 0 {
		return f, fmt.Errorf("%w: bad first offset", ErrCorrupt)
	}
	f.First = first
	f.Records = p[k:]
	return f, nil
}

// ReadFrames checks the frames in data, the first of them at position pos,
// and calls fn with each one's position and body, in order. It returns
// the position after the last frame. Data that does not end exactly after
// a frame, or a frame that fails its checks, is an ErrCorrupt: it is for
// backends whose units are written whole (an object is put or not), where
// anything but whole valid frames is damage, not a torn tail.
func ReadFrames(data []byte, pos uint64, maxBody int, fn func(pos uint64, body []byte) error) (end uint64, frames int, err error) {
	for p := 0; p < len(data); {
		body, cerr := checkFrame(data[p:], pos, maxBody)
		if errors.Is(cerr, errShort) {
			cerr = fmt.Errorf("%w: %d bytes at %d end inside a frame", ErrCorrupt, len(data)-p, pos)
		}
		if cerr != nil {
			return pos, frames, cerr
		}
		if err := fn(pos, body); err != nil {
			return pos, frames, err
		}
		n := FrameHeaderSize + len(body)
		p += n
		pos += uint64(n)
		frames++
	}
	return pos, frames, nil
}
