package query

import (
	"bytes"
	"container/heap"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/expr-lang/expr/file"
)

// errStop ends a scan early: every row the query needs has been seen.
var errStop = errors.New("query: stop")

// Event is one stored event as a Source returns it.
type Event struct {
	Offset uint64
	Time   time.Time
	Data   []byte
}

// Segment is one segment of a stream to scan: offsets [First, Next).
type Segment struct {
	ID          string
	First, Next uint64
	// Bytes estimates the segment's size, for progress; 0 if unknown.
	Bytes int64
}

// Source is how a query reads streams; the caller has already checked
// that the query's principal may read every stream of Query.Streams.
type Source interface {
	// Segments lists the stream's segments with the range to read: from
	// the oldest event kept to the end at the time of the call, so that a
	// query over a stream still being written ends.
	Segments(ctx context.Context, tenant, stream string) ([]Segment, error)
	// Read returns events of a segment from offset from on (at most
	// maxEvents and about maxBytes), and the offset to continue from.
	Read(ctx context.Context, tenant, stream, segment string, from uint64, maxEvents, maxBytes int) ([]Event, uint64, error)
}

// Progress counts a run's scan; it is safe to read while the run goes on.
type Progress struct {
	EventsScanned, BytesScanned atomic.Int64
	// EventsTotal is the number of events in the ranges to scan (known
	// once the segments are listed); BytesTotal estimates their bytes.
	EventsTotal, BytesTotal atomic.Int64
}

// Fraction is how much of the scan is done, from 0 to 1.
func (p *Progress) Fraction() float64 {
	total := p.EventsTotal.Load()
	if total <= 0 {
		return 0
	}
	return math.Min(1, float64(p.EventsScanned.Load())/float64(total))
}

// RunOptions are a run's settings.
type RunOptions struct {
	// Now is what since and until are relative to; zero means time.Now.
	Now time.Time
	// Progress, if set, is updated as the scan goes.
	Progress *Progress
	// Continuous keeps the query running until ctx ends: it follows its
	// streams and emits each window's rows once the window has closed
	// (see CheckContinuous).
	Continuous bool
	// Grace is how long after a window's end its rows are held for events
	// still in flight; Poll how often a continuous query looks for new
	// events; Idle, if set, is called after the rows of closed windows
	// were emitted, to flush them.
	Grace, Poll time.Duration
	Idle        func() error
	// Clock tells time for closing windows; nil is time.Now.
	Clock func() time.Time
}

// Result describes a finished run.
type Result struct {
	// Columns are the result's columns in order: the query's output
	// fields when they are known, otherwise every field some row had, in
	// the order they were first seen.
	Columns  []string
	Rows     int64
	Warnings []string
}

// runEnv is the state of one run that stages share.
type runEnv struct {
	ctx  context.Context
	src  Source
	now  time.Time
	prog *Progress

	// follow is set for a continuous query: the scan then never ends.
	follow *follower
	clock  func() time.Time

	mu       sync.Mutex
	warnings map[string]*warning
	worder   []string
	seen     map[string]bool // field names of scanned events
}

type warning struct {
	msg string
	n   int64
}

// maxSeenFields bounds the field names remembered for the check of
// misspelt fields after a run.
const maxSeenFields = 10_000

func (env *runEnv) warn(op, msg string) {
	env.mu.Lock()
	defer env.mu.Unlock()
	key := op + ": " + msg
	w := env.warnings[key]
	if w == nil {
		if len(env.worder) >= 100 {
			return
		}
		w = &warning{msg: key}
		env.warnings[key] = w
		env.worder = append(env.worder, key)
	}
	w.n++
}

func (env *runEnv) evalError(op string, e *expression, err error) {
	msg := err.Error()
	var fe *file.Error
	if errors.As(err, &fe) {
		msg = fe.Message
	}
	env.warn(op, fmt.Sprintf("%q could not be evaluated: %v", e.text, firstLine(msg)))
}

func firstLine(s string) string {
	if i := bytes.IndexByte([]byte(s), '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// Run runs q over src, handing each result row to emit as a JSON object
// with its keys in column order.
func (q *Query) Run(ctx context.Context, src Source, opt RunOptions, emit func(line []byte) error) (Result, error) {
	now := opt.Now
	if now.IsZero() {
		now = time.Now()
	}
	prog := opt.Progress
	if prog == nil {
		prog = &Progress{}
	}
	env := &runEnv{ctx: ctx, src: src, now: now, prog: prog, warnings: map[string]*warning{}, seen: map[string]bool{}, clock: opt.Clock}
	if env.clock == nil {
		env.clock = time.Now
	}
	if opt.Continuous {
		win, err := q.continuousWindow()
		if err != nil {
			return Result{}, err
		}
		env.follow = &follower{window: win, grace: opt.Grace, poll: opt.Poll, flush: opt.Idle}
		if env.follow.poll <= 0 {
			env.follow.poll = time.Second
		}
	}
	out := &outputSink{emit: emit, fixed: q.pipe.out}
	err := env.run(q.pipe, out)
	res := Result{Columns: out.columns(), Rows: out.rows}
	for _, k := range env.worder {
		w := env.warnings[k]
		res.Warnings = append(res.Warnings, fmt.Sprintf("%s (%d times)", w.msg, w.n))
	}
	res.Warnings = append(res.Warnings, q.unseenFields(env)...)
	return res, err
}

// unseenFields warns about fields that expressions read but no scanned
// event had: most likely a misspelling, which an open schema cannot catch
// while parsing.
func (q *Query) unseenFields(env *runEnv) []string {
	if len(env.seen) == 0 || len(env.seen) >= maxSeenFields {
		return nil
	}
	var names []string
	for n := range env.seen {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []string
	done := map[string]bool{}
	var walk func(p *pipeline)
	walk = func(p *pipeline) {
		for _, r := range p.openRefs {
			if env.seen[r.name] || done[r.name] {
				continue
			}
			done[r.name] = true
			msg := fmt.Sprintf("field %q was in no scanned event", r.name)
			if h := didYouMean(r.name, names); h != "" {
				msg += "; " + h
			}
			e := errAt(r.pos, "%s", msg).bind(q.src)
			out = append(out, fmt.Sprintf("%d:%d: %s", e.Line, e.Column, msg))
		}
		for _, st := range p.stages {
			if j, ok := st.(*joinStage); ok {
				walk(j.right)
			}
		}
	}
	walk(q.pipe)
	return out
}

// run scans pipe's streams into its stages and then into last.
func (env *runEnv) run(pipe *pipeline, last sink) error {
	s := last
	for i := len(pipe.stages) - 1; i >= 0; i-- {
		var err error
		if s, err = pipe.stages[i].sink(env, s); err != nil {
			return err
		}
	}
	if err := env.scan(pipe.from, s); err != nil && err != errStop {
		return err
	}
	return s.done()
}

// cursor walks one segment in batches.
type cursor struct {
	ref     StreamRef
	stream  string // "tenant/stream"
	seg     string
	idx     int // order of the segment in the query, to break time ties
	next    uint64
	end     uint64
	buf     []Event
	pos     int
	drained bool
}

func (c *cursor) head() *Event { return &c.buf[c.pos] }

type cursorHeap []*cursor

func (h cursorHeap) Len() int { return len(h) }
func (h cursorHeap) Less(i, j int) bool {
	a, b := h[i].head(), h[j].head()
	if !a.Time.Equal(b.Time) {
		return a.Time.Before(b.Time)
	}
	if h[i].idx != h[j].idx {
		return h[i].idx < h[j].idx
	}
	return a.Offset < b.Offset
}
func (h cursorHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *cursorHeap) Push(x any)   { *h = append(*h, x.(*cursor)) }
func (h *cursorHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}

const (
	readBatchEvents = 1000
	readBatchBytes  = 1 << 20
)

// fill reads the cursor's next batch; it reports false at the end.
func (env *runEnv) fill(c *cursor) (bool, error) {
	c.buf, c.pos = c.buf[:0], 0
	for !c.drained && len(c.buf) == 0 {
		if c.next >= c.end {
			c.drained = true
			break
		}
		evs, next, err := env.src.Read(env.ctx, c.ref.Tenant, c.ref.Stream, c.seg, c.next, readBatchEvents, readBatchBytes)
		if err != nil {
			return false, fmt.Errorf("read %s segment %s at %d: %w", c.stream, c.seg, c.next, err)
		}
		if next <= c.next && len(evs) == 0 {
			// Nothing more to read below end (retention removed it).
			c.drained = true
			break
		}
		for _, e := range evs {
			if e.Offset >= c.end {
				c.drained = true
				break
			}
			c.buf = append(c.buf, e)
		}
		c.next = next
	}
	return len(c.buf) > 0, nil
}

// scan reads every segment of every stream of f and pushes the events in
// time order (ties by stream order, then offset).
func (env *runEnv) scan(f fromClause, s sink) error {
	var since, until time.Time
	if f.since != nil {
		since = f.since.at(env.now)
	}
	if f.until != nil {
		until = f.until.at(env.now)
	}
	var h cursorHeap
	var all []*cursor
	idx := 0
	for _, ss := range f.streams {
		segs, err := env.src.Segments(env.ctx, ss.Tenant, ss.Stream)
		if err != nil {
			return fmt.Errorf("list segments of %s: %w", ss.StreamRef, err)
		}
		for _, sg := range segs {
			c := &cursor{ref: ss.StreamRef, stream: ss.StreamRef.String(), seg: sg.ID, idx: idx, next: sg.First, end: sg.Next}
			all = append(all, c)
			idx++
			if off, ok := ss.cut[sg.ID]; ok {
				c.next = max(off, sg.First)
			}
			if off, ok := ss.upto[sg.ID]; ok {
				c.end = min(off, sg.Next)
			}
			if c.end > c.next {
				env.prog.EventsTotal.Add(int64(c.end - c.next))
				if sg.Next > sg.First && sg.Bytes > 0 {
					env.prog.BytesTotal.Add(sg.Bytes * int64(c.end-c.next) / int64(sg.Next-sg.First))
				}
			}
			ok, err := env.fill(c)
			if err != nil {
				return err
			}
			if ok {
				h = append(h, c)
			}
		}
	}
	heap.Init(&h)
	inRange := func(t time.Time) bool {
		return (since.IsZero() || !t.Before(since)) && (until.IsZero() || t.Before(until))
	}
	for {
		if err := env.drain(&h, s, inRange); err != nil {
			return err
		}
		if env.follow == nil {
			return nil
		}
		// A continuous query: close the windows that are due, wait, and
		// read what was appended meanwhile.
		if err := env.follow.idle(env.clock()); err != nil {
			return err
		}
		if err := env.follow.wait(env.ctx); err != nil {
			return err
		}
		if err := env.extend(f, all, &h); err != nil {
			return err
		}
	}
}

// drain pushes the cursors' events in time order until every cursor is
// at its end.
func (env *runEnv) drain(h *cursorHeap, s sink, inRange func(time.Time) bool) error {
	for h.Len() > 0 {
		if err := env.ctx.Err(); err != nil {
			return err
		}
		c := (*h)[0]
		ev := c.head()
		env.prog.EventsScanned.Add(1)
		env.prog.BytesScanned.Add(int64(len(ev.Data)) + 1)
		if inRange(ev.Time) {
			if err := s.push(env.decode(c, ev)); err != nil {
				return err
			}
		}
		c.pos++
		if c.pos >= len(c.buf) {
			ok, err := env.fill(c)
			if err != nil {
				return err
			}
			if !ok {
				heap.Pop(h)
				continue
			}
		}
		heap.Fix(h, 0)
	}
	return nil
}

// extend moves every cursor's end to its segment's end now, and puts the
// cursors that have events again back on the heap.
func (env *runEnv) extend(f fromClause, all []*cursor, h *cursorHeap) error {
	for _, ss := range f.streams {
		segs, err := env.src.Segments(env.ctx, ss.Tenant, ss.Stream)
		if err != nil {
			return fmt.Errorf("list segments of %s: %w", ss.StreamRef, err)
		}
		ends := map[string]uint64{}
		for _, sg := range segs {
			ends[sg.ID] = sg.Next
		}
		for _, c := range all {
			end, ok := ends[c.seg]
			if c.ref != ss.StreamRef || !ok || end <= c.end {
				continue
			}
			if off, ok := ss.upto[c.seg]; ok {
				end = min(end, off)
			}
			if end <= c.end {
				continue
			}
			env.prog.EventsTotal.Add(int64(end - max(c.end, c.next)))
			c.end, c.drained = end, false
			if c.pos < len(c.buf) {
				continue // still on the heap
			}
			ok, err := env.fill(c)
			if err != nil {
				return err
			}
			if ok {
				heap.Push(h, c)
			}
		}
	}
	return nil
}

// decode turns an event into a row: the JSON object's fields, or the line
// as _raw when it is not an object, plus the event fields.
func (env *runEnv) decode(c *cursor, ev *Event) Row {
	var r Row
	if len(ev.Data) > 0 && ev.Data[0] == '{' {
		if err := json.Unmarshal(ev.Data, &r); err != nil {
			r = nil
		}
	}
	if r == nil {
		r = Row{FieldRaw: string(ev.Data)}
	}
	if len(env.seen) < maxSeenFields {
		for k := range r {
			env.seen[k] = true
		}
	}
	r[FieldTime] = ev.Time.UTC()
	r[FieldStream] = c.stream
	r[FieldSegment] = c.seg
	r[FieldOffset] = ev.Offset
	return r
}

// outputSink encodes the result rows.
type outputSink struct {
	emit  func([]byte) error
	fixed schema
	cols  []string
	known map[string]bool
	rows  int64
	buf   bytes.Buffer
}

func (o *outputSink) push(r Row) error {
	keys := o.order(r)
	o.buf.Reset()
	o.buf.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			o.buf.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		o.buf.Write(kb)
		o.buf.WriteByte(':')
		o.buf.Write(encodeValue(r[k]))
	}
	o.buf.WriteByte('}')
	o.rows++
	return o.emit(o.buf.Bytes())
}

// order is the key order of a row: the known columns first (all of them
// when the schema is closed), then the row's other fields sorted.
func (o *outputSink) order(r Row) []string {
	if o.known == nil {
		o.known = map[string]bool{}
		if !o.fixed.open {
			o.cols = append(o.cols, o.fixed.cols...)
			for _, c := range o.cols {
				o.known[c] = true
			}
		}
	}
	if !o.fixed.open {
		return o.fixed.cols
	}
	keys := make([]string, 0, len(r))
	for _, c := range o.fixed.cols {
		if _, ok := r[c]; ok {
			keys = append(keys, c)
		}
	}
	var rest []string
	for k := range r {
		if !o.fixed.has(k) {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	keys = append(keys, rest...)
	for _, k := range keys {
		if !o.known[k] {
			o.known[k] = true
			o.cols = append(o.cols, k)
		}
	}
	return keys
}

func (o *outputSink) done() error { return nil }

func (o *outputSink) columns() []string {
	if !o.fixed.open {
		return append([]string(nil), o.fixed.cols...)
	}
	return o.cols
}

// encodeValue is a value's JSON; NaN and infinities, which JSON cannot
// hold, become null.
func encodeValue(v any) []byte {
	if t, ok := v.(time.Time); ok {
		return []byte(`"` + t.UTC().Format(time.RFC3339Nano) + `"`)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return []byte("null")
	}
	return bytes.TrimRight(b.Bytes(), "\n")
}
