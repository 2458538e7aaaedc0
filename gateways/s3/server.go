// Package s3 is silt's S3 head: it serves the tiered view read-only over
// the S3 REST API, bucket = tenant and key = <stream>/segment=<id>/<chunk>,
// path-style. Requests are authenticated with SigV4 (header or presigned
// URL) against acl S3 access keys, or act as acl.Anonymous when unsigned;
// every view access then goes through acl.Wrap, so this package decides
// no access itself. Writes are refused with AccessDenied before anything
// else happens.
package s3

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
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

// Server is the S3 head.
type Server struct {
	cfg   Config
	view  view.View
	keys  KeyLookup
	authz acl.Authorizer
	log   *zap.Logger
	now   func() time.Time // replaced in tests to check skew and expiry

	wrap func(http.Handler) http.Handler // optional middleware for Serve (metrics)
}

// New builds a Server over v. keys resolves SigV4 access keys and authz
// decides what each principal may read.
func New(cfg Config, v view.View, keys KeyLookup, authz acl.Authorizer, log *zap.Logger) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if v == nil || keys == nil || authz == nil {
		return nil, errors.New("s3: new: view, key lookup and authorizer are required")
	}
	if log == nil {
		log = zap.NewNop()
	}
	return &Server{cfg: cfg, view: v, keys: keys, authz: authz, log: log, now: time.Now}, nil
}

// Handler returns the HTTP handler of the S3 API.
func (s *Server) Handler() http.Handler { return http.HandlerFunc(s.serveHTTP) }

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
		return fmt.Errorf("s3: %w", err)
	}
	return nil
}

func newRequestID() string {
	var b [8]byte
	rand.Read(b[:])
	return strings.ToUpper(hex.EncodeToString(b[:]))
}

// unsupported are sub-resources S3 clients may ask for that silt does not
// have; answering NotImplemented is clearer than a listing or an object.
var unsupported = []string{
	"acl", "tagging", "versions", "versioning", "policy", "policyStatus", "cors",
	"lifecycle", "logging", "notification", "replication", "encryption", "website",
	"uploads", "uploadId", "object-lock", "retention", "legal-hold", "torrent",
	"attributes", "accelerate", "requestPayment", "inventory", "analytics", "metrics",
	"intelligent-tiering", "ownershipControls", "publicAccessBlock", "select", "restore",
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	id := newRequestID()
	w.Header().Set("x-amz-request-id", id)
	w.Header().Set("x-amz-id-2", id)
	w.Header().Set("Server", "silt")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		// Refuse before authenticating or reading: the body may be large
		// and will never be used. Closing the connection is what lets
		// the server skip draining it.
		if r.ContentLength != 0 || len(r.TransferEncoding) > 0 {
			w.Header().Set("Connection", "close")
		}
		writeErr(w, r, errWrite)
		return
	}
	bucket, key := s.route(r)
	stream, _, _ := strings.Cut(key, "/")
	httpmetrics.Note(r, "", bucket, stream)
	p, err := s.authenticate(r)
	if err != nil {
		s.fail(w, r, err, targetBucket)
		return
	}
	httpmetrics.Note(r, p.Name, "", "")
	q := r.URL.Query()
	for _, sub := range unsupported {
		if q.Has(sub) {
			writeErr(w, r, errNotImplemented)
			return
		}
	}
	h := &handler{s: s, v: acl.Wrap(s.view, s.authz, p), anonymous: p == acl.Anonymous, w: w, r: r}
	switch {
	case bucket == "":
		h.listBuckets()
	case key != "":
		h.object(bucket, key)
	case q.Has("location"):
		h.bucketLocation(bucket)
	case r.Method == http.MethodHead:
		h.headBucket(bucket)
	default:
		h.listObjects(bucket)
	}
}

// route splits a request into bucket and key, from the host name in
// virtual-host style and from the path otherwise.
func (s *Server) route(r *http.Request) (bucket, key string) {
	if s.cfg.Domain != "" {
		host := r.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		if b, ok := strings.CutSuffix(strings.ToLower(host), "."+s.cfg.Domain); ok && b != "" {
			return b, strings.TrimPrefix(r.URL.Path, "/")
		}
	}
	bucket, key, _ = strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	return bucket, key
}

// fail sends the S3 error for err and logs what the client cannot fix.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error, t target) {
	e := mapErr(err, t)
	if e.Status >= 500 {
		s.log.Warn("s3 request failed", zap.String("method", r.Method), zap.String("path", r.URL.Path),
			zap.String("request_id", w.Header().Get("x-amz-request-id")), zap.Error(err))
	}
	writeErr(w, r, e)
}

// handler serves one request through the principal's view.
type handler struct {
	s         *Server
	v         view.View
	anonymous bool // S3 refuses some parameters to unsigned requests
	w         http.ResponseWriter
	r         *http.Request
}

func (h *handler) fail(err error, t target) { h.s.fail(h.w, h.r, err, t) }

func (h *handler) ctx() context.Context { return h.r.Context() }

// bucketDir checks that bucket exists and is readable, returning its path.
func (h *handler) bucketDir(bucket string) (string, bool) {
	p := "/" + bucket
	fi, err := h.v.Stat(h.ctx(), p)
	if err == nil && !fi.IsDir {
		err = view.ErrNotFound
	}
	if err != nil {
		h.fail(err, targetBucket)
		return "", false
	}
	return p, true
}

func (h *handler) headBucket(bucket string) {
	if _, ok := h.bucketDir(bucket); ok {
		h.w.Header().Set("x-amz-bucket-region", h.s.cfg.Region)
		h.w.WriteHeader(http.StatusOK)
	}
}

type locationConstraint struct {
	XMLName struct{} `xml:"http://s3.amazonaws.com/doc/2006-03-01/ LocationConstraint"`
	Region  string   `xml:",chardata"`
}

func (h *handler) bucketLocation(bucket string) {
	if _, ok := h.bucketDir(bucket); !ok {
		return
	}
	// us-east-1 is reported as empty, as S3 does.
	region := h.s.cfg.Region
	if region == "us-east-1" {
		region = ""
	}
	writeXML(h.w, h.r, locationConstraint{Region: region})
}
