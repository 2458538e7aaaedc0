package api

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/silt-io/silt/core"
)

const (
	defaultReadMax = 1000
	maxReadMax     = 10000
	// maxResponseBytes bounds the event bytes of one read response, or of
	// one batch of a follow, whatever max= says: a stream of many segments
	// must not make one response hold a batch from each.
	maxResponseBytes = 8 << 20
	// followHeartbeat is how often an idle ndjson follow sends its cursor
	// again, so that proxies and clients can tell a quiet stream from a
	// dead connection.
	followHeartbeat = 15 * time.Second
	// writeStall bounds one flush of a follow to a client that stopped
	// reading; without it the handler would block on a full socket buffer.
	writeStall = time.Minute

	headerNextCursor = "Silt-Next-Cursor"
)

type readParams struct {
	pos    []position
	max    int
	wait   time.Duration
	follow bool
	raw    bool
}

func (s *Server) readEvents(c *call) (op, error) {
	st, res, lookupErr := s.streamTarget(c)
	return op{res: res, run: func() error {
		if lookupErr != nil {
			return lookupErr
		}
		p, err := s.parseReadParams(c.r.Context(), c.r.URL.Query(), st)
		if err != nil {
			return err
		}
		if p.follow {
			return s.follow(c, st, p)
		}
		return s.readOnce(c, st, p)
	}}, nil
}

func (s *Server) parseReadParams(ctx context.Context, q url.Values, st core.Stream) (readParams, error) {
	p := readParams{max: defaultReadMax}
	if v := q.Get("max"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return p, badRequest("max %q: want a positive number of events (at most %d are returned)", v, maxReadMax)
		}
		p.max = min(n, maxReadMax)
	}
	if v := q.Get("wait"); v != "" {
		d, err := parseWait(v)
		if err != nil {
			return p, err
		}
		p.wait = min(d, s.cfg.MaxWait)
	}
	if v := q.Get("follow"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return p, badRequest("follow %q: want true or false", v)
		}
		p.follow = b
	}
	switch f := q.Get("format"); f {
	case "", "ndjson":
	case "raw":
		p.raw = true
	default:
		return p, badRequest("format %q: want ndjson or raw", f)
	}

	switch {
	case q.Has("cursor") && q.Has("segment"):
		return p, badRequest("give cursor= or segment=, not both")
	case q.Has("from") && !q.Has("segment"):
		return p, badRequest("from= needs segment=; to read every segment from a point, use cursor=")
	case q.Has("segment"):
		id := q.Get("segment")
		sg, ok := findSegment(st, id)
		if !ok {
			return p, fmt.Errorf("segment %q not found in stream %q of tenant %q: %w", id, st.Name, st.Tenant, core.ErrNotFound)
		}
		var next uint64
		switch from := q.Get("from"); from {
		case "":
			first, err := s.oldestOffset(ctx, st.Tenant, st.Name, sg)
			if err != nil {
				return p, err
			}
			next = first
		case cursorEnd:
			next = sg.NextOffset
		default:
			n, err := strconv.ParseUint(from, 10, 64)
			if err != nil {
				return p, badRequest("from %q: want an offset or %q", from, cursorEnd)
			}
			next = n
		}
		p.pos = []position{{segment: id, next: next}}
	default:
		given := map[string]uint64{}
		cur := q.Get("cursor")
		if cur != "" && cur != cursorEnd {
			dec, err := decodeCursor(cur)
			if err != nil {
				return p, badRequest("cursor: %v; pass back a next_cursor the server returned, or %q", err, cursorEnd)
			}
			for _, d := range dec {
				if _, ok := findSegment(st, d.segment); !ok {
					return p, badRequest("cursor names segment %q, which stream %q does not have; was the stream recreated?", d.segment, st.Name)
				}
				given[d.segment] = d.next
			}
		}
		for _, sg := range st.Segments {
			var next uint64
			if cur == cursorEnd {
				next = sg.NextOffset
			} else if n, ok := given[sg.ID]; ok {
				next = n
			} else {
				first, err := s.oldestOffset(ctx, st.Tenant, st.Name, sg)
				if err != nil {
					return p, err
				}
				next = first
			}
			p.pos = append(p.pos, position{segment: sg.ID, next: next})
		}
	}
	return p, nil
}

// parseWait accepts a Go duration ("500ms", "30s") or a number of seconds.
func parseWait(v string) (time.Duration, error) {
	if n, err := strconv.ParseUint(v, 10, 32); err == nil {
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, badRequest("wait %q: want a duration such as 500ms or 30s", v)
	}
	return d, nil
}

func findSegment(st core.Stream, id string) (core.SegmentInfo, bool) {
	for _, sg := range st.Segments {
		if sg.ID == id {
			return sg, true
		}
	}
	return core.SegmentInfo{}, false
}

func (s *Server) readOnce(c *call, st core.Stream, p readParams) error {
	ctx := c.r.Context()
	rd := newStreamReader(s, st, p.pos)
	evs, err := rd.round(ctx, p.max)
	if err != nil {
		return err
	}
	if len(evs) == 0 && p.wait > 0 {
		wctx, stop := s.shuttingDown(ctx)
		woke, err := rd.wait(wctx, p.wait)
		stop()
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if woke {
			if evs, err = rd.round(ctx, p.max); err != nil {
				return err
			}
		}
	}
	cur := encodeCursor(rd.pos)
	h := c.w.Header()
	h.Set(headerNextCursor, cur)
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Type", contentTypeOf(st.Config.Encoding, p.raw))
	c.w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(c.w, 64<<10)
	ew := newEventWriter(bw, st.Config.Encoding, p.raw)
	ew.events(evs)
	if !p.raw {
		ew.cursor(cur)
	}
	return bw.Flush()
}

// follow streams events until the client goes away or the server drains,
// flushing each batch as soon as it is read.
func (s *Server) follow(c *call, st core.Stream, p readParams) error {
	ctx, stop := s.shuttingDown(c.r.Context())
	defer stop()
	rd := newStreamReader(s, st, p.pos)

	h := c.w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // nginx would otherwise buffer the stream
	h.Set("Content-Type", contentTypeOf(st.Config.Encoding, p.raw))
	if p.raw {
		h.Set("Trailer", headerNextCursor)
	}
	c.w.WriteHeader(http.StatusOK)
	c.ndjson = !p.raw

	rc := http.NewResponseController(c.w)
	bw := bufio.NewWriterSize(c.w, 64<<10)
	ew := newEventWriter(bw, st.Config.Encoding, p.raw)
	flush := func() error {
		rc.SetWriteDeadline(time.Now().Add(writeStall))
		if err := bw.Flush(); err != nil {
			return err
		}
		return rc.Flush()
	}
	// The deadline belongs to the connection; do not leave it to a later
	// request on it.
	defer rc.SetWriteDeadline(time.Time{})
	// Send the headers now, and for ndjson the resolved start as a cursor:
	// the client learns that the follow started even if the stream stays
	// quiet, and has a concrete resume point (not "end") from the start.
	if !p.raw {
		ew.cursor(encodeCursor(rd.pos))
	}
	if flush() != nil {
		return nil
	}
	heartbeat := min(followHeartbeat, s.cfg.MaxWait)
	for ctx.Err() == nil {
		evs, err := rd.round(ctx, p.max)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			return err
		}
		if len(evs) > 0 {
			ew.events(evs)
			if !p.raw {
				ew.cursor(encodeCursor(rd.pos))
			}
			if flush() != nil {
				return nil // the client is gone; nobody to tell
			}
			continue
		}
		woke, err := rd.wait(ctx, heartbeat)
		if err != nil {
			return err
		}
		if !woke && ctx.Err() == nil && !p.raw {
			ew.cursor(encodeCursor(rd.pos))
			if flush() != nil {
				return nil
			}
		}
	}
	// Ended by the client or by shutdown: leave the resume point.
	if p.raw {
		h.Set(headerNextCursor, encodeCursor(rd.pos))
	} else {
		ew.cursor(encodeCursor(rd.pos))
	}
	flush()
	return nil
}

func contentTypeOf(enc core.Encoding, raw bool) string {
	switch {
	case !raw:
		return contentNDJSON
	case enc == core.EncodingFramed:
		return contentFramed
	}
	return "text/plain; charset=utf-8"
}

// streamReader reads a stream's segments from positions it keeps.
type streamReader struct {
	s    *Server
	st   core.Stream
	pos  []position
	turn int
}

func newStreamReader(s *Server, st core.Stream, pos []position) *streamReader {
	// Start the rotation from the offsets, so that requests with a max
	// below the segment count do not always serve the same segments first.
	var sum uint64
	for _, p := range pos {
		sum += p.next
	}
	return &streamReader{s: s, st: st, pos: pos, turn: int(sum % uint64(max(len(pos), 1)))}
}

type outEvent struct {
	segment string
	core.Event
}

// round reads up to maxEvents, fairly across segments: each pass gives
// every segment that may have more an equal share of what is left, in
// rotating order, so that one busy segment cannot starve the others.
// Order is kept within each segment, not across them.
func (r *streamReader) round(ctx context.Context, maxEvents int) ([]outEvent, error) {
	n := len(r.pos)
	active := make([]int, 0, n)
	for k := range n {
		active = append(active, (r.turn+k)%n)
	}
	r.turn++
	var out []outEvent
	remaining, budget := maxEvents, maxResponseBytes
	for len(active) > 0 && remaining > 0 && budget > 0 {
		share := max(1, remaining/len(active))
		more := active[:0]
		for _, i := range active {
			if remaining == 0 || budget <= 0 {
				break
			}
			want := min(share, remaining)
			res, err := r.s.readSegment(ctx, core.ReadRequest{
				Tenant: r.st.Tenant, Stream: r.st.Name, Segment: r.pos[i].segment,
				From: r.pos[i].next, MaxEvents: want,
				// Never below one event's worth, so that a large event
				// still makes progress.
				MaxBytes: max(budget, r.s.limits.MaxEventBytes),
			})
			if err != nil {
				return nil, err
			}
			for _, ev := range res.Events {
				out = append(out, outEvent{segment: r.pos[i].segment, Event: ev})
				budget -= len(ev.Data)
			}
			remaining -= len(res.Events)
			r.pos[i].next = res.Next
			if len(res.Events) == want {
				more = append(more, i)
			}
		}
		active = more
	}
	return out, nil
}

// wait blocks until some segment read has events past its position, the
// timeout passes, or ctx ends; it reports whether events arrived.
func (r *streamReader) wait(ctx context.Context, timeout time.Duration) (bool, error) {
	var (
		woke bool
		err  error
	)
	if len(r.pos) == 1 {
		p := r.pos[0]
		woke, err = r.s.store.Wait(ctx, r.st.Tenant, r.st.Name, p.segment, p.next, timeout)
	} else {
		// A read of several segments covers all of them (parseReadParams),
		// which is what WaitStream watches.
		next := make(map[string]uint64, len(r.pos))
		for _, p := range r.pos {
			next[p.segment] = p.next
		}
		woke, err = r.s.store.WaitStream(ctx, r.st.Tenant, r.st.Name, next, timeout)
	}
	if err != nil && ctx.Err() != nil {
		// Ended by the client or by shutdown; the caller looks at ctx.
		return false, nil
	}
	return woke, err
}

// eventWriter writes events as ndjson objects or in the stream's own
// encoding. Write errors are left to the final flush to report.
type eventWriter struct {
	w   *bufio.Writer
	enc *json.Encoder
	// lines streams also get a "text" field, the event as a string.
	lines   bool
	raw     bool
	framing core.Encoding
	scratch []byte
}

func newEventWriter(w *bufio.Writer, enc core.Encoding, raw bool) *eventWriter {
	je := json.NewEncoder(w)
	je.SetEscapeHTML(false)
	return &eventWriter{w: w, enc: je, lines: enc == core.EncodingLines, raw: raw, framing: enc}
}

type eventJSON struct {
	Segment string    `json:"segment"`
	Offset  uint64    `json:"offset"`
	Time    time.Time `json:"time"`
	Data    []byte    `json:"data"`
	Text    *string   `json:"text,omitempty"`
}

type cursorJSON struct {
	NextCursor string `json:"next_cursor"`
}

func (e *eventWriter) events(evs []outEvent) {
	for _, ev := range evs {
		if e.raw {
			e.scratch = core.Encode(e.framing, e.scratch[:0], ev.Data)
			e.w.Write(e.scratch)
			continue
		}
		j := eventJSON{Segment: ev.segment, Offset: ev.Offset, Time: ev.Time.UTC(), Data: ev.Data}
		if e.lines {
			text := string(ev.Data)
			j.Text = &text
		}
		e.enc.Encode(j)
	}
}

func (e *eventWriter) cursor(cur string) { e.enc.Encode(cursorJSON{NextCursor: cur}) }
