package groups

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/silt-io/silt/core"
)

// countingSource counts the event reads a Source is asked for.
type countingSource struct {
	storeSource
	reads atomic.Int64
}

func (s *countingSource) EventAt(ctx context.Context, tenant, stream, segment string, off uint64) (core.Event, bool, error) {
	s.reads.Add(1)
	return s.storeSource.EventAt(ctx, tenant, stream, segment, off)
}

// TestLagCost: computing lag reads one event per segment that is behind,
// whatever the backlog.
func TestLagCost(t *testing.T) {
	for _, backlog := range []int{1, 100, 10_000} {
		t.Run(fmt.Sprint("backlog=", backlog), func(t *testing.T) {
			f := newFixture(t)
			src := &countingSource{storeSource: storeSource{f.store}}
			c, err := newWithClock(DefaultConfig(), f.store.Catalog(), src, nil, f.c.now)
			if err != nil {
				t.Fatal(err)
			}
			f.stream("orders", 4)
			for seg := range 3 { // segment 3 stays empty
				for done := 0; done < backlog; done += 1000 {
					f.appendN("orders", fmt.Sprint(seg), min(1000, backlog-done))
				}
			}
			if _, err := c.Create(ctx, "acme", CreateRequest{Name: "g", Streams: []string{"orders"}, Start: Start{Kind: StartHead}}); err != nil {
				t.Fatal(err)
			}
			src.reads.Store(0)
			l, err := c.Lag(ctx, "acme", "g")
			if err != nil {
				t.Fatal(err)
			}
			if l.EventsBehind != uint64(3*backlog) {
				t.Fatalf("events behind %d, want %d", l.EventsBehind, 3*backlog)
			}
			if n := src.reads.Load(); n != 3 {
				t.Fatalf("lag read %d events, want 3 (one per segment behind)", n)
			}
		})
	}
}

// TestLagReadsOnlyMovedPositions: a lag whose positions have not moved
// since the last one reads no event (so a scrape opens no idle segment
// log), and its seconds behind still follow the clock; a commit that moves
// one position makes the next lag read that one segment's event.
func TestLagReadsOnlyMovedPositions(t *testing.T) {
	f := newFixture(t)
	src := &countingSource{storeSource: storeSource{f.store}}
	c, err := newWithClock(DefaultConfig(), f.store.Catalog(), src, nil, func() time.Time { return f.clock })
	if err != nil {
		t.Fatal(err)
	}
	f.stream("orders", 4)
	for seg := range 3 { // segment 3 stays empty
		f.appendN("orders", fmt.Sprint(seg), 10)
	}
	if _, err := c.Create(ctx, "acme", CreateRequest{Name: "g", Streams: []string{"orders"}, Start: Start{Kind: StartHead}}); err != nil {
		t.Fatal(err)
	}
	lag := func(wantReads int64, wantBehind uint64) Lag {
		t.Helper()
		src.reads.Store(0)
		l, err := c.Lag(ctx, "acme", "g")
		if err != nil {
			t.Fatal(err)
		}
		if n := src.reads.Load(); n != wantReads {
			t.Fatalf("lag read %d events, want %d", n, wantReads)
		}
		if l.EventsBehind != wantBehind {
			t.Fatalf("events behind %d, want %d", l.EventsBehind, wantBehind)
		}
		return l
	}
	first := lag(3, 30)
	f.clock = f.clock.Add(5 * time.Second)
	again := lag(0, 30)
	if d := again.SecondsBehind - first.SecondsBehind; math.Abs(d-5) > 1e-6 {
		t.Fatalf("seconds behind went from %v to %v after 5 s, want 5 more", first.SecondsBehind, again.SecondsBehind)
	}

	a, err := c.Join(ctx, "acme", "g", "a")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Commit(ctx, "acme", "g", "a", a.Generation, []Position{{Stream: "orders", Segment: "1", Offset: 4}}); err != nil {
		t.Fatal(err)
	}
	lag(1, 26)
	lag(0, 26)
	// Committed to the end: nothing behind, nothing to read.
	if err := c.Commit(ctx, "acme", "g", "a", a.Generation, []Position{{Stream: "orders", Segment: "1", Offset: 10}}); err != nil {
		t.Fatal(err)
	}
	lag(0, 20)
}

// BenchmarkLag measures lag per group as segments grow, with a row per
// segment and as totals (LagTotal) of an idle group; the backlog's size
// does not enter (TestLagCost).
func BenchmarkLag(b *testing.B) {
	for _, kind := range []string{"rows", "total"} {
		for _, segs := range []int{1, 16, 256} {
			b.Run(fmt.Sprintf("%s/segments=%d", kind, segs), func(b *testing.B) {
				f := newFixture(b)
				f.stream("orders", segs)
				for seg := range segs {
					f.appendN("orders", fmt.Sprint(seg), 10)
				}
				f.create("g", Start{Kind: StartHead}, "orders")
				lag := f.c.Lag
				if kind == "total" {
					lag = f.c.LagTotal
				}
				b.ResetTimer()
				for b.Loop() {
					if _, err := lag(ctx, "acme", "g"); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(segs), "ns/segment")
			})
		}
	}
}

// BenchmarkCommit is one reader committing one segment's position: one
// synced catalog write.
func BenchmarkCommit(b *testing.B) {
	f := newFixture(b)
	f.stream("orders", 1)
	f.appendN("orders", "0", 100)
	f.create("g", Start{Kind: StartHead}, "orders")
	a := f.join("g", "a")
	off := uint64(0)
	for b.Loop() {
		off = (off + 1) % 100
		if err := f.c.Commit(ctx, "acme", "g", "a", a.Generation, []Position{{Stream: "orders", Segment: "0", Offset: off}}); err != nil {
			b.Fatal(err)
		}
	}
}
