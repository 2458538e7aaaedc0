package api

import (
	"strconv"
	"time"

	"github.com/silt-io/silt/core"
)

// Idempotence headers of an append: a producer's writer id and the
// batch's sequence number in the target segment.
const (
	headerWriterID = "Silt-Writer-Id"
	headerSeq      = "Silt-Seq"
	maxWriterIDLen = 128
)

func (s *Server) appendEvents(c *call) (op, error) {
	st, res, lookupErr := s.streamTarget(c)
	q := c.r.URL.Query()
	req := core.AppendRequest{
		Tenant:     res.Tenant,
		Stream:     res.Stream,
		RoutingKey: q.Get("key"),
		Segment:    q.Get("segment"),
		WriterID:   c.r.Header.Get(headerWriterID),
		// A writer id is the caller's own: core binds it to the first
		// principal that uses it on the stream.
		Owner: c.principal.Name,
	}
	if q.Has("key") && q.Has("segment") {
		return op{}, badRequest("give key= or segment=, not both")
	}
	seq := c.r.Header.Get(headerSeq)
	switch {
	case req.WriterID == "" && seq != "":
		return op{}, badRequest("%s needs %s", headerSeq, headerWriterID)
	case req.WriterID != "" && seq == "":
		return op{}, badRequest("%s needs %s (the batch's sequence number)", headerWriterID, headerSeq)
	case len(req.WriterID) > maxWriterIDLen:
		return op{}, badRequest("%s is longer than %d bytes", headerWriterID, maxWriterIDLen)
	case seq != "":
		n, err := strconv.ParseUint(seq, 10, 64)
		if err != nil {
			return op{}, badRequest("%s %q: want a decimal integer below 2^64", headerSeq, seq)
		}
		req.Seq = n
	}
	format, err := bodyFormatOf(c.r.Header.Get("Content-Type"))
	if err != nil {
		return op{}, err
	}
	return op{res: res, run: func() error {
		if lookupErr != nil {
			return lookupErr
		}
		// From here the stream exists, so its name may label series.
		err := s.storeBatch(c, st, format, &req)
		if err != nil {
			s.producers.Failed(res.Tenant, res.Stream, mapError(err).code)
		}
		return err
	}}, nil
}

// storeBatch reads an append's body and stores it: the part of an append
// that producer series count.
func (s *Server) storeBatch(c *call, st core.Stream, format bodyFormat, req *core.AppendRequest) error {
	start := time.Now()
	// Refuse before reading the body: a backlogged tier 2 must not
	// cost the server the memory of bodies it will not store.
	if s.tiering != nil {
		if err := s.tiering.Backpressure(req.Tenant, req.Stream); err != nil {
			return err
		}
	}
	events, release, err := s.readBatch(c, format)
	if err != nil {
		return err
	}
	defer release()
	if format == bodyWhole && st.Config.Encoding == core.EncodingLines {
		// A lines event cannot hold '\n', so one at the very end can
		// only be the line's terminator (a file saved by an editor,
		// echo's output): appending "x\n" stores the line "x", and a
		// raw read gives back exactly the bytes sent.
		if ev := events[0]; len(ev) > 1 && ev[len(ev)-1] == '\n' {
			events[0] = ev[:len(ev)-1]
		}
	}
	req.Events = events
	ack, err := s.store.Append(c.r.Context(), *req)
	if err != nil {
		return err
	}
	writeAppendJSON(c.w, appendJSON{
		Segment: ack.Segment, FirstOffset: ack.FirstOffset, Count: ack.Count, Duplicate: ack.Duplicate,
	})
	if ack.Duplicate {
		s.producers.Duplicate(req.Tenant, req.Stream, time.Since(start))
		return nil
	}
	var n int64
	for _, ev := range events {
		n += int64(len(ev))
	}
	s.producers.Appended(req.Tenant, req.Stream, len(events), n, time.Since(start))
	return nil
}

// readBatch reads an append body into events. Memory is reserved from the
// budget before the body is read (its Content-Length, or the largest body
// allowed when the length is unknown) and grows as parsing finds more
// per-event overhead; release returns it once the events are no longer
// needed.
func (s *Server) readBatch(c *call, format bodyFormat) (events [][]byte, release func(), err error) {
	limit := bodyLimit(format, s.limits)
	declared := c.r.ContentLength
	switch {
	case declared > limit:
		return nil, nil, tooLarge("request body is %d bytes; the limit for this Content-Type is %d (max_event_bytes for a single event, twice max_batch_bytes for a batch)", declared, limit)
	case declared == 0:
		return nil, nil, badRequest("request body is empty")
	case declared < 0:
		declared = limit
	}
	res, ok := s.budget.reserve(declared)
	if !ok {
		s.met.rejected.Inc()
		return nil, nil, errOverloaded
	}
	lift := c.bodyDeadline()
	defer lift()
	events, err = parseBody(format, c.body(limit), batchLimits{
		maxEvent:  s.limits.MaxEventBytes,
		maxBatch:  s.limits.MaxBatchBytes,
		maxEvents: s.limits.MaxBatchEvents,
		hold: func(held int64) error {
			err := res.cover(held)
			if err == errOverloaded {
				s.met.rejected.Inc()
			}
			return err
		},
		sizeHint: max(c.r.ContentLength, 0),
	})
	if err != nil {
		res.release()
		return nil, nil, err
	}
	return events, res.release, nil
}
