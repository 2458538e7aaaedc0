package tiering

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"time"

	"github.com/silt-io/silt/core"
	"github.com/silt-io/silt/core/catalog"
)

// Defaults of ReadTiered's bounds, as core.Store.Read's.
const (
	defaultTieredEvents = 1000
	defaultTieredBytes  = 8 << 20
)

// CorruptChunkError reports a tier-2 object that does not hold what its
// chunk record says: wrong size or checksum, or bytes that do not decode
// into the recorded number of events.
type CorruptChunkError struct {
	Key     string
	Segment string
	Offset  uint64 // the chunk's first offset
	Reason  string
}

func (e *CorruptChunkError) Error() string {
	return fmt.Sprintf("tier-2 chunk %s (segment %s, offset %d) is corrupt: %s", e.Key, e.Segment, e.Offset, e.Reason)
}

// ReadTiered reads a segment's events from tier 2, starting at from, for
// readers whose offset tier 1 no longer holds. It returns up to maxEvents
// events (0: 1000) and, beyond the first event, up to maxBytes of event
// data (0: 8 MiB), continuing into following chunks as needed; next is the
// offset to read from afterwards.
//
// Offsets at or above the segment's tiered offset are not in tier 2: the
// result is no events and next == from, and the caller reads tier 1. An
// offset below the first tiered chunk (dropped by retention) is an error
// wrapping core.ErrOutOfRange; a failing backend, core.ErrUnavailable.
//
// Tier 2 keeps only the append times of a chunk's first and last events,
// so an event read here carries a time interpolated by offset between the
// two: exact for those two events, never outside them, and non-decreasing
// in offset order.
func (t *Tierer) ReadTiered(ctx context.Context, tenant, stream, segment string, from uint64, maxEvents, maxBytes int) ([]core.Event, uint64, error) {
	if maxEvents <= 0 {
		maxEvents = defaultTieredEvents
	}
	if maxBytes <= 0 {
		maxBytes = defaultTieredBytes
	}
	srec, ok, err := GetStream(t.cat, tenant, stream)
	if err != nil {
		return nil, from, err
	}
	if !ok {
		return nil, from, nil
	}
	// The stream's record, not a description: comparing incarnations
	// must not open the segments' logs.
	if st, err := t.store.StreamInfo(ctx, tenant, stream); err != nil {
		return nil, from, err
	} else if st.Incarnation() != srec.Incarnation {
		// Chunks of a deleted predecessor, not yet removed: not this
		// stream's history.
		return nil, from, nil
	}
	seg, err := GetSegment(t.cat, tenant, stream, segment)
	if err != nil {
		return nil, from, err
	}
	if from >= seg.Tiered {
		return nil, from, nil
	}
	c, ok, err := chunkHolding(t.cat, tenant, stream, segment, from)
	if err != nil {
		return nil, from, err
	}
	if !ok {
		return nil, from, fmt.Errorf("%w: offset %d of segment %s of %s/%s is no longer in tier 2", core.ErrOutOfRange, from, segment, tenant, stream)
	}

	var out []core.Event
	size := 0
	next := from
	for {
		evs, err := t.readChunk(ctx, srec.Encoding, c)
		if err != nil {
			if ok, gerr := getJSON(t.cat, chunkKey(tenant, stream, segment, c.FirstOffset), &ChunkRecord{}); gerr == nil && !ok {
				// Retention deleted the chunk while it was being read.
				if len(out) > 0 {
					return out, next, nil
				}
				return nil, from, fmt.Errorf("%w: offset %d of segment %s of %s/%s is no longer in tier 2", core.ErrOutOfRange, from, segment, tenant, stream)
			}
			return nil, from, err
		}
		for _, e := range evs[next-c.FirstOffset:] {
			if len(out) >= maxEvents || (len(out) > 0 && size >= maxBytes) {
				return out, next, nil
			}
			out = append(out, e)
			size += len(e.Data)
			next = e.Offset + 1
		}
		if next >= seg.Tiered || len(out) >= maxEvents || size >= maxBytes || ctx.Err() != nil {
			return out, next, nil
		}
		// Chunks are contiguous: the next one starts where this one ended.
		ok, err := getJSON(t.cat, chunkKey(tenant, stream, segment, next), &c)
		if err != nil {
			return nil, from, err
		}
		if !ok || c.FirstOffset != next {
			return out, next, nil
		}
	}
}

// chunkHolding finds the chunk whose range holds off: the one with the
// greatest first offset at or below off. The catalog scans only forward,
// so it seeks at off, then at off-1, off-3, off-7… until a seek lands on
// a chunk starting at or below off, and bisects the last step; every probe
// is one seek reading one key, so the cost is logarithmic in the chunk's
// length, not linear in the segment's chunk count.
func chunkHolding(cat *catalog.Catalog, tenant, stream, seg string, off uint64) (ChunkRecord, bool, error) {
	// probe returns the first chunk starting at or after x.
	probe := func(x uint64) (ChunkRecord, bool, error) {
		var r ChunkRecord
		found := false
		prefix := chunkPrefix(tenant, stream, seg)
		err := cat.Scan([]byte(prefix), []byte(chunkKey(tenant, stream, seg, x)), func(k, v []byte) error {
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("decode %s: %w", k, err)
			}
			found = true
			return catalog.ErrStop
		})
		return r, found, err
	}
	below := func(x uint64) (ChunkRecord, bool, error) {
		r, ok, err := probe(x)
		return r, ok && r.FirstOffset <= off, err
	}

	// Invariant once found: a seek at lo lands at or below off, one at hi
	// (if hi > lo) lands above it.
	hi := off + 1
	var (
		lo   uint64
		best ChunkRecord
	)
	for step := uint64(1); ; step *= 2 {
		x := uint64(0)
		if off+1 > step {
			x = off + 1 - step
		}
		r, ok, err := below(x)
		if err != nil {
			return ChunkRecord{}, false, err
		}
		if ok {
			lo, best = x, r
			break
		}
		if x == 0 {
			return ChunkRecord{}, false, nil // nothing starts at or below off
		}
		hi = x
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		r, ok, err := below(mid)
		if err != nil {
			return ChunkRecord{}, false, err
		}
		if ok {
			lo, best = mid, r
		} else {
			hi = mid
		}
	}
	if best.LastOffset < off {
		return ChunkRecord{}, false, nil
	}
	return best, true, nil
}

// readChunk reads and decodes a whole chunk (chunks are bounded by
// max_chunk_bytes), checking it against its record.
func (t *Tierer) readChunk(ctx context.Context, enc core.Encoding, c ChunkRecord) ([]core.Event, error) {
	o, err := t.be.Open(ctx, c.Key)
	if err != nil {
		return nil, fmt.Errorf("%w: read tier 2: %w", core.ErrUnavailable, err)
	}
	defer o.Close()
	corrupt := func(format string, args ...any) error {
		return &CorruptChunkError{Key: c.Key, Segment: c.Segment, Offset: c.FirstOffset, Reason: fmt.Sprintf(format, args...)}
	}
	if o.Size() != c.Size {
		return nil, corrupt("%d bytes, record says %d", o.Size(), c.Size)
	}
	buf := make([]byte, c.Size)
	if n, err := o.ReadAt(buf, 0); n < len(buf) {
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("%w: read tier 2 %s: %w", core.ErrUnavailable, c.Key, err)
	}
	if sum := crc32.Checksum(buf, castagnoli); sum != c.CRC32C {
		return nil, corrupt("crc32c %08x, record says %08x", sum, c.CRC32C)
	}
	datas, err := decodeChunk(enc, buf)
	if err != nil {
		return nil, corrupt("%v", err)
	}
	if len(datas) != c.Events || uint64(c.Events) != c.LastOffset-c.FirstOffset+1 {
		return nil, corrupt("%d events, record says %d in [%d, %d]", len(datas), c.Events, c.FirstOffset, c.LastOffset)
	}
	evs := make([]core.Event, len(datas))
	span := c.LastTime.Sub(c.FirstTime)
	for i, d := range datas {
		at := c.FirstTime
		if n := len(datas) - 1; n > 0 && span > 0 {
			at = c.FirstTime.Add(time.Duration(float64(span) * float64(i) / float64(n)))
		}
		evs[i] = core.Event{Offset: c.FirstOffset + uint64(i), Time: at.UTC(), Data: d}
	}
	return evs, nil
}

// decodeChunk splits chunk bytes into events (see docs/format/tier2.md).
// The events alias buf.
func decodeChunk(enc core.Encoding, buf []byte) ([][]byte, error) {
	var out [][]byte
	for len(buf) > 0 {
		if enc == core.EncodingFramed {
			if len(buf) < 4 {
				return nil, fmt.Errorf("truncated frame header")
			}
			n := binary.BigEndian.Uint32(buf)
			if uint64(n) > uint64(len(buf)-4) {
				return nil, fmt.Errorf("frame of %d bytes past the end", n)
			}
			out = append(out, buf[4:4+n:4+n])
			buf = buf[4+n:]
			continue
		}
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			return nil, fmt.Errorf("last line has no newline")
		}
		out = append(out, buf[:i:i])
		buf = buf[i+1:]
	}
	return out, nil
}

// FirstTiered returns the first offset of a segment that tier 2 still
// holds, and false when tier 2 holds nothing of it (nothing tiered yet,
// all of it expired, or only chunks of a deleted predecessor stream). A
// reader that starts "from the beginning" starts here.
func (t *Tierer) FirstTiered(ctx context.Context, tenant, stream, segment string) (uint64, bool, error) {
	srec, ok, err := GetStream(t.cat, tenant, stream)
	if err != nil || !ok {
		return 0, false, err
	}
	st, err := t.store.StreamInfo(ctx, tenant, stream)
	if err != nil {
		return 0, false, err
	}
	if st.Incarnation() != srec.Incarnation {
		return 0, false, nil
	}
	seg, err := GetSegment(t.cat, tenant, stream, segment)
	if err != nil {
		return 0, false, err
	}
	if seg.Tiered <= seg.First {
		return 0, false, nil
	}
	return seg.First, true, nil
}
