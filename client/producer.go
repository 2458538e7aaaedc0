package client

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// ProducerOptions tune a Producer; zero fields take the defaults.
type ProducerOptions struct {
	// WriterID identifies the producer for deduplication (default:
	// random). Reuse an id across restarts only together with the
	// sequence scheme described at NewProducer.
	WriterID string
	// MaxBatchEvents and MaxBatchBytes bound one batch (defaults 1000 and
	// 1 MiB; keep MaxBatchBytes within the server's max_batch_bytes).
	MaxBatchEvents int
	MaxBatchBytes  int
	// Linger is how long a batch waits for more events before it is sent
	// (default 5ms).
	Linger time.Duration
	// MaxInflight is the most events sent to Send but not yet
	// acknowledged; Send blocks beyond it (default 10 × MaxBatchEvents).
	MaxInflight int
	// DeliveryTimeout bounds how long a batch is retried after transient
	// failures (a server refusing appends with 503 while its tier-2
	// backlog is full, an unreachable server): a batch not acknowledged
	// this long after its first attempt fails with ErrDeliveryTimeout,
	// wrapping the last error. 0 retries until Close gives up.
	DeliveryTimeout time.Duration
	// OnRetry, when set, is called before a batch is retried, with the
	// error of the failed attempt, its number and the wait before the
	// next one, so that a program can tell its user why it is waiting. It
	// must not block.
	OnRetry func(err error, attempt int, wait time.Duration)
}

// ErrProducerClosed is returned by Send after Close, and resolves the
// futures of events that Close gave up on.
var ErrProducerClosed = errors.New("client: producer closed")

// ErrDeliveryTimeout resolves the futures of a batch that was retried for
// ProducerOptions.DeliveryTimeout without an acknowledgement. Whether its
// last attempt was stored is unknown.
var ErrDeliveryTimeout = errors.New("client: batch not acknowledged within the delivery timeout")

// Ack says where an event was stored.
type Ack struct {
	Segment string
	Offset  uint64
}

// Future is the pending acknowledgement of one sent event.
type Future struct {
	done chan struct{}
	ack  Ack
	err  error
}

func (f *Future) resolve(a Ack, err error) {
	f.ack, f.err = a, err
	close(f.done)
}

// Done is closed once the event is acknowledged or has failed.
func (f *Future) Done() <-chan struct{} { return f.done }

// Wait blocks until the event is acknowledged or has failed, or ctx ends.
func (f *Future) Wait(ctx context.Context) (Ack, error) {
	select {
	case <-f.done:
		return f.ack, f.err
	case <-ctx.Done():
		return Ack{}, ctx.Err()
	}
}

// Producer batches events per segment and appends them exactly once: each
// batch goes to one explicit segment with the producer's writer id and a
// sequence number, a segment has at most one batch in flight, and a batch
// is retried with the same sequence number until it is acknowledged, so
// the server stores it once however often the answer is lost. Order is
// kept per routing key. Transient failures (network errors, 502/503/504)
// are retried until Close gives up; a batch the server refuses (400, 413,
// 403, …) fails the futures of all its events. It is safe for concurrent
// use.
type Producer struct {
	c              *Client
	tenant, stream string
	opts           ProducerOptions
	writer         string
	// firstSeq is where every segment's sequence numbers start.
	firstSeq uint64
	tokens   chan struct{} // MaxInflight
	abort    context.Context
	stop     context.CancelFunc
	wg       sync.WaitGroup
	loadMu   sync.Mutex // serializes the lazy fetch of the segments

	mu struct {
		sync.Mutex
		queues   []*segmentQueue // sorted by KeyLow; nil until loaded
		segs     []Segment       // queues[i].seg, for segmentFor
		rr       int             // where unkeyed events go
		flushing int
		closed   bool
		unacked  int
		acked    chan struct{} // closed and replaced after every batch
		failed   error         // first batch failure since the last Flush
	}
}

// NewProducer returns a producer for one stream. It fetches the stream's
// segments on first use.
//
// Sequence numbers start from the current time in nanoseconds and grow by
// one per batch, so a producer restarted with the same WriterID continues
// above the sequence numbers of its earlier run.
func (c *Client) NewProducer(tenant, stream string, opts ProducerOptions) (*Producer, error) {
	if opts.MaxBatchEvents == 0 {
		opts.MaxBatchEvents = 1000
	}
	if opts.MaxBatchBytes == 0 {
		opts.MaxBatchBytes = 1 << 20
	}
	if opts.Linger == 0 {
		opts.Linger = 5 * time.Millisecond
	}
	if opts.MaxInflight == 0 {
		opts.MaxInflight = 10 * opts.MaxBatchEvents
	}
	if opts.MaxBatchEvents < 0 || opts.MaxBatchBytes < 0 || opts.Linger < 0 || opts.MaxInflight < 0 || opts.DeliveryTimeout < 0 {
		return nil, errors.New("client: producer options must not be negative")
	}
	if opts.WriterID == "" {
		var b [12]byte
		rand.Read(b[:])
		opts.WriterID = "p-" + hex.EncodeToString(b[:])
	}
	p := &Producer{
		c: c, tenant: tenant, stream: stream, opts: opts, writer: opts.WriterID,
		firstSeq: uint64(time.Now().UnixNano()),
		tokens:   make(chan struct{}, opts.MaxInflight),
	}
	p.abort, p.stop = context.WithCancel(context.Background())
	p.mu.acked = make(chan struct{})
	return p, nil
}

// WriterID returns the producer's writer id.
func (p *Producer) WriterID() string { return p.writer }

type record struct {
	data []byte
	fut  *Future
}

// segmentQueue is one segment's pending events and the goroutine that
// sends them.
type segmentQueue struct {
	p    *Producer
	seg  Segment
	wake chan struct{}
	seq  uint64 // only the queue's goroutine uses it

	// Guarded by p.mu.
	pending []record
	bytes   int
	since   time.Time // when the oldest pending event arrived
}

func (p *Producer) load(ctx context.Context) error {
	p.loadMu.Lock()
	defer p.loadMu.Unlock()
	p.mu.Lock()
	loaded, closed := p.mu.queues != nil, p.mu.closed
	p.mu.Unlock()
	if closed {
		return ErrProducerClosed
	}
	if loaded {
		return nil
	}
	st, err := p.getStream(ctx)
	if err != nil {
		return err
	}
	if len(st.Segments) == 0 {
		return fmt.Errorf("client: producer: stream %s/%s reports no segments", p.tenant, p.stream)
	}
	segs := slices.Clone(st.Segments)
	slices.SortFunc(segs, func(a, b Segment) int { return cmp.Compare(a.KeyLow, b.KeyLow) })
	queues := make([]*segmentQueue, len(segs))
	for i, sg := range segs {
		queues[i] = &segmentQueue{p: p, seg: sg, wake: make(chan struct{}, 1), seq: p.firstSeq}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.closed {
		return ErrProducerClosed
	}
	p.mu.queues, p.mu.segs = queues, segs
	for _, q := range queues {
		p.wg.Add(1)
		go q.run()
	}
	return nil
}

// getStream fetches the stream's segments, retrying transient failures
// (a server not up yet refuses connections) for as long as a batch would
// be retried: one request's own retries give up within a second, which
// made a producer started just before its server fail at once.
func (p *Producer) getStream(ctx context.Context) (Stream, error) {
	start := time.Now()
	for attempt := 1; ; attempt++ {
		st, err := p.c.GetStream(ctx, p.tenant, p.stream)
		if err == nil || !retryable(err) {
			return st, err
		}
		wait := p.c.retry.delay(attempt)
		if t := p.opts.DeliveryTimeout; t > 0 && time.Since(start)+wait > t {
			return Stream{}, fmt.Errorf("%w (%s, %d attempts): %w", ErrDeliveryTimeout, t, attempt, err)
		}
		if p.opts.OnRetry != nil {
			p.opts.OnRetry(err, attempt, wait)
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return Stream{}, ctx.Err()
		case <-p.abort.Done():
			return Stream{}, fmt.Errorf("%w: %w", ErrProducerClosed, err)
		}
	}
}

// Send queues event for the segment that owns key (an empty key spreads
// batches round-robin) and returns its future. It blocks while MaxInflight
// events are unacknowledged. The event is copied.
func (p *Producer) Send(ctx context.Context, key string, event []byte) (*Future, error) {
	if err := p.load(ctx); err != nil {
		return nil, err
	}
	select {
	case p.tokens <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-p.abort.Done():
		return nil, ErrProducerClosed
	}
	p.mu.Lock()
	if p.mu.closed {
		p.mu.Unlock()
		<-p.tokens
		return nil, ErrProducerClosed
	}
	q, err := p.route(key)
	if err != nil {
		p.mu.Unlock()
		<-p.tokens
		return nil, err
	}
	f := &Future{done: make(chan struct{})}
	if len(q.pending) == 0 {
		q.since = time.Now()
	}
	q.pending = append(q.pending, record{data: slices.Clone(event), fut: f})
	q.bytes += len(event)
	p.mu.unacked++
	// Keyless events move on once this segment has a full batch waiting,
	// so that a fast sender spreads over the segments instead of piling
	// onto one until its batch is taken.
	if key == "" && (len(q.pending)%p.opts.MaxBatchEvents == 0 || q.bytes >= p.opts.MaxBatchBytes) {
		if qs := p.mu.queues; qs[p.mu.rr%len(qs)] == q {
			p.mu.rr++
		}
	}
	p.mu.Unlock()
	q.notify()
	return f, nil
}

// route picks the queue for key; p.mu is held.
func (p *Producer) route(key string) (*segmentQueue, error) {
	qs := p.mu.queues
	if key == "" {
		return qs[p.mu.rr%len(qs)], nil
	}
	h := KeyHash(key)
	i := segmentFor(p.mu.segs, h)
	if i < 0 {
		return nil, fmt.Errorf("client: producer: no segment of %s/%s owns key hash %#x", p.tenant, p.stream, h)
	}
	return qs[i], nil
}

func (q *segmentQueue) notify() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (p *Producer) wakeAll() {
	p.mu.Lock()
	qs := p.mu.queues
	p.mu.Unlock()
	for _, q := range qs {
		q.notify()
	}
}

func (q *segmentQueue) run() {
	defer q.p.wg.Done()
	for {
		batch, ok := q.next()
		if !ok {
			return
		}
		q.send(batch)
	}
}

// next waits until a batch is due (full, lingered long enough, or flushed)
// and takes it; it reports false when the producer is closed and the queue
// is empty, or aborted.
func (q *segmentQueue) next() ([]record, bool) {
	p := q.p
	for {
		p.mu.Lock()
		var wait <-chan time.Time
		if n := len(q.pending); n > 0 {
			due := q.since.Add(p.opts.Linger)
			full := n >= p.opts.MaxBatchEvents || q.bytes >= p.opts.MaxBatchBytes
			if full || p.mu.flushing > 0 || p.mu.closed || !time.Now().Before(due) {
				batch := q.take()
				p.mu.Unlock()
				return batch, true
			}
			wait = time.After(time.Until(due))
		} else if p.mu.closed {
			p.mu.Unlock()
			return nil, false
		}
		p.mu.Unlock()
		select {
		case <-q.wake:
		case <-wait:
		case <-p.abort.Done():
			return nil, false
		}
	}
}

// take removes the next batch from the queue; p.mu is held.
func (q *segmentQueue) take() []record {
	n, size := 0, 0
	for n < len(q.pending) && n < q.p.opts.MaxBatchEvents {
		if n > 0 && size+len(q.pending[n].data) > q.p.opts.MaxBatchBytes {
			break
		}
		size += len(q.pending[n].data)
		n++
	}
	batch := slices.Clone(q.pending[:n])
	q.pending = slices.Delete(q.pending, 0, n)
	q.bytes -= size
	// Unkeyed events move on once a batch leaves, so they spread over
	// the segments batch by batch.
	if qs := q.p.mu.queues; qs[q.p.mu.rr%len(qs)] == q {
		q.p.mu.rr++
	}
	return batch
}

// send appends batch with the next sequence number, retrying with the
// same number until it is acknowledged, refused for good, or aborted.
func (q *segmentQueue) send(batch []record) {
	p := q.p
	q.seq++
	opts := AppendOptions{Segment: q.seg.ID, WriterID: p.writer, Seq: q.seq}
	events := make([][]byte, len(batch))
	for i, r := range batch {
		events[i] = r.data
	}
	var (
		res AppendResult
		err error
	)
	start := time.Now()
	for attempt := 1; ; attempt++ {
		res, err = p.c.Append(p.abort, p.tenant, p.stream, events, opts)
		if err == nil || !retryable(err) {
			break
		}
		wait := p.c.retry.delay(attempt)
		if t := p.opts.DeliveryTimeout; t > 0 && time.Since(start)+wait > t {
			err = fmt.Errorf("%w (%s, %d attempts): %w", ErrDeliveryTimeout, t, attempt, err)
			break
		}
		if p.opts.OnRetry != nil {
			p.opts.OnRetry(err, attempt, wait)
		}
		if sleep(p.abort, wait) != nil {
			err = fmt.Errorf("%w: %w", ErrProducerClosed, err)
			break
		}
	}
	if p.abort.Err() != nil && err != nil && !errors.Is(err, ErrProducerClosed) {
		err = fmt.Errorf("%w: %w", ErrProducerClosed, err)
	}
	for i, r := range batch {
		if err != nil {
			r.fut.resolve(Ack{}, err)
		} else {
			r.fut.resolve(Ack{Segment: res.Segment, Offset: res.FirstOffset + uint64(i)}, nil)
		}
	}
	p.mu.Lock()
	p.mu.unacked -= len(batch)
	if err != nil && p.mu.failed == nil {
		p.mu.failed = err
	}
	close(p.mu.acked)
	p.mu.acked = make(chan struct{})
	p.mu.Unlock()
	for range batch {
		<-p.tokens
	}
}

// Flush sends every queued event at once and waits until all events sent
// so far are acknowledged or have failed. It returns the first failure
// since the previous Flush, if any; each event's own outcome is in its
// future.
func (p *Producer) Flush(ctx context.Context) error {
	p.mu.Lock()
	p.mu.flushing++
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.mu.flushing--
		p.mu.Unlock()
	}()
	p.wakeAll()
	for {
		p.mu.Lock()
		if p.mu.unacked == 0 {
			err := p.mu.failed
			p.mu.failed = nil
			p.mu.Unlock()
			return err
		}
		acked := p.mu.acked
		p.mu.Unlock()
		select {
		case <-acked:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Close sends what is queued, waits for it to be acknowledged, and stops
// the producer. When ctx ends first, in-flight appends are abandoned and
// their futures fail with ErrProducerClosed (their events may or may not
// have been stored). Close returns the first failure since the last Flush.
func (p *Producer) Close(ctx context.Context) error {
	p.mu.Lock()
	already := p.mu.closed
	p.mu.closed = true
	p.mu.Unlock()
	if already {
		return nil
	}
	p.wakeAll()
	done := make(chan struct{})
	go func() {
		p.wg.Wait()
		close(done)
	}()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
		p.stop()
		<-done
	}
	p.stop()
	// Queues abandoned by an abort still hold events; fail them.
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, q := range p.mu.queues {
		for _, r := range q.pending {
			r.fut.resolve(Ack{}, ErrProducerClosed)
		}
		q.pending = nil
	}
	if err == nil {
		err = p.mu.failed
	}
	return err
}
