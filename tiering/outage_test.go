package tiering

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/silt-io/silt/core"
)

// outageBackend is a fault-injecting backend that refuses every chunk
// upload while down, and records when (on the test clock) each was tried.
type outageBackend struct {
	Backend
	now func() time.Time
	mu  struct {
		sync.Mutex
		down     bool
		attempts map[string][]time.Time // segment directory → attempt times
	}
}

func (b *outageBackend) setDown(down bool) {
	b.mu.Lock()
	b.mu.down = down
	b.mu.Unlock()
}

func (b *outageBackend) Create(ctx context.Context, key string) (Writer, error) {
	if isManifest(key) {
		return b.Backend.Create(ctx, key)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	dir := key[:len(key)-len(key[lastSlash(key):])]
	b.mu.attempts[dir] = append(b.mu.attempts[dir], b.now())
	if b.mu.down {
		return nil, errInjected
	}
	return b.Backend.Create(ctx, key)
}

func lastSlash(s string) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '/' {
			return i
		}
	}
	return 0
}

// TestCatchUpAfterOutage: during a 90 s outage no segment waits more than
// the default retry cap between attempts, and once tier 2 is back every
// segment is tiered within that cap — the first success ends the others'
// backoff at once.
func TestCatchUpAfterOutage(t *testing.T) {
	cfg := testConfig()
	def := DefaultConfig()
	cfg.Retry = def.Retry
	e := newEnv(t, cfg)
	ob := &outageBackend{Backend: e.fs, now: e.clock.Now}
	ob.mu.attempts = map[string][]time.Time{}
	e.be = ob
	e.restart()
	segs := []string{"0", "1", "2"}
	e.createStream("acme", "s", core.EncodingLines, len(segs))
	e.scan() // the new stream's record
	ob.setDown(true)
	for _, seg := range segs {
		e.append("acme", "s", seg, "x")
	}
	start := time.Now().Add(time.Hour) // every event past the seal age
	e.clock.Set(start)
	const outage = 90 * time.Second
	// What "within seconds" means for the defaults.
	const few = 3 * time.Second
	at := start
	for ; at.Sub(start) < outage; at = at.Add(cfg.Interval) {
		e.clock.Set(at)
		e.scan()
	}
	back := at
	ob.setDown(false)
	tiered := map[string]time.Time{}
	for ; at.Sub(back) < time.Minute && len(tiered) < len(segs); at = at.Add(cfg.Interval) {
		e.clock.Set(at)
		e.scan()
		for _, seg := range segs {
			if _, ok := tiered[seg]; !ok && len(e.chunks("acme", "s", seg)) == 1 {
				tiered[seg] = at
			}
		}
	}
	ob.mu.Lock()
	attempts := ob.mu.attempts
	ob.mu.Unlock()
	for _, seg := range segs {
		dir := "acme/s/segment=" + seg
		ts := attempts[dir]
		if len(ts) < int(outage/few) {
			t.Errorf("segment %s: %d attempts in a %s outage, want one per %s at least", seg, len(ts), outage, few)
		}
		for i := 1; i < len(ts); i++ {
			if gap := ts[i].Sub(ts[i-1]); gap > few {
				t.Errorf("segment %s: %s between attempts %d and %d, above %s", seg, gap, i-1, i, few)
				break
			}
		}
		got, ok := tiered[seg]
		if !ok {
			t.Fatalf("segment %s not tiered a minute after tier 2 returned", seg)
		}
		if wait := got.Sub(back); wait > few {
			t.Errorf("segment %s tiered %s after tier 2 returned, want within %s", seg, wait, few)
		}
	}
}

// TestSuccessEndsBackoff: a segment far into its backoff (retry.max of a
// minute here) is retried at the next pass once another segment's upload
// succeeds, not when its own wait ends.
func TestSuccessEndsBackoff(t *testing.T) {
	cfg := testConfig()
	cfg.Retry = RetryConfig{Initial: time.Second, Max: time.Minute}
	e := newEnv(t, cfg)
	ob := &outageBackend{Backend: e.fs, now: e.clock.Now}
	ob.mu.attempts = map[string][]time.Time{}
	e.be = ob
	e.restart()
	e.createStream("acme", "s", core.EncodingLines, 2)
	e.scan()
	ob.setDown(true)
	e.append("acme", "s", "1", "x")
	start := time.Now().Add(time.Hour)
	// Segment 1 fails from 0 s: retries at 1, 3, 7, 15, 31, 63, 123, 183,
	// 243 s. Segment 0 starts failing at 184.5 s, retried at 185.5 s.
	at := start
	pass := func(until time.Duration) {
		for ; at.Sub(start) < until; at = at.Add(cfg.Interval) {
			e.clock.Set(at)
			e.scan()
		}
	}
	pass(184500 * time.Millisecond)
	e.append("acme", "s", "0", "y")
	pass(185 * time.Second)
	ob.setDown(false)
	pass(190 * time.Second)
	for _, seg := range []string{"0", "1"} {
		if n := len(e.chunks("acme", "s", seg)); n != 1 {
			ob.mu.Lock()
			t.Fatalf("segment %s: %d chunks 5 s after tier 2 returned; attempts %v", seg, n, ob.mu.attempts)
		}
	}
}
