// Package webhdfs is silt's WebHDFS head: it serves the tiered view
// read-only under /webhdfs/v1/<tenant>/<stream>/..., so that Hadoop's
// WebHdfsFileSystem, Spark and fsspec read streams as webhdfs:// paths.
//
// Requests authenticate to an acl.Principal with a bearer token (the
// Authorization header, as Hadoop's OAuth2 support sends it, or the
// delegation= parameter), with a Hadoop delegation token the head issued
// (delegation=, see TokenStore), with Hadoop's user.name= only when the
// operator enables the insecure mode, or act as acl.Anonymous. Every view access
// then goes through acl.Wrap, so this package decides no access itself.
// Mutating operations are refused with AccessControlException before the
// request body is read.
//
// OPEN answers, as a NameNode does, with a redirect to a data URL; here it
// points back at this server and carries an HMAC-signed, expiring
// parameter naming the principal, so that the data URL works without any
// credential and can be re-requested at other offsets.
package webhdfs

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/silt-io/silt/acl"
	"github.com/silt-io/silt/internal/httpmetrics"
	"github.com/silt-io/silt/internal/httpserve"
	"github.com/silt-io/silt/view"
)

// Server is the WebHDFS head.
type Server struct {
	cfg        Config
	view       view.View
	authn      func(secret string) (acl.Principal, error)
	issue      TokenIssuer // nil: no OAuth2 token endpoint
	issued     issuedTokens
	dt         *TokenStore // nil: no delegation tokens
	authz      acl.Authorizer
	signingKey []byte
	log        *zap.Logger
	now        func() time.Time // replaced in tests to expire signed URLs

	wrap func(http.Handler) http.Handler // optional middleware for Serve (metrics)
}

// minKeyLen keeps signed data URLs unforgeable by guessing the key.
const minKeyLen = 16

// New builds a Server over v. authn resolves a bearer secret to its
// principal (acl.Store.Authenticate), authz decides what each principal
// may read, and signingKey authenticates the data URLs OPEN redirects to;
// a key that changes on restart only invalidates URLs in flight. issue,
// if not nil, backs the OAuth2 token endpoint at /oauth2/token.
func New(cfg Config, v view.View, authn func(secret string) (acl.Principal, error), issue TokenIssuer, authz acl.Authorizer, signingKey []byte, log *zap.Logger) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if v == nil || authn == nil || authz == nil {
		return nil, errors.New("webhdfs: new: view, authenticator and authorizer are required")
	}
	if len(signingKey) < minKeyLen {
		return nil, fmt.Errorf("webhdfs: new: signing key must be at least %d bytes", minKeyLen)
	}
	if log == nil {
		log = zap.NewNop()
	}
	if cfg.InsecureUserName {
		log.Warn("webhdfs: insecure_user_name is on: any client can act as any principal by naming it in user.name=")
	}
	return &Server{cfg: cfg, view: v, authn: authn, issue: issue, authz: authz, signingKey: append([]byte(nil), signingKey...), log: log, now: time.Now}, nil
}

// Handler returns the HTTP handler of the WebHDFS API.
func (s *Server) Handler() http.Handler { return http.HandlerFunc(s.serveHTTP) }

// UseDelegationTokens makes the head issue, check, renew and cancel
// Hadoop delegation tokens kept in ts. Without it GETDELEGATIONTOKEN
// answers with a null token, as an insecure NameNode does. Call it before
// Serve.
func (s *Server) UseDelegationTokens(ts *TokenStore) { s.dt = ts }

// Wrap sets middleware that Serve puts around the handler (the server
// wiring uses it for request metrics). Call it before Serve.
func (s *Server) Wrap(mw func(http.Handler) http.Handler) { s.wrap = mw }

// Serve serves on ln (with TLS when tlsCfg is not nil) until ctx is
// cancelled, then shuts down gracefully for up to 5 seconds.
func (s *Server) Serve(ctx context.Context, ln net.Listener, tlsCfg *tls.Config) error {
	handler := s.Handler()
	if s.wrap != nil {
		handler = s.wrap(handler)
	}
	if err := httpserve.ServeHandler(ctx, handler, zap.NewStdLog(s.log), ln, tlsCfg); err != nil {
		return fmt.Errorf("webhdfs: %w", err)
	}
	return nil
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Server", "silt")
	if r.URL.Path == oauth2Path {
		s.serveOAuth2Token(w, r)
		return
	}
	if e := checkOp(r.Method, firstOp(r.URL.RawQuery)); e != nil {
		// Refuse before authenticating or reading: the body may be large
		// and will never be used. Closing the connection is what lets the
		// server skip draining it.
		if r.ContentLength != 0 || len(r.TransferEncoding) > 0 {
			w.Header().Set("Connection", "close")
		}
		if e.Status == http.StatusMethodNotAllowed {
			w.Header().Set("Allow", "GET, HEAD, PUT, POST, DELETE")
		}
		writeErr(w, e)
		return
	}
	raw, p, ok := requestPath(r.URL.Path)
	if !ok {
		writeErr(w, errNotFound("no such resource; WebHDFS is served under "+prefix+"/"))
		return
	}
	q, err := parseQuery(r.URL.RawQuery)
	if err != nil {
		s.fail(w, r, err, p)
		return
	}
	var (
		principal acl.Principal
		how       authMethod
	)
	if q.signature != "" {
		principal, err = s.verify(q.signature, p)
		how = authSigned
	} else {
		principal, how, err = s.authenticate(r, q)
	}
	noteRequest(r, principal.Name, p)
	if err != nil {
		s.fail(w, r, err, p)
		return
	}
	h := &handler{s: s, v: literalView{acl.Wrap(s.view, s.authz, principal)}, principal: principal, how: how, w: w, r: r, q: q, path: p, raw: raw}
	fn, ok := ops[q.op]
	if !ok {
		// checkOp let only HDFS's own GET ops through: these are the
		// snapshot, erasure-coding, storage-policy and symlink reads.
		s.fail(w, r, badParam("op", q.op+" is not served: silt has no snapshots, erasure coding, storage policies or symlinks"), p)
		return
	}
	if err := fn(h); err != nil {
		s.fail(w, r, h.explain(err), p)
	}
}

// authMethod records how a request authenticated: only a principal that
// proved itself with a bearer token may obtain, renew or cancel
// delegation tokens.
type authMethod int

const (
	authAnonymous  authMethod = iota
	authUserName              // insecure user.name=
	authBearer                // a silt token, in the Authorization header or as delegation=
	authDelegation            // a Hadoop delegation token issued by this head
	authSigned                // a signed data URL
)

// authenticate turns the request's credential into a principal. A bearer
// token wins over user.name, which Hadoop sends alongside whatever else it
// uses.
func (s *Server) authenticate(r *http.Request, q params) (acl.Principal, authMethod, error) {
	p, how, err := s.credential(r, q)
	if err != nil {
		return acl.Principal{}, 0, err
	}
	// silt has no proxy-user rules, so doas= may only name the caller.
	if q.doAs != "" && q.doAs != p.Name {
		return acl.Principal{}, 0, errAuthorization(fmt.Sprintf("User: %s is not allowed to impersonate %s", p.Name, q.doAs))
	}
	return p, how, nil
}

func (s *Server) credential(r *http.Request, q params) (acl.Principal, authMethod, error) {
	if a := r.Header.Get("Authorization"); a != "" {
		scheme, secret, _ := strings.Cut(a, " ")
		secret = strings.TrimSpace(secret)
		if !strings.EqualFold(scheme, "Bearer") {
			return acl.Principal{}, 0, errAuth(fmt.Sprintf("unsupported authorization scheme %q; send \"Authorization: Bearer <token>\"", scheme))
		}
		p, err := s.bearer(secret)
		return p, authBearer, err
	}
	if q.delegation != "" {
		// A generated silt secret never parses as a Hadoop token (its
		// first byte would be a negative length), so the form decides
		// which kind of credential this is.
		if t, err := decodeToken(q.delegation); err == nil && s.dt != nil {
			id, err := s.dt.check(t, s.now())
			if err != nil {
				return acl.Principal{}, 0, errTokenAuth(err)
			}
			return acl.Principal{Name: id.owner}, authDelegation, nil
		}
		p, err := s.bearer(q.delegation)
		return p, authBearer, err
	}
	if q.userName != "" && s.cfg.InsecureUserName {
		if len(q.userName) > 64 || strings.ContainsAny(q.userName, " \t\r\n/~") {
			return acl.Principal{}, 0, errArgument(fmt.Sprintf("Invalid value for webhdfs parameter \"user.name\": %q", q.userName))
		}
		return acl.Principal{Name: q.userName}, authUserName, nil
	}
	// user.name without the insecure mode proves nothing, so it is
	// ignored rather than refused: stock Hadoop clients always send it.
	return acl.Anonymous, authAnonymous, nil
}

// bearer checks a silt bearer secret. Any failure is the client's to fix
// with another credential, hence 401 whatever authn wrapped.
func (s *Server) bearer(secret string) (acl.Principal, error) {
	p, err := s.authn(secret)
	if err != nil {
		return acl.Principal{}, errAuth(err.Error())
	}
	return p, nil
}

// fail sends the RemoteException for err and logs what the client cannot
// fix.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error, p string) {
	e := mapErr(err, p)
	if e.Status >= 500 {
		s.log.Warn("webhdfs request failed", zap.String("method", r.Method), zap.String("path", p),
			zap.String("op", r.URL.Query().Get("op")), zap.Error(err))
	}
	writeErr(w, e)
}

// noteRequest tells the request observer (introspection) who asked about
// which tenant and stream; p is the request's view path.
func noteRequest(r *http.Request, principal, p string) {
	parts := strings.SplitN(strings.TrimPrefix(p, "/"), "/", 3)
	tenant, stream := parts[0], ""
	if len(parts) > 1 {
		stream = parts[1]
	}
	httpmetrics.Note(r, principal, tenant, stream)
}
