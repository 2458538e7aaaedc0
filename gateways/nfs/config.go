package nfs

import (
	"fmt"
	"net"
	"net/netip"
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
	// "path=<path>;principal=<name>;allow=<cidr>|<cidr>", because list
	// values given by flag or environment are split on commas. allow may
	// be omitted (loopback only).
	Exports []string `koanf:"exports" help:"exports as path=/|/<tenant>;principal=<acl principal>;allow=<cidr>|<cidr>"`
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

// Export is one parsed entry of Config.Exports.
type Export struct {
	// Path is "/" or "/<tenant>"; MNT requests for it or anything below
	// it are served from it.
	Path string
	// Principal is the acl principal every request through the export
	// acts as. NFS AUTH_SYS credentials are not trusted (any client can
	// claim any uid), so the export, not the client, names the principal.
	Principal string
	// Allow lists the client networks that may mount the export and
	// connect at all.
	Allow []netip.Prefix
}

// DefaultAllow is the allow list of an export that names none.
var DefaultAllow = []string{"127.0.0.1/32", "::1/128"}

// DefaultIdleTimeout is Config.IdleTimeout's default.
const DefaultIdleTimeout = 6 * time.Minute

// DefaultConfig returns the embedded defaults: the whole tree exported as
// root, reachable from loopback only.
func DefaultConfig() Config {
	return Config{
		Listen:      "127.0.0.1:20490",
		Exports:     []string{"path=/;principal=root;allow=127.0.0.1/32|::1/128"},
		MaxInflight: gonfs.DefaultMaxInflight,
		IdleTimeout: DefaultIdleTimeout,
	}
}

// ParseExport parses one export entry.
func ParseExport(s string) (Export, error) {
	var e Export
	allow := DefaultAllow
	for field := range strings.SplitSeq(s, ";") {
		field = strings.TrimSpace(field)
		if field == "" {
			continue
		}
		k, v, ok := strings.Cut(field, "=")
		if !ok {
			return Export{}, fmt.Errorf("nfs: export %q: field %q: want key=value", s, field)
		}
		switch strings.TrimSpace(k) {
		case "path":
			e.Path = strings.TrimSpace(v)
		case "principal":
			e.Principal = strings.TrimSpace(v)
		case "allow":
			allow = strings.Split(v, "|")
		default:
			return Export{}, fmt.Errorf("nfs: export %q: unknown field %q (want path, principal, allow)", s, k)
		}
	}
	parts, err := view.Split(e.Path)
	if err != nil || len(parts) > 1 {
		return Export{}, fmt.Errorf("nfs: export %q: path %q: want / or /<tenant>", s, e.Path)
	}
	if e.Principal == "" {
		return Export{}, fmt.Errorf("nfs: export %q: principal is required", s)
	}
	for _, a := range allow {
		p, err := netip.ParsePrefix(strings.TrimSpace(a))
		if err != nil {
			return Export{}, fmt.Errorf("nfs: export %q: allow %q: %w", s, a, err)
		}
		e.Allow = append(e.Allow, p.Masked())
	}
	return e, nil
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

// id is what file handles of the export are bound to.
func (e Export) id() string { return e.Path + "\x00" + e.Principal }
