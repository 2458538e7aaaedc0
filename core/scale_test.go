package core

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// rssBytes is this process's resident set size.
func rssBytes(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("RSS is read from /proc/self/status, which this system lacks: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}

// bulkStreams writes n stream records of 2 segments straight into the
// catalog, as n CreateStream calls would, in large batches.
func bulkStreams(t *testing.T, s *Store, tenant string, from, n int) {
	t.Helper()
	for lo := from; lo < from+n; lo += 10_000 {
		set := map[string][]byte{}
		for i := lo; i < min(lo+10_000, from+n); i++ {
			now := time.Now().UTC()
			name := fmt.Sprintf("stream-%07d", i)
			r := streamRecord{
				Stream:      Stream{Tenant: tenant, Name: name, Config: StreamConfig{Encoding: EncodingLines, Segments: 2}, Created: now, Segments: segmentRanges(2)},
				Incarnation: now.UnixNano(),
			}
			v, _ := json.Marshal(r)
			set[keyStream+tenant+"/"+name] = v
		}
		if err := s.cat.Commit(set, nil); err != nil {
			t.Fatal(err)
		}
	}
}

// TestScaleIdleStreams measures what idle streams cost: start-up time,
// creation rate and RSS as the stream count grows. It reports figures and
// asserts only what does not depend on the machine's speed.
func TestScaleIdleStreams(t *testing.T) {
	if os.Getenv("SILT_SCALE") == "" {
		t.Skip("creates 100,000 streams and measures them; run with SILT_SCALE=1")
	}
	ctx := context.Background()
	dir := t.TempDir()
	open := func() (*Store, time.Duration) {
		start := time.Now()
		s := openStore(t, dir)
		return s, time.Since(start)
	}
	s, _ := open()
	s.CreateTenant(ctx, "acme", nil)
	total := 0
	createRate := func(s *Store, n int) float64 {
		start := time.Now()
		for i := range n {
			if _, err := s.CreateStream(ctx, "acme", fmt.Sprintf("new-%d-%d", total, i), StreamConfig{Segments: 2}); err != nil {
				t.Fatal(err)
			}
		}
		total += n
		return float64(n) / time.Since(start).Seconds()
	}
	concurrentRate := func(s *Store, n, workers int) float64 {
		start := time.Now()
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < n; i += workers {
					if _, err := s.CreateStream(ctx, "acme", fmt.Sprintf("par-%d-%d", total, i), StreamConfig{Segments: 2}); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		total += n
		return float64(n) / time.Since(start).Seconds()
	}
	have := 0
	for _, n := range []int{1_000, 10_000, 100_000} {
		// Streams that were used once: a segment with tier-1 files each
		// for the first 1,000, records only for the rest.
		if have < 1_000 {
			for i := have; i < min(n, 1_000); i++ {
				name := fmt.Sprintf("used-%d", i)
				if _, err := s.CreateStream(ctx, "acme", name, StreamConfig{Segments: 2}); err != nil {
					t.Fatal(err)
				}
				if _, err := s.Append(ctx, AppendRequest{Tenant: "acme", Stream: name, Segment: "0", Events: [][]byte{[]byte("e")}}); err != nil {
					t.Fatal(err)
				}
			}
			have = min(n, 1_000)
		}
		bulkStreams(t, s, "acme", have, n-have)
		have = n
		s.Close()
		runtime.GC()
		before := rssBytes(t)
		s2, took := open()
		s = s2
		runtime.GC()
		after := rssBytes(t)
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		// The streams are counted in the background after start, which
		// the first creation waits for: timed apart from creation.
		countStart := time.Now()
		s.waitCount()
		counted := time.Since(countStart)
		serial := createRate(s, 500)
		// The same number of bare catalog writes, for comparison: what
		// creation costs beyond them is core's.
		start := time.Now()
		for i := range 500 {
			if err := s.cat.Set(fmt.Sprintf("scale/%d/%d", n, i), []byte("x")); err != nil {
				t.Fatal(err)
			}
		}
		bare := 500 / time.Since(start).Seconds()
		par := concurrentRate(s, 2_000, 32)
		t.Logf("%7d streams: open %v (then counted in %v), RSS +%d B/stream (heap %d MiB), %d logs open; create %.0f/s serial (bare catalog writes %.0f/s), %.0f/s with 32 at once",
			n, took.Round(time.Millisecond), counted.Round(time.Millisecond), (after-before)/int64(n), ms.HeapInuse>>20, s.OpenSegments(), serial, bare, par)
		if s.OpenSegments() > 1 {
			t.Errorf("%d segment logs open after start", s.OpenSegments())
		}
	}
	s.Close()
}
