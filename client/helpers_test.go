package client

import (
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"
	"go.uber.org/zap"

	"github.com/silt-io/silt/acl"
	"github.com/silt-io/silt/core"
	"github.com/silt-io/silt/gateways/api"
	"github.com/silt-io/silt/groups"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// server is a real API server over a real core.Store and acl.Store.
type server struct {
	store *core.Store
	acl   *acl.Store
	srv   *api.Server
	ts    *httptest.Server
	root  string // token of a principal with admin on "*"
}

type serverOptions struct {
	tls bool
	// wrap, if set, wraps the API handler (to inject failures).
	wrap func(http.Handler) http.Handler
}

func newServer(t *testing.T, opts ...serverOptions) *server {
	t.Helper()
	var o serverOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	cfg := core.DefaultConfig()
	cfg.Dir = t.TempDir()
	cfg.SegmentFileBytes = 1 << 20
	store, err := core.Open(cfg, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	as, err := acl.Open(store.Catalog())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := as.CreatePrincipal("root"); err != nil {
		t.Fatal(err)
	}
	if _, err := as.AddGrant("root", acl.Admin, "*"); err != nil {
		t.Fatal(err)
	}
	secret, _, err := as.IssueToken("root", "test", 0)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := api.New(api.DefaultConfig(), store, api.Auth{Authn: as.Authenticate, Authz: as, Admin: as}, zap.NewNop(), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	gc, err := groups.New(groups.DefaultConfig(), store.Catalog(), srv.GroupSource(), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv.UseGroups(gc)
	var h http.Handler = srv.Handler()
	if o.wrap != nil {
		h = o.wrap(h)
	}
	s := &server{store: store, acl: as, srv: srv, root: secret}
	if o.tls {
		s.ts = httptest.NewTLSServer(h)
	} else {
		s.ts = httptest.NewServer(h)
	}
	t.Cleanup(s.ts.Close)
	return s
}

// client returns a root client with fast retries.
func (s *server) client(t *testing.T, opts ...Option) *Client {
	t.Helper()
	all := append([]Option{WithToken(s.root), WithRetry(4, time.Millisecond, 10*time.Millisecond)}, opts...)
	c, err := New(s.ts.URL, all...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// dropAckTransport forwards every request to the server and then, for a
// share of the requests it is told to drop, throws the answer away and
// reports a network error: the server has acted on the request, but the
// client never hears back — the case retries must not turn into
// duplicates.
type dropAckTransport struct {
	base http.RoundTripper
	rate float64
	// droppable selects the requests that may lose their answer.
	droppable func(*http.Request) bool

	mu      sync.Mutex
	rng     *rand.Rand
	dropped atomic.Int64
}

var errAckDropped = errors.New("dropAckTransport: connection lost after the server handled the request")

func newDropAckTransport(base http.RoundTripper, rate float64, droppable func(*http.Request) bool) *dropAckTransport {
	return &dropAckTransport{base: base, rate: rate, droppable: droppable, rng: rand.New(rand.NewPCG(1, 2))}
}

func (d *dropAckTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := d.base.RoundTrip(r)
	if err != nil || !d.droppable(r) {
		return resp, err
	}
	d.mu.Lock()
	drop := d.rng.Float64() < d.rate
	d.mu.Unlock()
	if !drop {
		return resp, nil
	}
	// Read the whole answer first, so the server has certainly finished.
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	d.dropped.Add(1)
	return nil, errAckDropped
}

func isAppend(r *http.Request) bool {
	return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/events")
}
