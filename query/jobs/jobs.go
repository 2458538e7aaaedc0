// Package jobs runs queries (package query) as jobs: a submitted query
// gets an opaque handle at once and runs in the background, with its
// progress readable while it runs, its rows appended to a result stream
// (so that a large result is a file every head can serve), an optional
// signed webhook on completion, and its record kept in the catalog.
//
// A job's record is written when it is submitted and when it ends, each
// time with one synced catalog commit. A record still marked running
// when the Manager opens belongs to a server that stopped mid-job: it is
// marked failed with a message that says so, never left running.
package jobs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/silt-io/silt/acl"
	"github.com/silt-io/silt/core"
	"github.com/silt-io/silt/core/names"
	"github.com/silt-io/silt/query"
)

// Errors of the package; the API maps them to statuses.
var (
	ErrNotFound = errors.New("jobs: no such query")
	// ErrBusy means the configured number of queries already run; the
	// API answers 429 with Retry-After.
	ErrBusy    = errors.New("jobs: too many queries running")
	ErrInvalid = errors.New("jobs: invalid argument")
	// ErrNotDone refuses the results of a query that has not succeeded.
	ErrNotDone = errors.New("jobs: query not done")
	ErrClosed  = errors.New("jobs: shutting down")
)

// Config configures query jobs.
type Config struct {
	// MaxConcurrent is how many queries may run at once; a submission
	// beyond it is refused with ErrBusy.
	MaxConcurrent int `koanf:"max_concurrent" help:"queries that may run at once; more are refused with 429 and Retry-After"`
	// ResultTenant holds the result streams, query-<handle>. It is created
	// when missing.
	ResultTenant string `koanf:"result_tenant" help:"tenant of the result streams (query-<handle>); created when missing"`
	// WebhookAttempts and WebhookBackoff: a completion webhook is tried
	// this many times, waiting WebhookBackoff, then twice that, and so
	// on (at most a minute) between tries.
	WebhookAttempts int           `koanf:"webhook_attempts" help:"tries of a completion webhook before giving up"`
	WebhookBackoff  time.Duration `koanf:"webhook_backoff" help:"wait before the second try of a webhook; it doubles for each further try, to at most a minute"`
	WebhookTimeout  time.Duration `koanf:"webhook_timeout" help:"how long one webhook request may take"`
	// ContinuousGrace and ContinuousPoll: a continuous query emits a
	// window once the clock is ContinuousGrace past its end, and looks
	// for new events every ContinuousPoll.
	ContinuousGrace time.Duration `koanf:"continuous_grace" help:"how long after a window's end a continuous query waits for events still being appended before it emits the window"`
	ContinuousPoll  time.Duration `koanf:"continuous_poll" help:"how often a continuous query looks for new events"`
	// Limits bound each query's memory (see query.Limits).
	Limits query.Limits `koanf:"limits"`
}

// DefaultConfig returns the embedded defaults.
func DefaultConfig() Config {
	return Config{
		MaxConcurrent:   4,
		ResultTenant:    "silt-system",
		WebhookAttempts: 5,
		WebhookBackoff:  time.Second,
		WebhookTimeout:  10 * time.Second,
		ContinuousGrace: 2 * time.Second,
		ContinuousPoll:  time.Second,
		Limits:          query.DefaultLimits(),
	}
}

// Validate reports the first problem with c.
func (c Config) Validate() error {
	if c.MaxConcurrent <= 0 {
		return fmt.Errorf("query: max_concurrent must be positive, got %d", c.MaxConcurrent)
	}
	if err := names.Tenant(c.ResultTenant); err != nil {
		return fmt.Errorf("query: result_tenant: %w", err)
	}
	if c.WebhookAttempts <= 0 {
		return fmt.Errorf("query: webhook_attempts must be positive, got %d", c.WebhookAttempts)
	}
	if c.WebhookBackoff <= 0 || c.WebhookTimeout <= 0 {
		return errors.New("query: webhook_backoff and webhook_timeout must be positive")
	}
	if c.ContinuousGrace < 0 || c.ContinuousPoll <= 0 {
		return errors.New("query: continuous_grace must not be negative and continuous_poll must be positive")
	}
	return c.Limits.Validate()
}

// State is where a job is in its life.
type State string

// The states. Running is the only one that changes.
const (
	Running   State = "running"
	Succeeded State = "succeeded"
	Failed    State = "failed"
	Cancelled State = "cancelled"
)

// Progress is a job's scan so far.
type Progress struct {
	EventsScanned int64   `json:"events_scanned"`
	EventsTotal   int64   `json:"events_total"`
	BytesScanned  int64   `json:"bytes_scanned"`
	BytesTotal    int64   `json:"bytes_total"`
	Percent       float64 `json:"percent"`
	// ETASeconds estimates the time left from the pace so far; absent
	// before the first event and after the end.
	ETASeconds *float64 `json:"eta_seconds,omitempty"`
}

// Job is what the API shows of a job.
type Job struct {
	Handle    string `json:"handle"`
	Principal string `json:"principal"`
	Query     string `json:"query"`
	// Packaged, Version and Params say which packaged query the job
	// ran (Query is then its text with the parameters bound).
	Packaged string            `json:"packaged,omitempty"`
	Version  int               `json:"version,omitempty"`
	Params   map[string]string `json:"params,omitempty"`
	// Continuous jobs run until cancelled, appending each closed window.
	Continuous bool      `json:"continuous,omitempty"`
	State      State     `json:"state"`
	Submitted  time.Time `json:"submitted"`
	Finished   time.Time `json:"finished,omitzero"`
	Progress   Progress  `json:"progress"`
	// Rows and Columns describe the result once it is complete.
	Rows     int64    `json:"rows"`
	Columns  []string `json:"columns,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
	Error    string   `json:"error,omitempty"`
	// ResultTenant/ResultStream hold the rows as JSON lines.
	ResultTenant string `json:"result_tenant"`
	ResultStream string `json:"result_stream"`
	// Node is the cluster node that runs the job ("" on a single node).
	Node string `json:"node,omitempty"`
	// Webhook is the completion callback's URL and what became of it.
	Webhook       string `json:"webhook,omitempty"`
	WebhookStatus string `json:"webhook_status,omitempty"`
}

// Webhook is a completion callback: the job's JSON is POSTed to URL,
// signed with HMAC-SHA256 under Secret.
type Webhook struct {
	URL    string
	Secret string
}

// record is the catalog form of a job; V lets a later version change it.
type record struct {
	V int `json:"v"`
	Job
	WebhookSecret string `json:"webhook_secret,omitempty"`
}

const keyJob = "queries/j/"

// KV is the part of the catalog jobs use (core/catalog.Catalog).
type KV interface {
	Get(key []byte) ([]byte, bool, error)
	Scan(prefix, start []byte, fn func(key, value []byte) error) error
	Commit(set map[string][]byte, del []string) error
}

// Store is what jobs need of core.Store: the result stream.
type Store interface {
	CreateTenant(ctx context.Context, name string, metadata map[string]string) (core.Tenant, error)
	CreateStream(ctx context.Context, tenant, name string, cfg core.StreamConfig) (core.Stream, error)
	Append(ctx context.Context, req core.AppendRequest) (core.AppendResult, error)
	Limits() core.Limits
}

// Granter gives the submitting principal read access to its result
// stream (acl.Store); nil when the server keeps no principals.
type Granter interface {
	AddGrant(principal string, a acl.Action, resource string) (acl.Grant, error)
}

// Manager runs jobs. Close it to stop them.
type Manager struct {
	cfg     Config
	store   Store
	kv      KV
	granter Granter
	log     *zap.Logger
	met     *metrics
	// node is this node's id in a cluster, whose nodes share the
	// catalog: each marks only its own leftover jobs interrupted.
	node string
	now  func() time.Time
	// sleep waits between webhook tries; tests shorten it.
	sleep func(ctx context.Context, d time.Duration) error

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// defineMu orders definitions, so that two of one name do not take
	// the same version.
	defineMu sync.Mutex

	mu struct {
		sync.Mutex
		running map[string]*run
		closed  bool
	}
}

// run is a running job's live state.
type run struct {
	job    Job
	prog   *query.Progress
	start  time.Time
	cancel context.CancelCauseFunc
	hook   *Webhook
	done   chan struct{} // closed when the job has left the running set
}

var errCancelled = errors.New("cancelled by request")

// Open starts a Manager, marking failed every job that a previous run of
// the server left running.
// Its metrics are registered on reg (none when nil). node is the cluster
// node's id, "" on a single node.
func Open(cfg Config, store Store, kv KV, granter Granter, log *zap.Logger, reg prometheus.Registerer, node string) (*Manager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = zap.NewNop()
	}
	m := &Manager{cfg: cfg, store: store, kv: kv, granter: granter, log: log, now: time.Now, sleep: sleepCtx, node: node}
	m.mu.running = map[string]*run{}
	met, err := newMetrics(m, reg)
	if err != nil {
		return nil, err
	}
	m.met = met
	m.ctx, m.cancel = context.WithCancel(context.Background())
	if err := m.interruptLeftovers(); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *Manager) interruptLeftovers() error {
	set := map[string][]byte{}
	err := m.kv.Scan([]byte(keyJob), nil, func(k, v []byte) error {
		r, err := decode(v)
		if err != nil {
			return fmt.Errorf("query job %s: %w", k, err)
		}
		if r.State == Running && r.Node == m.node {
			r.State = Failed
			r.Error = "interrupted: the server stopped while the query ran; its result stream holds the rows appended before then; submit the query again"
			r.Finished = m.now().UTC()
			set[string(k)] = encode(r)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(set) > 0 {
		m.log.Warn("queries interrupted by a restart marked failed", zap.Int("count", len(set)))
		return m.kv.Commit(set, nil)
	}
	return nil
}

func encode(r record) []byte {
	r.V = 1
	b, err := json.Marshal(r)
	if err != nil {
		panic(fmt.Sprintf("jobs: encode record: %v", err)) // plain data
	}
	return b
}

func decode(b []byte) (record, error) {
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("decode query job: %w", err)
	}
	if r.V != 1 {
		return r, fmt.Errorf("decode query job: unknown version %d", r.V)
	}
	return r, nil
}

// Limits returns the limits queries are parsed with.
func (m *Manager) Limits() query.Limits { return m.cfg.Limits }

// ResultTenant is the tenant of the result streams.
func (m *Manager) ResultTenant() string { return m.cfg.ResultTenant }

// ResultStream is the result stream of handle.
func ResultStream(handle string) string { return "query-" + handle }

// ValidHandle reports whether h could be a handle, so that the API can
// refuse anything else before it becomes a stream name.
func ValidHandle(h string) bool {
	if len(h) != 32 {
		return false
	}
	_, err := hex.DecodeString(h)
	return err == nil && strings.ToLower(h) == h
}

// Options are a submission's optional parts.
type Options struct {
	Webhook *Webhook
	// Packaged names the packaged query, its version and the parameter
	// values that q was bound from, for the job's record.
	Packaged string
	Version  int
	Params   map[string]string
	// Continuous runs the query until it is cancelled (see
	// query.CheckContinuous).
	Continuous bool
}

// Submit starts q for principal, reading through src, and returns the job
// as it starts. The caller has checked that principal may read every
// stream of q.Streams().
func (m *Manager) Submit(principal string, q *query.Query, src query.Source, opt Options) (Job, error) {
	hook := opt.Webhook
	if opt.Continuous {
		if err := q.CheckContinuous(); err != nil {
			return Job{}, err
		}
	}
	if hook != nil {
		u, err := url.Parse(hook.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return Job{}, fmt.Errorf("%w: webhook url %q: want an http or https URL", ErrInvalid, hook.URL)
		}
	}
	var b [16]byte
	rand.Read(b[:])
	handle := hex.EncodeToString(b[:])
	r := &run{
		job: Job{Handle: handle, Principal: principal, Query: q.Text(), State: Running, Submitted: m.now().UTC(),
			Packaged: opt.Packaged, Version: opt.Version, Params: opt.Params, Node: m.node, Continuous: opt.Continuous,
			ResultTenant: m.cfg.ResultTenant, ResultStream: ResultStream(handle)},
		prog:  &query.Progress{},
		start: m.now(),
		hook:  hook,
		done:  make(chan struct{}),
	}
	if hook != nil {
		r.job.Webhook = hook.URL
	}
	ctx, cancel := context.WithCancelCause(m.ctx)
	r.cancel = cancel
	m.mu.Lock()
	if m.mu.closed {
		m.mu.Unlock()
		cancel(nil)
		return Job{}, ErrClosed
	}
	if len(m.mu.running) >= m.cfg.MaxConcurrent {
		m.mu.Unlock()
		cancel(nil)
		m.met.refused.Inc()
		return Job{}, fmt.Errorf("%w: %d queries are running, the most this server allows (query.max_concurrent); retry later", ErrBusy, m.cfg.MaxConcurrent)
	}
	m.mu.running[handle] = r
	// Added under the lock that Close takes first, so that Close waits
	// for every job it did not refuse.
	m.wg.Add(1)
	m.mu.Unlock()

	err := m.createResult(ctx, r)
	if err == nil {
		err = m.save(r, hook)
	}
	if err != nil {
		m.mu.Lock()
		delete(m.mu.running, handle)
		m.mu.Unlock()
		cancel(nil)
		m.wg.Done()
		return Job{}, err
	}
	go func() {
		defer m.wg.Done()
		defer cancel(nil)
		m.execute(ctx, r, q, src)
	}()
	return r.job, nil
}

func (m *Manager) save(r *run, hook *Webhook) error {
	rec := record{Job: r.job}
	if hook != nil {
		rec.WebhookSecret = hook.Secret
	}
	if err := m.kv.Commit(map[string][]byte{keyJob + r.job.Handle: encode(rec)}, nil); err != nil {
		return fmt.Errorf("save query job %s: %w", r.job.Handle, err)
	}
	return nil
}

// execute runs the job to its end and records how it ended.
func (m *Manager) execute(ctx context.Context, r *run, q *query.Query, src query.Source) {
	res, err := m.runQuery(ctx, r, q, src)
	m.mu.Lock()
	job := &r.job
	job.Finished = m.now().UTC()
	job.Rows, job.Columns, job.Warnings = res.Rows, res.Columns, res.Warnings
	job.Progress = progressOf(r.prog, r.start, m.now(), true)
	switch {
	case err == nil:
		job.State = Succeeded
	case errors.Is(context.Cause(ctx), errCancelled):
		job.State, job.Error = Cancelled, "cancelled by request"
	case ctx.Err() != nil:
		job.State, job.Error = Failed, "interrupted: the server shut down while the query ran; submit it again"
	default:
		job.State, job.Error = Failed, err.Error()
	}
	final := *job
	m.mu.Unlock()

	// The record is written before the job leaves the running set, so that
	// a Get in between finds one or the other.
	if serr := m.save(r, r.hook); serr != nil {
		m.log.Error("query job end not recorded", zap.String("handle", final.Handle), zap.Error(serr))
	}
	m.mu.Lock()
	delete(m.mu.running, final.Handle)
	m.mu.Unlock()
	close(r.done)
	m.met.ended.WithLabelValues(string(final.State)).Inc()
	m.met.scanned.Add(float64(final.Progress.EventsScanned))
	m.met.rowsOut.Add(float64(final.Rows))
	m.log.Info("query finished", zap.String("handle", final.Handle), zap.String("principal", final.Principal),
		zap.String("state", string(final.State)), zap.Int64("rows", final.Rows), zap.Int64("events_scanned", final.Progress.EventsScanned))
	if r.hook != nil {
		status := m.deliver(r.hook, final)
		if rec, ok, err := m.load(final.Handle); err == nil && ok {
			rec.WebhookStatus = status
			if err := m.kv.Commit(map[string][]byte{keyJob + final.Handle: encode(rec)}, nil); err != nil {
				m.log.Warn("webhook status not recorded", zap.String("handle", final.Handle), zap.Error(err))
			}
		}
	}
}

// createResult makes the job's result stream and lets the submitter read
// it, before the job is acknowledged: the submitter's first GET already
// needs that grant.
func (m *Manager) createResult(ctx context.Context, r *run) error {
	tenant, stream := r.job.ResultTenant, r.job.ResultStream
	if _, err := m.store.CreateTenant(ctx, tenant, map[string]string{"purpose": "query results"}); err != nil && !errors.Is(err, core.ErrExists) {
		return fmt.Errorf("create result tenant %s: %w", tenant, err)
	}
	if _, err := m.store.CreateStream(ctx, tenant, stream, core.StreamConfig{Encoding: core.EncodingLines, Segments: 1,
		Metadata: map[string]string{"query-handle": r.job.Handle, "principal": r.job.Principal}}); err != nil {
		return fmt.Errorf("create result stream %s/%s: %w", tenant, stream, err)
	}
	if m.granter != nil && r.job.Principal != "" && r.job.Principal != acl.Anonymous.Name {
		if _, err := m.granter.AddGrant(r.job.Principal, acl.Read, tenant+"/"+stream); err != nil && !errors.Is(err, acl.ErrExists) {
			return fmt.Errorf("grant read on the result stream: %w", err)
		}
	}
	return nil
}

// runQuery appends the rows to the result stream in batches, each
// acknowledged once durable.
func (m *Manager) runQuery(ctx context.Context, r *run, q *query.Query, src query.Source) (query.Result, error) {
	tenant, stream := r.job.ResultTenant, r.job.ResultStream
	lim := m.store.Limits()
	maxBytes, maxEvents := lim.MaxBatchBytes/2, lim.MaxBatchEvents
	var batch [][]byte
	size := 0
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		_, err := m.store.Append(ctx, core.AppendRequest{Tenant: tenant, Stream: stream, Segment: "0", Events: batch})
		batch, size = batch[:0], 0
		if err != nil {
			return fmt.Errorf("append results: %w", err)
		}
		return nil
	}
	var rows int64
	ro := query.RunOptions{Progress: r.prog}
	if r.job.Continuous {
		ro.Continuous, ro.Grace, ro.Poll, ro.Idle = true, m.cfg.ContinuousGrace, m.cfg.ContinuousPoll, flush
	}
	res, err := q.Run(ctx, src, ro, func(line []byte) error {
		rows++
		if len(line) > lim.MaxEventBytes {
			return fmt.Errorf("result row %d is %d bytes, more than the largest event a stream takes (%d, core.limits.max_event_bytes); project fewer fields", rows, len(line), lim.MaxEventBytes)
		}
		if size+len(line) > maxBytes || len(batch) >= maxEvents {
			if err := flush(); err != nil {
				return err
			}
		}
		batch = append(batch, append([]byte(nil), line...))
		size += len(line)
		return nil
	})
	if err == nil {
		err = flush()
	}
	return res, err
}

// progressOf turns a run's counters into what the API shows.
func progressOf(p *query.Progress, start, now time.Time, finished bool) Progress {
	out := Progress{
		EventsScanned: p.EventsScanned.Load(), EventsTotal: p.EventsTotal.Load(),
		BytesScanned: p.BytesScanned.Load(), BytesTotal: p.BytesTotal.Load(),
	}
	f := p.Fraction()
	if finished {
		f = 1
	}
	out.Percent = float64(int(f*1000)) / 10
	if out.BytesTotal < out.BytesScanned {
		out.BytesTotal = out.BytesScanned
	}
	if !finished && f > 0 {
		el := now.Sub(start).Seconds()
		eta := float64(int(el*(1-f)/f*10)) / 10
		out.ETASeconds = &eta
	}
	return out
}

// Get returns the job with handle, live while it runs.
func (m *Manager) Get(handle string) (Job, error) {
	m.mu.Lock()
	if r, ok := m.mu.running[handle]; ok {
		j := r.job
		if j.State == Running {
			j.Progress = progressOf(r.prog, r.start, m.now(), false)
		}
		m.mu.Unlock()
		return j, nil
	}
	m.mu.Unlock()
	rec, ok, err := m.load(handle)
	if err != nil {
		return Job{}, err
	}
	if !ok {
		return Job{}, fmt.Errorf("%w: %s", ErrNotFound, handle)
	}
	return rec.Job, nil
}

func (m *Manager) load(handle string) (record, bool, error) {
	v, ok, err := m.kv.Get([]byte(keyJob + handle))
	if err != nil || !ok {
		return record{}, ok, err
	}
	r, err := decode(v)
	return r, err == nil, err
}

// List returns the jobs of principal (every job when all is set), newest
// first.
func (m *Manager) List(principal string, all bool) ([]Job, error) {
	live := map[string]Job{}
	m.mu.Lock()
	for h, r := range m.mu.running {
		j := r.job
		j.Progress = progressOf(r.prog, r.start, m.now(), false)
		live[h] = j
	}
	m.mu.Unlock()
	var out []Job
	err := m.kv.Scan([]byte(keyJob), nil, func(k, v []byte) error {
		r, err := decode(v)
		if err != nil {
			return err
		}
		if !all && r.Principal != principal {
			return nil
		}
		if j, ok := live[r.Handle]; ok {
			out = append(out, j)
		} else {
			out = append(out, r.Job)
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Submitted.After(out[j].Submitted) })
	return out, err
}

// Cancel stops a running job. A job that already ended is returned as it
// is.
func (m *Manager) Cancel(handle string) (Job, error) {
	m.mu.Lock()
	r, ok := m.mu.running[handle]
	m.mu.Unlock()
	if ok && r.cancel != nil {
		r.cancel(errCancelled)
		<-r.done
	}
	return m.Get(handle)
}

// Running is the number of jobs running now.
func (m *Manager) Running() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.mu.running)
}

// Close stops every running job, records it as interrupted, and waits.
func (m *Manager) Close() error {
	m.mu.Lock()
	m.mu.closed = true
	m.mu.Unlock()
	m.cancel()
	m.wg.Wait()
	return nil
}
