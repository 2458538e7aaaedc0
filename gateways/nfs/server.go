// Package nfs is silt's NFSv3 head: it serves the tiered view read-only
// through a patched copy of github.com/willscott/go-nfs (internal/gonfs),
// with NFS and MOUNT on one TCP port.
//
// Clients are not authenticated: AUTH_SYS credentials are whatever the
// client claims. Instead every export has an allow list of client
// networks and a principal; a secure export also refuses requests from
// unreserved source ports, and only there may a map name the principal
// of an AUTH_SYS uid. MNT picks the export by path and client address;
// every call, MNT or NFS, then acts as the principal its own credential
// and connection give (Export.principal) and sees the view through
// acl.Wrap for that principal, so this package decides no access itself
// and a file handle gives no one more than their own grants. Connections
// from addresses no export allows are closed on accept.
//
// File handles are stateless (see internal/fh): they name the export and
// the path and are MACed with the handle key, so they stay valid across
// restarts with the same key and are rejected with another.
package nfs

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path"
	"strings"
	"sync"

	billy "github.com/go-git/go-billy/v5"
	gonfs "github.com/silt-io/silt/gateways/nfs/internal/gonfs"
	"go.uber.org/zap"

	"github.com/silt-io/silt/acl"
	"github.com/silt-io/silt/gateways/nfs/internal/fh"
	"github.com/silt-io/silt/internal/connlimit"
	"github.com/silt-io/silt/internal/metrics"
	"github.com/silt-io/silt/view"
)

// Server is the NFSv3 head.
type Server struct {
	cfg     Config
	exports []Export
	fss     []map[string]*viewFS // per export, by principal; rooted at the export path
	codec   *fh.Codec
	cookies *dirCookies // directory cookie → name, see readdir.go
	indexes *dirIndexes // the cookie cache's fallback, see cookieindex.go
	files   *openFiles  // recently read files, see openfiles.go
	met     *metrics.Head
	calls   func(Call) // introspection events (UseCalls); nil: none
	log     *zap.Logger
}

// New builds a Server over v. authz decides what each export's principal
// may read; handleKey (at least 16 bytes, kept stable across restarts)
// authenticates file handles.
func New(cfg Config, v view.View, authz acl.Authorizer, handleKey []byte, log *zap.Logger) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if v == nil || authz == nil {
		return nil, errors.New("nfs: new: view and authorizer are required")
	}
	codec, err := fh.New(handleKey)
	if err != nil {
		return nil, fmt.Errorf("nfs: new: %w", err)
	}
	if log == nil {
		log = zap.NewNop()
	}
	exports, _ := cfg.parseExports() // Validate parsed them already
	s := &Server{cfg: cfg, exports: exports, codec: codec, cookies: newDirCookies(cookieCacheSize), indexes: newDirIndexes(indexMaxEntries, indexMinAge), files: newOpenFiles(), met: metrics.NewUnregistered(metrics.DefaultConfig()).Heads.Head("nfs"), log: log}
	for i, e := range exports {
		byPrincipal := map[string]*viewFS{}
		for _, p := range e.principals() {
			byPrincipal[p] = &viewFS{
				ctx:       context.Background(),
				v:         acl.Wrap(v, authz, acl.Principal{Name: p}),
				exp:       i,
				principal: p,
				root:      e.Path,
				encode:    func(full []string) ([]byte, error) { return codec.Encode(i, e.id(), full) },
				files:     s.files,
				log:       log,
			}
		}
		s.fss = append(s.fss, byPrincipal)
	}
	return s, nil
}

// Serve serves on ln until ctx is cancelled, which closes the listener
// and every open connection.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	tl := &trackingListener{Listener: ln, s: s, conns: map[*trackedConn]struct{}{}}
	stopped := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-ctx.Done():
		case <-stopped:
		}
		tl.shutdown()
	}()
	srv := &gonfs.Server{Handler: (*handler)(s), Context: ctx, MaxInflight: s.cfg.MaxInflight, Observe: s.observe,
		IdleTimeout: s.cfg.IdleTimeout, ConnState: s.connState}
	err := srv.Serve(tl)
	close(stopped)
	<-done
	s.files.close()
	if ctx.Err() != nil {
		return nil
	}
	return fmt.Errorf("nfs: serve: %w", err)
}

// connState tells the connection's admission (internal/connlimit, when
// ln came from it) whether the connection is serving requests, so that
// at the head's cap only an idle one is closed for a newcomer.
func (s *Server) connState(c net.Conn, st gonfs.ConnState) {
	switch st {
	case gonfs.ConnActive:
		connlimit.Active(c)
	case gonfs.ConnIdle:
		connlimit.Idle(c)
	case gonfs.ConnIdleClosed:
		connlimit.ClosedIdle(c)
		s.log.Debug("nfs connection closed: no request for idle_timeout",
			zap.String("remote", c.RemoteAddr().String()), zap.Duration("idle_timeout", s.cfg.IdleTimeout))
	}
}

// allowedAnywhere reports whether some export allows addr; others are
// refused at accept so that a leaked handle is useless off-network.
func (s *Server) allowedAnywhere(addr netip.Addr) bool {
	for _, e := range s.exports {
		if e.allows(addr) {
			return true
		}
	}
	return false
}

func remoteAddr(c net.Conn) (netip.Addr, bool) {
	ap, err := netip.ParseAddrPort(c.RemoteAddr().String())
	if err != nil {
		return netip.Addr{}, false
	}
	return ap.Addr().Unmap(), true
}

// trackingListener filters connections by address and remembers them so
// that shutdown can close them: go-nfs itself never closes a connection
// when its context ends.
type trackingListener struct {
	net.Listener
	s *Server

	mu struct {
		sync.Mutex
		closed bool
	}
	conns map[*trackedConn]struct{} // guarded by mu
}

func (l *trackingListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if addr, ok := remoteAddr(c); !ok || !l.s.allowedAnywhere(addr) {
			l.s.log.Warn("nfs connection refused: address not in any export's allow list",
				zap.String("remote", c.RemoteAddr().String()))
			c.Close()
			continue
		}
		tc := &trackedConn{Conn: c, l: l}
		l.mu.Lock()
		if l.mu.closed {
			l.mu.Unlock()
			c.Close()
			return nil, net.ErrClosed
		}
		l.conns[tc] = struct{}{}
		l.mu.Unlock()
		return tc, nil
	}
}

func (l *trackingListener) shutdown() {
	l.Listener.Close()
	l.mu.Lock()
	l.mu.closed = true
	conns := l.conns
	l.conns = map[*trackedConn]struct{}{}
	l.mu.Unlock()
	for c := range conns {
		c.Close()
	}
}

// trackedConn closes itself on a read error: go-nfs returns from its
// connection loop on non-EOF errors without closing the socket.
type trackedConn struct {
	net.Conn
	l    *trackingListener
	once sync.Once
}

func (c *trackedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	// A deadline passing is the idle timeout's check, which decides
	// itself whether the connection is done.
	if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		c.Close()
	}
	return n, err
}

// WriteBuffers writes bufs with one writev(2) where the connection can:
// net.Buffers does so only for the net package's own connection types,
// so a wrapping connection (connlimit's) passes it on.
func (c *trackedConn) WriteBuffers(bufs *net.Buffers) (int64, error) {
	if bw, ok := c.Conn.(interface {
		WriteBuffers(*net.Buffers) (int64, error)
	}); ok {
		return bw.WriteBuffers(bufs)
	}
	return bufs.WriteTo(c.Conn)
}

// NetConn returns the accepted connection, for connlimit to find its own.
func (c *trackedConn) NetConn() net.Conn { return c.Conn }

func (c *trackedConn) Close() error {
	var err error
	c.once.Do(func() {
		c.l.mu.Lock()
		delete(c.l.conns, c)
		c.l.mu.Unlock()
		err = c.Conn.Close()
	})
	return err
}

// handler is the go-nfs Handler of a Server.
type handler Server

var (
	_ gonfs.Handler      = (*handler)(nil)
	_ gonfs.ExportLister = (*handler)(nil)
)

// Mount resolves a MNT path: the longest export that contains the path
// and allows the client wins, and the mounted subtree must be a directory
// that the principal of the MNT call can read.
func (h *handler) Mount(_ context.Context, c net.Conn, req gonfs.MountRequest) (gonfs.MountStatus, billy.Filesystem, []gonfs.AuthFlavor) {
	s := (*Server)(h)
	raw := string(req.Dirpath)
	log := s.log.With(zap.String("path", raw), zap.String("remote", c.RemoteAddr().String()),
		zap.Uint32("flavor", uint32(req.Caller.Flavor)), zap.Uint32("uid", req.Caller.UID))
	st, fs, err := s.mount(req.Caller, raw)
	if st != gonfs.MountStatusOk {
		if err != nil {
			log = log.With(zap.Error(err))
		}
		log.Warn("nfs mount refused", zap.Uint32("status", uint32(st)))
		return st, nil, nil
	}
	log.Info("nfs mount", zap.String("export", s.exports[fs.exp].Path), zap.String("principal", fs.principal))
	return st, fs, []gonfs.AuthFlavor{gonfs.AuthFlavorUnix, gonfs.AuthFlavorNull}
}

func (s *Server) mount(c gonfs.Caller, raw string) (gonfs.MountStatus, *viewFS, error) {
	if !strings.HasPrefix(raw, "/") || len(raw) > gonfs.MntPathLen {
		return gonfs.MountStatusErrInval, nil, nil
	}
	p := path.Clean(raw)
	addr, ok := remoteAddr(c.Conn)
	if !ok {
		return gonfs.MountStatusErrAcces, nil, nil
	}
	best, matched := -1, false
	for i, e := range s.exports {
		if !within(p, e.Path) {
			continue
		}
		matched = true
		if e.allows(addr) && (best < 0 || len(e.Path) > len(s.exports[best].Path)) {
			best = i
		}
	}
	switch {
	case !matched:
		return gonfs.MountStatusErrNoEnt, nil, nil
	case best < 0:
		return gonfs.MountStatusErrAcces, nil, nil
	}
	// As Linux's mountd does, an insecure port is refused at MNT already,
	// where the client can still say why (NFS calls of such a client are
	// refused too: see FromHandle).
	principal, err := s.exports[best].principal(c)
	if err != nil {
		return gonfs.MountStatusErrAcces, nil, err
	}
	root := s.fss[best][principal]
	noteCall(c, principal, p, nil)
	var base []string
	if rest := strings.TrimPrefix(strings.TrimPrefix(p, root.root), "/"); rest != "" {
		base = strings.Split(rest, "/")
	}
	if _, err := s.codec.Encode(best, s.exports[best].id(), base); err != nil {
		return gonfs.MountStatusErrNameTooLong, nil, err
	}
	fi, err := root.v.Stat(root.ctx, p)
	if err == nil && !fi.IsDir {
		err = view.ErrNotDir
	}
	if err != nil {
		return mountStatus(err), nil, err
	}
	fs := *root
	fs.base = base
	return gonfs.MountStatusOk, &fs, nil
}

// Exports answers MOUNT EXPORT: the exports that allow the caller (its
// address, and its source port if the export is secure) and whose root
// the caller's principal there can see, each with its allow list as
// groups. Clients that may not mount an export do not learn of it, and an
// export whose tenant does not exist (yet) is left out: libnfs mounts
// every listed export below the one it mounts, and fails as a whole if
// one of them answers MNT3ERR_NOENT or MNT3ERR_ACCES.
func (h *handler) Exports(ctx context.Context, c gonfs.Caller) []gonfs.ExportEntry {
	s := (*Server)(h)
	addr, ok := remoteAddr(c.Conn)
	if !ok {
		return nil
	}
	var out []gonfs.ExportEntry
	for i, e := range s.exports {
		if !e.allows(addr) {
			continue
		}
		principal, err := e.principal(c)
		if err != nil {
			continue
		}
		if fi, err := s.fss[i][principal].v.Stat(ctx, e.Path); err != nil || !fi.IsDir {
			continue
		}
		groups := make([]string, 0, len(e.Allow))
		for _, p := range e.Allow {
			groups = append(groups, p.String())
		}
		out = append(out, gonfs.ExportEntry{Dir: e.Path, Groups: groups})
	}
	return out
}

// within reports whether p is export or below it.
func within(p, export string) bool {
	return export == "/" || p == export || strings.HasPrefix(p, export+"/")
}

// Change returns nil: the file system is read-only.
func (h *handler) Change(billy.Filesystem) billy.Change { return nil }

// FSStat sizes are nominal constants. The view cannot tell its total
// size without walking every stream, and df (which FSSTAT feeds) hides a
// file system of zero blocks as a pseudo file system, so the sizes are
// fixed, non-zero and documented (docs/nfs.md) rather than measured.
// Nothing is free: like an ISO 9660 or squashfs mount, silt's NFS export
// is read-only, so it shows as full.
const (
	fsstatBytes = 1 << 40 // 1 TiB
	fsstatFiles = 1 << 20
)

// FSStat reports a full read-only file system of nominal size. invarsec
// is 0: new chunks appear at any time.
func (h *handler) FSStat(_ context.Context, _ billy.Filesystem, st *gonfs.FSStat) error {
	*st = gonfs.FSStat{TotalSize: fsstatBytes, TotalFiles: fsstatFiles}
	return nil
}

// ToHandle encodes the handle of path in fs. Paths that do not fit get a
// handle that never decodes; Stat refuses them first wherever go-nfs
// checks an entry before asking for its handle (LOOKUP), so only
// READDIRPLUS can hand one out.
func (h *handler) ToHandle(f billy.Filesystem, p []string) []byte {
	s := (*Server)(h)
	vf, ok := f.(*viewFS)
	if !ok {
		return unusableHandle
	}
	full := append(append([]string(nil), vf.base...), p...)
	b, err := s.codec.Encode(vf.exp, s.exports[vf.exp].id(), full)
	if err != nil {
		s.log.Warn("nfs: path does not fit a file handle", zap.Strings("path", full), zap.Error(err))
		return unusableHandle
	}
	return b
}

// unusableHandle has a version no Codec accepts.
var unusableHandle = []byte{0, 0, 0, 0}

// FromHandle checks a handle and returns its path and the file system of
// its export as the caller's principal sees it. A handle is bound to an
// export, not to a principal: whoever presents it gets their own grants
// and no more. A caller that a secure export refuses gets AUTH_TOOWEAK,
// as from nfs-ganesha for an export with PrivilegedPort.
func (h *handler) FromHandle(c gonfs.Caller, b []byte) (billy.Filesystem, []string, error) {
	s := (*Server)(h)
	exp, err := fh.Export(b)
	if err != nil || exp >= len(s.exports) {
		return nil, nil, fh.ErrInvalid
	}
	p, err := s.codec.Decode(s.exports[exp].id(), b)
	if err != nil {
		return nil, nil, err
	}
	principal, err := s.exports[exp].principal(c)
	if err != nil {
		return nil, nil, &gonfs.AuthError{AuthStat: gonfs.AuthStatTooWeak}
	}
	fs := s.fss[exp][principal]
	noteCall(c, principal, fs.root, p)
	return fs, p, nil
}

// InvalidateHandle does nothing: handles hold no server state.
func (h *handler) InvalidateHandle(billy.Filesystem, []byte) error { return nil }

// HandleLimit only bounds READDIR(PLUS) pages in go-nfs (half of it per
// reply); stateless handles have no limit of their own.
func (h *handler) HandleLimit() int { return 1 << 20 }
