package api

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/silt-io/silt/acl"
	"github.com/silt-io/silt/core/names"
	"github.com/silt-io/silt/internal/httpmetrics"
	smetrics "github.com/silt-io/silt/internal/metrics"
)

// A route is one entry of the API. Access is declared here, not in the
// handlers: a route is public, or open to any caller (whoami, and listings
// that show only what call.visible/call.covers allow), or it names the
// action that the caller must hold on the resource its prepare step
// resolves. The dispatcher (serveRoute) applies the declaration, so a
// handler cannot forget a check.
type route struct {
	pattern string // a net/http ServeMux pattern: "METHOD /path/{param}"
	public  bool   // served without credentials: probes, metrics, the spec
	// anyCaller routes may be asked by every authenticated (or anonymous)
	// caller; what they return is cut down to what the caller may see.
	anyCaller bool
	action    acl.Action
	prepare   func(c *call) (op, error)
	// names are the path wildcards that hold tenant or stream names, set
	// by buildMux from the pattern.
	names []pathName
}

// A pathName is a wildcard of a route's pattern that holds a name, with
// the rule it must follow.
type pathName struct {
	wildcard string
	check    func(string) error
}

// nameWildcards are the wildcards checked before any access decision.
// The mux decodes escapes inside a path element, so "ac%2fme" reaches a
// handler as "ac/me": unchecked, it would go to the authorizer and the
// store as a name that cannot exist, and its 403 or 404 would differ by
// caller and tell them what does.
var nameWildcards = []pathName{
	{"tenant", names.Tenant},
	{"stream", names.Stream},
}

// An op is a prepared request: the resource it touches, and the work to do
// once the caller is allowed to. Preparing parses the path, query and small
// JSON bodies and looks up what the resource depends on (a stream's group),
// but reads no event bodies: those are only read once authorized.
type op struct {
	res acl.Resource
	// also are further resources the caller must hold the route's action
	// on: a reader group's routes check every stream the group reads.
	also []acl.Resource
	run  func() error
}

func (s *Server) routeTable() []route {
	return []route{
		{pattern: "GET /healthz", public: true, prepare: s.healthz},
		{pattern: "GET /readyz", public: true, prepare: s.readyz},
		{pattern: "GET /metrics", public: true, prepare: s.metricsPage},
		{pattern: "GET /openapi.yaml", public: true, prepare: s.openapi},
		{pattern: "GET /v1/whoami", anyCaller: true, prepare: s.whoami},

		{pattern: "POST /v1/tenants", action: acl.Admin, prepare: s.createTenant},
		{pattern: "GET /v1/tenants", anyCaller: true, prepare: s.listTenants},
		{pattern: "GET /v1/tenants/{tenant}", action: acl.Read, prepare: s.getTenant},
		{pattern: "DELETE /v1/tenants/{tenant}", action: acl.Admin, prepare: s.deleteTenant},

		{pattern: "POST /v1/tenants/{tenant}/streams", action: acl.Admin, prepare: s.createStream},
		{pattern: "GET /v1/tenants/{tenant}/streams", action: acl.Read, prepare: s.listStreams},
		{pattern: "GET /v1/tenants/{tenant}/streams/{stream}", action: acl.Read, prepare: s.getStream},
		{pattern: "DELETE /v1/tenants/{tenant}/streams/{stream}", action: acl.Admin, prepare: s.deleteStream},

		{pattern: "POST /v1/tenants/{tenant}/streams/{stream}/events", action: acl.Append, prepare: s.appendEvents},
		{pattern: "GET /v1/tenants/{tenant}/streams/{stream}/events", action: acl.Read, prepare: s.readEvents},

		{pattern: "POST /v1/tenants/{tenant}/groups", action: acl.Admin, prepare: s.createGroup},
		{pattern: "GET /v1/tenants/{tenant}/groups", action: acl.Read, prepare: s.listGroups},
		{pattern: "GET /v1/tenants/{tenant}/groups/{group}", action: acl.Admin, prepare: s.describeGroup},
		{pattern: "DELETE /v1/tenants/{tenant}/groups/{group}", action: acl.Admin, prepare: s.deleteGroup},
		{pattern: "POST /v1/tenants/{tenant}/groups/{group}/reset", action: acl.Admin, prepare: s.resetGroup},
		{pattern: "GET /v1/tenants/{tenant}/groups/{group}/lag", action: acl.Read, prepare: s.groupLag},
		{pattern: "POST /v1/tenants/{tenant}/groups/{group}/members", action: acl.Read, prepare: s.joinGroup},
		{pattern: "POST /v1/tenants/{tenant}/groups/{group}/members/{member}/heartbeat", action: acl.Read, prepare: s.heartbeatGroup},
		{pattern: "POST /v1/tenants/{tenant}/groups/{group}/members/{member}/commit", action: acl.Read, prepare: s.commitGroup},
		{pattern: "DELETE /v1/tenants/{tenant}/groups/{group}/members/{member}", action: acl.Read, prepare: s.leaveGroup},

		{pattern: "POST /v1/principals", action: acl.Admin, prepare: s.createPrincipal},
		{pattern: "GET /v1/principals", action: acl.Admin, prepare: s.listPrincipals},
		{pattern: "GET /v1/principals/{principal}", action: acl.Admin, prepare: s.getPrincipal},
		{pattern: "DELETE /v1/principals/{principal}", action: acl.Admin, prepare: s.deletePrincipal},
		{pattern: "POST /v1/principals/{principal}/tokens", action: acl.Admin, prepare: s.issueToken},
		{pattern: "GET /v1/principals/{principal}/tokens", action: acl.Admin, prepare: s.listTokens},
		{pattern: "DELETE /v1/principals/{principal}/tokens/{token}", action: acl.Admin, prepare: s.revokeToken},
		{pattern: "POST /v1/principals/{principal}/s3-keys", action: acl.Admin, prepare: s.issueS3Key},
		{pattern: "GET /v1/principals/{principal}/s3-keys", action: acl.Admin, prepare: s.listS3Keys},
		{pattern: "DELETE /v1/s3-keys/{key}", action: acl.Admin, prepare: s.revokeS3Key},
		{pattern: "GET /v1/delegation-tokens", action: acl.Admin, prepare: s.listDelegationTokens},
		{pattern: "DELETE /v1/delegation-tokens/{id}", action: acl.Admin, prepare: s.cancelDelegationToken},
		{pattern: "POST /v1/grants", action: acl.Admin, prepare: s.addGrant},
		{pattern: "GET /v1/grants", action: acl.Admin, prepare: s.listGrants},
		{pattern: "DELETE /v1/grants/{grant}", action: acl.Admin, prepare: s.removeGrant},

		{pattern: "GET /v1/cluster/nodes", action: acl.Admin, prepare: s.clusterNodes},
		{pattern: "GET /v1/health", action: acl.Admin, prepare: s.health},

		{pattern: "POST /v1/queries", action: acl.Read, prepare: s.submitQuery},
		{pattern: "GET /v1/queries", anyCaller: true, prepare: s.listQueries},
		{pattern: "GET /v1/queries/{handle}", action: acl.Read, prepare: s.getQuery},
		{pattern: "DELETE /v1/queries/{handle}", action: acl.Read, prepare: s.cancelQuery},
		{pattern: "GET /v1/queries/{handle}/results", action: acl.Read, prepare: s.queryResults},
		{pattern: "POST /v1/packaged-queries", action: acl.Admin, prepare: s.definePackaged},
		{pattern: "GET /v1/packaged-queries", anyCaller: true, prepare: s.listPackaged},
		{pattern: "GET /v1/packaged-queries/{name}", anyCaller: true, prepare: s.getPackaged},
	}
}

func (s *Server) buildMux() error {
	s.routes = s.routeTable()
	s.mux = http.NewServeMux()
	for _, rt := range s.routes {
		// The declaration must say exactly one thing about access.
		kinds := 0
		for _, b := range []bool{rt.public, rt.anyCaller, rt.action != ""} {
			if b {
				kinds++
			}
		}
		if kinds != 1 {
			return fmt.Errorf("api: route %q must be exactly one of public, anyCaller or an action", rt.pattern)
		}
		for _, n := range nameWildcards {
			if strings.Contains(rt.pattern, "{"+n.wildcard+"}") {
				rt.names = append(rt.names, n)
			}
		}
		s.mux.Handle(rt.pattern, s.serveRoute(rt))
	}
	s.handler = http.HandlerFunc(s.serveHTTP)
	return nil
}

// serveHTTP answers requests that match no route with JSON errors, since
// ServeMux's own 404 and 405 are plain text.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	h, pattern := s.mux.Handler(r)
	if pattern != "" {
		s.mux.ServeHTTP(w, r)
		return
	}
	probe := &headerProbe{h: make(http.Header)}
	h.ServeHTTP(probe, r)
	c := s.begin(w, r, "unmatched")
	defer s.finish(c)
	switch probe.status {
	case http.StatusMethodNotAllowed:
		allow := probe.h.Get("Allow")
		w.Header().Set("Allow", allow)
		s.fail(c, &httpError{status: http.StatusMethodNotAllowed, code: "method_not_allowed",
			msg: fmt.Sprintf("method %s is not allowed on %s; allowed: %s", r.Method, r.URL.Path, allow)})
	case http.StatusNotFound:
		s.fail(c, &httpError{status: http.StatusNotFound, code: "not_found",
			msg: fmt.Sprintf("no such route: %s %s (see GET /openapi.yaml)", r.Method, r.URL.Path)})
	default:
		// ServeMux redirects (e.g. to a cleaned path): let it answer.
		h.ServeHTTP(c.w, r)
	}
}

// headerProbe records what a ServeMux fallback handler would answer.
type headerProbe struct {
	h      http.Header
	status int
}

func (p *headerProbe) Header() http.Header         { return p.h }
func (p *headerProbe) Write(b []byte) (int, error) { return len(b), nil }
func (p *headerProbe) WriteHeader(code int)        { p.status = code }

// serveRoute is the one place where requests are authenticated and
// authorized.
func (s *Server) serveRoute(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := s.begin(w, r, rt.pattern)
		defer s.finish(c)
		if !rt.public {
			if err := c.authenticate(); err != nil {
				s.fail(c, err)
				return
			}
		}
		for _, n := range rt.names {
			if err := n.check(r.PathValue(n.wildcard)); err != nil {
				s.fail(c, err)
				return
			}
		}
		// The system tenant is the server's own: no grant, not even
		// admin on "*", lets a request change it.
		if rt.changes() {
			if err := names.CheckWritable(r.PathValue("tenant"), rt.verb()); err != nil {
				s.fail(c, err)
				return
			}
		}
		o, err := rt.prepare(c)
		if err != nil {
			s.fail(c, err)
			return
		}
		if rt.action != "" {
			for _, res := range append([]acl.Resource{o.res}, o.also...) {
				if err := c.authorize(rt.action, res); err != nil {
					s.fail(c, err)
					return
				}
			}
		}
		if err := o.run(); err != nil {
			s.fail(c, err)
		}
	})
}

// changes reports whether the route changes something inside the tenant
// of its path: every append, and every other admin route but a read.
func (rt route) changes() bool {
	if !strings.Contains(rt.pattern, "{tenant}") {
		return false
	}
	return rt.action == acl.Append || rt.action == acl.Admin && !strings.HasPrefix(rt.pattern, "GET ")
}

// verb names what the route does to its tenant, for the reservation error.
func (rt route) verb() string {
	switch {
	case rt.action == acl.Append:
		return "append to"
	case rt.pattern == "DELETE /v1/tenants/{tenant}":
		return "delete"
	case strings.HasPrefix(rt.pattern, "DELETE "):
		return "delete in"
	}
	return "change"
}

// call is the state of one request.
type call struct {
	s     *Server
	w     *statusWriter
	r     *http.Request
	id    string
	route string
	start time.Time

	principal acl.Principal
	// anonymous is set when no Authorization header was sent; superuser
	// when, in addition, the server runs with Auth.Insecure.
	anonymous, superuser bool
	sentToken            bool
	// ndjson is set once a streaming ndjson response has started, so that
	// a later failure is reported as a final error line.
	ndjson bool
}

func (s *Server) begin(w http.ResponseWriter, r *http.Request, route string) *call {
	id := r.Header.Get("X-Request-Id")
	if !validRequestID(id) {
		var b [8]byte
		rand.Read(b[:])
		id = hex.EncodeToString(b[:])
	}
	w.Header().Set("X-Request-Id", id)
	return &call{s: s, w: &statusWriter{ResponseWriter: w}, r: r, id: id, route: route, start: time.Now()}
}

// validRequestID accepts a caller's request id only if it is short and
// plain, since it is echoed in headers and logs.
func validRequestID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

func (s *Server) finish(c *call) {
	status := c.w.status
	if status == 0 {
		status = http.StatusOK
	}
	elapsed := time.Since(c.start)
	// op is the route's pattern, never the path: paths carry tenant and
	// stream names, which would make the series unbounded.
	s.head.Observe(c.route, smetrics.HTTPStatus(status), c.w.bytes, elapsed)
	if s.intro != nil {
		s.intro.ObserveRequest(httpmetrics.Request{Head: "api", Op: c.route, Code: status, Bytes: c.w.bytes, Took: elapsed, Client: c.r.RemoteAddr,
			Info: httpmetrics.Info{Principal: c.principal.Name, Tenant: c.r.PathValue("tenant"), Stream: c.r.PathValue("stream")}})
	}
	if ce := s.log.Check(zap.DebugLevel, "request"); ce != nil {
		ce.Write(
			zap.String("request_id", c.id),
			zap.String("method", c.r.Method),
			zap.String("route", c.route),
			zap.String("path", c.r.URL.Path),
			zap.Int("status", status),
			zap.Int64("bytes", c.w.bytes),
			zap.Duration("duration", elapsed),
			zap.String("principal", c.principal.Name),
			zap.String("remote", c.r.RemoteAddr),
		)
	}
}

// authenticate sets the caller from the Authorization header. Without one
// the caller is acl.Anonymous, so that grants to anonymous work; a header
// that is present but not a valid bearer token is always refused.
func (c *call) authenticate() error {
	h := c.r.Header.Get("Authorization")
	if h == "" {
		c.principal, c.anonymous, c.superuser = acl.Anonymous, true, c.s.auth.Insecure
		return nil
	}
	c.sentToken = true
	scheme, token, _ := strings.Cut(h, " ")
	token = strings.TrimSpace(token)
	if !strings.EqualFold(scheme, "Bearer") || token == "" {
		return fmt.Errorf("%w: the Authorization header must be \"Bearer <token>\"", acl.ErrUnauthenticated)
	}
	if c.s.auth.Authn == nil {
		return fmt.Errorf("%w: this server does not accept bearer tokens", acl.ErrUnauthenticated)
	}
	p, err := c.s.auth.Authn(token)
	if err != nil {
		if errors.Is(err, acl.ErrUnauthenticated) {
			return err
		}
		if errors.Is(err, acl.ErrNotFound) || errors.Is(err, acl.ErrInvalid) {
			return fmt.Errorf("%w: %w", acl.ErrUnauthenticated, err)
		}
		return fmt.Errorf("authenticate: %w", err)
	}
	c.principal = p
	return nil
}

// authorize checks the caller against Auth.Authz. A refused anonymous
// caller gets 401 rather than 403: presenting a token is the fix.
func (c *call) authorize(a acl.Action, res acl.Resource) error {
	if c.superuser {
		return nil
	}
	err := c.s.auth.Authz.Authorize(c.principal, a, res)
	if err != nil && c.anonymous && !errors.Is(err, acl.ErrUnauthenticated) {
		return fmt.Errorf("%w: %w", acl.ErrUnauthenticated, err)
	}
	return err
}

// lister is what acl.Store and acl.AllowAll offer for filtering listings;
// another Authorizer falls back to Authorize.
type lister interface {
	Covers(p acl.Principal, a acl.Action, r acl.Resource) bool
	Visible(p acl.Principal, tenant string) bool
}

// visible reports whether a tenant belongs in the caller's tenant list.
func (c *call) visible(tenant string) bool {
	if c.superuser {
		return true
	}
	if l, ok := c.s.auth.Authz.(lister); ok {
		return l.Visible(c.principal, tenant)
	}
	return c.s.auth.Authz.Authorize(c.principal, acl.Read, acl.Resource{Tenant: tenant}) == nil
}

// covers reports whether one of the caller's grants allows a on res, for
// filtering listings.
func (c *call) covers(a acl.Action, res acl.Resource) bool {
	if c.superuser {
		return true
	}
	if l, ok := c.s.auth.Authz.(lister); ok {
		return l.Covers(c.principal, a, res)
	}
	return c.s.auth.Authz.Authorize(c.principal, a, res) == nil
}

// statusWriter remembers what was sent, for metrics, logs, and to know
// whether an error can still change the status.
type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(p)
	w.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the connection (flushes,
// deadlines).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) Flush() { http.NewResponseController(w.ResponseWriter).Flush() }
