package kafka

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/silt-io/silt/acl"
	"github.com/silt-io/silt/core"
	"github.com/silt-io/silt/groups"
	smetrics "github.com/silt-io/silt/internal/metrics"
)

// storeSource is the reader groups' view of the store (tier 1 only; the
// server wires the API's tier-aware one).
type storeSource struct{ s *core.Store }

func (s storeSource) GetStream(ctx context.Context, tenant, name string) (core.Stream, error) {
	return s.s.GetStream(ctx, tenant, name)
}

func (s storeSource) Oldest(_ context.Context, _ core.Stream, sg core.SegmentInfo) (uint64, error) {
	return sg.FirstOffset, nil
}

func (s storeSource) EventAt(ctx context.Context, tenant, stream, segment string, off uint64) (core.Event, bool, error) {
	res, err := s.s.Read(ctx, core.ReadRequest{Tenant: tenant, Stream: stream, Segment: segment, From: off, MaxEvents: 1})
	if errors.Is(err, core.ErrOutOfRange) || err == nil && len(res.Events) == 0 {
		return core.Event{}, false, nil
	}
	if err != nil {
		return core.Event{}, false, err
	}
	return res.Events[0], true, nil
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// env is the Kafka head over a real core.Store and acl.Store in a
// temporary directory, serving on a loopback port, with a root principal
// holding admin on "*" and the tenant "acme".
type env struct {
	t      testing.TB
	store  *core.Store
	acl    *acl.Store
	srv    *Server
	groups *groups.Coordinator
	addr   string
	root   string // root's token
}

type envOptions struct {
	kafka   func(*Config)
	auth    func(*Auth)
	metrics *smetrics.Set
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
	store, err := core.Open(ccfg, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	as, err := acl.Open(store.Catalog())
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, store: store, acl: as}
	e.root = e.user("root", "admin:*")
	if _, err := store.CreateTenant(context.Background(), "acme", nil); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Listen = "127.0.0.1:0"
	if o.kafka != nil {
		o.kafka(&cfg)
	}
	auth := Auth{Authn: as.Authenticate, Authz: as}
	if o.auth != nil {
		o.auth(&auth)
	}
	e.srv, err = New(cfg, store, auth, zaptest.NewLogger(t, zaptest.Level(zap.InfoLevel)))
	if err != nil {
		t.Fatal(err)
	}
	gcfg := groups.DefaultConfig()
	gcfg.MinSessionTimeout = 100 * time.Millisecond
	if e.groups, err = groups.New(gcfg, store.Catalog(), storeSource{store}, nil); err != nil {
		t.Fatal(err)
	}
	e.srv.UseGroups(e.groups)
	if o.metrics != nil {
		e.srv.UseMetrics(o.metrics)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.addr = ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.srv.Serve(ctx, ln, nil) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return e
}

// user creates a principal with grants ("read:acme/clicks") and returns
// a token of it.
func (e *env) user(name string, grants ...string) string {
	e.t.Helper()
	if _, err := e.acl.CreatePrincipal(name); err != nil {
		e.t.Fatal(err)
	}
	for _, g := range grants {
		action, res, _ := strings.Cut(g, ":")
		if _, err := e.acl.AddGrant(name, acl.Action(action), res); err != nil {
			e.t.Fatal(err)
		}
	}
	secret, _, err := e.acl.IssueToken(name, "test", 0)
	if err != nil {
		e.t.Fatal(err)
	}
	return secret
}

// stream creates a framed stream with n segments.
func (e *env) stream(name string, segments int) core.Stream {
	e.t.Helper()
	st, err := e.store.CreateStream(context.Background(), "acme", name, core.StreamConfig{Encoding: core.EncodingFramed, Segments: segments})
	if err != nil {
		e.t.Fatal(err)
	}
	return st
}

func plainAuth(user, token string) sasl.Mechanism {
	return plain.Auth{User: user, Pass: token}.AsMechanism()
}

// client is a franz-go client authenticated as user with SASL PLAIN.
func (e *env) client(user, token string, opts ...kgo.Opt) *kgo.Client {
	e.t.Helper()
	all := append([]kgo.Opt{kgo.SeedBrokers(e.addr), kgo.SASL(plain.Auth{User: user, Pass: token}.AsMechanism())}, opts...)
	cl, err := kgo.NewClient(all...)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(cl.Close)
	return cl
}

// events reads every event of one segment natively.
func (e *env) events(stream string, segment int) [][]byte {
	e.t.Helper()
	st, err := e.store.GetStream(context.Background(), "acme", stream)
	if err != nil {
		e.t.Fatal(err)
	}
	var out [][]byte
	from := uint64(0)
	for {
		res, err := e.store.Read(context.Background(), core.ReadRequest{Tenant: "acme", Stream: stream, Segment: st.Segments[segment].ID, From: from})
		if err != nil {
			e.t.Fatal(err)
		}
		for _, ev := range res.Events {
			out = append(out, ev.Data)
		}
		if len(res.Events) == 0 {
			return out
		}
		from = res.Next
	}
}
