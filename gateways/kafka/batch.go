package kafka

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/silt-io/silt/core"
)

// Record batches (magic v2): kmsg decodes and encodes the batch and its
// records; this file checks what a broker must check (CRC-32C, counts,
// bounds) and undoes the compression.

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Batch attribute bits.
const (
	attrCompression   = 0x07
	attrLogAppendTime = 0x08
	attrTransactional = 0x10
	attrControl       = 0x20
)

// crcStart is where the CRC-32C of a batch begins: after base offset (8),
// length (4), partition leader epoch (4), magic (1) and the CRC itself (4).
const crcStart = 21

// batchHeaderLen is everything of a batch before its records; Length
// counts from the partition leader epoch, 12 bytes in.
const batchHeaderLen = 61

// decodedBatch is a produced batch as silt stores it.
type decodedBatch struct {
	kmsg.RecordBatch
	values [][]byte
}

// decodeBatch checks and decodes one produced record batch. maxBytes
// bounds the decompressed records and maxEvents their count, so that a
// small compressed batch cannot make the server allocate without bound.
func decodeBatch(raw []byte, maxEvents, maxBytes int) (decodedBatch, error) {
	var d decodedBatch
	if len(raw) < batchHeaderLen {
		return d, fmt.Errorf("%w: %d bytes is shorter than a batch header", errCorrupt, len(raw))
	}
	// A v3+ Produce carries exactly one batch per partition: ReadFrom
	// refuses trailing bytes.
	if err := d.ReadFrom(raw); err != nil {
		return d, fmt.Errorf("%w: %v (a partition must hold exactly one whole batch)", errCorrupt, err)
	}
	if d.Magic != 2 {
		return d, fmt.Errorf("%w: record batch magic %d; silt takes magic 2 (Kafka 0.11+ clients)", errCorrupt, d.Magic)
	}
	if got := crc32.Checksum(raw[crcStart:], castagnoli); got != uint32(d.CRC) {
		return d, fmt.Errorf("%w: CRC-32C %08x, batch says %08x", errCorrupt, got, uint32(d.CRC))
	}
	if d.Attributes&(attrTransactional|attrControl) != 0 {
		return d, fmt.Errorf("%w: transactional and control batches are not supported", errInvalidRecord)
	}
	if d.NumRecords <= 0 {
		return d, fmt.Errorf("%w: a batch needs at least one record", errCorrupt)
	}
	if int(d.NumRecords) > maxEvents {
		return d, fmt.Errorf("%w: %d records; the limit is %d (core.limits.max_batch_events)", errTooLarge, d.NumRecords, maxEvents)
	}
	records, err := decompress(d.Attributes&attrCompression, d.Records, maxBytes)
	if err != nil {
		return d, err
	}
	r := kbin.Reader{Src: records}
	d.values = make([][]byte, 0, d.NumRecords)
	for range d.NumRecords {
		start := r.Src
		n := r.Varint()
		r.Span(int(n))
		if !r.Ok() {
			return d, fmt.Errorf("%w: record %d is cut short", errCorrupt, len(d.values))
		}
		var rec kmsg.Record
		if err := rec.ReadFrom(start[:len(start)-len(r.Src)]); err != nil {
			return d, fmt.Errorf("%w: record %d: %v", errCorrupt, len(d.values), err)
		}
		d.values = append(d.values, rec.Value)
	}
	if len(r.Src) != 0 {
		return d, fmt.Errorf("%w: %d bytes after the batch's %d records", errCorrupt, len(r.Src), d.NumRecords)
	}
	return d, nil
}

// xerialHeader starts snappy data framed as the Java client writes it
// (snappy-java's SnappyOutputStream): the magic, a version and a
// compatible version, then chunks of a 4-byte length and a raw block.
var xerialHeader = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

// decompress undoes a batch's compression (attributes bits 0–2), refusing
// output beyond limit bytes.
func decompress(codec int16, in []byte, limit int) ([]byte, error) {
	tooLarge := func() error {
		return fmt.Errorf("%w: records decompress to more than %d bytes (core.limits.max_batch_bytes)", errTooLarge, limit)
	}
	readAll := func(r io.Reader) ([]byte, error) {
		out, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
		if errors.Is(err, zstd.ErrWindowSizeExceeded) || errors.Is(err, zstd.ErrDecoderSizeExceeded) {
			return nil, tooLarge()
		}
		if err != nil {
			return nil, fmt.Errorf("%w: decompress: %v", errCorrupt, err)
		}
		if len(out) > limit {
			return nil, tooLarge()
		}
		return out, nil
	}
	switch codec {
	case 0:
		return in, nil
	case 1:
		zr, err := gzip.NewReader(bytes.NewReader(in))
		if err != nil {
			return nil, fmt.Errorf("%w: gzip: %v", errCorrupt, err)
		}
		defer zr.Close()
		return readAll(zr)
	case 2:
		if !bytes.HasPrefix(in, xerialHeader) {
			return snappyBlock(in, limit, tooLarge)
		}
		if len(in) < len(xerialHeader)+8 {
			return nil, fmt.Errorf("%w: xerial snappy header cut short", errCorrupt)
		}
		var out []byte
		rest := in[len(xerialHeader)+8:]
		for len(rest) > 0 {
			if len(rest) < 4 {
				return nil, fmt.Errorf("%w: xerial snappy chunk length cut short", errCorrupt)
			}
			n := binary.BigEndian.Uint32(rest)
			if uint64(n) > uint64(len(rest)-4) {
				return nil, fmt.Errorf("%w: xerial snappy chunk of %d bytes, %d left", errCorrupt, n, len(rest)-4)
			}
			chunk, err := snappyBlock(rest[4:4+n], limit-len(out), tooLarge)
			if err != nil {
				return nil, err
			}
			out = append(out, chunk...)
			rest = rest[4+n:]
		}
		return out, nil
	case 3:
		return readAll(lz4.NewReader(bytes.NewReader(in)))
	case 4:
		zr, err := zstd.NewReader(bytes.NewReader(in), zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(limit)+1))
		if err != nil {
			return nil, fmt.Errorf("%w: zstd: %v", errCorrupt, err)
		}
		defer zr.Close()
		return readAll(zr)
	}
	return nil, fmt.Errorf("%w: unknown compression codec %d", errCorrupt, codec)
}

func snappyBlock(in []byte, limit int, tooLarge func() error) ([]byte, error) {
	n, err := snappy.DecodedLen(in)
	if err != nil {
		return nil, fmt.Errorf("%w: snappy: %v", errCorrupt, err)
	}
	if n > limit {
		return nil, tooLarge()
	}
	out, err := snappy.Decode(make([]byte, n), in)
	if err != nil {
		return nil, fmt.Errorf("%w: snappy: %v", errCorrupt, err)
	}
	return out, nil
}

// appendBatches encodes events, read from one segment in offset order,
// as record batches: one per run of events appended together (the same
// append time), with that time as the batch's LogAppendTime, which
// consumers give every record of the batch. Records carry no key and no
// headers: silt keeps only the value (docs/kafka.md).
func appendBatches(dst []byte, evs []core.Event) []byte {
	size := 0
	for _, e := range evs {
		size += len(e.Data) + 16 // a capacity hint: a record adds about a dozen bytes
	}
	dst = slices.Grow(dst, size+batchHeaderLen)
	rec := make([]byte, 0, size)
	var scratch []byte
	for i := 0; i < len(evs); {
		j := i + 1
		for j < len(evs) && evs[j].Time.Equal(evs[i].Time) && evs[j].Offset == evs[j-1].Offset+1 {
			j++
		}
		ms := evs[i].Time.UnixMilli()
		rec = rec[:0]
		for k, e := range evs[i:j] {
			r := kmsg.Record{OffsetDelta: int32(k), Value: e.Data}
			// The record's length counts what follows it: encode with a
			// zero length (one byte) and put the real one in front.
			scratch = r.AppendTo(scratch[:0])
			body := scratch[1:]
			rec = kbin.AppendVarint(rec, int32(len(body)))
			rec = append(rec, body...)
		}
		b := kmsg.RecordBatch{
			FirstOffset:     int64(evs[i].Offset),
			Length:          int32(batchHeaderLen - 12 + len(rec)),
			Magic:           2,
			Attributes:      attrLogAppendTime,
			LastOffsetDelta: int32(j - i - 1),
			FirstTimestamp:  ms,
			MaxTimestamp:    ms,
			ProducerID:      -1,
			ProducerEpoch:   -1,
			FirstSequence:   -1,
			NumRecords:      int32(j - i),
			Records:         rec,
		}
		start := len(dst)
		dst = b.AppendTo(dst)
		binary.BigEndian.PutUint32(dst[start+17:], crc32.Checksum(dst[start+crcStart:], castagnoli))
		i = j
	}
	return dst
}
