package introspect

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/silt-io/silt/core"
	"github.com/silt-io/silt/core/names"
)

// Store is what the recorder needs of the segment engine (core.Store).
type Store interface {
	GetTenant(ctx context.Context, name string) (core.Tenant, error)
	CreateTenant(ctx context.Context, name string, metadata map[string]string) (core.Tenant, error)
	GetStream(ctx context.Context, tenant, name string) (core.Stream, error)
	CreateStream(ctx context.Context, tenant, name string, cfg core.StreamConfig) (core.Stream, error)
	DeleteStream(ctx context.Context, tenant, name string) error
	Append(ctx context.Context, req core.AppendRequest) (core.AppendResult, error)
	Limits() core.Limits
}

// Options are the recorder's collaborators.
type Options struct {
	// Node names this server in every event (the cluster node id; empty
	// on a single node).
	Node   string
	Logger *zap.Logger
	// Registerer gets the recorder's own series (nil: not exported).
	Registerer prometheus.Registerer
	// Gatherer is where metric snapshots come from (nil: none).
	Gatherer prometheus.Gatherer
}

// Recorder queues events and writes them to the system streams. A nil
// *Recorder records nothing, so heads hold one whether or not
// introspection is on.
type Recorder struct {
	cfg    Config
	store  Store
	node   string
	log    *zap.Logger
	gather prometheus.Gatherer

	reader Reader // for Health (UseReader)
	lister Lister

	q       chan Event
	flushes chan chan struct{}

	// Owned by run: when a failed write was last logged, and the events
	// failed since.
	lastWarn time.Time
	unlogged int
	// arena is the encoding buffer, kept between batches.
	arena []byte

	dropped      *prometheus.CounterVec
	droppedFull  prometheus.Counter
	droppedWrite prometheus.Counter
	written      prometheus.Counter

	// writing is held (read) by the writer for each batch and (write) by
	// Forget, so that a batch that looked a tenant up before its deletion
	// has finished before the tenant's streams go, and the next batch
	// looks it up again.
	writing sync.RWMutex

	mu struct {
		sync.Mutex
		// tenants that exist, as last looked up; a deleted tenant is
		// forgotten (Forget) so that its name goes server-wide until it
		// is created again.
		tenants map[string]bool
		// streams known to exist in the system tenant.
		streams map[string]bool
	}

	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

// New makes sure the system tenant exists and starts the writer.
func New(cfg Config, st Store, o Options) (*Recorder, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	ctx := context.Background()
	if _, err := st.GetTenant(ctx, names.SystemTenant); errors.Is(err, core.ErrNotFound) {
		if _, err := st.CreateTenant(ctx, names.SystemTenant, map[string]string{"purpose": "silt telemetry (docs/introspection.md)"}); err != nil && !errors.Is(err, core.ErrExists) {
			return nil, fmt.Errorf("introspect: create tenant %s: %w", names.SystemTenant, err)
		}
	} else if err != nil {
		return nil, fmt.Errorf("introspect: tenant %s: %w", names.SystemTenant, err)
	}
	r := &Recorder{
		cfg: cfg, store: st, node: o.Node, log: o.Logger, gather: o.Gatherer,
		q:       make(chan Event, cfg.QueueSize),
		flushes: make(chan chan struct{}),
		done:    make(chan struct{}),
	}
	r.mu.tenants, r.mu.streams = map[string]bool{}, map[string]bool{}
	if err := r.registerMetrics(o.Registerer); err != nil {
		return nil, err
	}
	ctx, r.cancel = context.WithCancel(ctx)
	go r.run(ctx)
	return r, nil
}

func (r *Recorder) registerMetrics(reg prometheus.Registerer) error {
	r.dropped = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "silt_introspect_events_dropped_total",
		Help: "Introspection events not stored: queue_full (the writer fell behind; requests never wait for it) or write_failed (the append to the system stream failed).",
	}, []string{"reason"})
	r.written = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "silt_introspect_events_written_total",
		Help: "Introspection events appended to the system streams of tenant silt-system.",
	})
	queued := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "silt_introspect_queue_events",
		Help: "Introspection events waiting in memory to be written (at most introspect.queue_size).",
	}, func() float64 { return float64(len(r.q)) })
	r.droppedFull, r.droppedWrite = r.dropped.WithLabelValues("queue_full"), r.dropped.WithLabelValues("write_failed")
	if reg == nil {
		return nil
	}
	for _, c := range []prometheus.Collector{r.dropped, r.written, queued} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("introspect: register metrics: %w", err)
		}
	}
	return nil
}

// Record queues e; it never blocks. Time defaults to now and Node to the
// recorder's node. When the queue is full the event is dropped and
// counted.
func (r *Recorder) Record(e Event) {
	if r == nil {
		return
	}
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	e.Time = e.Time.UTC()
	if e.Node == "" {
		e.Node = r.node
	}
	select {
	case r.q <- e:
	default:
		r.droppedFull.Inc()
	}
}

// Flush waits until every event queued before the call has been written
// (or dropped), or ctx ends.
func (r *Recorder) Flush(ctx context.Context) error {
	if r == nil {
		return nil
	}
	done := make(chan struct{})
	select {
	case r.flushes <- done:
	case <-r.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close writes what is queued and stops the writer.
func (r *Recorder) Close() error {
	if r == nil {
		return nil
	}
	r.once.Do(func() {
		r.cancel()
		<-r.done
	})
	return nil
}

// Forget deletes tenant's system streams and forgets that it exists: the
// API calls it when a tenant is deleted, so that a tenant created again
// under the name does not show its admins the old one's events.
func (r *Recorder) Forget(ctx context.Context, tenant string) {
	if r == nil || tenant == names.SystemTenant {
		return
	}
	r.writing.Lock()
	defer r.writing.Unlock()
	r.mu.Lock()
	delete(r.mu.tenants, tenant)
	r.mu.Unlock()
	for _, kind := range Kinds {
		name := StreamName(tenant, kind)
		r.mu.Lock()
		delete(r.mu.streams, name)
		r.mu.Unlock()
		if err := r.store.DeleteStream(ctx, names.SystemTenant, name); err != nil && !errors.Is(err, core.ErrNotFound) {
			r.log.Warn("introspect: delete the system stream of a deleted tenant", zap.String("stream", name), zap.Error(err))
		}
	}
}

// run is the one writer: it collects events into a batch until the batch
// is full or the flush interval has passed, then writes it.
func (r *Recorder) run(ctx context.Context) {
	defer close(r.done)
	batch := make([]Event, 0, r.cfg.BatchEvents)
	flush := time.NewTicker(r.cfg.FlushInterval)
	defer flush.Stop()
	var snap <-chan time.Time
	if r.cfg.SnapshotInterval > 0 && r.gather != nil {
		t := time.NewTicker(r.cfg.SnapshotInterval)
		defer t.Stop()
		snap = t.C
	}
	for {
		select {
		case e := <-r.q:
			batch = append(batch, e)
			if len(batch) >= r.cfg.BatchEvents {
				batch = r.write(ctx, batch)
			}
		case <-flush.C:
			batch = r.write(ctx, batch)
		case done := <-r.flushes:
			batch = r.drain(ctx, batch)
			close(done)
		case <-snap:
			r.Record(r.snapshot())
		case <-ctx.Done():
			// Stopping: write what is queued, with a context of its own
			// (the store is closed after the recorder).
			wctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			r.drain(wctx, batch)
			cancel()
			return
		}
	}
}

// drain writes batch and everything queued now.
func (r *Recorder) drain(ctx context.Context, batch []Event) []Event {
	for n := len(r.q); n > 0; n-- {
		batch = append(batch, <-r.q)
		if len(batch) >= r.cfg.BatchEvents {
			batch = r.write(ctx, batch)
		}
	}
	return r.write(ctx, batch)
}

// write appends batch's events, one append per stream (split where the
// store's batch limits demand), and returns batch emptied for reuse.
func (r *Recorder) write(ctx context.Context, batch []Event) []Event {
	if len(batch) == 0 {
		return batch
	}
	r.writing.RLock()
	defer r.writing.RUnlock()
	// Every event is encoded into one buffer, sliced once it has
	// stopped growing.
	type span struct {
		stream     string
		start, end int
	}
	spans := make([]span, 0, len(batch))
	arena := r.arena[:0]
	for i := range batch {
		e := &batch[i]
		start := len(arena)
		var err error
		if arena, err = encode(arena, e); err != nil {
			arena = arena[:start]
			r.droppedWrite.Inc()
			continue
		}
		spans = append(spans, span{StreamName(r.tenantStream(ctx, e.tenantOf()), e.Kind), start, len(arena)})
	}
	r.arena = arena
	byStream := map[string][][]byte{}
	for _, sp := range spans {
		byStream[sp.stream] = append(byStream[sp.stream], arena[sp.start:sp.end:sp.end])
	}
	streams := make([]string, 0, len(byStream))
	for s := range byStream {
		streams = append(streams, s)
	}
	sort.Strings(streams)
	lim := r.store.Limits()
	for _, s := range streams {
		evs := byStream[s]
		if err := r.ensureStream(ctx, s); err != nil {
			r.failed(s, len(evs), err)
			continue
		}
		for len(evs) > 0 {
			n, size := 0, 0
			for n < len(evs) && n < lim.MaxBatchEvents && size+len(evs[n])+1 <= lim.MaxBatchBytes {
				size += len(evs[n]) + 1
				n++
			}
			if n == 0 {
				// One event over the limit: a snapshot with many series.
				r.failed(s, 1, fmt.Errorf("event of %d bytes is over core.limits", len(evs[0])))
				evs = evs[1:]
				continue
			}
			_, err := r.store.Append(ctx, core.AppendRequest{Tenant: names.SystemTenant, Stream: s, Events: evs[:n]})
			if err != nil {
				if errors.Is(err, core.ErrNotFound) {
					r.mu.Lock()
					delete(r.mu.streams, s)
					r.mu.Unlock()
				}
				r.failed(s, n, err)
			} else {
				r.written.Add(float64(n))
			}
			evs = evs[n:]
		}
	}
	clear(batch)
	return batch[:0]
}

// failed counts events that could not be stored and logs why, at most
// once a minute (a store refusing every append would otherwise log at
// every flush).
func (r *Recorder) failed(stream string, n int, err error) {
	r.droppedWrite.Add(float64(n))
	r.unlogged += n
	if now := time.Now(); now.Sub(r.lastWarn) >= time.Minute {
		r.log.Warn("introspect: events not stored", zap.String("stream", stream), zap.Int("events_since_last_warning", r.unlogged), zap.Error(err))
		r.lastWarn, r.unlogged = now, 0
	}
}

// tenantStream is the tenant whose streams get tenant's events: tenant if
// it exists, else "" (server-wide), so that requests naming made-up
// tenants cannot make streams.
func (r *Recorder) tenantStream(ctx context.Context, tenant string) string {
	if tenant == "" || names.Tenant(tenant) != nil {
		return ""
	}
	r.mu.Lock()
	known := r.mu.tenants[tenant]
	r.mu.Unlock()
	if known {
		return tenant
	}
	if _, err := r.store.GetTenant(ctx, tenant); err != nil {
		return ""
	}
	r.mu.Lock()
	r.mu.tenants[tenant] = true
	r.mu.Unlock()
	return tenant
}

// ensureStream creates the system stream name unless it is known to
// exist: one segment, so that its events are in time order, with the
// configured retention.
func (r *Recorder) ensureStream(ctx context.Context, name string) error {
	r.mu.Lock()
	known := r.mu.streams[name]
	r.mu.Unlock()
	if known {
		return nil
	}
	cfg := core.StreamConfig{
		Encoding:  core.EncodingLines,
		Segments:  1,
		Metadata:  map[string]string{"silt.introspect": "true"},
		Retention: core.Retention{MaxAge: r.cfg.Retention, MaxBytes: r.cfg.RetentionBytes},
	}
	if _, err := r.store.CreateStream(ctx, names.SystemTenant, name, cfg); err != nil && !errors.Is(err, core.ErrExists) {
		return err
	}
	r.mu.Lock()
	r.mu.streams[name] = true
	r.mu.Unlock()
	return nil
}
