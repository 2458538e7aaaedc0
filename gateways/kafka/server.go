// Package kafka is silt's Kafka wire-protocol head: unmodified Kafka
// producers and consumers append to and read silt streams. A topic is a
// stream ("<tenant>.<stream>"), a partition is a segment and an offset is
// the segment's offset; a record's value is the event, byte for byte, so
// what Kafka clients write is what the file heads serve. docs/kafka.md
// describes the mapping and what is implemented.
//
// Every request and response is decoded and encoded by franz-go's kmsg;
// this package holds only the framing (a 4-byte length, the request
// header) and one small file per group of API keys, as franz-go's kfake
// does. Access goes through the same acl.Authorizer as every head: a
// client authenticates with SASL PLAIN (its principal and one of its
// tokens) or, only where configured, acts as the anonymous principal.
package kafka

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/silt-io/silt/acl"
	"github.com/silt-io/silt/core"
	"github.com/silt-io/silt/internal/connlimit"
	smetrics "github.com/silt-io/silt/internal/metrics"
)

// Store is what the head needs from the segment engine (core.Store).
type Store interface {
	GetStream(ctx context.Context, tenant, name string) (core.Stream, error)
	ListTenants(ctx context.Context) ([]core.Tenant, error)
	ListStreams(ctx context.Context, tenant string) ([]core.Stream, error)
	GetTenant(ctx context.Context, name string) (core.Tenant, error)
	CreateStream(ctx context.Context, tenant, name string, cfg core.StreamConfig) (core.Stream, error)
	DeleteStream(ctx context.Context, tenant, name string) error
	Append(ctx context.Context, req core.AppendRequest) (core.AppendResult, error)
	Read(ctx context.Context, req core.ReadRequest) (core.ReadResult, error)
	Wait(ctx context.Context, tenant, stream, segmentID string, after uint64, timeout time.Duration) (bool, error)
	Limits() core.Limits
}

// Tiering is what the head needs from the tier policy: backpressure on
// appends while tier 2 falls behind, and reads of history tier 1 no
// longer holds (tiering.Tierer; the API head takes the same methods).
type Tiering interface {
	Backpressure(tenant, stream string) error
	ReadTiered(ctx context.Context, tenant, stream, segment string, from uint64, maxEvents, maxBytes int) ([]core.Event, uint64, error)
	FirstTiered(ctx context.Context, tenant, stream, segment string) (uint64, bool, error)
}

// Auth is how the head turns SASL credentials into principals and decides
// what they may do.
type Auth struct {
	// Authn resolves a silt token (the SASL PLAIN password); normally
	// acl.Store.Authenticate.
	Authn func(secret string) (acl.Principal, error)
	// Authz decides every request (default deny).
	Authz acl.Authorizer
	// Insecure (auth.insecure_dev) serves clients without SASL as the
	// anonymous principal even when Config.AllowAnonymous is off; Authz
	// is then acl.InsecureDev, which lets anonymous do anything.
	Insecure bool
}

// Server is the Kafka head. Create it with New.
type Server struct {
	cfg     Config
	store   Store
	auth    Auth
	log     *zap.Logger
	budget  *budget
	seqs    *sequences
	tiering Tiering        // nil: tier 1 only
	met     *smetrics.Head // nil: no request series
	// producers: nil, no producer series
	producers *smetrics.Producers
	groups    Groups      // nil: no consumer groups (not advertised)
	members   memberships // Kafka group membership (membership.go)
}

// New builds the head over store.
func New(cfg Config, store Store, auth Auth, log *zap.Logger) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if store == nil {
		return nil, errors.New("kafka: nil store")
	}
	if auth.Authz == nil {
		return nil, errors.New("kafka: auth.Authz is required")
	}
	if log == nil {
		log = zap.NewNop()
	}
	return &Server{cfg: cfg, store: store, auth: auth, log: log, budget: newBudget(cfg.MaxInflightBytes), seqs: newSequences(maxTrackedSequences)}, nil
}

// UseTiering connects the tier policy. Call it before serving.
func (s *Server) UseTiering(t Tiering) { s.tiering = t }

// UseMetrics counts requests in the heads' shared series and appends in
// the producer series the API also feeds. Call it before serving.
func (s *Server) UseMetrics(set *smetrics.Set) {
	s.met, s.producers = set.Heads.Head("kafka"), set.Producers
}

// Serve serves on ln (with TLS when tlsCfg is set) until ctx is
// cancelled, which closes the listener and every connection.
func (s *Server) Serve(ctx context.Context, ln net.Listener, tlsCfg *tls.Config) error {
	if tlsCfg != nil {
		ln = tls.NewListener(ln, tlsCfg)
	}
	var (
		mu    sync.Mutex
		conns = map[net.Conn]struct{}{}
		wg    sync.WaitGroup
	)
	stop := context.AfterFunc(ctx, func() {
		ln.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	defer stop()
	advertise := s.cfg.Advertise
	if advertise == "" {
		advertise = ln.Addr().String()
	}
	var err error
	for {
		var nc net.Conn
		nc, err = ln.Accept()
		if err != nil {
			break
		}
		mu.Lock()
		if ctx.Err() != nil {
			mu.Unlock()
			nc.Close()
			break
		}
		conns[nc] = struct{}{}
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			remote := nc.RemoteAddr().String()
			c := &conn{s: s, nc: nc, remote: remote, advertise: advertise, log: s.log.With(zap.String("remote", remote))}
			c.serve(ctx)
			nc.Close()
			mu.Lock()
			delete(conns, nc)
			mu.Unlock()
		}()
	}
	ln.Close()
	mu.Lock()
	for c := range conns {
		c.Close()
	}
	mu.Unlock()
	wg.Wait()
	if ctx.Err() != nil {
		return nil
	}
	return fmt.Errorf("kafka: serve: %w", err)
}

// conn is one client connection. Its requests are served one at a time,
// in order: Kafka clients pipeline requests and expect the answers in the
// order asked.
type conn struct {
	s         *Server
	nc        net.Conn
	remote    string
	log       *zap.Logger
	advertise string

	// principal is who the connection acts as once SASL succeeded (or
	// as anonymous, where allowed, until it does).
	principal acl.Principal
	authed    bool
	// mechanism is the SASL mechanism agreed by SaslHandshake; empty
	// until then.
	mechanism string
	// rawSASL: a SaslHandshake v0 was answered, so the next frame is
	// the bare PLAIN message, not a SaslAuthenticate request.
	rawSASL  bool
	clientID string
}

// maxSmallRequest bounds requests other than Produce: only Produce
// carries data, and a decoder allocates arrays from counts in the request,
// so a large non-Produce request could cost many times its size.
const maxSmallRequest = 1 << 20

// errClose ends a connection after a request that cannot be answered in
// Kafka's protocol; the wrapping message says why, and is logged.
var errClose = errors.New("kafka: closing connection")

func (c *conn) serve(ctx context.Context) {
	br := bufio.NewReaderSize(c.nc, 16<<10)
	var head [8]byte
	for ctx.Err() == nil {
		connlimit.Idle(c.nc)
		c.nc.SetReadDeadline(time.Now().Add(c.s.cfg.IdleTimeout))
		if _, err := io.ReadFull(br, head[:4]); err != nil {
			switch {
			case errors.Is(err, io.EOF) || ctx.Err() != nil:
			case errors.Is(err, os.ErrDeadlineExceeded):
				c.log.Debug("kafka connection closed: no request for idle_timeout", zap.Duration("idle_timeout", c.s.cfg.IdleTimeout))
				connlimit.ClosedIdle(c.nc)
			default:
				c.log.Debug("kafka connection closed", zap.Error(err))
			}
			return
		}
		connlimit.Active(c.nc)
		c.nc.SetReadDeadline(time.Now().Add(c.s.cfg.ReadTimeout))
		size := int32(binary.BigEndian.Uint32(head[:4]))
		// Every request has at least key, version and correlation id.
		if size < 8 || int(size) > c.s.cfg.MaxRequestBytes {
			c.log.Warn("kafka connection closed: request size out of bounds (kafka.max_request_bytes)",
				zap.Int32("size", size), zap.Int("max_request_bytes", c.s.cfg.MaxRequestBytes))
			return
		}
		if c.rawSASL {
			if !c.rawAuthenticate(br, size) {
				return
			}
			continue
		}
		if _, err := io.ReadFull(br, head[4:6]); err != nil {
			c.log.Debug("kafka connection closed in a request", zap.Error(err))
			return
		}
		if key := int16(binary.BigEndian.Uint16(head[4:6])); key != produceKey && size > maxSmallRequest {
			c.log.Warn("kafka connection closed: request other than Produce larger than 1 MiB",
				zap.String("api", kmsg.NameForKey(key)), zap.Int32("size", size))
			return
		}
		if err := c.s.budget.acquire(ctx, int64(size)); err != nil {
			return
		}
		buf := make([]byte, size)
		copy(buf, head[4:6])
		_, err := io.ReadFull(br, buf[2:])
		if err != nil {
			c.s.budget.release(int64(size))
			c.log.Debug("kafka connection closed in a request", zap.Error(err))
			return
		}
		out, err := c.handle(ctx, buf)
		c.s.budget.release(int64(size))
		if err != nil {
			c.log.Warn("kafka connection closed", zap.Error(err), zap.String("client_id", c.clientID))
			return
		}
		if out == nil {
			continue
		}
		c.nc.SetWriteDeadline(time.Now().Add(c.s.cfg.ReadTimeout))
		if _, err := c.nc.Write(out); err != nil {
			c.log.Debug("kafka connection closed writing a response", zap.Error(err))
			return
		}
	}
}

// handle decodes one request (buf: everything after the length) and
// returns the framed response, nil when none is due (Produce with
// acks=0), or an error that closes the connection.
func (c *conn) handle(ctx context.Context, buf []byte) (out []byte, err error) {
	start := time.Now()
	defer func() {
		// A decoder or handler bug must cost one connection, not the
		// server.
		if r := recover(); r != nil {
			c.log.Error("kafka request panicked; closing the connection", zap.Any("panic", r), zap.ByteString("stack", debug.Stack()))
			out, err = nil, fmt.Errorf("%w: internal error", errClose)
		}
	}()
	b := kbin.Reader{Src: buf}
	key, version, corr := b.Int16(), b.Int16(), b.Int32()
	clientID := b.NullableString()
	if !b.Ok() {
		return nil, fmt.Errorf("%w: malformed request header", errClose)
	}
	if clientID != nil {
		c.clientID = *clientID
	}
	name := kmsg.NameForKey(key)
	api, known := apis[key]
	known = known && (!api.groups || c.s.groups != nil)
	if key == apiVersionsKey && (version < api.min || version > api.max) {
		// KIP-511: a version the broker does not know gets the v0 layout
		// with UNSUPPORTED_VERSION and the ranges, and the client retries
		// lower. Its body may be in a layout kmsg does not know either,
		// so it is not parsed.
		return frame(corr, false, unsupportedAPIVersions(c.s.groups != nil)), nil
	}
	if !known {
		return nil, fmt.Errorf("%w: unknown or unimplemented API key %d (%s) v%d, which ApiVersions does not advertise", errClose, key, name, version)
	}
	if version < api.min || version > api.max {
		return nil, fmt.Errorf("%w: %s v%d is outside the advertised range v%d–v%d", errClose, name, version, api.min, api.max)
	}
	req := kmsg.RequestForKey(key)
	req.SetVersion(version)
	if req.IsFlexible() {
		kmsg.SkipTags(&b)
	}
	if !b.Ok() {
		return nil, fmt.Errorf("%w: malformed %s v%d request header", errClose, name, version)
	}
	if err := req.ReadFrom(b.Src); err != nil {
		return nil, fmt.Errorf("%w: malformed %s v%d request: %v", errClose, name, version, err)
	}
	if !c.authed && !c.anonymousAllowed() && !api.beforeAuth {
		// A Kafka broker with a SASL listener also closes a connection
		// that skips authentication.
		return nil, fmt.Errorf("%w: %s before SASL authentication (kafka.allow_anonymous is off)", errClose, name)
	}
	if !c.authed {
		c.principal = acl.Anonymous
	}
	resp, err := api.handle(ctx, c, req)
	if err != nil {
		return nil, err
	}
	if resp == nil {
		c.observe(name, smetrics.StatusOK, 0, start)
		return nil, nil
	}
	resp.SetVersion(version)
	// ApiVersions answers always use header v0 (KIP-511).
	out = frame(corr, resp.IsFlexible() && key != apiVersionsKey, resp)
	// Errors travel inside Kafka answers, per topic and partition;
	// a request that got an answer counts as served.
	c.observe(name, smetrics.StatusOK, int64(len(out)), start)
	return out, nil
}

func (c *conn) observe(op, status string, sent int64, start time.Time) {
	if c.s.met != nil {
		c.s.met.Observe(op, status, sent, time.Since(start))
	}
}

// anonymousAllowed reports whether an unauthenticated connection is
// served, as the anonymous principal.
func (c *conn) anonymousAllowed() bool { return c.s.cfg.AllowAnonymous || c.s.auth.Insecure }

// frame encodes resp behind its length and response header.
func frame(corr int32, flexibleHeader bool, resp kmsg.Response) []byte {
	out := make([]byte, 8, 64)
	binary.BigEndian.PutUint32(out[4:], uint32(corr))
	if flexibleHeader {
		out = append(out, 0) // no tagged fields
	}
	out = resp.AppendTo(out)
	binary.BigEndian.PutUint32(out, uint32(len(out)-4))
	return out
}

// budget bounds the request bytes held in memory across connections.
type budget struct {
	mu    sync.Mutex
	cond  *sync.Cond
	free  int64
	total int64
}

func newBudget(n int64) *budget {
	b := &budget{free: n, total: n}
	b.cond = sync.NewCond(&b.mu)
	return b
}

// acquire waits until n bytes are free or ctx ends.
func (b *budget) acquire(ctx context.Context, n int64) error {
	stop := context.AfterFunc(ctx, func() {
		b.mu.Lock()
		b.cond.Broadcast()
		b.mu.Unlock()
	})
	defer stop()
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.free < n {
		if err := ctx.Err(); err != nil {
			return err
		}
		b.cond.Wait()
	}
	b.free -= n
	return nil
}

func (b *budget) release(n int64) {
	b.mu.Lock()
	b.free += n
	b.mu.Unlock()
	b.cond.Broadcast()
}
