package api

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"flag"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/silt-io/silt/acl"
	"github.com/silt-io/silt/core"
	"github.com/silt-io/silt/core/vfs"
	"github.com/silt-io/silt/groups"
	smetrics "github.com/silt-io/silt/internal/metrics"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// httpServer runs the suite through either HTTP server:
// go test ./gateways/api -http_server=net/http.
var httpServer = flag.String("http_server", "", "api.http_server for the tests (empty: the default)")

// testServer serves a Server through Serve on a loopback port, as silt
// serve does, so that tests go through the configured HTTP server.
type testServer struct {
	URL    string
	client *http.Client
	stop   context.CancelFunc
	done   chan error

	closeOnce sync.Once
}

func serveTest(t testing.TB, srv *Server) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	ts := &testServer{
		URL:    "http://" + ln.Addr().String(),
		client: &http.Client{Transport: &http.Transport{}},
		stop:   stop,
		done:   make(chan error, 1),
	}
	go func() { ts.done <- srv.Serve(ctx, ln, nil) }()
	return ts
}

func (ts *testServer) Client() *http.Client { return ts.client }

// Close stops the server; later calls do nothing.
func (ts *testServer) Close() {
	ts.closeOnce.Do(func() {
		ts.client.CloseIdleConnections()
		ts.stop()
		<-ts.done
	})
}

// Test limits: small, so that 413s are cheap to provoke.
const (
	testMaxEvent = 1 << 10
	testMaxBatch = 8 << 10
)

type envOptions struct {
	core     func(*core.Config)
	fs       vfs.FS      // the segment logs' filesystem; nil: the OS's
	log      *zap.Logger // the server's log; nil: the test's
	api      func(*Config)
	auth     func(*Auth)
	noServer bool
}

// env is an API server over a real core.Store and acl.Store in a
// temporary directory, with a root principal holding admin on "*".
type env struct {
	t     testing.TB
	store *core.Store
	acl   *acl.Store
	srv   *Server
	ts    *testServer
	reg   *prometheus.Registry
	root  string // root's bearer token
	// coreCfg is the store's config, for reopening its directory.
	coreCfg core.Config
}

func newEnv(t testing.TB, opts ...envOptions) *env {
	t.Helper()
	var o envOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	ccfg := core.DefaultConfig()
	ccfg.Dir = t.TempDir()
	ccfg.SegmentFileBytes = 1 << 20
	ccfg.Limits = core.Limits{MaxEventBytes: testMaxEvent, MaxBatchBytes: testMaxBatch, MaxBatchEvents: 1 << 20, MaxSegments: 16}
	if o.core != nil {
		o.core(&ccfg)
	}
	fs := o.fs
	if fs == nil {
		fs = vfs.OS{}
	}
	store, err := core.OpenFS(ccfg, zap.NewNop(), fs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	as, err := acl.Open(store.Catalog())
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, store: store, acl: as, reg: prometheus.NewRegistry(), coreCfg: ccfg}
	if _, err := as.CreatePrincipal("root"); err != nil {
		t.Fatal(err)
	}
	if _, err := as.AddGrant("root", acl.Admin, "*"); err != nil {
		t.Fatal(err)
	}
	e.root = e.token("root")

	cfg := DefaultConfig()
	if *httpServer != "" {
		cfg.HTTPServer = *httpServer
	}
	if o.api != nil {
		o.api(&cfg)
	}
	auth := Auth{Authn: as.Authenticate, Authz: as, Admin: as}
	if o.auth != nil {
		o.auth(&auth)
	}
	log := o.log
	if log == nil {
		log = zaptest.NewLogger(t, zaptest.Level(zap.InfoLevel))
	}
	e.srv, err = New(cfg, store, auth, log, e.reg)
	if err != nil {
		t.Fatal(err)
	}
	e.useGroups()
	if !o.noServer {
		e.ts = serveTest(t, e.srv)
		t.Cleanup(e.ts.Close)
	}
	return e
}

// token issues a token for an existing principal.
func (e *env) token(principal string) string {
	e.t.Helper()
	secret, _, err := e.acl.IssueToken(principal, "test", 0)
	if err != nil {
		e.t.Fatal(err)
	}
	return secret
}

// user creates a principal with the given grants ("read:acme/clicks") and
// returns its token.
func (e *env) user(name string, grants ...string) string {
	e.t.Helper()
	if _, err := e.acl.CreatePrincipal(name); err != nil {
		e.t.Fatal(err)
	}
	e.grant(name, grants...)
	return e.token(name)
}

func (e *env) grant(principal string, grants ...string) {
	e.t.Helper()
	for _, g := range grants {
		action, res, _ := strings.Cut(g, ":")
		if _, err := e.acl.AddGrant(principal, acl.Action(action), res); err != nil {
			e.t.Fatal(err)
		}
	}
}

// reply is a finished response.
type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r reply) json(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

// errCode returns the error code of a JSON error reply.
func (r reply) errCode(t testing.TB) string {
	t.Helper()
	var b errorBody
	r.json(t, &b)
	return b.Error.Code
}

type req struct {
	method, path string
	token        string
	body         []byte
	contentType  string
	header       map[string]string
}

func (e *env) do(r req) reply {
	e.t.Helper()
	hr, err := http.NewRequest(r.method, e.ts.URL+r.path, bytes.NewReader(r.body))
	if err != nil {
		e.t.Fatal(err)
	}
	if r.body == nil {
		hr.Body = http.NoBody
		hr.ContentLength = 0
	}
	if r.token != "" {
		hr.Header.Set("Authorization", "Bearer "+r.token)
	}
	if r.contentType != "" {
		hr.Header.Set("Content-Type", r.contentType)
	}
	for k, v := range r.header {
		hr.Header.Set(k, v)
	}
	resp, err := e.ts.Client().Do(hr)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: body}
}

// must does r as root and fails the test unless the status is want.
func (e *env) must(want int, r req) reply {
	e.t.Helper()
	if r.token == "" {
		r.token = e.root
	}
	rep := e.do(r)
	if rep.status != want {
		e.t.Fatalf("%s %s: status %d, want %d: %s", r.method, r.path, rep.status, want, rep.body)
	}
	return rep
}

func jsonBody(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// mkStream creates tenant (if needed) and a stream in it.
func (e *env) mkStream(tenant, stream, encoding string, segments int) {
	e.t.Helper()
	if _, err := e.store.GetTenant(e.t.Context(), tenant); err != nil {
		e.must(http.StatusCreated, req{method: "POST", path: "/v1/tenants", body: jsonBody(e.t, map[string]any{"name": tenant})})
	}
	e.must(http.StatusCreated, req{method: "POST", path: "/v1/tenants/" + tenant + "/streams",
		body: jsonBody(e.t, map[string]any{"name": stream, "encoding": encoding, "segments": segments})})
}

func eventsPath(tenant, stream string) string {
	return "/v1/tenants/" + tenant + "/streams/" + stream + "/events"
}

func framed(events ...string) []byte {
	var b []byte
	for _, ev := range events {
		b = binary.BigEndian.AppendUint32(b, uint32(len(ev)))
		b = append(b, ev...)
	}
	return b
}

// readLine is one line of an ndjson read.
type readLine struct {
	Segment    string  `json:"segment"`
	Offset     uint64  `json:"offset"`
	Time       string  `json:"time"`
	Data       []byte  `json:"data"`
	Text       *string `json:"text"`
	NextCursor *string `json:"next_cursor"`
	Error      *errorDetail
}

func parseLines(t testing.TB, body []byte) (events []readLine, cursor string) {
	t.Helper()
	for _, l := range bytes.Split(bytes.TrimRight(body, "\n"), []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		var rl readLine
		if err := json.Unmarshal(l, &rl); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		if rl.NextCursor != nil {
			cursor = *rl.NextCursor
			continue
		}
		events = append(events, rl)
	}
	return events, cursor
}

// series is the value of the series name{labels} (pairs of name and
// value, all of the series' labels) that the server's /metrics shows: a counter's or
// gauge's value, a histogram's count, 0 when there is no such series.
func (e *env) series(name string, labels ...string) float64 {
	e.t.Helper()
	mfs, err := e.srv.gather.Gather() // what /metrics serves
	if err != nil {
		e.t.Fatal(err)
	}
	want := map[string]string{}
	for i := 0; i+1 < len(labels); i += 2 {
		want[labels[i]] = labels[i+1]
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) != len(want) {
				continue
			}
			for _, l := range m.GetLabel() {
				if v, ok := want[l.GetName()]; !ok || v != l.GetValue() {
					continue metrics
				}
			}
			switch {
			case m.Counter != nil:
				return m.Counter.GetValue()
			case m.Gauge != nil:
				return m.Gauge.GetValue()
			case m.Histogram != nil:
				return float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return 0
}

// metricValue reads a counter or gauge.
func metricValue(t testing.TB, m prometheus.Metric) float64 {
	t.Helper()
	var d dto.Metric
	if err := m.Write(&d); err != nil {
		t.Fatal(err)
	}
	switch {
	case d.Counter != nil:
		return d.Counter.GetValue()
	case d.Gauge != nil:
		return d.Gauge.GetValue()
	}
	t.Fatalf("metric %v is neither counter nor gauge", m.Desc())
	return 0
}

func appendReq(tenant, stream string, events ...string) core.AppendRequest {
	r := core.AppendRequest{Tenant: tenant, Stream: stream}
	for _, ev := range events {
		r.Events = append(r.Events, []byte(ev))
	}
	return r
}

func coreConfigLines() core.StreamConfig {
	return core.StreamConfig{Encoding: core.EncodingLines, Segments: 1}
}

// restart stops the server and closes the store, then opens both again on
// the same directory (with the OS's filesystem), as a restarted silt
// serve would. Tokens and grants live in the catalog and stay valid.
func (e *env) restart() {
	e.t.Helper()
	e.ts.Close()
	if err := e.store.Close(); err != nil {
		e.t.Fatal(err)
	}
	store, err := core.Open(e.coreCfg, zap.NewNop())
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { store.Close() })
	as, err := acl.Open(store.Catalog())
	if err != nil {
		e.t.Fatal(err)
	}
	e.store, e.acl, e.reg = store, as, prometheus.NewRegistry()
	cfg := DefaultConfig()
	if *httpServer != "" {
		cfg.HTTPServer = *httpServer
	}
	e.srv, err = New(cfg, store, Auth{Authn: as.Authenticate, Authz: as, Admin: as}, zaptest.NewLogger(e.t, zaptest.Level(zap.InfoLevel)), e.reg)
	if err != nil {
		e.t.Fatal(err)
	}
	e.useGroups()
	e.ts = serveTest(e.t, e.srv)
	e.t.Cleanup(e.ts.Close)
}

// useGroups connects reader groups over the env's catalog, as silt serve
// does.
func (e *env) useGroups() {
	e.t.Helper()
	// The shared series too, as silt serve does.
	set, err := smetrics.New(smetrics.DefaultConfig(), e.reg)
	if err != nil {
		e.t.Fatal(err)
	}
	e.srv.UseMetrics(set)
	gc, err := groups.New(groups.DefaultConfig(), e.store.Catalog(), e.srv.GroupSource(), e.reg)
	if err != nil {
		e.t.Fatal(err)
	}
	e.srv.UseGroups(gc)
}
