package nfs

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	gonfs "github.com/silt-io/silt/gateways/nfs/internal/gonfs"
	"github.com/silt-io/silt/internal/connlimit"
	"github.com/silt-io/silt/view"
)

// Config configures the NFSv3 head.
type Config struct {
	// Listen serves NFS and MOUNT on one TCP port (go-nfs multiplexes both
	// programs on one listener, and has no portmapper), so clients must be
	// given port= and mountport= explicitly.
	Listen string `koanf:"listen" help:"address the NFSv3 head (NFS and MOUNT) listens on"`
	// Exports are written one per list entry as
	// "path=<path>;principal=<name>;allow=<cidr>|<cidr>;<flags>", because
	// list values given by flag or environment are split on commas. See
	// ParseExport and docs/nfs.md for every field.
	Exports []string `koanf:"exports" help:"exports as path=/|/<tenant>;principal=<acl principal>;allow=<cidr>|<cidr>[;secure][;map=<uid>:<principal>|...][;no_root_squash|all_squash] (docs/nfs.md)"`
	// MaxInflight bounds the requests of one connection served at once.
	// A kernel client sends every process's requests over one connection,
	// so this is what lets concurrent readers of one mount overlap; past
	// it the server stops reading the connection until a reply is out.
	// 0 means the default (16).
	MaxInflight int `koanf:"max_inflight" help:"requests served concurrently per NFS connection"`
	// Caps bound the head's connections (silt serve applies them; see
	// internal/connlimit).
	connlimit.Caps
	// IdleTimeout closes a connection that has had no request in flight
	// and sent none for this long, and one whose client has not read a
	// reply for this long. NFS clients reconnect transparently. Linux's
	// client closes its own idle connections after 5 minutes and knfsd
	// ages out idle ones after 6; the default matches knfsd, so that real
	// mounts close their connections before silt does while a connection
	// that says nothing is gone within minutes.
	IdleTimeout time.Duration `koanf:"idle_timeout" help:"close an NFS connection after this long without a request (clients reconnect transparently)"`
}

// Squash says which AUTH_SYS uids are not looked up in an export's map.
type Squash int

// Squash modes, named as in exports(5).
const (
	// RootSquash treats uid 0 like an unmapped uid (the default): a
	// client's root is not the server's.
	RootSquash Squash = iota
	// NoRootSquash looks uid 0 up in the map like any other uid.
	NoRootSquash
	// AllSquash ignores every credential: all requests act as the
	// export's principal.
	AllSquash
)

// Export is one parsed entry of Config.Exports.
type Export struct {
	// Path is "/" or "/<tenant>"; MNT requests for it or anything below
	// it are served from it.
	Path string
	// Principal is the acl principal of every request through the export
	// that Map does not name a principal for: AUTH_NONE requests, uids
	// not in Map, and squashed uids. It is what anonuid is to exports(5).
	Principal string
	// Allow lists the client networks that may mount the export and
	// connect at all.
	Allow []netip.Prefix
	// Secure refuses requests whose TCP source port is 1024 or above.
	// Only root can bind a reserved port, so on a host that the operator
	// controls a secure request comes from a process run by root.
	Secure bool
	// Map names the acl principal of an AUTH_SYS uid. A uid is whatever
	// the client claims, so a map is allowed on secure exports only.
	Map map[uint32]string
	// Squash says which uids are never looked up in Map.
	Squash Squash
}

// DefaultAllow is the allow list of an export that names none.
var DefaultAllow = []string{"127.0.0.1/32", "::1/128"}

// DefaultIdleTimeout is Config.IdleTimeout's default.
const DefaultIdleTimeout = 6 * time.Minute

// DefaultConfig returns the embedded defaults: the whole tree exported to
// loopback as anonymous, which reads only what has been granted to
// unauthenticated requests. Loopback is shared by every user of the host,
// and AUTH_SYS credentials are whatever a client claims, so the default
// export trusts no credential and gives a local user nothing the
// anonymous principal does not have (docs/nfs.md has the line that reads
// everything).
func DefaultConfig() Config {
	return Config{
		Listen:      "127.0.0.1:20490",
		Exports:     []string{"path=/;principal=anonymous;allow=127.0.0.1/32|::1/128"},
		MaxInflight: gonfs.DefaultMaxInflight,
		IdleTimeout: DefaultIdleTimeout,
	}
}

// exportFlags are the fields of an export entry that take no value.
const exportFlags = "secure, insecure, root_squash, no_root_squash, all_squash"

// ParseExport parses one export entry: fields separated by ";", each
// key=value (path, principal, allow, map) or a flag (secure, insecure,
// root_squash, no_root_squash, all_squash). See docs/nfs.md.
func ParseExport(s string) (Export, error) {
	e := Export{Squash: RootSquash}
	allow := DefaultAllow
	var secure, squash []string // flags given, to refuse contradictions
	var mapping string
	for field := range strings.SplitSeq(s, ";") {
		field = strings.TrimSpace(field)
		if field == "" {
			continue
		}
		k, v, ok := strings.Cut(field, "=")
		if !ok {
			switch field {
			case "secure", "insecure":
				secure = append(secure, field)
				e.Secure = field == "secure"
			case "root_squash", "no_root_squash", "all_squash":
				squash = append(squash, field)
				e.Squash = map[string]Squash{"root_squash": RootSquash, "no_root_squash": NoRootSquash, "all_squash": AllSquash}[field]
			default:
				return Export{}, fmt.Errorf("nfs: export %q: field %q: want key=value (path, principal, allow, map) or a flag (%s)", s, field, exportFlags)
			}
			continue
		}
		v = strings.TrimSpace(v)
		switch strings.TrimSpace(k) {
		case "path":
			e.Path = v
		case "principal":
			e.Principal = v
		case "allow":
			allow = strings.Split(v, "|")
		case "map":
			mapping = v
		default:
			return Export{}, fmt.Errorf("nfs: export %q: unknown field %q (want path, principal, allow, map, or a flag: %s)", s, k, exportFlags)
		}
	}
	parts, err := view.Split(e.Path)
	if err != nil || len(parts) > 1 {
		return Export{}, fmt.Errorf("nfs: export %q: path %q: want / or /<tenant>", s, e.Path)
	}
	if e.Principal == "" {
		return Export{}, fmt.Errorf("nfs: export %q: principal is required (anonymous for unauthenticated access)", s)
	}
	for _, a := range allow {
		p, err := netip.ParsePrefix(strings.TrimSpace(a))
		if err != nil {
			return Export{}, fmt.Errorf("nfs: export %q: allow %q: %w", s, a, err)
		}
		e.Allow = append(e.Allow, p.Masked())
	}
	if len(secure) > 1 {
		return Export{}, fmt.Errorf("nfs: export %q: %s given together; give one", s, strings.Join(secure, " and "))
	}
	if len(squash) > 1 {
		return Export{}, fmt.Errorf("nfs: export %q: %s given together; give one", s, strings.Join(squash, " and "))
	}
	if mapping != "" {
		if e.Map, err = parseMap(mapping); err != nil {
			return Export{}, fmt.Errorf("nfs: export %q: %w", s, err)
		}
		if err := e.checkMap(); err != nil {
			return Export{}, fmt.Errorf("nfs: export %q: %w", s, err)
		}
	}
	return e, nil
}

// parseMap parses "uid:principal|uid:principal".
func parseMap(v string) (map[uint32]string, error) {
	m := map[uint32]string{}
	for ent := range strings.SplitSeq(v, "|") {
		ent = strings.TrimSpace(ent)
		u, p, ok := strings.Cut(ent, ":")
		u, p = strings.TrimSpace(u), strings.TrimSpace(p)
		uid, err := strconv.ParseUint(u, 10, 32)
		if !ok || err != nil || p == "" {
			return nil, fmt.Errorf("map entry %q: want <uid>:<principal>, uid a number 0..4294967295", ent)
		}
		if _, dup := m[uint32(uid)]; dup {
			return nil, fmt.Errorf("map: uid %d given twice", uid)
		}
		m[uint32(uid)] = p
	}
	return m, nil
}

// checkMap refuses a map that would not do what it says.
func (e Export) checkMap() error {
	if !e.Secure {
		return errors.New("map needs secure: an AUTH_SYS uid is whatever the client claims, and only a request " +
			"from a reserved source port (a client run by root on an allowed host) makes it believable; add ;secure")
	}
	if e.Squash == AllSquash {
		return errors.New("map has no effect with all_squash (every request acts as principal); drop one")
	}
	if p, ok := e.Map[0]; ok && e.Squash == RootSquash {
		return fmt.Errorf("map=0:%s has no effect under root_squash (the default: uid 0 acts as principal); add no_root_squash to map uid 0", p)
	}
	return nil
}

// parseExports parses and checks all exports.
func (c Config) parseExports() ([]Export, error) {
	if len(c.Exports) == 0 {
		return nil, fmt.Errorf("nfs: at least one export is required")
	}
	if len(c.Exports) > 256 {
		return nil, fmt.Errorf("nfs: at most 256 exports (file handles carry the export in one byte)")
	}
	seen := map[string]bool{}
	var out []Export
	for _, s := range c.Exports {
		e, err := ParseExport(s)
		if err != nil {
			return nil, err
		}
		if seen[e.Path] {
			return nil, fmt.Errorf("nfs: export path %s given twice", e.Path)
		}
		seen[e.Path] = true
		out = append(out, e)
	}
	return out, nil
}

// Validate checks the config.
func (c Config) Validate() error {
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		return fmt.Errorf("nfs: listen %q: %w", c.Listen, err)
	}
	if _, err := c.parseExports(); err != nil {
		return err
	}
	if c.MaxInflight < 0 || c.MaxInflight > 1024 {
		return fmt.Errorf("nfs: max_inflight %d: want 1..1024 (0: the default)", c.MaxInflight)
	}
	if err := c.Caps.Check("nfs"); err != nil {
		return err
	}
	// Below a second a mount would churn between its calls; an idle
	// timeout cannot be switched off, since it is what frees the
	// connections of clients that vanished without closing them.
	if c.IdleTimeout < time.Second {
		return fmt.Errorf("nfs: idle_timeout %v: want at least 1s", c.IdleTimeout)
	}
	return nil
}

// allows reports whether addr is in the export's allow list.
func (e Export) allows(addr netip.Addr) bool {
	addr = addr.Unmap()
	for _, p := range e.Allow {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// errInsecurePort refuses a request from an unreserved source port to a
// secure export.
var errInsecurePort = errors.New("nfs: source port 1024 or above on a secure export")

// principal is the acl principal a request from c acts as. It is decided
// per request: every NFS call carries its own credential.
func (e Export) principal(c gonfs.Caller) (string, error) {
	if e.Secure && !reservedPort(c.Conn) {
		return "", errInsecurePort
	}
	if c.Flavor != gonfs.AuthFlavorUnix || e.Squash == AllSquash || (c.UID == 0 && e.Squash == RootSquash) {
		return e.Principal, nil
	}
	if p, ok := e.Map[c.UID]; ok {
		return p, nil
	}
	return e.Principal, nil
}

// principals lists every principal a request through e can act as.
func (e Export) principals() []string {
	out := []string{e.Principal}
	for _, p := range e.Map {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// reservedPort reports whether c comes from a TCP port below 1024, which
// only root (or CAP_NET_BIND_SERVICE) can bind.
func reservedPort(c net.Conn) bool {
	if c == nil {
		return false
	}
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.Port > 0 && a.Port < 1024
	}
	ap, err := netip.ParseAddrPort(c.RemoteAddr().String())
	return err == nil && ap.Port() > 0 && ap.Port() < 1024
}

// id is what file handles of the export are bound to.
func (e Export) id() string { return e.Path + "\x00" + e.Principal }
