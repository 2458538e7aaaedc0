package tiering

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/silt-io/silt/core"
)

func TestSealBySize(t *testing.T) {
	e := newEnv(t, testConfig())
	e.createStream("acme", "clicks", core.EncodingLines, 1)
	evs := events("e", 45, 99) // 100 encoded bytes each
	for _, ev := range evs {
		e.append("acme", "clicks", "0", ev)
	}
	e.scan()
	cs := e.chunks("acme", "clicks", "0")
	// 4 full chunks; the last 5 events wait for the lag ceiling.
	if len(cs) != 4 {
		t.Fatalf("got %d chunks, want 4: %+v", len(cs), cs)
	}
	for i, c := range cs {
		wantName := fmt.Sprintf("%020d-%020d.txt", i*10, i*10+9)
		data := encodeAll(core.EncodingLines, evs[i*10:i*10+10])
		sum := md5.Sum(data)
		if c.Name != wantName || c.Size != 1000 || c.Events != 10 || c.Key != "acme/clicks/segment=0/"+wantName ||
			c.MD5 != hex.EncodeToString(sum[:]) || c.CRC32C != crc32.Checksum(data, castagnoli) ||
			c.FirstTime.IsZero() || c.LastTime.Before(c.FirstTime) || c.Sealed.IsZero() {
			t.Fatalf("chunk %d = %+v", i, c)
		}
	}
	st, err := e.tr.Status("acme", "clicks")
	if err != nil {
		t.Fatal(err)
	}
	s := st.Segments[0]
	if s.TieredOffset != 40 || s.Chunks != 4 || s.TieredBytes != 4000 || s.PendingBytes != 500 || s.Lag <= 0 || s.LastError != "" {
		t.Fatalf("status %+v", s)
	}
}

func TestSealByLag(t *testing.T) {
	cfg := testConfig()
	e := newEnv(t, cfg)
	e.createStream("acme", "clicks", core.EncodingFramed, 2)
	e.append("acme", "clicks", "1", "a", "b")
	tests := []struct {
		name    string
		advance time.Duration
		chunks  int
	}{
		{"young", 0, 0},
		{"just before the seal age", cfg.sealAge() - 100*time.Millisecond, 0},
		{"past the seal age", 200 * time.Millisecond, 1},
	}
	for _, tc := range tests {
		e.clock.Advance(tc.advance)
		e.scan()
		if got := len(e.chunks("acme", "clicks", "1")); got != tc.chunks {
			t.Fatalf("%s: %d chunks, want %d", tc.name, got, tc.chunks)
		}
	}
	c := e.chunks("acme", "clicks", "1")[0]
	if c.Name != "00000000000000000000-00000000000000000001.bin" || c.Size != 10 {
		t.Fatalf("chunk %+v", c)
	}
	if n := len(e.chunks("acme", "clicks", "0")); n != 0 {
		t.Fatalf("empty segment got %d chunks", n)
	}
}

// TestByteIdentity checks that a segment's chunks, concatenated, are
// exactly the encoded events read back from tier 1 (read before tiering
// truncates them).
func TestByteIdentity(t *testing.T) {
	for _, enc := range []core.Encoding{core.EncodingLines, core.EncodingFramed} {
		t.Run(string(enc), func(t *testing.T) {
			e := newEnv(t, testConfig())
			e.createStream("acme", "s", enc, 3)
			want := map[string][]byte{}
			readFrom := map[string]uint64{}
			for round := 0; round < 6; round++ {
				for seg := 0; seg < 3; seg++ {
					id := fmt.Sprint(seg)
					e.append("acme", "s", id, events(fmt.Sprintf("r%d", round), 7+seg*5, 10+seg*80+round*17)...)
					if enc == core.EncodingFramed {
						e.append("acme", "s", id, "bin\x00\n\xff", "")
					}
					var b []byte
					b, readFrom[id] = e.readEncoded("acme", "s", id, enc, readFrom[id])
					want[id] = append(want[id], b...)
				}
				e.scan()
				e.clock.Advance(time.Second)
			}
			e.clock.Advance(time.Hour)
			e.scan()
			for seg := 0; seg < 3; seg++ {
				id := fmt.Sprint(seg)
				got := e.tier2Bytes("acme", "s", id)
				if !bytes.Equal(got, want[id]) {
					t.Fatalf("segment %s: tier 2 holds %d bytes, tier 1 encoded %d", id, len(got), len(want[id]))
				}
				// Segment 2 spans several tier-1 files; only the active one may remain.
				if st := e.segInfo("acme", "s", id); id == "2" && st.FirstOffset == 0 {
					t.Fatalf("segment %s: tier 1 not truncated: %+v", id, st)
				}
			}
		})
	}
}

// readEncoded reads a segment from offset from to its end through
// core.Store.Read and encodes the events.
func (e *env) readEncoded(tenant, stream, seg string, enc core.Encoding, from uint64) ([]byte, uint64) {
	e.t.Helper()
	var out []byte
	end := e.segInfo(tenant, stream, seg).NextOffset
	for from < end {
		res, err := e.store.Read(context.Background(), core.ReadRequest{Tenant: tenant, Stream: stream, Segment: seg, From: from})
		if err != nil {
			e.t.Fatal(err)
		}
		for _, ev := range res.Events {
			out = core.Encode(enc, out, ev.Data)
		}
		from = res.Next
	}
	return out, from
}

// TestTruncateOnlyAfterCommit fails every step between the upload and the
// catalog commit and checks that tier 1 keeps everything until a commit.
func TestTruncateOnlyAfterCommit(t *testing.T) {
	tests := []struct {
		name   string
		inject func(e *env, fb *faultyBackend)
	}{
		{"create fails", func(_ *env, fb *faultyBackend) { fb.set(func(f *faultyBackend) { f.failCreate = 1 << 30 }) }},
		{"finish fails", func(_ *env, fb *faultyBackend) { fb.set(func(f *faultyBackend) { f.failFinish = 1 << 30 }) }},
		{"finished but acknowledgement lost", func(_ *env, fb *faultyBackend) {
			fb.set(func(f *faultyBackend) { f.finishThenFail = 1 << 30 })
		}},
		{"crash before catalog commit", func(e *env, _ *faultyBackend) {
			e.tr.hooks.beforeCommit = func() error { return errInjected }
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, testConfig())
			fb := &faultyBackend{Backend: e.fs}
			e.be = fb
			e.restart()
			e.createStream("acme", "s", core.EncodingLines, 1)
			evs := events("e", 200, 99) // 20 KB: several tier-1 files
			for i := 0; i < len(evs); i += 10 {
				e.append("acme", "s", "0", evs[i:i+10]...)
			}
			tc.inject(e, fb)
			for i := 0; i < 5; i++ {
				e.scan()
				e.clock.Advance(time.Second)
			}
			if info := e.segInfo("acme", "s", "0"); info.FirstOffset != 0 {
				t.Fatalf("tier 1 truncated to %d with no chunk committed", info.FirstOffset)
			}
			if cs := e.chunks("acme", "s", "0"); len(cs) != 0 {
				t.Fatalf("chunks committed despite failures: %v", cs)
			}
			st, _ := e.tr.Status("acme", "s")
			if s := st.Segments[0]; s.LastError == "" || s.PendingBytes != 20000 || s.RetryAt.IsZero() {
				t.Fatalf("status during outage %+v", s)
			}
			if err := e.tr.Backpressure("acme", "s"); !errors.Is(err, core.ErrUnavailable) {
				t.Fatalf("Backpressure during outage = %v", err)
			}
			// Recovery: after a restart everything is tiered exactly once.
			fb.set(func(f *faultyBackend) { f.failCreate, f.failFinish, f.finishThenFail = 0, 0, 0 })
			e.restart()
			e.clock.Advance(time.Hour)
			for i := 0; i < 3; i++ { // 20 chunks at maxSealsPerPass a pass
				e.scan()
			}
			if got, want := e.tier2Bytes("acme", "s", "0"), encodeAll(core.EncodingLines, evs); !bytes.Equal(got, want) {
				t.Fatalf("tier 2 holds %d bytes, want %d", len(got), len(want))
			}
			info := e.segInfo("acme", "s", "0")
			if info.FirstOffset == 0 {
				t.Fatalf("tier 1 not truncated after commit: %+v", info)
			}
			e.checkNoOrphans("acme/s/")
			if err := e.tr.Backpressure("acme", "s"); err != nil {
				t.Fatalf("Backpressure after recovery = %v", err)
			}
		})
	}
}

// checkNoOrphans checks that the backend holds exactly the committed
// chunks: no leftover upload and no duplicate.
func (e *env) checkNoOrphans(prefix string) {
	e.t.Helper()
	keys, err := e.fs.List(context.Background(), prefix)
	if err != nil {
		e.t.Fatal(err)
	}
	committed := map[string]bool{}
	for _, r := range mustStreams(e) {
		for _, seg := range r.Segments {
			for _, c := range e.chunks(r.Tenant, r.Stream, seg) {
				committed[c.Key] = true
			}
		}
	}
	chunkKeys := 0
	for _, k := range keys {
		if isManifest(k) {
			continue
		}
		chunkKeys++
		if !committed[k] {
			e.t.Fatalf("tier 2 holds %s, which no chunk record names", k)
		}
	}
	n := 0
	for k := range committed {
		if len(k) >= len(prefix) && k[:len(prefix)] == prefix {
			n++
		}
	}
	if n != chunkKeys {
		e.t.Fatalf("%d committed chunks, %d chunk objects", n, chunkKeys)
	}
}

func mustStreams(e *env) []StreamRecord {
	e.t.Helper()
	rs, err := streamRecords(e.store.Catalog())
	if err != nil {
		e.t.Fatal(err)
	}
	return rs
}

func TestRetryBackoff(t *testing.T) {
	cfg := testConfig()
	e := newEnv(t, cfg)
	fb := &faultyBackend{Backend: e.fs, failFinish: 4}
	e.be = fb
	e.restart()
	e.createStream("acme", "s", core.EncodingLines, 1)
	e.append("acme", "s", "0", "x")
	e.clock.Advance(cfg.MaxLag)
	var waits []time.Duration
	for i := 0; i < 4; i++ {
		e.scan()
		st, _ := e.tr.Status("acme", "s")
		s := st.Segments[0]
		if s.LastError == "" {
			t.Fatalf("attempt %d: no error recorded", i)
		}
		// From the failure, not from before the scan: the test clock runs
		// on real time too, and a scan on a busy disk takes a while.
		waits = append(waits, s.RetryAt.Sub(s.LastErrorTime))
		e.scan() // before the retry time: no attempt
		e.clock.Advance(s.RetryAt.Sub(e.clock.Now()) + time.Millisecond)
	}
	want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 400 * time.Millisecond}
	if fmt.Sprint(waits) != fmt.Sprint(want) {
		t.Fatalf("backoff %v, want %v", waits, want)
	}
	e.scan()
	st, _ := e.tr.Status("acme", "s")
	if s := st.Segments[0]; s.Chunks != 1 || s.LastError != "" || s.PendingBytes != 0 {
		t.Fatalf("after recovery %+v", s)
	}
	e.checkNoOrphans("acme/")
}

// TestRestartResumes tiers in several runs, with a crash before a commit
// in between, and checks the chunks form one chain with nothing missing
// or duplicated.
func TestRestartResumes(t *testing.T) {
	e := newEnv(t, testConfig())
	e.createStream("acme", "s", core.EncodingLines, 1)
	var all []string
	for run := 0; run < 4; run++ {
		evs := events(fmt.Sprintf("run%d", run), 37, 40)
		all = append(all, evs...)
		e.append("acme", "s", "0", evs...)
		if run == 2 {
			e.tr.hooks.beforeCommit = func() error { return errInjected }
		}
		e.clock.Advance(time.Minute)
		e.scan()
		e.restart()
	}
	e.clock.Advance(time.Minute)
	e.scan()
	if got, want := e.tier2Bytes("acme", "s", "0"), encodeAll(core.EncodingLines, all); !bytes.Equal(got, want) {
		t.Fatalf("tier 2 holds %d bytes, want %d", len(got), len(want))
	}
	e.checkNoOrphans("acme/")
}

func TestStreamRecreatedAndDeleted(t *testing.T) {
	e := newEnv(t, testConfig())
	ctx := context.Background()
	e.createStream("acme", "s", core.EncodingLines, 1)
	e.append("acme", "s", "0", "old-1", "old-2")
	e.clock.Advance(time.Minute)
	e.scan()
	if len(e.chunks("acme", "s", "0")) != 1 {
		t.Fatal("no chunk for the first incarnation")
	}
	if err := e.store.DeleteStream(ctx, "acme", "s"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Millisecond) // a new incarnation needs a new creation time
	e.createStream("acme", "s", core.EncodingLines, 1)
	e.append("acme", "s", "0", "new-1")
	e.scan()
	if got := string(e.tier2Bytes("acme", "s", "0")); got != "new-1\n" {
		t.Fatalf("after re-creation tier 2 holds %q", got)
	}
	e.checkNoOrphans("acme/")
	if err := e.store.DeleteStream(ctx, "acme", "s"); err != nil {
		t.Fatal(err)
	}
	e.scan()
	if keys, _ := e.fs.List(ctx, "acme/"); len(keys) != 0 {
		t.Fatalf("deleted stream left %v", keys)
	}
	if _, ok, _ := GetStream(e.store.Catalog(), "acme", "s"); ok {
		t.Fatal("deleted stream's record kept")
	}
}

// TestRunLoop runs the real goroutine on a stopped clock: an event short
// of the seal age stays in tier 1 however many passes run, and is tiered
// by the loop once the clock reaches the lag ceiling. Close waits for the
// goroutine.
func TestRunLoop(t *testing.T) {
	defer goleak.VerifyNone(t)
	cfg := testConfig()
	cfg.MaxLag, cfg.Interval = 400*time.Millisecond, 10*time.Millisecond
	dir := t.TempDir()
	store := openStore(t, dir+"/core")
	defer store.Close()
	be, err := OpenBackend(cfg, dir)
	if err != nil {
		t.Fatal(err)
	}
	// Each pass over a segment with pending events reads the clock, so
	// the reads count the passes.
	clk := &clock{}
	var reads atomic.Int64
	now := func() time.Time { reads.Add(1); return clk.Now() }
	before := time.Now()
	clk.Set(before.Add(cfg.sealAge() - time.Millisecond))
	reg := prometheus.NewRegistry()
	tr, err := New(cfg, store, be, Options{Registerer: reg, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close() // a failed check leaves no goroutine for goleak to report
	ctx := context.Background()
	store.CreateTenant(ctx, "acme", nil)
	store.CreateStream(ctx, "acme", "s", core.StreamConfig{})
	if _, err := store.Append(ctx, core.AppendRequest{Tenant: "acme", Stream: "s", Events: [][]byte{[]byte("hello")}}); err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	waitFor := func(what string, done func() bool) {
		t.Helper()
		// Only a hung loop reaches this bound; a pass is milliseconds.
		for deadline := time.Now().Add(time.Minute); !done(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	from := reads.Load()
	waitFor("ten clock reads by the loop", func() bool { return reads.Load() >= from+10 })
	if st, _ := tr.Status("acme", "s"); len(st.Segments) != 1 || st.Segments[0].Chunks != 0 {
		t.Fatalf("tiered before the seal age: %+v", st)
	}
	clk.Set(after.Add(cfg.MaxLag - cfg.Interval))
	waitFor("the loop to tier the event at the lag ceiling", func() bool {
		st, _ := tr.Status("acme", "s")
		return len(st.Segments) > 0 && st.Segments[0].Chunks == 1
	})
	mfs, err := reg.Gather()
	if err != nil || len(mfs) == 0 {
		t.Fatalf("metrics: %d families, %v", len(mfs), err)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	tr2, err := New(cfg, store, be, Options{Registerer: reg, manual: true})
	if err != nil {
		t.Fatalf("metrics not unregistered by Close: %v", err)
	}
	tr2.Close()
}

// TestManifestWaitsForFirstChunk: a created stream, and one appended to
// but not yet sealed, gets its tiering record (the view lists it) but no
// manifest object or record, also after a restart; its first seal writes
// the manifest.
func TestManifestWaitsForFirstChunk(t *testing.T) {
	e := newEnv(t, testConfig())
	e.createStream("acme", "s", core.EncodingLines, 2)
	manifest := func() bool {
		t.Helper()
		_, rec, err := GetManifest(e.tr.cat, "acme", "s")
		if err != nil {
			t.Fatal(err)
		}
		keys, err := e.be.List(context.Background(), "acme/s/")
		if err != nil {
			t.Fatal(err)
		}
		obj := slices.ContainsFunc(keys, isManifest)
		if obj != rec {
			t.Fatalf("manifest object %v but catalog record %v", obj, rec)
		}
		return rec
	}
	e.scan()
	if _, ok, err := GetStream(e.tr.cat, "acme", "s"); err != nil || !ok {
		t.Fatalf("created stream has no tiering record: %v %v", ok, err)
	}
	if manifest() {
		t.Fatal("manifest written for a stream without chunks")
	}
	e.append("acme", "s", "0", "one")
	e.scan() // within the lag ceiling: nothing sealed
	e.restart()
	e.scan()
	if len(e.chunks("acme", "s", "0")) != 0 {
		t.Fatal("sealed within the lag ceiling; the test needs an unsealed segment")
	}
	if manifest() {
		t.Fatal("manifest written for a stream without chunks after a restart")
	}
	e.clock.Advance(e.cfg.MaxLag)
	e.scan()
	if len(e.chunks("acme", "s", "0")) != 1 || !manifest() {
		t.Fatalf("after the first seal: %d chunks, manifest %v; want 1 and a manifest", len(e.chunks("acme", "s", "0")), manifest())
	}
}
