package tierview

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"sync"
	"testing"
	"time"

	"github.com/silt-io/silt/core"
	"github.com/silt-io/silt/tiering"
	"github.com/silt-io/silt/view"
	"github.com/silt-io/silt/view/viewtest"
)

// newTiered builds a store with a few streams, lets a real Tierer tier
// everything, and returns the view with the chunk files it must show.
func newTiered(t *testing.T) (*View, viewtest.Fixture) {
	dir := t.TempDir()
	ccfg := core.DefaultConfig()
	ccfg.Dir = dir + "/core"
	ccfg.SegmentFileBytes = 4096
	store, err := core.Open(ccfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	cfg := tiering.DefaultConfig()
	cfg.MaxChunkBytes, cfg.MaxBacklogBytes = 300, 1<<20
	cfg.MaxLag, cfg.Interval = 100*time.Millisecond, 25*time.Millisecond
	be, err := tiering.OpenBackend(cfg, ccfg.Dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	type streamDef struct {
		tenant, name string
		enc          core.Encoding
		segments     int
		events       int
		tierPrefix   string
	}
	defs := []streamDef{
		{"acme", "clicks", core.EncodingLines, 3, 40, ""},
		{"acme", "bin", core.EncodingFramed, 1, 25, ""},
		{"acme", "idle", core.EncodingLines, 2, 0, ""},
		{"beta", "logs.v2", core.EncodingLines, 1, 5, ""},
		// Objects under archive/2026/beta/old/…; the view path is the same.
		{"beta", "old", core.EncodingLines, 2, 12, "archive/2026"},
	}
	for _, tn := range []string{"acme", "beta", "empty-tenant"} {
		if _, err := store.CreateTenant(ctx, tn, nil); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string][]byte{} // segment dir → expected concatenated chunk bytes
	var dirs []string
	for _, d := range defs {
		if _, err := store.CreateStream(ctx, d.tenant, d.name, core.StreamConfig{Encoding: d.enc, Segments: d.segments, TierPrefix: d.tierPrefix}); err != nil {
			t.Fatal(err)
		}
		for seg := 0; seg < d.segments; seg++ {
			sdir := fmt.Sprintf("/%s/%s/segment=%d", d.tenant, d.name, seg)
			dirs = append(dirs, sdir)
			for i := 0; i < d.events; i++ {
				ev := []byte(fmt.Sprintf(`{"seg":%d,"i":%d,"pad":"%*s"}`, seg, i, i%13, ""))
				if _, err := store.Append(ctx, core.AppendRequest{Tenant: d.tenant, Stream: d.name, Segment: fmt.Sprint(seg), Events: [][]byte{ev}}); err != nil {
					t.Fatal(err)
				}
				want[sdir] = core.Encode(d.enc, want[sdir], ev)
			}
		}
	}
	tr, err := tiering.New(cfg, store, be, tiering.Options{})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, d := range defs {
		for {
			st, err := tr.Status(d.tenant, d.name)
			if err != nil {
				t.Fatal(err)
			}
			done := len(st.Segments) == d.segments
			for _, s := range st.Segments {
				done = done && s.TieredOffset == uint64(d.events)
			}
			if done {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s/%s not tiered: %+v", d.tenant, d.name, st)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	tr.Close()
	fx := viewtest.Fixture{Files: map[string][]byte{}, Dirs: append(dirs, "/empty-tenant")}
	for _, d := range defs {
		for seg := 0; seg < d.segments; seg++ {
			sdir := fmt.Sprintf("/%s/%s/segment=%d", d.tenant, d.name, seg)
			rest := want[sdir]
			err := tiering.ScanChunks(store.Catalog(), d.tenant, d.name, fmt.Sprint(seg), func(c tiering.ChunkRecord) error {
				fx.Files[path.Join(sdir, c.Name)] = rest[:c.Size]
				rest = rest[c.Size:]
				return nil
			})
			if err != nil || len(rest) != 0 {
				t.Fatalf("%s: %d bytes not in any chunk, %v", sdir, len(rest), err)
			}
		}
	}
	return New(store, be), fx
}

func TestConformance(t *testing.T) {
	viewtest.RunViewSuite(t, func(t *testing.T) (view.View, viewtest.Fixture) { return newTiered(t) })
}

func TestLayoutAndManifest(t *testing.T) {
	v, fx := newTiered(t)
	ctx := context.Background()
	tests := []struct {
		dir  string
		want []string
	}{
		{"/", []string{"acme", "beta", "empty-tenant"}},
		{"/acme", []string{"bin", "clicks", "idle"}},
		{"/acme/clicks", []string{"_manifest.json", "segment=0", "segment=1", "segment=2"}},
		{"/acme/idle/segment=1", nil},
	}
	for _, tc := range tests {
		t.Run(tc.dir, func(t *testing.T) {
			fis, err := v.ReadDir(ctx, tc.dir, "", 100)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, fi := range fis {
				got = append(got, fi.Name)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("ReadDir(%s) = %v, want %v", tc.dir, got, tc.want)
			}
		})
	}
	f, err := v.Open(ctx, "/acme/clicks/_manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, f.Size())
	f.ReadAt(data, 0)
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	chunks := 0
	for _, s := range m.Segments {
		next := uint64(0)
		for _, c := range s.Chunks {
			p := "/acme/clicks/" + s.Path + "/" + c.Name
			fi, err := v.Stat(ctx, p)
			if err != nil || fi.ETag != c.MD5 || fi.Size != c.Size || !fi.ModTime.Equal(c.Sealed) || c.FirstOffset != next {
				t.Fatalf("manifest entry %+v vs Stat %+v, %v", c, fi, err)
			}
			if _, ok := fx.Files[p]; !ok {
				t.Fatalf("manifest lists %s, not in the fixture", p)
			}
			next = c.LastOffset + 1
			chunks++
		}
		if s.TieredOffset != 40 {
			t.Fatalf("segment %s tiered to %d", s.Segment, s.TieredOffset)
		}
	}
	if m.Encoding != core.EncodingLines || len(m.Segments) != 3 || chunks < 6 {
		t.Fatalf("manifest %+v with %d chunks", m, chunks)
	}
}

// TestRetentionHidesChunks checks that chunks deleted by retention leave
// the listing, the manifest and Stat, and that the rest stays.
func TestRetentionHidesChunks(t *testing.T) {
	dir := t.TempDir()
	ccfg := core.DefaultConfig()
	ccfg.Dir = dir + "/core"
	store, err := core.Open(ccfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	cfg := tiering.DefaultConfig()
	cfg.MaxChunkBytes, cfg.MaxBacklogBytes = 100, 1<<20
	cfg.MaxLag, cfg.Interval = 100*time.Millisecond, 10*time.Millisecond
	be, err := tiering.OpenBackend(cfg, ccfg.Dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := store.CreateTenant(ctx, "acme", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := store.CreateStream(ctx, "acme", "s", core.StreamConfig{Segments: 1, Retention: core.Retention{MaxAge: time.Hour}}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		// One 100-byte chunk per append.
		ev := []byte(fmt.Sprintf("%098d", i))
		if _, err := store.Append(ctx, core.AppendRequest{Tenant: "acme", Stream: "s", Events: [][]byte{ev}}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond)
	}
	var mu sync.Mutex
	var frozen time.Time
	now := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		if frozen.IsZero() {
			return time.Now()
		}
		return frozen
	}
	tr, err := tiering.New(cfg, store, be, tiering.Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	waitFor := func(what string, ok func(tiering.SegmentStatus) bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			st, err := tr.Status("acme", "s")
			if err != nil {
				t.Fatal(err)
			}
			if len(st.Segments) == 1 && ok(st.Segments[0]) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %+v", what, st)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitFor("not tiered", func(s tiering.SegmentStatus) bool { return s.TieredOffset == 5 && s.Chunks == 5 })

	v := New(store, be)
	const sdir = "/acme/s/segment=0"
	list := func() []string {
		t.Helper()
		fis, err := v.ReadDir(ctx, sdir, "", 100)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, fi := range fis {
			names = append(names, fi.Name)
		}
		return names
	}
	before := list()
	var cs []tiering.ChunkRecord
	tiering.ScanChunks(store.Catalog(), "acme", "s", "0", func(c tiering.ChunkRecord) error {
		cs = append(cs, c)
		return nil
	})
	if len(before) != 5 || len(cs) != 5 {
		t.Fatalf("listed %v, catalog %d chunks", before, len(cs))
	}

	// Expire the two oldest chunks.
	mu.Lock()
	frozen = cs[1].LastTime.Add(time.Hour + time.Nanosecond)
	mu.Unlock()
	waitFor("not retained", func(s tiering.SegmentStatus) bool { return s.FirstTieredOffset == 2 && s.Chunks == 3 })

	if got := list(); fmt.Sprint(got) != fmt.Sprint(before[2:]) {
		t.Fatalf("after retention ReadDir = %v, want %v", got, before[2:])
	}
	for _, name := range before[:2] {
		if _, err := v.Stat(ctx, sdir+"/"+name); !errors.Is(err, view.ErrNotFound) {
			t.Fatalf("Stat of deleted chunk %s: %v, want ErrNotFound", name, err)
		}
		if _, err := v.Open(ctx, sdir+"/"+name); !errors.Is(err, view.ErrNotFound) {
			t.Fatalf("Open of deleted chunk %s: %v, want ErrNotFound", name, err)
		}
	}
	// The manifest is rewritten at the first scan after the change.
	var m Manifest
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		f, err := v.Open(ctx, "/acme/s/_manifest.json")
		if err != nil {
			t.Fatal(err)
		}
		data := make([]byte, f.Size())
		f.ReadAt(data, 0)
		f.Close()
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		if len(m.Segments) == 1 && len(m.Segments[0].Chunks) == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("manifest not rewritten after retention: %+v", m)
		}
	}
	if m.Segments[0].Chunks[0].FirstOffset != 2 || m.Segments[0].FirstOffset != 2 || m.Segments[0].TieredOffset != 5 {
		t.Fatalf("manifest after retention %+v", m)
	}
	keys, err := be.List(ctx, "acme/s/")
	if err != nil || len(keys) != 4 || keys[0] != "acme/s/_manifest.json" {
		t.Fatalf("tier 2 holds %v, %v; want the manifest and the 3 retained chunks", keys, err)
	}
}

// StreamSet reports a stream's set from core, so that acl.Wrap can
// apply set grants through every head.
func TestStreamSet(t *testing.T) {
	ccfg := core.DefaultConfig()
	ccfg.Dir = t.TempDir()
	store, err := core.Open(ccfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ctx := context.Background()
	if _, err := store.CreateTenant(ctx, "acme", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := store.CreateStream(ctx, "acme", "clicks", core.StreamConfig{Set: "web"}); err != nil {
		t.Fatal(err)
	}
	be, err := tiering.OpenBackend(tiering.DefaultConfig(), ccfg.Dir)
	if err != nil {
		t.Fatal(err)
	}
	v := New(store, be)
	if g := v.StreamSet(ctx, "acme", "clicks"); g != "web" {
		t.Fatalf("set of acme/clicks = %q, want web", g)
	}
	if g := v.StreamSet(ctx, "acme", "nosuch"); g != "" {
		t.Fatalf("set of a missing stream = %q, want none", g)
	}
}
