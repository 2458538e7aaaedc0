package tiering

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/silt-io/silt/core"
)

// clock is a test clock running at a settable offset from real time,
// since core stamps events with the real time of their append.
type clock struct {
	mu  sync.Mutex
	off time.Duration
	// fixed, if set, stops the clock there.
	fixed time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.fixed.IsZero() {
		return c.fixed
	}
	return time.Now().Add(c.off)
}

// Set stops the clock at at.
func (c *clock) Set(at time.Time) {
	c.mu.Lock()
	c.fixed = at
	c.mu.Unlock()
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.off += d
	c.mu.Unlock()
}

func testConfig() Config {
	cfg := DefaultConfig()
	cfg.MaxChunkBytes = 1000
	cfg.MaxBacklogBytes = 4000
	cfg.Retry.Initial = 100 * time.Millisecond
	cfg.Retry.Max = 400 * time.Millisecond
	return cfg
}

func openStore(t *testing.T, dir string) *core.Store {
	t.Helper()
	return openStoreWith(t, dir, nil)
}

// openStoreWith is openStore with changes to the test's core config.
func openStoreWith(t *testing.T, dir string, change func(*core.Config)) *core.Store {
	t.Helper()
	cfg := core.DefaultConfig()
	cfg.Dir = dir
	cfg.SegmentFileBytes = 4096
	if change != nil {
		change(&cfg)
	}
	s, err := core.Open(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// env is a store, a backend and a manually driven Tierer over them.
type env struct {
	t     *testing.T
	dir   string
	store *core.Store
	be    Backend
	fs    *FSBackend
	tr    *Tierer
	clock *clock
	cfg   Config
	// storeCfg and statDisk, if set, change the store's config and
	// measure tier 1's filesystem.
	storeCfg func(*core.Config)
	statDisk func(dir string) (avail, total uint64, err error)
}

func newEnv(t *testing.T, cfg Config) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir(), clock: &clock{}, cfg: cfg}
	fs, err := OpenFS(e.dir + "/tier2")
	if err != nil {
		t.Fatal(err)
	}
	e.fs, e.be = fs, fs
	e.open()
	t.Cleanup(e.close)
	return e
}

func (e *env) open() {
	e.t.Helper()
	e.store = openStoreWith(e.t, e.dir+"/core", e.storeCfg)
	tr, err := New(e.cfg, e.store, e.be, Options{Now: e.clock.Now, manual: true, statDisk: e.statDisk})
	if err != nil {
		e.t.Fatal(err)
	}
	e.tr = tr
}

func (e *env) close() {
	if e.tr != nil {
		e.tr.Close()
		e.store.Close()
		e.tr = nil
	}
}

// restart simulates a process restart: nothing in memory survives.
func (e *env) restart() {
	e.close()
	e.open()
}

func (e *env) scan() { e.tr.scan(context.Background()) }

func (e *env) createStream(tenant, name string, enc core.Encoding, segments int) {
	e.t.Helper()
	e.createStreamConfig(tenant, name, core.StreamConfig{Encoding: enc, Segments: segments})
}

func (e *env) createStreamConfig(tenant, name string, cfg core.StreamConfig) {
	e.t.Helper()
	ctx := context.Background()
	if _, err := e.store.GetTenant(ctx, tenant); err != nil {
		if _, err := e.store.CreateTenant(ctx, tenant, nil); err != nil {
			e.t.Fatal(err)
		}
	}
	if _, err := e.store.CreateStream(ctx, tenant, name, cfg); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) append(tenant, stream, seg string, events ...string) {
	e.t.Helper()
	evs := make([][]byte, len(events))
	for i, s := range events {
		evs[i] = []byte(s)
	}
	if _, err := e.store.Append(context.Background(), core.AppendRequest{Tenant: tenant, Stream: stream, Segment: seg, Events: evs}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) chunks(tenant, stream, seg string) []ChunkRecord {
	e.t.Helper()
	var out []ChunkRecord
	if err := ScanChunks(e.store.Catalog(), tenant, stream, seg, func(c ChunkRecord) error {
		out = append(out, c)
		return nil
	}); err != nil {
		e.t.Fatal(err)
	}
	return out
}

// tier2Bytes concatenates a segment's chunks as stored in the backend,
// checking each against its record and the chain of offsets.
func (e *env) tier2Bytes(tenant, stream, seg string) []byte {
	e.t.Helper()
	var all []byte
	next := uint64(0)
	for _, c := range e.chunks(tenant, stream, seg) {
		if c.FirstOffset != next {
			e.t.Fatalf("segment %s: chunk %s starts at %d, want %d (gap or overlap)", seg, c.Name, c.FirstOffset, next)
		}
		next = c.LastOffset + 1
		o, err := e.be.Open(context.Background(), c.Key)
		if err != nil {
			e.t.Fatal(err)
		}
		data, err := io.ReadAll(io.NewSectionReader(o, 0, o.Size()))
		o.Close()
		if err != nil || int64(len(data)) != c.Size {
			e.t.Fatalf("read %s: %d bytes, %v; record says %d", c.Key, len(data), err, c.Size)
		}
		all = append(all, data...)
	}
	return all
}

func (e *env) segInfo(tenant, stream, seg string) core.SegmentInfo {
	e.t.Helper()
	st, err := e.store.GetStream(context.Background(), tenant, stream)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, s := range st.Segments {
		if s.ID == seg {
			return s
		}
	}
	e.t.Fatalf("no segment %s", seg)
	return core.SegmentInfo{}
}

func encodeAll(enc core.Encoding, events []string) []byte {
	var out []byte
	for _, s := range events {
		out = core.Encode(enc, out, []byte(s))
	}
	return out
}

func events(prefix string, n, size int) []string {
	out := make([]string, n)
	for i := range out {
		s := fmt.Sprintf("%s-%05d-", prefix, i)
		out[i] = s + string(bytes.Repeat([]byte{'x'}, max(size-len(s), 0)))
	}
	return out
}

// faultyBackend wraps a backend and injects failures into uploads.
type faultyBackend struct {
	Backend
	mu sync.Mutex
	// failCreate / failFinish fail that many upcoming calls.
	failCreate, failFinish int
	// finishThenFail finishes the upload but reports an error, as when an
	// acknowledgement is lost.
	finishThenFail int
	calls          int
}

var errInjected = errors.New("injected tier-2 fault")

func (f *faultyBackend) take(n *int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if *n > 0 {
		*n--
		return true
	}
	return false
}

func (f *faultyBackend) set(fn func(*faultyBackend)) {
	f.mu.Lock()
	fn(f)
	f.mu.Unlock()
}

func (f *faultyBackend) Create(ctx context.Context, key string) (Writer, error) {
	if strings.HasSuffix(key, "/"+ManifestName) {
		// Faults are injected into chunk uploads only, so that a test's
		// count of failures is a count of chunk attempts.
		return f.Backend.Create(ctx, key)
	}
	if f.take(&f.failCreate) {
		return nil, errInjected
	}
	w, err := f.Backend.Create(ctx, key)
	if err != nil {
		return nil, err
	}
	return &faultyWriter{Writer: w, f: f}, nil
}

type faultyWriter struct {
	Writer
	f *faultyBackend
}

func (w *faultyWriter) Finish() error {
	if w.f.take(&w.f.failFinish) {
		w.Writer.Abort()
		return errInjected
	}
	if w.f.take(&w.f.finishThenFail) {
		if err := w.Writer.Finish(); err != nil {
			return err
		}
		return errInjected
	}
	return w.Writer.Finish()
}

// isManifest reports whether a tier-2 key is a stream's manifest.
func isManifest(key string) bool { return strings.HasSuffix(key, "/"+ManifestName) }
