package nfs

import (
	"errors"
	"maps"
	"net"
	"net/netip"
	"strings"
	"testing"

	gonfs "github.com/silt-io/silt/gateways/nfs/internal/gonfs"
)

func TestConfig(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	e, err := ParseExport("path=/acme;principal=reader")
	if err != nil {
		t.Fatal(err)
	}
	if !e.allows(netip.MustParseAddr("127.0.0.1")) || !e.allows(netip.MustParseAddr("::1")) ||
		!e.allows(netip.MustParseAddr("::ffff:127.0.0.1")) || e.allows(netip.MustParseAddr("10.1.2.3")) {
		t.Fatalf("default allow list = %v", e.Allow)
	}
	if d, err := ParseExport(DefaultConfig().Exports[0]); err != nil || d.Principal != "anonymous" {
		t.Fatalf("default export = %+v, %v; want it bound to anonymous", d, err)
	}
	e, err = ParseExport(" path = / ; principal = root ; allow = 10.0.0.0/8|192.168.1.7/32 ")
	if err != nil || !e.allows(netip.MustParseAddr("10.9.9.9")) || e.allows(netip.MustParseAddr("127.0.0.1")) {
		t.Fatalf("ParseExport = %+v, %v", e, err)
	}
	for name, tc := range map[string]struct {
		cfg  Config
		want string
	}{
		"listen":     {Config{Listen: "nope", Exports: DefaultConfig().Exports}, "listen"},
		"none":       {Config{Listen: ":1"}, "at least one export"},
		"deep":       {Config{Listen: ":1", Exports: []string{"path=/a/b;principal=x"}}, "want / or /<tenant>"},
		"relative":   {Config{Listen: ":1", Exports: []string{"path=acme;principal=x"}}, "want / or /<tenant>"},
		"principal":  {Config{Listen: ":1", Exports: []string{"path=/"}}, "principal is required"},
		"cidr":       {Config{Listen: ":1", Exports: []string{"path=/;principal=x;allow=10.0.0.0"}}, "allow"},
		"field":      {Config{Listen: ":1", Exports: []string{"path=/;principal=x;rw=1"}}, "unknown field"},
		"twice":      {Config{Listen: ":1", Exports: []string{"path=/;principal=x", "path=/;principal=y"}}, "twice"},
		"bare field": {Config{Listen: ":1", Exports: []string{"path=/;principal"}}, "key=value"},
		"inflight":   {Config{Listen: ":1", Exports: DefaultConfig().Exports, MaxInflight: -1}, "max_inflight"},
	} {
		t.Run(name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestParseExportOptions(t *testing.T) {
	for name, tc := range map[string]struct {
		in     string
		secure bool
		squash Squash
		m      map[uint32]string
		prin   string
	}{
		"default export":  {DefaultConfig().Exports[0], false, RootSquash, nil, "anonymous"},
		"secure with map": {"path=/;principal=anonymous;secure;no_root_squash;map=0:root|1001:alice", true, NoRootSquash, map[uint32]string{0: "root", 1001: "alice"}, "anonymous"},
		"spaces":          {" path=/ ; principal = anonymous ; secure ; map = 1001 : alice | 4294967295:bob ", true, RootSquash, map[uint32]string{1001: "alice", 4294967295: "bob"}, "anonymous"},
		"insecure":        {"path=/acme;principal=reader;insecure", false, RootSquash, nil, "reader"},
		"root_squash":     {"path=/;principal=reader;root_squash", false, RootSquash, nil, "reader"},
		"all_squash":      {"path=/;principal=reader;all_squash;secure", true, AllSquash, nil, "reader"},
	} {
		t.Run(name, func(t *testing.T) {
			e, err := ParseExport(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if e.Secure != tc.secure || e.Squash != tc.squash || !maps.Equal(e.Map, tc.m) || e.Principal != tc.prin {
				t.Fatalf("ParseExport = %+v", e)
			}
		})
	}
	for name, tc := range map[string]struct{ in, want string }{
		"map without secure":     {"path=/;principal=anonymous;map=1001:alice", "map needs secure"},
		"map with insecure":      {"path=/;principal=anonymous;insecure;map=1001:alice", "map needs secure"},
		"map of uid 0, squashed": {"path=/;principal=anonymous;secure;map=0:root", "add no_root_squash"},
		"map with all_squash":    {"path=/;principal=anonymous;secure;all_squash;map=1001:alice", "all_squash"},
		"secure and insecure":    {"path=/;principal=x;secure;insecure", "secure and insecure given together"},
		"two squash flags":       {"path=/;principal=x;root_squash;all_squash", "root_squash and all_squash given together"},
		"map entry without uid":  {"path=/;principal=x;secure;map=alice", "map entry \"alice\""},
		"map uid not a number":   {"path=/;principal=x;secure;map=me:alice", "want <uid>:<principal>"},
		"map uid over 32 bits":   {"path=/;principal=x;secure;map=4294967296:alice", "want <uid>:<principal>"},
		"map without principal":  {"path=/;principal=x;secure;map=1001:", "want <uid>:<principal>"},
		"map uid twice":          {"path=/;principal=x;secure;map=1001:a|1001:b", "uid 1001 given twice"},
		"unknown flag":           {"path=/;principal=x;rw", "or a flag (secure, insecure"},
		"principal missing":      {"path=/;secure", "principal is required"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseExport(tc.in)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ParseExport(%q) = %v, want an error with %q", tc.in, err, tc.want)
			}
		})
	}
}

// peerConn is a connection from a given address.
type peerConn struct {
	net.Conn
	addr net.Addr
}

func (c peerConn) RemoteAddr() net.Addr { return c.addr }

func TestExportPrincipal(t *testing.T) {
	from := func(port int) net.Conn {
		return peerConn{addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port}}
	}
	sys := func(port int, uid uint32) gonfs.Caller {
		return gonfs.Caller{Conn: from(port), Flavor: gonfs.AuthFlavorUnix, UID: uid, GID: uid}
	}
	none := gonfs.Caller{Conn: from(700), Flavor: gonfs.AuthFlavorNull}
	const (
		mapped   = "path=/;principal=anonymous;secure;no_root_squash;map=0:root|1001:alice"
		squashed = "path=/;principal=anonymous;secure;map=1001:alice"
		plain    = "path=/;principal=anonymous"
	)
	for name, tc := range map[string]struct {
		export string
		c      gonfs.Caller
		want   string // "" for refused
	}{
		"mapped uid 0":                     {mapped, sys(700, 0), "root"},
		"mapped uid 1001":                  {mapped, sys(1023, 1001), "alice"},
		"unmapped uid":                     {mapped, sys(700, 5), "anonymous"},
		"AUTH_NONE":                        {mapped, none, "anonymous"},
		"port 1024 refused":                {mapped, sys(1024, 0), ""},
		"ephemeral port refused":           {mapped, sys(45000, 1001), ""},
		"root squashed":                    {squashed, sys(700, 0), "anonymous"},
		"squash keeps other uids":          {squashed, sys(700, 1001), "alice"},
		"insecure export, any port, uid 0": {plain, sys(45000, 0), "anonymous"},
		"all_squash":                       {"path=/;principal=bob;all_squash", sys(700, 1001), "bob"},
	} {
		t.Run(name, func(t *testing.T) {
			e, err := ParseExport(tc.export)
			if err != nil {
				t.Fatal(err)
			}
			got, err := e.principal(tc.c)
			if tc.want == "" {
				if !errors.Is(err, errInsecurePort) {
					t.Fatalf("principal = %q, %v; want errInsecurePort", got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("principal = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// FuzzParseExport: any entry parses or is refused with an error, and an
// export that parses never believes a uid without secure.
func FuzzParseExport(f *testing.F) {
	f.Add(DefaultConfig().Exports[0])
	f.Add("path=/;principal=anonymous;secure;no_root_squash;map=0:root|1001:alice")
	f.Add("path=/acme;principal=x;allow=10.0.0.0/8;all_squash;insecure")
	f.Fuzz(func(t *testing.T, s string) {
		e, err := ParseExport(s)
		if err != nil {
			return
		}
		if len(e.Map) > 0 && (!e.Secure || e.Squash == AllSquash) {
			t.Fatalf("%q: a map on an export that cannot believe it: %+v", s, e)
		}
		if _, ok := e.Map[0]; ok && e.Squash != NoRootSquash {
			t.Fatalf("%q: uid 0 mapped but squashed: %+v", s, e)
		}
		if e.Principal == "" || len(e.Allow) == 0 {
			t.Fatalf("%q: parsed without a principal or allow list: %+v", s, e)
		}
	})
}
