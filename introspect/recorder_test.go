package introspect

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"
	"go.uber.org/zap"

	"github.com/silt-io/silt/core"
	"github.com/silt-io/silt/core/names"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func openStore(t *testing.T) *core.Store {
	t.Helper()
	cfg := core.DefaultConfig()
	cfg.Dir = t.TempDir()
	st, err := core.Open(cfg, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// readAll returns the events of a system stream, decoded.
func readAll(t *testing.T, st *core.Store, stream string) []Event {
	t.Helper()
	s, err := st.GetStream(context.Background(), names.SystemTenant, stream)
	if err != nil {
		t.Fatalf("stream %s: %v", stream, err)
	}
	res, err := st.Read(context.Background(), core.ReadRequest{Tenant: names.SystemTenant, Stream: stream, Segment: s.Segments[0].ID, MaxEvents: 10000})
	if err != nil {
		t.Fatal(err)
	}
	var out []Event
	for _, e := range res.Events {
		var ev Event
		if err := json.Unmarshal(e.Data, &ev); err != nil {
			t.Fatalf("event %q: %v", e.Data, err)
		}
		out = append(out, ev)
	}
	return out
}

// TestRecordRoutesByTenant checks the stream layout: an existing tenant's
// events go to its own streams, events of no tenant, of a tenant that
// does not exist and of the system tenant itself to the server-wide ones,
// and a deleted tenant's streams go with it.
func TestRecordRoutesByTenant(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	if _, err := st.CreateTenant(ctx, "acme", nil); err != nil {
		t.Fatal(err)
	}
	r, err := New(DefaultConfig(), st, Options{Node: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.Record(Event{Kind: KindRequest, Head: "s3", Tenant: "acme", Stream: "clicks", Operation: "GetObject", Status: 200, Bytes: 42})
	r.Record(Event{Kind: KindRequest, Head: "api", Operation: "GET /v1/whoami", Status: 200})
	r.Record(Event{Kind: KindRequest, Head: "s3", Tenant: "nosuchtenant", Operation: "ListObjectsV2", Status: 404})
	r.Record(Event{Kind: KindRequest, Head: "api", Tenant: names.SystemTenant, Stream: "acme.requests", Status: 200})
	r.Record(Event{Kind: KindDenial, Head: "nfs", Tenant: "acme", Principal: "bob", Action: "read"})
	if err := r.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	acme := readAll(t, st, "acme.requests")
	if len(acme) != 1 || acme[0].Bytes != 42 || acme[0].Node != "n1" || acme[0].Operation != "GetObject" || acme[0].Stream != "clicks" {
		t.Fatalf("acme.requests = %+v, want the one GetObject of 42 bytes from node n1", acme)
	}
	wide := readAll(t, st, "server_wide.requests")
	if len(wide) != 3 || wide[0].Operation != "GET /v1/whoami" || wide[1].Tenant != "nosuchtenant" || wide[2].Tenant != names.SystemTenant {
		t.Fatalf("server_wide.requests = %+v, want whoami, the unknown tenant's and the system tenant's", wide)
	}
	if d := readAll(t, st, "acme.denials"); len(d) != 1 || d[0].Principal != "bob" {
		t.Fatalf("acme.denials = %+v", d)
	}
	if _, err := st.GetStream(ctx, names.SystemTenant, "nosuchtenant.requests"); err == nil {
		t.Fatal("a request naming a tenant that does not exist made a stream for it")
	}
	r.Forget(ctx, "acme")
	if _, err := st.GetStream(ctx, names.SystemTenant, "acme.requests"); err == nil {
		t.Fatal("acme.requests outlived Forget")
	}
}

// slowStore is a fault-injecting store whose appends block until release
// is closed, standing for a system stream that cannot keep up.
type slowStore struct {
	*core.Store
	entered chan struct{}
	release chan struct{}
}

func (s *slowStore) Append(ctx context.Context, req core.AppendRequest) (core.AppendResult, error) {
	select {
	case s.entered <- struct{}{}:
	default:
	}
	<-s.release
	return s.Store.Append(ctx, req)
}

// TestFullQueueDropsAndCounts checks that while the writer is stuck,
// Record neither blocks nor grows the queue: events past queue_size are
// dropped and counted, and what was queued is written once the writer
// moves again.
func TestFullQueueDropsAndCounts(t *testing.T) {
	st := openStore(t)
	slow := &slowStore{Store: st, entered: make(chan struct{}, 1), release: make(chan struct{})}
	cfg := DefaultConfig()
	cfg.QueueSize, cfg.BatchEvents = 4, 1
	reg := prometheus.NewRegistry()
	r, err := New(cfg, slow, Options{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.Record(Event{Kind: KindRequest, Operation: "first"})
	<-slow.entered // the writer holds "first" and waits in Append
	for i := 0; i < 100; i++ {
		r.Record(Event{Kind: KindRequest, Operation: "more"})
	}
	if got := testutil.ToFloat64(r.droppedFull); got != 96 {
		t.Fatalf("dropped %v events, want 96 (100 recorded, 4 fit the queue)", got)
	}
	if got := testutil.ToFloat64(r.written); got != 0 {
		t.Fatalf("written %v while the writer is stuck", got)
	}
	close(slow.release)
	if err := r.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := len(readAll(t, st, "server_wide.requests")); got != 5 {
		t.Fatalf("stored %d events, want 5 (the one in flight and the 4 queued)", got)
	}
	want := `
# HELP silt_introspect_events_dropped_total Introspection events not stored: queue_full (the writer fell behind; requests never wait for it) or write_failed (the append to the system stream failed).
# TYPE silt_introspect_events_dropped_total counter
silt_introspect_events_dropped_total{reason="queue_full"} 96
silt_introspect_events_dropped_total{reason="write_failed"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "silt_introspect_events_dropped_total"); err != nil {
		t.Fatal(err)
	}
}

// discardStore is a stand-in store whose appends store nothing, so that
// BenchmarkRecord measures the hot path's side alone.
type discardStore struct{ *core.Store }

func (discardStore) Append(context.Context, core.AppendRequest) (core.AppendResult, error) {
	return core.AppendResult{}, nil
}

// BenchmarkRecord is what a request pays to record its event: a copy onto
// the queue (or a counted drop), never I/O.
func BenchmarkRecord(b *testing.B) {
	st := openStoreB(b)
	r, err := New(DefaultConfig(), discardStore{st}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	e := Event{Kind: KindRequest, Head: "s3", Principal: "etl", Tenant: "acme", Stream: "clicks", Operation: "GetObject", Status: 200, Class: "ok", Bytes: 1 << 20, LatencyMS: 3.2, Client: "10.0.0.7:53506"}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r.Record(e)
		}
	})
}

func openStoreB(b *testing.B) *core.Store {
	cfg := core.DefaultConfig()
	cfg.Dir = b.TempDir()
	st, err := core.Open(cfg, zap.NewNop())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return st
}

// TestBatchesKeepTheirBytes checks that events written in successive
// batches read back as written (the writer reuses its encoding buffer).
func TestBatchesKeepTheirBytes(t *testing.T) {
	st := openStore(t)
	r, err := New(DefaultConfig(), st, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for batch := range 3 {
		for i := range 50 {
			r.Record(Event{Kind: KindRequest, Operation: "op", Bytes: int64(batch*1000 + i)})
		}
		if err := r.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	evs := readAll(t, st, "server_wide.requests")
	if len(evs) != 150 {
		t.Fatalf("read %d events, want 150", len(evs))
	}
	for k, e := range evs {
		if want := int64(k/50*1000 + k%50); e.Bytes != want {
			t.Fatalf("event %d has bytes=%d, want %d", k, e.Bytes, want)
		}
	}
}
