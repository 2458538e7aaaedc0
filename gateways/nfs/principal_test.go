package nfs

import (
	"encoding/binary"
	"errors"
	"net"
	"os"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"

	nfsc "github.com/willscott/go-nfs-client/nfs"
	"github.com/willscott/go-nfs-client/nfs/rpc"

	"github.com/silt-io/silt/acl"
)

// Every NFS call carries its own AUTH_SYS credential, and the principal
// it acts as is decided per call from that credential and the source
// port (Export.principal). These tests send credentials with real
// clients (go-nfs-client) and raw RPC, from reserved and unreserved
// ports.

// needRoot skips a test that binds a reserved source port.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("binding a reserved (< 1024) source port needs root")
	}
}

// authSys is an AUTH_SYS credential (opaque_auth) for uid and gid.
func authSys(uid, gid uint32) []byte {
	body := slices.Concat(be(7), xdrString("client"), be(uid, gid, 1, gid))
	return slices.Concat(be(1), xdrString(string(body)))
}

// dialRawAs dials addr, from a reserved source port if reserved, and
// sends cred (an opaque_auth) with every call.
func dialRawAs(t *testing.T, addr string, reserved bool, cred []byte) *rawConn {
	t.Helper()
	var c net.Conn
	var err error
	if !reserved {
		c, err = net.Dial("tcp", addr)
	} else {
		for p := 1023; p >= 600; p-- {
			d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: p}}
			if c, err = d.Dial("tcp", addr); err == nil || !errors.Is(err, syscall.EADDRINUSE) {
				break
			}
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, c: c, cred: cred}
}

// mountAs mounts dir with go-nfs-client as uid (gid the same), from a
// reserved port if reserved.
func mountAs(t *testing.T, addr, dir string, uid uint32, reserved bool) (*nfsc.Target, error) {
	t.Helper()
	var c *rpc.Client
	var err error
	for range 20 {
		// The client picks a random local port; retry the ones in use.
		if c, err = rpc.DialTCP("tcp", addr, reserved); err == nil || !strings.Contains(err.Error(), "address already in use") {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	m := &nfsc.Mount{Client: c}
	return m.Mount(dir, rpc.NewAuthUnix("client", uid, uid).Auth())
}

// canRead reports whether v reads p whole.
func canRead(v *nfsc.Target, p string) bool {
	f, err := v.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	_, err = f.Read(make([]byte, 1))
	return err == nil
}

func tenants(t *testing.T, v *nfsc.Target) []string {
	t.Helper()
	ents, err := v.ReadDirPlus("/")
	if err != nil {
		t.Fatalf("ReadDirPlus(/): %v", err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}

const otherChunk = "/other/logs/segment=0/00000000000000000000-00000000000000000000.txt"

// TestPrincipalPerCredential: who reads what, by export options, uid and
// source port. alice may read acme, anonymous other/logs, root anything.
func TestPrincipalPerCredential(t *testing.T) {
	needRoot(t)
	e := newEnv(t)
	if _, err := e.store.AddGrant(acl.Anonymous.Name, acl.Read, "other/logs"); err != nil {
		t.Fatal(err)
	}
	const (
		secureMap = "path=/;principal=anonymous;secure;no_root_squash;map=0:root|1001:alice"
		squashed  = "path=/;principal=anonymous;secure;map=1001:alice"
	)
	type reads struct{ acme, other bool }
	for name, tc := range map[string]struct {
		export   string
		uid      uint32
		reserved bool
		mountErr string // MNT refused with this
		want     reads
		tenants  []string
	}{
		"default, uid 0":                   {DefaultConfig().Exports[0], 0, true, "", reads{false, true}, []string{"other"}},
		"default, uid 1001":                {DefaultConfig().Exports[0], 1001, false, "", reads{false, true}, []string{"other"}},
		"default, uid 0, unreserved port":  {DefaultConfig().Exports[0], 0, false, "", reads{false, true}, []string{"other"}},
		"secure map, uid 0":                {secureMap, 0, true, "", reads{true, true}, []string{"acme", "other"}},
		"secure map, uid 1001":             {secureMap, 1001, true, "", reads{true, false}, []string{"acme"}},
		"secure map, unmapped uid":         {secureMap, 4242, true, "", reads{false, true}, []string{"other"}},
		"secure map, unreserved port":      {secureMap, 0, false, "MNT3ERR_ACCES", reads{}, nil},
		"secure map, unreserved uid 1001":  {secureMap, 1001, false, "MNT3ERR_ACCES", reads{}, nil},
		"root squash: uid 0 is anonymous":  {squashed, 0, true, "", reads{false, true}, []string{"other"}},
		"root squash: uid 1001 still maps": {squashed, 1001, true, "", reads{true, false}, []string{"acme"}},
		"all_squash":                       {"path=/;principal=alice;all_squash", 0, true, "", reads{true, false}, []string{"acme"}},
		"export bound to root":             {"path=/;principal=root", 4242, false, "", reads{true, true}, []string{"acme", "other"}},
	} {
		t.Run(name, func(t *testing.T) {
			addr, _ := e.serve(exportCfg(tc.export), testKey)
			v, err := mountAs(t, addr, "/", tc.uid, tc.reserved)
			if tc.mountErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.mountErr) {
					t.Fatalf("mount: %v, want %s", err, tc.mountErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("mount: %v", err)
			}
			got := reads{canRead(v, chunk), canRead(v, otherChunk)}
			if got != tc.want {
				t.Errorf("reads acme %v, other %v; want %v, %v", got.acme, got.other, tc.want.acme, tc.want.other)
			}
			if ts := tenants(t, v); !slices.Equal(ts, tc.tenants) {
				t.Errorf("tenants %v, want %v", ts, tc.tenants)
			}
		})
	}
}

// TestAuthNoneActsAsExportPrincipal: AUTH_NONE calls get the export's
// principal, even on an export that maps uid 0.
func TestAuthNoneActsAsExportPrincipal(t *testing.T) {
	needRoot(t)
	e := newEnv(t)
	addr, _ := e.serve(exportCfg("path=/;principal=anonymous;secure;no_root_squash;map=0:root"), testKey)
	root := dialRawAs(t, addr, true, authSys(0, 0))
	fh := root.lookupPath(root.rootHandle("/"), chunk)
	none := dialRawAs(t, addr, true, be(0, 0))
	if st := nfsStat(t, none.call(2, progNFS, 3, 1, xdrString(string(fh)))); st != 13 {
		t.Fatalf("GETATTR with AUTH_NONE of a chunk root found: status %d, want NFS3ERR_ACCES", st)
	}
}

// TestHandleGivesOnlyOwnGrants: a file handle is bound to an export, not
// to a principal. Whoever presents one gets their own grants, also right
// after another principal read the same file (the open-file cache) or
// listed the same directory (the cookie cache).
func TestHandleGivesOnlyOwnGrants(t *testing.T) {
	needRoot(t)
	e := newEnv(t)
	addr, _ := e.serve(exportCfg("path=/;principal=anonymous;secure;no_root_squash;map=0:root|1001:alice"), testKey)
	root := dialRawAs(t, addr, true, authSys(0, 0))
	rootFH := root.rootHandle("/")
	fh := root.lookupPath(rootFH, otherChunk)
	read := func(c *rawConn) rawReply {
		return c.call(2, progNFS, 3, 6, slices.Concat(xdrString(string(fh)), make([]byte, 8), be(100)))
	}
	if _, _, data := readReply(t, read(root)); string(data) != "x\n" {
		t.Fatalf("root's READ = %q", data)
	}
	rep := root.call(2, progNFS, 3, 4, append(xdrString(string(fh)), be(0x3f)...))
	if st := nfsStat(t, rep); st != 0 || binary.BigEndian.Uint32(rep.body[len(rep.body)-4:]) != 0x23 {
		t.Fatalf("root's ACCESS: %+v, want read, lookup and execute (0x23)", rep)
	}
	for name, c := range map[string]*rawConn{
		"alice (uid 1001)": dialRawAs(t, addr, true, authSys(1001, 1001)),
		"unmapped uid":     dialRawAs(t, addr, true, authSys(4242, 4242)),
		"AUTH_NONE":        dialRawAs(t, addr, true, be(0, 0)),
	} {
		t.Run(name, func(t *testing.T) {
			// The file is in the open-file cache now, opened for root.
			if st := nfsStat(t, read(c)); st != 13 {
				t.Errorf("READ: status %d, want NFS3ERR_ACCES", st)
			}
			if st := nfsStat(t, c.call(2, progNFS, 3, 1, xdrString(string(fh)))); st != 13 {
				t.Errorf("GETATTR: status %d, want NFS3ERR_ACCES", st)
			}
			// ACCESS grants nothing; no attributes follow.
			rep := c.call(2, progNFS, 3, 4, append(xdrString(string(fh)), be(0x3f)...))
			if st := nfsStat(t, rep); st != 0 || len(rep.body) != 12 || binary.BigEndian.Uint32(rep.body[8:]) != 0 {
				t.Errorf("ACCESS: %+v, want NFS3_OK, no attributes, access 0", rep)
			}
		})
	}

	// root lists / (cookies of acme and other are remembered); alice's
	// view of / holds acme only, so other's cookie means nothing to her.
	readdir := func(c *rawConn, cookie uint64) uint32 {
		args := slices.Concat(xdrString(string(rootFH)), binary.BigEndian.AppendUint64(nil, cookie), make([]byte, 8), be(4096))
		return nfsStat(t, c.call(2, progNFS, 3, 16, args))
	}
	if st := readdir(root, 0); st != 0 {
		t.Fatalf("root's READDIR: %d", st)
	}
	if st := readdir(root, nameCookie("other")); st != 0 {
		t.Fatalf("root's READDIR after other: %d", st)
	}
	alice := dialRawAs(t, addr, true, authSys(1001, 1001))
	if st := readdir(alice, nameCookie("other")); st != 10003 {
		t.Fatalf("alice's READDIR after a cookie root was given: status %d, want NFS3ERR_BAD_COOKIE", st)
	}
}

// TestSecureExportRefusesUnreservedPorts: a handle taken from a reserved
// port is refused from an unreserved one with AUTH_TOOWEAK, as
// nfs-ganesha refuses for an export with PrivilegedPort; MNT says
// MNT3ERR_ACCES, as Linux's mountd does.
func TestSecureExportRefusesUnreservedPorts(t *testing.T) {
	needRoot(t)
	e := newEnv(t)
	addr, _ := e.serve(exportCfg("path=/;principal=root;secure", "path=/acme;principal=alice"), testKey)
	priv := dialRawAs(t, addr, true, authSys(0, 0))
	root := priv.rootHandle("/")
	unpriv := dialRawAs(t, addr, false, authSys(0, 0))
	for name, tc := range map[string]struct {
		prog, proc uint32
		args       []byte
	}{
		"GETATTR": {progNFS, 1, xdrString(string(root))},
		"READDIR": {progNFS, 16, slices.Concat(xdrString(string(root)), make([]byte, 16), be(4096))},
		"FSINFO":  {progNFS, 19, xdrString(string(root))},
		"LOOKUP":  {progNFS, 3, slices.Concat(xdrString(string(root)), xdrString("acme"))},
	} {
		t.Run(name, func(t *testing.T) {
			rep := unpriv.call(2, tc.prog, 3, tc.proc, tc.args)
			if !rep.denied || rep.stat != 1 || len(rep.body) != 4 || binary.BigEndian.Uint32(rep.body) != 5 {
				t.Fatalf("reply %+v, want MSG_DENIED AUTH_ERROR AUTH_TOOWEAK", rep)
			}
		})
	}
	rep := unpriv.call(2, progMount, 3, 1, xdrString("/"))
	if rep.denied || rep.stat != 0 || binary.BigEndian.Uint32(rep.body) != 13 {
		t.Fatalf("MNT / from an unreserved port: %+v, want MNT3ERR_ACCES", rep)
	}
	// The insecure export beside it still mounts from there, and MOUNT
	// EXPORT lists only it.
	if rep := unpriv.call(2, progMount, 3, 1, xdrString("/acme")); rep.denied || rep.stat != 0 {
		t.Fatalf("MNT /acme: %+v", rep)
	}
	if got := parseExportList(t, unpriv.call(2, progMount, 3, 5, nil).body); len(got) != 1 || got["/acme"] == nil {
		t.Fatalf("EXPORT from an unreserved port lists %v, want /acme only", got)
	}
	if got := parseExportList(t, priv.call(2, progMount, 3, 5, nil).body); len(got) != 2 {
		t.Fatalf("EXPORT from a reserved port lists %v, want / and /acme", got)
	}
}

// TestCredentialChecks: credentials that do not decode, or of flavors
// not served, are refused before the call, as libntirpc refuses them.
func TestCredentialChecks(t *testing.T) {
	e := newEnv(t)
	addr, _ := e.serve(rootConfig(), testKey)
	longName := slices.Concat(be(1), xdrString(string(slices.Concat(be(7), xdrString(strings.Repeat("h", 256)), be(0, 0, 0)))))
	manyGids := slices.Concat(be(1), xdrString(string(slices.Concat(be(7), xdrString("h"), be(0, 0, 17), make([]byte, 17*4)))))
	for name, tc := range map[string]struct {
		cred   []byte
		denied bool
		stat   uint32 // auth_stat if denied
	}{
		"AUTH_NONE":                 {be(0, 0), false, 0},
		"AUTH_SYS":                  {authSys(1000, 1000), false, 0},
		"AUTH_SYS, short body":      {slices.Concat(be(1), xdrString("\x00\x00\x00\x01")), true, 1},
		"AUTH_SYS, name over 255":   {longName, true, 1},
		"AUTH_SYS, 17 gids":         {manyGids, true, 1},
		"AUTH_SYS, gids cut off":    {slices.Concat(be(1), xdrString(string(slices.Concat(be(7), xdrString("h"), be(0, 0, 2), be(5))))), true, 1},
		"AUTH_SHORT":                {slices.Concat(be(2), xdrString("abcd")), true, 2},
		"AUTH_DH":                   {slices.Concat(be(3), xdrString("abcd")), true, 2},
		"RPCSEC_GSS":                {slices.Concat(be(6), xdrString("abcd")), true, 2},
		"unknown flavor 0xdeadbeef": {slices.Concat(be(0xdeadbeef), be(0)), true, 2},
	} {
		t.Run(name, func(t *testing.T) {
			c := dialRawAs(t, addr, false, tc.cred)
			for _, prog := range []uint32{progNFS, progMount} {
				rep := c.call(2, prog, 3, 0, nil)
				if rep.denied != tc.denied || (tc.denied && (rep.stat != 1 || binary.BigEndian.Uint32(rep.body) != tc.stat)) {
					t.Fatalf("NULL of %d: %+v, want denied=%v auth_stat %d", prog, rep, tc.denied, tc.stat)
				}
			}
		})
	}
}
