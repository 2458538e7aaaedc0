package tiering

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/user"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/colinmarc/hdfs/v2"

	"github.com/silt-io/silt/core"
)

// liveHDFS is a namenode to test against, named by SILT_TEST_HDFS_NAMENODE
// (host:port), with a fresh directory per test and a client of its own
// that does not go through HDFSBackend, to check what the backend left.
type liveHDFS struct {
	cfg HDFSConfig
	raw *hdfs.Client
}

func startHDFS(t *testing.T) *liveHDFS {
	t.Helper()
	nn := os.Getenv("SILT_TEST_HDFS_NAMENODE")
	if nn == "" {
		t.Skip("needs a live namenode: set SILT_TEST_HDFS_NAMENODE=host:port (conformance/suites/tier-hdfs.sh starts a minicluster and runs these tests against it)")
	}
	name := os.Getenv("SILT_TEST_HDFS_USER")
	if name == "" {
		// The minicluster's superuser is the OS user that started it.
		u, err := user.Current()
		if err != nil {
			t.Fatal(err)
		}
		name = u.Username
	}
	raw, err := hdfs.NewClient(hdfs.ClientOptions{Addresses: []string{nn}, User: name})
	if err != nil {
		t.Fatalf("connect to %s: %v", nn, err)
	}
	t.Cleanup(func() { raw.Close() })
	dir := fmt.Sprintf("/silt-test/%s-%d", strings.ReplaceAll(t.Name(), "/", "_"), rand.Uint64())
	if err := raw.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.RemoveAll(dir) })
	return &liveHDFS{cfg: HDFSConfig{Namenodes: []string{nn}, User: name, Dir: dir, Timeout: 30 * time.Second}, raw: raw}
}

func (h *liveHDFS) backend(t *testing.T) *HDFSBackend {
	t.Helper()
	b, err := OpenHDFS(h.cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// files lists every file under the test directory, temp files included,
// as keys.
func (h *liveHDFS) files(t *testing.T) []string {
	t.Helper()
	var out []string
	err := h.raw.Walk(h.cfg.Dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			out = append(out, strings.TrimPrefix(p, h.cfg.Dir+"/"))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

func (h *liveHDFS) read(t *testing.T, key string) []byte {
	t.Helper()
	b, err := h.raw.ReadFile(h.cfg.Dir + "/" + key)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestHDFSBackend(t *testing.T) {
	h := startHDFS(t)
	b := h.backend(t)
	ctx := context.Background()

	big := randomBytes(3<<20 + 12345) // several blocks if the cluster's are small
	put(t, b, "t/s/segment=0/a", []byte("first"))
	put(t, b, "t/s/segment=0/a", []byte("hello")) // a re-upload replaces
	put(t, b, "t/s/segment=1/big", big)
	put(t, b, "t/s2/segment=0/c", []byte("y"))
	if got := h.read(t, "t/s/segment=1/big"); !bytes.Equal(got, big) {
		t.Fatalf("HDFS holds %d bytes for big, wrote %d", len(got), len(big))
	}

	// An aborted upload leaves nothing; an unfinished one is invisible
	// under its key and to List, but its temp file is in HDFS.
	w, err := b.Create(ctx, "t/s/segment=0/aborted")
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("zz"))
	if err := w.Abort(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Stat(ctx, "t/s/segment=0/aborted"); !errors.Is(err, ErrNotExist) {
		t.Fatalf("aborted upload visible: %v", err)
	}
	open, err := b.Create(ctx, "t/s/segment=0/unfinished")
	if err != nil {
		t.Fatal(err)
	}
	open.Write([]byte("zz"))
	if _, err := b.Stat(ctx, "t/s/segment=0/unfinished"); !errors.Is(err, ErrNotExist) {
		t.Fatalf("unfinished upload visible: %v", err)
	}
	if !slices.Contains(h.files(t), "t/s/segment=0/"+tempPrefix+"unfinished") {
		t.Fatalf("no temp file for the unfinished upload in %v", h.files(t))
	}

	tests := []struct {
		prefix string
		want   []string
	}{
		{"", []string{"t/s/segment=0/a", "t/s/segment=1/big", "t/s2/segment=0/c"}},
		{"t/s/", []string{"t/s/segment=0/a", "t/s/segment=1/big"}},
		{"t/s", []string{"t/s/segment=0/a", "t/s/segment=1/big", "t/s2/segment=0/c"}},
		{"t/s/segment=0/", []string{"t/s/segment=0/a"}},
		{"t/s/segment=1/b", []string{"t/s/segment=1/big"}},
		{"nope/", nil},
	}
	for _, tc := range tests {
		got, err := b.List(ctx, tc.prefix)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("List(%q) = %v, want %v", tc.prefix, got, tc.want)
		}
	}

	st, err := b.Stat(ctx, "t/s/segment=1/big")
	if err != nil || st.Size != int64(len(big)) || st.ModTime.IsZero() {
		t.Fatalf("Stat = %+v, %v", st, err)
	}
	if _, err := b.Stat(ctx, "t/s/segment=0"); !errors.Is(err, ErrNotExist) {
		t.Fatalf("Stat of a directory = %v, want ErrNotExist", err)
	}
	if _, err := b.Open(ctx, "t/s/segment=0/missing"); !errors.Is(err, ErrNotExist) {
		t.Fatalf("Open of a missing key = %v, want ErrNotExist", err)
	}
	o, err := b.Open(ctx, "t/s/segment=1/big")
	if err != nil {
		t.Fatal(err)
	}
	if o.Size() != int64(len(big)) {
		t.Fatalf("Size = %d", o.Size())
	}
	for _, r := range []struct{ off, n int }{{0, 10}, {1<<20 - 3, 9}, {len(big) - 5, 5}, {12345, 2 << 20}} {
		p := make([]byte, r.n)
		if n, err := o.ReadAt(p, int64(r.off)); n != r.n || (err != nil && err != io.EOF) || !bytes.Equal(p, big[r.off:r.off+r.n]) {
			t.Fatalf("ReadAt(%d, %d) = %d, %v", r.off, r.n, n, err)
		}
	}
	p := make([]byte, 10)
	if n, err := o.ReadAt(p, int64(len(big)-4)); n != 4 || err != io.EOF {
		t.Fatalf("ReadAt across the end = %d, %v; want 4, EOF", n, err)
	}
	if _, err := o.ReadAt(p, int64(len(big))); err != io.EOF {
		t.Fatalf("ReadAt at the end = %v, want EOF", err)
	}
	o.Close()

	for _, bad := range []string{"", "/abs", "a/../b", "a//b", "a/", "t/s/" + tempPrefix + "x", "a:b/c"} {
		if _, err := b.Create(ctx, bad); err == nil {
			t.Errorf("Create(%q) accepted", bad)
		}
	}

	// Delete removes the object and an unfinished upload's temp file;
	// a missing key is fine; emptied directories go too.
	for _, k := range []string{"t/s/segment=0/a", "t/s/segment=0/unfinished", "t/s/segment=0/never"} {
		if err := b.Delete(ctx, k); err != nil {
			t.Fatalf("Delete(%s): %v", k, err)
		}
	}
	if got := h.files(t); !slices.Equal(got, []string{"t/s/segment=1/big", "t/s2/segment=0/c"}) {
		t.Fatalf("after Delete HDFS holds %v", got)
	}
	if _, err := h.raw.Stat(h.cfg.Dir + "/t/s/segment=0"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("emptied segment directory left behind: %v", err)
	}
	if _, err := h.raw.Stat(h.cfg.Dir + "/t/s"); err != nil {
		t.Fatalf("stream directory that still holds a segment was removed: %v", err)
	}
	// The aborted writer of "unfinished" was deleted under it: finishing
	// it now must fail rather than resurrect the object.
	if err := open.Finish(); err == nil {
		if _, serr := b.Stat(ctx, "t/s/segment=0/unfinished"); serr == nil {
			t.Fatal("an upload deleted while in flight was finished into place")
		}
	}
	open.Abort()
}

// TestHDFSTierer seals chunks into HDFS through the Tierer and checks
// that the files, read by a client of their own, are byte-identical to the
// events read back from tier 1; that an upload interrupted before its
// commit leaves no orphan; and that deleting a stream removes its files.
func TestHDFSTierer(t *testing.T) {
	h := startHDFS(t)
	b := h.backend(t)
	cfg := testConfig()
	cfg.Backend, cfg.HDFS = "hdfs", h.cfg
	e := newS3Env(t, cfg, b)
	for _, enc := range []core.Encoding{core.EncodingLines, core.EncodingFramed} {
		e.createStream("acme", "s-"+string(enc), enc, 2)
	}
	want := map[string][]byte{}
	readFrom := map[string]uint64{}
	for round := 0; round < 3; round++ {
		for _, enc := range []core.Encoding{core.EncodingLines, core.EncodingFramed} {
			stream := "s-" + string(enc)
			for seg := 0; seg < 2; seg++ {
				id := fmt.Sprint(seg)
				e.append("acme", stream, id, events(fmt.Sprintf("r%d", round), 9+seg*4, 20+seg*90+round*13)...)
				k := stream + "/" + id
				var enc2 []byte
				enc2, readFrom[k] = e.readEncoded("acme", stream, id, enc, readFrom[k])
				want[k] = append(want[k], enc2...)
			}
		}
		if round == 1 {
			e.tr.hooks.beforeCommit = func() error { return errInjected }
			e.clock.Advance(time.Hour)
			e.scan()
			e.restart()
		}
		e.scan()
		e.clock.Advance(time.Second)
	}
	e.clock.Advance(time.Hour)
	e.scan()

	committed := map[string]bool{}
	for k, w := range want {
		stream, seg, _ := strings.Cut(k, "/")
		var raw []byte
		for _, c := range e.chunks("acme", stream, seg) {
			obj := h.read(t, c.Key)
			sum := md5.Sum(obj)
			if int64(len(obj)) != c.Size || hex.EncodeToString(sum[:]) != c.MD5 {
				t.Fatalf("%s: %d bytes md5 %x; chunk record %+v", c.Key, len(obj), sum, c)
			}
			raw = append(raw, obj...)
			committed[c.Key] = true
		}
		if !bytes.Equal(raw, w) {
			t.Fatalf("%s: files in HDFS hold %d bytes, tier 1 encoded %d", k, len(raw), len(w))
		}
	}
	files := h.files(t)
	chunkFiles, manifests := 0, 0
	for _, f := range files {
		if isManifest(f) {
			manifests++
			continue
		}
		chunkFiles++
		if !committed[f] {
			t.Errorf("HDFS holds %s, which no chunk record names", f)
		}
	}
	if chunkFiles != len(committed) || chunkFiles < 8 || manifests != 2 {
		t.Fatalf("HDFS holds %d chunk files and %d manifests, the catalog %d chunks of 2 streams", chunkFiles, manifests, len(committed))
	}

	if err := e.store.DeleteStream(context.Background(), "acme", "s-lines"); err != nil {
		t.Fatal(err)
	}
	e.scan()
	for _, f := range h.files(t) {
		if strings.HasPrefix(f, "acme/s-lines/") {
			t.Fatalf("%s survived the deletion of its stream", f)
		}
	}
	if _, err := h.raw.Stat(h.cfg.Dir + "/acme/s-lines"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("directory of the deleted stream left behind: %v", err)
	}
}

// TestHDFSUnreachable: a namenode nobody listens on must not stop the
// backend from opening or the Tierer from starting; the failure, naming
// the address, shows in the segment's status and tier 1 keeps the events.
func TestHDFSUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg := testConfig()
	cfg.Backend = "hdfs"
	cfg.HDFS = HDFSConfig{Namenodes: []string{addr}, User: "silt", Dir: "/silt", Timeout: time.Second}
	be, err := OpenBackend(cfg, t.TempDir())
	if err != nil {
		t.Fatalf("OpenBackend with an unreachable namenode: %v", err)
	}
	defer be.(io.Closer).Close()
	e := newS3Env(t, cfg, be)
	e.createStream("acme", "s", core.EncodingLines, 1)
	e.append("acme", "s", "0", "x")
	e.clock.Advance(time.Hour)
	e.scan()
	st, err := e.tr.Status("acme", "s")
	if err != nil {
		t.Fatal(err)
	}
	s := st.Segments[0]
	if s.Chunks != 0 || s.TieredOffset != 0 || !strings.Contains(s.LastError, addr) || s.RetryAt.IsZero() {
		t.Fatalf("status with tier 2 down: %+v", s)
	}
	if info := e.segInfo("acme", "s", "0"); info.FirstOffset != 0 || info.NextOffset != 1 {
		t.Fatalf("tier 1 touched while tier 2 is down: %+v", info)
	}
}

// TestHDFSStall: a namenode that accepts connections and never answers
// must fail an operation after tiering.hdfs.timeout, not hang it.
func TestHDFSStall(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(io.Discard, c); c.Close() }()
		}
	}()
	b, err := OpenHDFS(HDFSConfig{Namenodes: []string{ln.Addr().String()}, User: "silt", Dir: "/silt", Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	start := time.Now()
	done := make(chan error, 1)
	go func() { _, err := b.Stat(context.Background(), "t/s/segment=0/x"); done <- err }()
	select {
	case err := <-done:
		if err == nil || errors.Is(err, ErrNotExist) {
			t.Fatalf("Stat against a silent namenode = %v, want a timeout", err)
		}
		t.Logf("failed after %s: %v", time.Since(start).Round(time.Millisecond), err)
	case <-time.After(10 * time.Second):
		t.Fatal("Stat against a silent namenode still blocked after 10s")
	}
}

func TestHDFSConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		modify  func(*Config)
		wantErr string // "" = valid
	}{
		{"fs ignores the hdfs section", func(c *Config) { c.Backend, c.HDFS.Namenodes = "fs", nil }, ""},
		{"hdfs", func(c *Config) {}, ""},
		{"hdfs at the root", func(c *Config) { c.HDFS.Dir = "/" }, ""},
		{"HA pair", func(c *Config) { c.HDFS.Namenodes = []string{"nn1:8020", "nn2:8020"} }, ""},
		{"no namenodes", func(c *Config) { c.HDFS.Namenodes = nil }, "tiering.hdfs.namenodes"},
		{"namenode without port", func(c *Config) { c.HDFS.Namenodes = []string{"nn1"} }, "tiering.hdfs.namenodes"},
		{"namenode with a URL", func(c *Config) { c.HDFS.Namenodes = []string{"hdfs://nn1:8020"} }, "tiering.hdfs.namenodes"},
		{"namenode port out of range", func(c *Config) { c.HDFS.Namenodes = []string{"nn1:70000"} }, "tiering.hdfs.namenodes"},
		{"empty dir", func(c *Config) { c.HDFS.Dir = "" }, "tiering.hdfs.dir"},
		{"relative dir", func(c *Config) { c.HDFS.Dir = "silt" }, "tiering.hdfs.dir"},
		{"dir with ..", func(c *Config) { c.HDFS.Dir = "/a/../b" }, "tiering.hdfs.dir"},
		{"dir with an empty element", func(c *Config) { c.HDFS.Dir = "/a//b" }, "tiering.hdfs.dir"},
		{"dir with a colon", func(c *Config) { c.HDFS.Dir = "/a:b" }, "tiering.hdfs.dir"},
		{"zero timeout", func(c *Config) { c.HDFS.Timeout = 0 }, "tiering.hdfs.timeout"},
		{"unknown backend names the choices", func(c *Config) { c.Backend = "hfds" }, `"hdfs"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			c.Backend = "hdfs"
			c.HDFS.Namenodes, c.HDFS.Dir = []string{"nn1:8020"}, "/silt"
			tc.modify(&c)
			err := c.Validate()
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("Validate() = %v, want an error naming %q", err, tc.wantErr)
			}
			if tc.wantErr != "" {
				if _, err := OpenHDFS(c.HDFS); err == nil && c.Backend == "hdfs" {
					t.Fatal("OpenHDFS accepted a config Validate refuses")
				}
			}
		})
	}
	if c := DefaultConfig(); c.HDFS.Timeout <= 0 || c.HDFS.Dir != "" || c.HDFS.Namenodes != nil {
		t.Fatalf("hdfs defaults %+v", c.HDFS)
	}
}
