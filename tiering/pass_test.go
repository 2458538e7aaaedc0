package tiering

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/silt-io/silt/core"
)

// countingStore counts, per stream, the calls a pass makes into core.
type countingStore struct {
	tier1
	mu      sync.Mutex
	calls   map[string]int // tenant/stream → GetStream and Scan calls
	streams int            // Streams calls
}

func (c *countingStore) touch(tenant, stream string) {
	c.mu.Lock()
	c.calls[tenant+"/"+stream]++
	c.mu.Unlock()
}

func (c *countingStore) EachStream(fn func(core.Stream) error) error {
	c.mu.Lock()
	c.streams++
	c.mu.Unlock()
	return c.tier1.EachStream(fn)
}

func (c *countingStore) GetStream(ctx context.Context, tenant, name string) (core.Stream, error) {
	c.touch(tenant, name)
	return c.tier1.GetStream(ctx, tenant, name)
}

func (c *countingStore) Scan(ctx context.Context, tenant, stream, seg string, from, to uint64, fn core.ScanFunc) error {
	c.touch(tenant, stream)
	return c.tier1.Scan(ctx, tenant, stream, seg, from, to, fn)
}

func (c *countingStore) reset() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.calls
	c.calls = map[string]int{}
	c.streams = 0
	return out
}

// openCounting reopens e's Tierer over a counting wrapper of its store.
func (e *env) openCounting() *countingStore {
	e.t.Helper()
	e.tr.Close()
	cs := &countingStore{calls: map[string]int{}}
	tr, err := New(e.cfg, e.store, e.be, Options{Now: e.clock.Now, manual: true, wrap: func(s tier1) tier1 {
		cs.tier1 = s
		return cs
	}})
	if err != nil {
		e.t.Fatal(err)
	}
	e.tr = tr
	return cs
}

// TestPassTouchesOnlyPendingWork: with many idle streams (all tiered)
// and one busy one, a pass reads only the busy one, however many passes
// run, and an event waiting for the lag ceiling is still sealed by
// passes that see no new commit.
func TestPassTouchesOnlyPendingWork(t *testing.T) {
	const idle = 200
	e := newEnv(t, testConfig())
	for i := range idle {
		name := fmt.Sprintf("idle-%03d", i)
		e.createStream("acme", name, core.EncodingLines, 2)
		e.append("acme", name, "0", "x")
	}
	e.createStream("acme", "busy", core.EncodingLines, 2)
	cs := e.openCounting()
	e.clock.Advance(time.Hour)
	e.scan() // the start-up marks: every stream with tier-1 data, tiered
	e.scan() // their manifests
	if got := len(cs.reset()); got < idle {
		t.Fatalf("first passes touched %d streams, want all %d with tier-1 data", got, idle)
	}
	for pass := range 5 {
		e.scan()
		if got := cs.reset(); len(got) != 0 {
			t.Fatalf("idle pass %d touched %v", pass, got)
		}
	}
	e.append("acme", "busy", "1", "y")
	appended := time.Now()
	tests := []struct {
		name   string
		at     time.Duration // after the append
		chunks int
	}{
		{"after the commit", 0, 0},
		{"no commit since, short of the seal age", time.Millisecond, 0},
		{"no commit since, at the seal age", time.Hour, 1},
	}
	for _, tc := range tests {
		e.clock.Set(appended.Add(tc.at))
		e.scan()
		got := cs.reset()
		if len(got) != 1 || got["acme/busy"] == 0 {
			t.Fatalf("%s: pass touched %v, want only acme/busy", tc.name, got)
		}
		if n := len(e.chunks("acme", "busy", "1")); n != tc.chunks {
			t.Fatalf("%s: %d chunks, want %d", tc.name, n, tc.chunks)
		}
	}
	e.scan() // the manifest of the caught-up stream
	e.scan()
	if got := cs.reset(); len(got) != 0 || cs.streams != 0 {
		t.Fatalf("after catching up a pass touched %v (Streams calls %d)", got, cs.streams)
	}
	e.tr.mu.Lock()
	held := len(e.tr.mu.streams)
	e.tr.mu.Unlock()
	if held != 0 {
		t.Fatalf("%d idle streams kept in memory", held)
	}
	if st, err := e.tr.Status("acme", "busy"); err != nil || st.Segments[1].Chunks != 1 || st.Segments[1].TieredOffset != 1 {
		t.Fatalf("status of an idle stream from the catalog: %+v, %v", st, err)
	}
}

// TestDeletedIdleStream: an idle, fully tiered stream that is deleted has
// its tier-2 data removed by the next pass, without a walk of all streams.
func TestDeletedIdleStream(t *testing.T) {
	e := newEnv(t, testConfig())
	ctx := context.Background()
	e.createStream("acme", "gone", core.EncodingLines, 1)
	e.createStream("acme", "kept", core.EncodingLines, 1)
	e.append("acme", "gone", "0", "a")
	e.append("acme", "kept", "0", "b")
	e.clock.Advance(time.Hour)
	for range 3 {
		e.scan()
	}
	if len(e.chunks("acme", "gone", "0")) != 1 {
		t.Fatal("not tiered")
	}
	cs := e.openCounting()
	if err := e.store.DeleteStream(ctx, "acme", "gone"); err != nil {
		t.Fatal(err)
	}
	cs.reset()
	e.scan()
	if keys, _ := e.fs.List(ctx, "acme/gone/"); len(keys) != 0 {
		t.Fatalf("deleted stream left %v", keys)
	}
	if _, ok, _ := GetStream(e.store.Catalog(), "acme", "gone"); ok {
		t.Fatal("deleted stream's record kept")
	}
	if got := cs.reset(); got["acme/kept"] != 0 || cs.streams != 0 {
		t.Fatalf("the pass touched %v (Streams calls %d)", got, cs.streams)
	}
	if len(e.chunks("acme", "kept", "0")) != 1 {
		t.Fatal("the other stream's chunk went too")
	}
}

// TestRetentionOfIdleStream: retention by age deletes the chunks of a
// stream that gets no commit, at the time they expire.
func TestRetentionOfIdleStream(t *testing.T) {
	e := newEnv(t, testConfig())
	e.createStreamConfig("acme", "old", core.StreamConfig{Encoding: core.EncodingLines, Segments: 1, Retention: core.Retention{MaxAge: time.Hour}})
	e.append("acme", "old", "0", "a")
	e.clock.Advance(time.Minute)
	for range 3 {
		e.scan()
	}
	if len(e.chunks("acme", "old", "0")) != 1 {
		t.Fatal("not tiered")
	}
	e.scan()
	e.clock.Advance(2 * time.Hour)
	e.scan()
	if n := len(e.chunks("acme", "old", "0")); n != 0 {
		t.Fatalf("%d chunks past max_age", n)
	}
}
