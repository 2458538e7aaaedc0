// Package api is silt's native HTTP API: producers append events to
// streams, consumers read and follow them, and operators manage tenants,
// streams, principals, tokens and grants. docs/api.md describes the
// protocol for users; openapi.yaml (served at GET /openapi.yaml) is its
// machine-readable form, and a test keeps it in step with the route table.
//
// The package is an adapter over core.Store and acl: it authenticates the
// bearer token into an acl.Principal, checks each route's declared action
// and resource in one place (routes.go), turns engine errors into statuses
// in one table (errmap.go), and bounds what a request may hold in memory
// (budget.go). It keeps no state of its own beyond that budget.
package api

import (
	"context"
	"crypto/cipher"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/silt-io/silt/acl"
	"github.com/silt-io/silt/core"
	"github.com/silt-io/silt/groups"
	"github.com/silt-io/silt/internal/connlimit"
	"github.com/silt-io/silt/internal/httpserve"
	smetrics "github.com/silt-io/silt/internal/metrics"
	"github.com/silt-io/silt/query"
	"github.com/silt-io/silt/query/jobs"
)

// Config configures the API server.
type Config struct {
	Listen string `koanf:"listen" help:"address the native API listens on"`
	// Caps bound the API's connections (silt serve applies them; see
	// internal/connlimit).
	connlimit.Caps
	// MaxInflightBytes is the admission limit for append bodies: the bytes
	// all appends in progress may hold in memory at once. An append that
	// would go beyond it is refused with 503 and Retry-After before its
	// body is read, so a burst of producers degrades into retries instead
	// of exhausting memory; one that alone needs more than all of it gets
	// 413, since no retry could succeed.
	MaxInflightBytes int64 `koanf:"max_inflight_bytes" help:"append bytes held in memory at once across requests; beyond it appends get 503 (413 for one append that alone needs more)"`
	// ReadTimeout bounds reading a request's headers and, for requests
	// with a body, the body. It is applied per request rather than as
	// http.Server.ReadTimeout, which would also cut off follow reads;
	// the lean server applies it from a request's first byte to the end
	// of its body.
	ReadTimeout time.Duration `koanf:"read_timeout" help:"longest time to read a request's headers and body"`
	IdleTimeout time.Duration `koanf:"idle_timeout" help:"how long an idle keep-alive connection is kept open"`
	// MaxWait caps the wait= long-poll of a read.
	MaxWait time.Duration `koanf:"max_wait" help:"longest long-poll a read may ask for with wait="`
	// ShutdownTimeout bounds how long Serve waits for in-flight requests
	// once its context is cancelled; connections still busy then are
	// closed.
	ShutdownTimeout time.Duration `koanf:"shutdown_timeout" help:"how long shutdown waits for in-flight requests before closing connections"`
	// HTTPServer picks the HTTP/1.1 server of the listener: "lean"
	// serves each connection's requests in that connection's goroutine
	// (h1server.go), so a synchronous producer's append costs no
	// hand-offs between goroutines; "net/http" is Go's standard server,
	// kept as a fallback.
	HTTPServer string `koanf:"http_server" help:"HTTP/1.1 server: lean (one goroutine per connection, lowest latency) or net/http (Go's standard server)"`
}

// The values of Config.HTTPServer.
const (
	HTTPServerLean    = "lean"
	HTTPServerNetHTTP = "net/http"
)

// DefaultConfig returns the embedded defaults.
func DefaultConfig() Config {
	return Config{
		Listen:           "127.0.0.1:7070",
		MaxInflightBytes: 64 << 20,
		ReadTimeout:      30 * time.Second,
		IdleTimeout:      2 * time.Minute,
		MaxWait:          60 * time.Second,
		ShutdownTimeout:  15 * time.Second,
		HTTPServer:       HTTPServerLean,
	}
}

// Validate reports the first problem with c.
func (c Config) Validate() error {
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		return fmt.Errorf("api: listen %q: want host:port: %w", c.Listen, err)
	}
	if c.MaxInflightBytes <= 0 {
		return errors.New("api: max_inflight_bytes must be positive")
	}
	if err := c.Caps.Check("api"); err != nil {
		return err
	}
	if c.HTTPServer != HTTPServerLean && c.HTTPServer != HTTPServerNetHTTP {
		return fmt.Errorf("api: http_server %q: want %q or %q", c.HTTPServer, HTTPServerLean, HTTPServerNetHTTP)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"read_timeout", c.ReadTimeout},
		{"idle_timeout", c.IdleTimeout},
		{"max_wait", c.MaxWait},
		{"shutdown_timeout", c.ShutdownTimeout},
	} {
		if d.v <= 0 {
			return fmt.Errorf("api: %s must be positive, got %v", d.name, d.v)
		}
	}
	return nil
}

// Auth is how the server turns requests into principals and decides what
// they may do.
type Auth struct {
	// Authn resolves a bearer token; normally acl.Store.Authenticate. When
	// nil, every request that carries a token is refused with 401.
	Authn func(secret string) (acl.Principal, error)
	// Authz decides every request (default deny); an acl.Store, or
	// acl.AllowAll{} for tests without principals. With Insecure it must
	// still be the real authorizer: a presented token keeps its grants.
	Authz acl.Authorizer
	// Admin manages principals, tokens and grants. When nil those routes
	// answer 501.
	Admin *acl.Store
	// Insecure (--auth.insecure_dev) lets requests without an
	// Authorization header do anything. Requests that present a token are
	// still authenticated and authorized normally, by Authz.
	Insecure bool
}

// Server serves the native API. Create it with New.
type Server struct {
	cfg    Config
	store  *core.Store
	auth   Auth
	log    *zap.Logger
	limits core.Limits
	budget *budget
	met    *metrics
	gather prometheus.Gatherer
	// head and producers are the series shared with the other heads
	// (UseMetrics).
	head      *smetrics.Head
	producers *smetrics.Producers
	routes    []route
	mux       *http.ServeMux
	handler   http.Handler

	// Paginated listings (list.go): the store's listing seam (tests count
	// what a page reads), and the AEAD of page tokens that must not show
	// a name.
	list     pageLister
	pageSeal cipher.AEAD

	// drain is cancelled when shutdown begins: long-polls and follows end,
	// and /readyz turns 503 so that load balancers stop sending traffic.
	drain     context.Context
	stopDrain context.CancelFunc

	tiering Tiering             // nil: no tier policy (tests, embedded use)
	groups  *groups.Coordinator // nil: no reader groups (501)
	dtokens DelegationTokens    // nil: no WebHDFS head
	cluster Cluster             // nil: a single node
	intro   Introspection       // nil: introspection off (no events, no /v1/health)
	queries *jobs.Manager       // nil: no query jobs (501)
	// querySrc replaces QuerySource in fault-injection tests.
	querySrc query.Source
}

// New builds a server over store. Metrics are registered on reg; when reg
// is also a prometheus.Gatherer (as *prometheus.Registry is) /metrics
// serves it, otherwise /metrics serves prometheus.DefaultGatherer. A nil
// reg gets a private registry.
func New(cfg Config, store *core.Store, auth Auth, log *zap.Logger, reg prometheus.Registerer) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if store == nil {
		return nil, errors.New("api: nil store")
	}
	if auth.Authz == nil {
		return nil, errors.New("api: auth.Authz is required (use acl.AllowAll{} to allow everything)")
	}
	// Insecure already frees requests without a token; AllowAll on top
	// would make any token, read-only ones too, an admin token.
	if _, all := auth.Authz.(acl.AllowAll); all && auth.Insecure && auth.Authn != nil {
		return nil, errors.New("api: auth.Insecure needs the real authorizer in auth.Authz, not acl.AllowAll, so that presented tokens keep their grants")
	}
	if log == nil {
		log = zap.NewNop()
	}
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	gather, ok := reg.(prometheus.Gatherer)
	if !ok {
		gather = prometheus.DefaultGatherer
	}
	limits := store.Limits()
	// A budget smaller than one largest request would refuse that request
	// forever, even on an idle server.
	if need := int64(batchBodyLimit(limits)); cfg.MaxInflightBytes < need {
		return nil, fmt.Errorf("api: max_inflight_bytes %d is below the largest append body (%d bytes, twice max_batch_bytes)", cfg.MaxInflightBytes, need)
	}
	met, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	pageSeal, err := newPageSeal()
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg:    cfg,
		store:  store,
		auth:   auth,
		log:    log,
		limits: limits,
		budget: newBudget(cfg.MaxInflightBytes, met.inflightBytes),
		met:    met,
		gather: gather,

		list:     store,
		pageSeal: pageSeal,
	}
	unused := smetrics.NewUnregistered(smetrics.DefaultConfig())
	s.head, s.producers = unused.Heads.Head("api"), unused.Producers
	s.drain, s.stopDrain = context.WithCancel(context.Background())
	if err := s.buildMux(); err != nil {
		return nil, err
	}
	return s, nil
}

// Handler returns the server's HTTP handler, for tests and for callers
// that run their own http.Server.
func (s *Server) Handler() http.Handler { return s.handler }

// Serve serves on ln until ctx is cancelled, with TLS when tlsCfg is not
// nil (its certificates are used as they are). Cancelling ctx shuts down
// gracefully: the listener closes, long-polls and follows end at once, and
// other in-flight requests get up to ShutdownTimeout to finish. A Server
// drains only once: serve it with one Serve call.
func (s *Server) Serve(ctx context.Context, ln net.Listener, tlsCfg *tls.Config) error {
	serve := s.serveLean
	if s.cfg.HTTPServer == HTTPServerNetHTTP {
		serve = s.serveNetHTTP
	}
	if err := serve(ctx, ln, tlsCfg); err != nil {
		return fmt.Errorf("api: %w", err)
	}
	return nil
}

// serveLean is Serve with h1Server, following httpserve.Serve's steps.
func (s *Server) serveLean(ctx context.Context, ln net.Listener, tlsCfg *tls.Config) error {
	srv := newH1Server(s.handler, s.cfg, s.log.Named("http"), tlsCfg)
	errc := make(chan error, 1)
	go func() { errc <- srv.serve(ln) }()
	select {
	case err := <-errc:
		s.stopDrain()
		ln.Close()
		srv.shutdown(0)
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	s.stopDrain()
	srv.beginClose()
	ln.Close()
	<-errc
	return srv.shutdown(s.cfg.ShutdownTimeout)
}

func (s *Server) serveNetHTTP(ctx context.Context, ln net.Listener, tlsCfg *tls.Config) error {
	hs := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: s.cfg.ReadTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
	}
	// TLS handshake failures from scanners would flood a warn log.
	if el, err := zap.NewStdLogAt(s.log.Named("http"), zap.DebugLevel); err == nil {
		hs.ErrorLog = el
	}
	return httpserve.Serve(ctx, hs, ln, tlsCfg, s.cfg.ShutdownTimeout, s.stopDrain)
}

// shuttingDown returns a context that ends when parent does or when the
// server starts draining, for the requests that would otherwise hold a
// connection open indefinitely.
func (s *Server) shuttingDown(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	stop := context.AfterFunc(s.drain, cancel)
	return ctx, func() { stop(); cancel() }
}

// MountStatic serves h for GET and HEAD under prefix (which must end in
// "/"), beside the API's routes and outside its route table: the web
// console's files, which need no credentials since they hold none. The
// console's own calls come back through the routes above, with the
// user's token, so mounting it adds no access. Call it before serving.
func (s *Server) MountStatic(prefix string, h http.Handler) error {
	if !strings.HasPrefix(prefix, "/") || !strings.HasSuffix(prefix, "/") || strings.HasPrefix(prefix, "/v1/") {
		return fmt.Errorf("api: static prefix %q must start and end with / and be outside /v1/", prefix)
	}
	s.mux.Handle("GET "+prefix, h)
	return nil
}
