package jobs

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/silt-io/silt/core"
	"github.com/silt-io/silt/query"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func openStore(t *testing.T) *core.Store {
	t.Helper()
	cfg := core.DefaultConfig()
	cfg.Dir = t.TempDir()
	s, err := core.Open(cfg, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// storeSource reads tier 1 of a core.Store, enough for these tests; the
// API's source adds tier 2.
type storeSource struct{ s *core.Store }

func (src storeSource) Segments(ctx context.Context, tenant, stream string) ([]query.Segment, error) {
	st, err := src.s.GetStream(ctx, tenant, stream)
	if err != nil {
		return nil, err
	}
	var out []query.Segment
	for _, sg := range st.Segments {
		out = append(out, query.Segment{ID: sg.ID, First: sg.FirstOffset, Next: sg.NextOffset, Bytes: sg.Bytes})
	}
	return out, nil
}

func (src storeSource) Read(ctx context.Context, tenant, stream, seg string, from uint64, maxEvents, maxBytes int) ([]query.Event, uint64, error) {
	res, err := src.s.Read(ctx, core.ReadRequest{Tenant: tenant, Stream: stream, Segment: seg, From: from, MaxEvents: maxEvents, MaxBytes: maxBytes})
	if err != nil {
		return nil, from, err
	}
	var out []query.Event
	for _, e := range res.Events {
		out = append(out, query.Event{Offset: e.Offset, Time: e.Time, Data: e.Data})
	}
	return out, res.Next, nil
}

// stallSource is fault injection: reads block until the query's context
// ends, so that a job is reliably still running.
type stallSource struct {
	storeSource
	reading chan struct{}
}

func (s stallSource) Read(ctx context.Context, tenant, stream, seg string, from uint64, _, _ int) ([]query.Event, uint64, error) {
	select {
	case s.reading <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return nil, from, ctx.Err()
}

func seed(t *testing.T, s *core.Store) {
	t.Helper()
	ctx := context.Background()
	if _, err := s.CreateTenant(ctx, "acme", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateStream(ctx, "acme", "clicks", core.StreamConfig{Encoding: core.EncodingLines, Segments: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, core.AppendRequest{Tenant: "acme", Stream: "clicks", Events: [][]byte{[]byte(`{"a":1}`), []byte(`{"a":2}`)}}); err != nil {
		t.Fatal(err)
	}
}

func mustParse(t *testing.T, text string) *query.Query {
	t.Helper()
	q, err := query.Parse(text, query.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func waitDone(t *testing.T, m *Manager, h string) Job {
	t.Helper()
	for {
		j, err := m.Get(h)
		if err != nil {
			t.Fatal(err)
		}
		if j.State != Running {
			return j
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// A job that was running when its server died is failed, with a message
// that says so, by the next Manager over the same catalog.
func TestRestartMarksRunningJobInterrupted(t *testing.T) {
	s := openStore(t)
	seed(t, s)
	m1, err := Open(DefaultConfig(), s, s.Catalog(), nil, zaptest.NewLogger(t), nil, "")
	if err != nil {
		t.Fatal(err)
	}
	defer m1.Close()
	stall := stallSource{storeSource{s}, make(chan struct{}, 1)}
	j, err := m1.Submit("ann", mustParse(t, `from acme/clicks`), stall, Options{})
	if err != nil {
		t.Fatal(err)
	}
	<-stall.reading

	// The catalog now holds what a killed server leaves: a running job.
	m2, err := Open(DefaultConfig(), s, s.Catalog(), nil, zaptest.NewLogger(t), nil, "")
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	got, err := m2.Get(j.Handle)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != Failed || !strings.HasPrefix(got.Error, "interrupted: the server stopped while the query ran") || got.Finished.IsZero() {
		t.Fatalf("after restart: %+v", got)
	}
}

// Nodes of a cluster share the catalog: a node that starts marks only its
// own leftover jobs interrupted, not those another node is running.
func TestRestartLeavesOtherNodesJobs(t *testing.T) {
	s := openStore(t)
	seed(t, s)
	a, err := Open(DefaultConfig(), s, s.Catalog(), nil, zaptest.NewLogger(t), nil, "node-a")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	stall := stallSource{storeSource{s}, make(chan struct{}, 1)}
	j, err := a.Submit("ann", mustParse(t, `from acme/clicks`), stall, Options{})
	if err != nil {
		t.Fatal(err)
	}
	<-stall.reading
	b, err := Open(DefaultConfig(), s, s.Catalog(), nil, zaptest.NewLogger(t), nil, "node-b")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if got, _ := b.Get(j.Handle); got.State != Running || got.Node != "node-a" {
		t.Fatalf("node-a's job seen from node-b after its start: %+v", got)
	}
}

// Shutting down ends running jobs as interrupted, recorded.
func TestCloseRecordsInterrupted(t *testing.T) {
	s := openStore(t)
	seed(t, s)
	m, err := Open(DefaultConfig(), s, s.Catalog(), nil, zaptest.NewLogger(t), nil, "")
	if err != nil {
		t.Fatal(err)
	}
	stall := stallSource{storeSource{s}, make(chan struct{}, 1)}
	j, err := m.Submit("ann", mustParse(t, `from acme/clicks`), stall, Options{})
	if err != nil {
		t.Fatal(err)
	}
	<-stall.reading
	m.Close()
	if _, err := m.Submit("ann", mustParse(t, `from acme/clicks`), stall, Options{}); err != ErrClosed {
		t.Fatalf("submit after close: %v", err)
	}
	m2, err := Open(DefaultConfig(), s, s.Catalog(), nil, nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	got, _ := m2.Get(j.Handle)
	if got.State != Failed || got.Error != "interrupted: the server shut down while the query ran; submit it again" {
		t.Fatalf("after close: %+v", got)
	}
}

// The webhook is retried with backoff against a failing receiver, and the
// delivered body verifies under the secret.
func TestWebhookRetriesAndSigns(t *testing.T) {
	s := openStore(t)
	seed(t, s)
	var mu sync.Mutex
	var tries int
	var gotBody []byte
	var gotSig string
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		tries++
		if tries < 3 {
			http.Error(w, "not yet", http.StatusServiceUnavailable)
			return
		}
		gotBody, gotSig = body, r.Header.Get(SignatureHeader)
	}))
	defer hook.Close()

	cfg := DefaultConfig()
	cfg.WebhookBackoff = time.Millisecond
	m, err := Open(cfg, s, s.Catalog(), nil, zaptest.NewLogger(t), nil, "")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	var waits []time.Duration
	m.sleep = func(ctx context.Context, d time.Duration) error {
		waits = append(waits, d)
		return nil
	}
	j, err := m.Submit("ann", mustParse(t, `from acme/clicks | stats sum(a)`), storeSource{s}, Options{Webhook: &Webhook{URL: hook.URL, Secret: "s3cret"}})
	if err != nil {
		t.Fatal(err)
	}
	var got Job
	for {
		got = waitDone(t, m, j.Handle)
		if got.WebhookStatus != "" {
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	if got.WebhookStatus != "delivered after 3 tries" {
		t.Fatalf("webhook status %q", got.WebhookStatus)
	}
	if len(waits) != 2 || waits[0] != time.Millisecond || waits[1] != 2*time.Millisecond {
		t.Fatalf("backoff waits %v, want [1ms 2ms]", waits)
	}
	mu.Lock()
	defer mu.Unlock()
	if gotSig != Sign("s3cret", gotBody) || !strings.HasPrefix(gotSig, "sha256=") {
		t.Fatalf("signature %q does not match the body", gotSig)
	}
	var sent Job
	if err := json.Unmarshal(gotBody, &sent); err != nil {
		t.Fatal(err)
	}
	if sent.Handle != j.Handle || sent.State != Succeeded || sent.Rows != 1 || strings.Contains(string(gotBody), "s3cret") {
		t.Fatalf("webhook body %s", gotBody)
	}
}

func TestSignKnownVector(t *testing.T) {
	// RFC 4231 test case 2: key "Jefe", data "what do ya want for nothing?".
	want := "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
	if got := Sign("Jefe", []byte("what do ya want for nothing?")); got != want {
		t.Fatalf("Sign = %s, want %s", got, want)
	}
}

func TestConfigValidate(t *testing.T) {
	for name, mod := range map[string]func(*Config){
		"max_concurrent":   func(c *Config) { c.MaxConcurrent = 0 },
		"result_tenant":    func(c *Config) { c.ResultTenant = "A" },
		"webhook_attempts": func(c *Config) { c.WebhookAttempts = 0 },
		"max_groups":       func(c *Config) { c.Limits.MaxGroups = -1 },
	} {
		c := DefaultConfig()
		mod(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
}
