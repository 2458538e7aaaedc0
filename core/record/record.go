// Package record encodes and decodes the records of a tier-1 segment log
// (docs/format/log.md). A record holds one appended batch: its events, the
// append time and the producer's writer id and sequence number, protected
// by a CRC32C. Offsets are not stored: a record's first offset is the log
// file's first offset plus the events of the records before it, which lets
// a record be encoded before the segment lock is taken.
package record

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// HeaderSize is the fixed part before each record body: length, CRC32C.
const HeaderSize = 8

// Versions of the record body. Version 2 adds the writer's owner after
// the writer id; a record without an owner is still written as version 1,
// so that logs without owned writers stay readable by older releases.
const (
	version1 = 1
	version2 = 2
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt marks a record that fails its checks: a torn or damaged tail.
var ErrCorrupt = errors.New("record: corrupt")

// Record is one decoded batch.
type Record struct {
	TimeUnixNano int64
	WriterID     string
	// Owner is who the writer id is bound to (a principal's name), so that
	// the binding survives a restart with the rest of the writer's state.
	Owner  string
	Seq    uint64
	Events [][]byte
}

// Size returns the encoded size of a record with these fields.
func Size(writer, owner string, events [][]byte) int {
	n := HeaderSize + 1 + binary.MaxVarintLen64*5 + len(writer) + len(owner)
	for _, e := range events {
		n += binary.MaxVarintLen64 + len(e)
	}
	return n
}

// Append encodes r at the end of dst and returns the extended slice.
func Append(dst []byte, r Record) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, HeaderSize)...)
	body := len(dst)
	v := byte(version1)
	if r.Owner != "" {
		v = version2
	}
	dst = append(dst, v)
	dst = binary.AppendUvarint(dst, uint64(len(r.Events)))
	dst = binary.AppendVarint(dst, r.TimeUnixNano)
	dst = binary.AppendUvarint(dst, uint64(len(r.WriterID)))
	dst = append(dst, r.WriterID...)
	if v == version2 {
		dst = binary.AppendUvarint(dst, uint64(len(r.Owner)))
		dst = append(dst, r.Owner...)
	}
	dst = binary.AppendUvarint(dst, r.Seq)
	for _, e := range r.Events {
		dst = binary.AppendUvarint(dst, uint64(len(e)))
		dst = append(dst, e...)
	}
	binary.LittleEndian.PutUint32(dst[start:], uint32(len(dst)-body))
	binary.LittleEndian.PutUint32(dst[start+4:], crc32.Checksum(dst[body:], castagnoli))
	return dst
}

// Decode parses one record body (without the header) whose CRC has been
// checked. The events alias body.
func Decode(body []byte) (Record, error) { return decode(body, nil) }

// decode is Decode appending the event slices to events.
func decode(body []byte, events [][]byte) (Record, error) {
	var r Record
	if len(body) < 1 || body[0] != version1 && body[0] != version2 {
		return r, fmt.Errorf("%w: unknown record version", ErrCorrupt)
	}
	p := body[1:]
	next := func() (uint64, bool) {
		v, n := binary.Uvarint(p)
		if n <= 0 {
			return 0, false
		}
		p = p[n:]
		return v, true
	}
	count, ok := next()
	if !ok || count > uint64(len(body)) {
		return r, fmt.Errorf("%w: bad event count", ErrCorrupt)
	}
	t, n := binary.Varint(p)
	if n <= 0 {
		return r, fmt.Errorf("%w: bad time", ErrCorrupt)
	}
	p = p[n:]
	r.TimeUnixNano = t
	wl, ok := next()
	if !ok || wl > uint64(len(p)) {
		return r, fmt.Errorf("%w: bad writer id", ErrCorrupt)
	}
	r.WriterID = string(p[:wl])
	p = p[wl:]
	if body[0] == version2 {
		ol, ok := next()
		if !ok || ol > uint64(len(p)) {
			return r, fmt.Errorf("%w: bad writer owner", ErrCorrupt)
		}
		r.Owner = string(p[:ol])
		p = p[ol:]
	}
	if r.Seq, ok = next(); !ok {
		return r, fmt.Errorf("%w: bad sequence", ErrCorrupt)
	}
	r.Events = events
	if events == nil {
		r.Events = make([][]byte, 0, count)
	}
	for i := uint64(0); i < count; i++ {
		l, ok := next()
		if !ok || l > uint64(len(p)) {
			return r, fmt.Errorf("%w: bad event %d", ErrCorrupt, i)
		}
		r.Events = append(r.Events, p[:l:l])
		p = p[l:]
	}
	if len(p) != 0 {
		return r, fmt.Errorf("%w: %d trailing bytes", ErrCorrupt, len(p))
	}
	return r, nil
}

// Reader reads records sequentially from an io.ReaderAt.
type Reader struct {
	r       io.ReaderAt
	pos     int64
	end     int64
	maxBody int
	buf     []byte
	// With read-ahead, buf holds the file's bytes from bufPos on, and
	// records that lie wholly inside it are decoded without a read each.
	ahead  int
	bufPos int64
	mapped bool     // buf is the whole range, mapped: nothing to read
	events [][]byte // reused by Next for each record's event slices
}

// NewReader reads records in [pos, end). Bodies larger than maxBody are
// treated as corruption, so a damaged length cannot make us allocate
// gigabytes.
func NewReader(r io.ReaderAt, pos, end int64, maxBody int) *Reader {
	return &Reader{r: r, pos: pos, end: end, maxBody: maxBody}
}

// NewMappedReader reads records in [pos, end) from mem, which holds the
// file's bytes from base to at least end (a memory mapping of it):
// records are decoded where they lie, with no read and no copy.
func NewMappedReader(mem []byte, base, pos, end int64, maxBody int) *Reader {
	return &Reader{pos: pos, end: end, maxBody: maxBody, buf: mem, bufPos: base, mapped: true}
}

// ReadAhead makes the reader fetch at least n bytes per read (never past
// the end it was given), so that a scan over many small records costs one
// read per n bytes rather than two per record. Sequential whole-range
// readers (tiering, recovery) want it; a reader of a few tail records
// does not.
func (rd *Reader) ReadAhead(n int) { rd.ahead = n }

// fill makes buf hold [pos, pos+n) and returns that slice.
func (rd *Reader) fill(pos int64, n int) ([]byte, error) {
	if pos >= rd.bufPos && pos+int64(n) <= rd.bufPos+int64(len(rd.buf)) {
		i := pos - rd.bufPos
		return rd.buf[i : i+int64(n)], nil
	}
	if rd.mapped {
		return nil, io.ErrUnexpectedEOF
	}
	want := int64(n)
	if int64(rd.ahead) > want {
		want = min(int64(rd.ahead), rd.end-pos)
	}
	if int64(cap(rd.buf)) < want {
		rd.buf = make([]byte, want)
	}
	rd.buf = rd.buf[:want]
	rd.bufPos = pos
	k, err := rd.r.ReadAt(rd.buf, pos)
	if k < n {
		rd.buf = rd.buf[:0]
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	rd.buf = rd.buf[:k]
	return rd.buf[:n], nil
}

// Pos is the position of the next record.
func (rd *Reader) Pos() int64 { return rd.pos }

// Next returns the next record. It returns io.EOF at a clean end and an
// error wrapping ErrCorrupt for a torn or damaged record (Pos then stays at
// the start of that record, which is where the valid log ends). The
// returned events alias an internal buffer that the next call reuses.
func (rd *Reader) Next() (Record, error) {
	if rd.pos == rd.end {
		return Record{}, io.EOF
	}
	if rd.end-rd.pos < HeaderSize {
		return Record{}, fmt.Errorf("%w: short header at %d", ErrCorrupt, rd.pos)
	}
	hdr, err := rd.fill(rd.pos, HeaderSize)
	if err != nil {
		return Record{}, fmt.Errorf("read header at %d: %w", rd.pos, err)
	}
	n := binary.LittleEndian.Uint32(hdr)
	sum := binary.LittleEndian.Uint32(hdr[4:])
	if n == 0 || int64(n) > int64(rd.maxBody) || rd.pos+HeaderSize+int64(n) > rd.end {
		return Record{}, fmt.Errorf("%w: bad length %d at %d", ErrCorrupt, n, rd.pos)
	}
	body, err := rd.fill(rd.pos+HeaderSize, int(n))
	if err != nil {
		return Record{}, fmt.Errorf("read record at %d: %w", rd.pos, err)
	}
	if crc32.Checksum(body, castagnoli) != sum {
		return Record{}, fmt.Errorf("%w: checksum mismatch at %d", ErrCorrupt, rd.pos)
	}
	rec, err := decode(body, rd.events[:0])
	if err != nil {
		return Record{}, fmt.Errorf("at %d: %w", rd.pos, err)
	}
	rd.events = rec.Events
	rd.pos += HeaderSize + int64(n)
	return rec, nil
}
