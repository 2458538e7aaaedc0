package api

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"mime"
	"sync"

	"github.com/silt-io/silt/core"
)

// An append body carries events in one of three forms, chosen by its
// Content-Type. The body form is transport only: what is stored is the
// events, encoded as the stream's encoding says.
type bodyFormat int

const (
	// bodyWhole: any other Content-Type; the whole body is one event, so
	// that `curl --data-binary @event.json` appends exactly that file (for
	// a lines stream, without the file's final '\n').
	bodyWhole bodyFormat = iota
	// bodyNDJSON: each '\n'-terminated line is one event, without its
	// '\n'; a last line without '\n' counts too. Empty lines are refused:
	// they are almost always a producer bug (a doubled newline), and
	// storing them silently would make a lines stream hold blank events.
	bodyNDJSON
	// bodyFramed: repeated 4-byte big-endian length + bytes. The only form
	// that can carry any bytes, including '\n' and empty events.
	bodyFramed
)

const (
	contentNDJSON = "application/x-ndjson"
	contentFramed = "application/vnd.silt.framed"
)

func bodyFormatOf(contentType string) (bodyFormat, error) {
	if contentType == "" {
		return bodyWhole, nil
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return 0, badRequest("malformed Content-Type %q: %v", contentType, err)
	}
	switch mt {
	case contentNDJSON:
		return bodyNDJSON, nil
	case contentFramed:
		return bodyFramed, nil
	}
	return bodyWhole, nil
}

// batchBodyLimit is the largest batch-form body accepted: twice
// max_batch_bytes. The events' own bytes are limited to max_batch_bytes;
// the slack is for framing (one '\n' per line, four bytes per frame), so
// that a batch within max_batch_bytes is sendable unless it is framed and
// its events average under four bytes.
func batchBodyLimit(l core.Limits) int { return 2 * l.MaxBatchBytes }

func bodyLimit(f bodyFormat, l core.Limits) int64 {
	if f == bodyWhole {
		return int64(l.MaxEventBytes)
	}
	return int64(batchBodyLimit(l))
}

// batchLimits bound one parse. Parsers enforce them as they go, so that an
// oversize event or batch is refused before the rest of it is read.
type batchLimits struct {
	maxEvent, maxBatch int
	// maxEvents bounds the events of a batch; 0 leaves them unbounded.
	maxEvents int
	// hold, if set, is told the memory the batch holds so far (event bytes
	// in their buffers plus per-event overhead) before more is allocated;
	// an error stops the parse.
	hold func(held int64) error
	// sizeHint is the expected body size (Content-Length), or 0.
	sizeHint int64
}

const (
	// eventOverhead is the memory an event costs beyond its bytes: its
	// slice header in the batch, twice over for the spare capacity of a
	// growing slice.
	eventOverhead = 48
	arenaChunk    = 64 << 10
	readBuffer    = 64 << 10
)

// batchBuilder collects events into large shared buffers, so that a batch
// of many small events costs a few allocations instead of one per event,
// and bytes are copied once, from the read buffer into the batch.
type batchBuilder struct {
	lim       batchLimits
	events    [][]byte
	payload   int
	arena     []byte
	allocated int64
}

// add copies ev into the batch after checking every limit.
func (b *batchBuilder) add(ev []byte) error {
	dst, err := b.alloc(len(ev))
	if err != nil {
		return err
	}
	copy(dst, ev)
	return nil
}

// alloc returns room for the next event of n bytes, appended to the batch.
func (b *batchBuilder) alloc(n int) ([]byte, error) {
	i := len(b.events) + 1
	if b.lim.maxEvents > 0 && i > b.lim.maxEvents {
		return nil, tooLarge("batch has more than %d events; core.limits.max_batch_events is %d", b.lim.maxEvents, b.lim.maxEvents)
	}
	if n > b.lim.maxEvent {
		return nil, tooLarge("event %d is %d bytes; max_event_bytes is %d", i, n, b.lim.maxEvent)
	}
	if b.payload+n > b.lim.maxBatch {
		return nil, tooLarge("events up to event %d total %d bytes; max_batch_bytes is %d", i, b.payload+n, b.lim.maxBatch)
	}
	chunk := 0
	if cap(b.arena)-len(b.arena) < n {
		// No chunk larger than what the batch may still hold (or, for
		// the first, than the announced body), so that a small batch
		// holds little memory.
		chunk = min(arenaChunk, b.lim.maxBatch-b.payload)
		if b.allocated == 0 && b.lim.sizeHint > 0 {
			chunk = min(chunk, int(min(b.lim.sizeHint, arenaChunk)))
		}
		chunk = max(chunk, n)
	}
	if b.lim.hold != nil {
		if err := b.lim.hold(b.allocated + int64(chunk) + eventOverhead*int64(i)); err != nil {
			return nil, err
		}
	}
	if chunk > 0 {
		b.arena = make([]byte, 0, chunk)
		b.allocated += int64(chunk)
	}
	start := len(b.arena)
	b.arena = b.arena[:start+n]
	ev := b.arena[start : start+n : start+n]
	b.events = append(b.events, ev)
	b.payload += n
	return ev, nil
}

func (b *batchBuilder) done() ([][]byte, error) {
	if len(b.events) == 0 {
		return nil, badRequest("request body holds no events")
	}
	return b.events, nil
}

func parseBody(f bodyFormat, r io.Reader, lim batchLimits) ([][]byte, error) {
	switch f {
	case bodyNDJSON:
		return parseNDJSON(r, lim)
	case bodyFramed:
		return parseFramed(r, lim)
	}
	return parseWhole(r, lim)
}

// readers are pooled: events are copied out of the read buffer, so it can
// serve the next request, and a 64 KiB allocation per append adds up.
var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, readBuffer) }}

func getReader(r io.Reader) *bufio.Reader {
	br := readers.Get().(*bufio.Reader)
	br.Reset(r)
	return br
}

func putReader(br *bufio.Reader) {
	br.Reset(nil)
	readers.Put(br)
}

func parseNDJSON(r io.Reader, lim batchLimits) ([][]byte, error) {
	br := getReader(r)
	defer putReader(br)
	b := &batchBuilder{lim: lim}
	// long gathers a line that does not fit in br's buffer. It is bounded
	// by max_event_bytes, checked before it grows.
	var long []byte
	for line := 1; ; {
		chunk, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			if len(long)+len(chunk) > lim.maxEvent {
				return nil, tooLarge("event %d (line %d) is over max_event_bytes (%d)", len(b.events)+1, line, lim.maxEvent)
			}
			long = append(long, chunk...)
			continue
		}
		if err != nil && err != io.EOF {
			return nil, err
		}
		data := chunk
		if len(long) > 0 {
			long = append(long, chunk...)
			data = long
		}
		terminated := len(data) > 0 && data[len(data)-1] == '\n'
		if terminated {
			data = data[:len(data)-1]
		}
		if terminated || len(data) > 0 {
			if len(data) == 0 {
				return nil, badRequest("line %d is empty; ndjson bodies cannot carry empty events (send them as %s)", line, contentFramed)
			}
			if err := b.add(data); err != nil {
				return nil, err
			}
			line++
		}
		long = long[:0]
		if err == io.EOF {
			return b.done()
		}
	}
}

func parseFramed(r io.Reader, lim batchLimits) ([][]byte, error) {
	br := getReader(r)
	defer putReader(br)
	b := &batchBuilder{lim: lim}
	var hdr [4]byte
	for i := 1; ; i++ {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			if err == io.EOF {
				return b.done()
			}
			if err == io.ErrUnexpectedEOF {
				return nil, badRequest("frame %d: body ends inside its 4-byte length", i)
			}
			return nil, err
		}
		n := binary.BigEndian.Uint32(hdr[:])
		if uint64(n) > uint64(lim.maxEvent) {
			return nil, tooLarge("event %d is %d bytes; max_event_bytes is %d", i, n, lim.maxEvent)
		}
		ev, err := b.alloc(int(n))
		if err != nil {
			return nil, err
		}
		if got, err := io.ReadFull(br, ev); err != nil {
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				return nil, badRequest("frame %d: body ends after %d of its %d bytes", i, got, n)
			}
			return nil, err
		}
	}
}

// parseWhole reads the body as one event. An empty body is refused: it is
// far more often a mistake (a forgotten --data) than an intended empty
// event, which framed bodies can carry.
func parseWhole(r io.Reader, lim batchLimits) ([][]byte, error) {
	limit := min(lim.maxEvent, lim.maxBatch)
	size := int64(4 << 10)
	if lim.sizeHint > 0 {
		// One byte more than announced, so that EOF is seen without
		// growing the buffer.
		size = min(lim.sizeHint+1, int64(limit)+1)
	}
	var buf []byte
	for {
		if len(buf) == cap(buf) {
			next := max(size, 2*int64(cap(buf)))
			next = min(next, int64(limit)+1)
			if next <= int64(cap(buf)) {
				return nil, tooLarge("event is over max_event_bytes (%d)", limit)
			}
			if lim.hold != nil {
				if err := lim.hold(next + eventOverhead); err != nil {
					return nil, err
				}
			}
			buf = append(make([]byte, 0, next), buf...)
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if len(buf) > limit {
			return nil, tooLarge("event is over max_event_bytes (%d)", limit)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if len(buf) == 0 {
		return nil, badRequest("request body is empty; send one event, or a batch as %s or %s", contentNDJSON, contentFramed)
	}
	return [][]byte{buf}, nil
}
