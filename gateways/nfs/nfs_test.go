package nfs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	nfsc "github.com/willscott/go-nfs-client/nfs"
	"github.com/willscott/go-nfs-client/nfs/rpc"

	"github.com/silt-io/silt/acl"
	"github.com/silt-io/silt/core/catalog"
	"github.com/silt-io/silt/view/viewtest"
)

var (
	mtime   = time.Unix(1700000000, 0)
	testKey = []byte("0123456789abcdef0123456789abcdef")
)

const (
	chunk    = "/acme/clicks/segment=0/00000000000000000000-00000000000000000002.txt"
	bigChunk = "/acme/clicks/segment=1/00000000000000000000-00000000000000099999.txt"
	bigDir   = "/acme/wide/segment=0"
	bigCount = 2000
)

// longStream is a valid stream name whose paths do not fit a handle.
var longStream = "/acme/" + strings.Repeat("s", 60)

func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i * 7 % 251)
	}
	return b
}

func fixture() map[string][]byte {
	files := map[string][]byte{
		chunk:                           []byte("a\nb\nc\n"),
		bigChunk:                        pattern(300_000),
		"/acme/clicks/_manifest.json":   []byte(`{}`),
		longStream + "/segment=0/x.txt": []byte("y\n"),
		"/other/logs/segment=0/00000000000000000000-00000000000000000000.txt": []byte("x\n"),
	}
	for i := range bigCount {
		files[fmt.Sprintf("%s/%020d-%020d.txt", bigDir, i*10, i*10+9)] = []byte(fmt.Sprint(i))
	}
	return files
}

type env struct {
	t     *testing.T
	store *acl.Store
	mem   *viewtest.MemView
	files map[string][]byte
}

func newEnv(t *testing.T) *env {
	t.Helper()
	cat, err := catalog.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	store, err := acl.Open(cat)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.EnsureRoot("root", ""); err != nil {
		t.Fatal(err)
	}
	for name, grants := range map[string][]string{"alice": {"acme"}, "bob": nil} {
		if _, err := store.CreatePrincipal(name); err != nil {
			t.Fatal(err)
		}
		for _, g := range grants {
			if _, err := store.AddGrant(name, acl.Read, g); err != nil {
				t.Fatal(err)
			}
		}
	}
	files := fixture()
	return &env{t: t, store: store, files: files, mem: viewtest.NewMemView(viewtest.Fixture{Files: files}, mtime)}
}

// serve starts a server on 127.0.0.1:0 and returns its address and a
// function that stops it and waits for Serve to return.
func (e *env) serve(cfg Config, key []byte) (string, func()) {
	e.t.Helper()
	srv, err := New(cfg, e.mem, e.store, key, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	return startServer(e.t, srv)
}

// mount dials addr and mounts dir.
func mount(t *testing.T, addr, dir string) (*nfsc.Target, error) {
	t.Helper()
	// The client binds a random local port of its own choosing, which
	// now and then is still in use; retry those.
	var c *rpc.Client
	var err error
	for range 10 {
		if c, err = rpc.DialTCP("tcp", addr, false); err == nil || !strings.Contains(err.Error(), "address already in use") {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	m := &nfsc.Mount{Client: c}
	return m.Mount(dir, rpc.NewAuthUnix("silt-test", 0, 0).Auth())
}

func mustMount(t *testing.T, addr, dir string) *nfsc.Target {
	t.Helper()
	v, err := mount(t, addr, dir)
	if err != nil {
		t.Fatalf("mount %s: %v", dir, err)
	}
	return v
}

func wantNFSErr(t *testing.T, err error, names ...string) {
	t.Helper()
	var ne *nfsc.Error
	if errors.As(err, &ne) {
		for _, n := range names {
			if ne.ErrorString == n {
				return
			}
		}
	}
	t.Fatalf("got error %v, want one of %v", err, names)
}

func exportCfg(exports ...string) Config {
	c := DefaultConfig()
	c.Exports = exports
	return c
}

// rootConfig exports everything as root: the default export acts as
// anonymous, which reads nothing of the fixture.
func rootConfig() Config { return exportCfg("path=/;principal=root") }

func TestLookupGetattrRead(t *testing.T) {
	e := newEnv(t)
	addr, _ := e.serve(rootConfig(), testKey)
	v := mustMount(t, addr, "/")

	fi, _, err := v.Lookup(chunk)
	if err != nil {
		t.Fatal(err)
	}
	if fi.IsDir() || fi.Size() != int64(len(e.files[chunk])) || fi.Mode().Perm() != 0o444 {
		t.Fatalf("Lookup(%s) = dir %v size %d mode %v", chunk, fi.IsDir(), fi.Size(), fi.Mode())
	}
	attr, err := v.Getattr("/acme/clicks")
	if err != nil {
		t.Fatal(err)
	}
	if !attr.IsDir() || attr.Mode() != 0o555 || attr.Nlink != 2 || attr.UID != 0 || attr.GID != 0 {
		t.Fatalf("Getattr(/acme/clicks) = %+v; want a 0555 directory with nlink 2, uid/gid 0", attr)
	}
	fattr, err := v.Getattr(chunk)
	if err != nil {
		t.Fatal(err)
	}
	if fattr.Nlink != 1 || fattr.Fileid != e.mustStat(chunk).ID || !fattr.ModTime().Equal(mtime) {
		t.Fatalf("Getattr(%s) = %+v", chunk, fattr)
	}
	if _, _, err := v.Lookup("/acme/nope"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Lookup of a missing name: %v", err)
	}

	// go-nfs turns every failed Stat in LOOKUP into NOENT, so a path too
	// long for a handle reads as missing rather than NAMETOOLONG.
	if _, _, err := v.Lookup(longStream); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Lookup of a path too long for a handle: %v", err)
	}

	want := e.files[bigChunk]
	f, err := v.Open(bigChunk)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, off := range []int64{0, 1, 4095, 65536, 131071, 299_990} {
		buf := make([]byte, 1000)
		n, err := f.ReadAt(buf, off)
		if err != nil && n == 0 {
			t.Fatalf("ReadAt(%d): %v", off, err)
		}
		end := min(off+1000, int64(len(want)))
		if !bytes.Equal(buf[:n], want[off:end]) {
			t.Fatalf("ReadAt(%d): %d bytes differ from the file's", off, n)
		}
	}
}

func (e *env) mustStat(p string) struct{ ID uint64 } {
	fi, err := e.mem.Stat(context.Background(), p)
	if err != nil {
		e.t.Fatal(err)
	}
	return struct{ ID uint64 }{fi.ID}
}

func TestReadDirPlusLarge(t *testing.T) {
	e := newEnv(t)
	addr, _ := e.serve(rootConfig(), testKey)
	v := mustMount(t, addr, "/")
	ents, err := v.ReadDirPlus(bigDir)
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	if len(ents) != bigCount {
		t.Fatalf("ReadDirPlus(%s) gave %d entries, want %d", bigDir, len(ents), bigCount)
	}
	for i, en := range ents {
		name := fmt.Sprintf("%020d-%020d.txt", i*10, i*10+9)
		if en.Name() != name || en.IsDir() || en.Size() != int64(len(fmt.Sprint(i))) {
			t.Fatalf("entry %d = %s (size %d), want %s", i, en.Name(), en.Size(), name)
		}
		if n := len(en.Handle.FH); !en.Handle.IsSet || n == 0 || n > 64 || n%4 != 0 {
			t.Fatalf("entry %s has a handle of %d bytes", name, n)
		}
	}
	root, err := v.ReadDirPlus("/")
	// The client gives no order guarantee across reply pages.
	sort.Slice(root, func(i, j int) bool { return root[i].Name() < root[j].Name() })
	if err != nil || len(root) != 2 || root[0].Name() != "acme" || root[1].Name() != "other" {
		t.Fatalf("ReadDirPlus(/) = %v, %v", root, err)
	}
}

func TestReadOnly(t *testing.T) {
	e := newEnv(t)
	addr, _ := e.serve(rootConfig(), testKey)
	v := mustMount(t, addr, "/")
	_, err := v.Create("/acme/clicks/new.txt", 0o644)
	wantNFSErr(t, err, "NFS3ERR_ROFS")
	_, err = v.Mkdir("/acme/clicks/newdir", 0o755)
	wantNFSErr(t, err, "NFS3ERR_ROFS")
	wantNFSErr(t, v.Remove(chunk), "NFS3ERR_ROFS")
	wantNFSErr(t, v.RmDir("/acme/clicks/segment=0"), "NFS3ERR_ROFS")
	wantNFSErr(t, v.Rename(chunk, "/acme/clicks/moved.txt"), "NFS3ERR_ROFS")
	f, err := v.Open(chunk)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Write([]byte("x"))
	wantNFSErr(t, err, "NFS3ERR_ROFS")
	if got := e.files[chunk]; string(got) != "a\nb\nc\n" {
		t.Fatalf("file changed: %q", got)
	}
}

func TestHandlesAcrossRestart(t *testing.T) {
	e := newEnv(t)
	addr, stop := e.serve(rootConfig(), testKey)
	v := mustMount(t, addr, "/")
	_, fh, err := v.Lookup(chunk)
	if err != nil {
		t.Fatal(err)
	}
	stop()

	addr, stop = e.serve(rootConfig(), testKey)
	v = mustMount(t, addr, "/")
	attr, err := v.GetAttr(fh)
	if err != nil {
		t.Fatalf("handle after restart with the same key: %v", err)
	}
	if attr.Size() != int64(len(e.files[chunk])) {
		t.Fatalf("handle after restart names a file of %d bytes", attr.Size())
	}
	stop()

	other := bytes.Repeat([]byte{7}, 32)
	addr, _ = e.serve(rootConfig(), other)
	v = mustMount(t, addr, "/")
	_, err = v.GetAttr(fh)
	wantNFSErr(t, err, "NFS3ERR_STALE", "NFS3ERR_BADHANDLE")
	forged := bytes.Clone(fh)
	forged[len(forged)-1] ^= 1
	_, err = v.GetAttr(forged)
	wantNFSErr(t, err, "NFS3ERR_STALE", "NFS3ERR_BADHANDLE")
}

func TestExports(t *testing.T) {
	e := newEnv(t)
	cfg := exportCfg(
		"path=/acme;principal=alice",
		"path=/other;principal=alice;allow=10.0.0.0/8",
		"path=/;principal=bob",
	)
	addr, _ := e.serve(cfg, testKey)

	// A per-tenant export mounts its subtree, and so does a path below it.
	v := mustMount(t, addr, "/acme")
	if _, _, err := v.Lookup("clicks/segment=0/00000000000000000000-00000000000000000002.txt"); err != nil {
		t.Fatalf("lookup inside /acme export: %v", err)
	}
	v = mustMount(t, addr, "/acme/clicks/segment=0")
	if ents, err := v.ReadDirPlus("."); err != nil || len(ents) != 1 {
		t.Fatalf("ReadDirPlus of a mounted subdirectory = %v, %v", ents, err)
	}
	if _, err := mount(t, addr, "/acme/clicks/_manifest.json"); err == nil || !strings.Contains(err.Error(), "NOTDIR") {
		t.Fatalf("mounting a file: %v", err)
	}

	// /other is exported only to 10/8, so loopback falls back to the
	// catch-all export, whose principal (bob) may not read /other.
	if _, err := mount(t, addr, "/other"); err == nil || !strings.Contains(err.Error(), "MNT3ERR_ACCES") {
		t.Fatalf("mount /other: %v, want MNT3ERR_ACCES", err)
	}

	// The root export as bob shows no tenants.
	v = mustMount(t, addr, "/")
	if ents, err := v.ReadDirPlus("/"); err != nil || len(ents) != 0 {
		t.Fatalf("bob's root listing = %v, %v", ents, err)
	}
	if _, _, err := v.Lookup(chunk); err == nil {
		t.Fatal("bob looked up a chunk")
	}
}

func TestMountDenied(t *testing.T) {
	e := newEnv(t)
	cfg := exportCfg("path=/acme;principal=alice", "path=/other;principal=alice;allow=10.0.0.0/8|127.0.0.1/32")
	addr, _ := e.serve(cfg, testKey)
	for _, tc := range []struct{ path, want string }{
		{"/gamma", "MNT3ERR_NOENT"},         // no export covers it
		{"/", "MNT3ERR_NOENT"},              // only tenant exports
		{"/acme/nope", "MNT3ERR_NOENT"},     // inside an export, missing
		{"/other/logs", "MNT3ERR_ACCES"},    // alice may not read it
		{longStream, "MNT3ERR_NAMETOOLONG"}, // no handle fits
		{"relative", "unknown mount stat"},  // MNT3ERR_INVAL, unnamed by the client
	} {
		t.Run(tc.path, func(t *testing.T) {
			_, err := mount(t, addr, tc.path)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("mount %s: %v, want %s", tc.path, err, tc.want)
			}
		})
	}

	// Network denial: the only export allows 10/8, so MNT says ACCES and
	// connections from elsewhere are dropped on accept.
	e2 := newEnv(t)
	addr2, _ := e2.serve(exportCfg("path=/;principal=root;allow=10.0.0.0/8"), testKey)
	c, err := net.DialTimeout("tcp", addr2, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("connection from a refused address stayed open")
	}
}

func TestMountACCESByNetwork(t *testing.T) {
	e := newEnv(t)
	// Loopback may connect (the /acme export allows it) but not mount /other.
	addr, _ := e.serve(exportCfg("path=/acme;principal=root", "path=/other;principal=root;allow=10.0.0.0/8"), testKey)
	_, err := mount(t, addr, "/other")
	if err == nil || !strings.Contains(err.Error(), "MNT3ERR_ACCES") {
		t.Fatalf("mount /other from loopback: %v, want MNT3ERR_ACCES", err)
	}
	mustMount(t, addr, "/acme")
}
