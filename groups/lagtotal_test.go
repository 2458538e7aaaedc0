package groups

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/silt-io/silt/core"
)

// describingSource counts the stream descriptions (GetStream, a row per
// segment) and event reads a Source is asked for.
type describingSource struct {
	countingSource
	describes atomic.Int64
}

func (s *describingSource) GetStream(ctx context.Context, tenant, name string) (core.Stream, error) {
	s.describes.Add(1)
	return s.countingSource.GetStream(ctx, tenant, name)
}

// TestLagTotal: LagTotal's sums equal Lag's at every step — a known
// backlog, a commit, appends, a reset — and a call whose streams and
// positions did not change describes no stream and reads no event, while
// its seconds behind still follow the clock.
func TestLagTotal(t *testing.T) {
	f := newFixture(t)
	src := &describingSource{countingSource: countingSource{storeSource: storeSource{f.store}}}
	c, err := newWithClock(DefaultConfig(), f.store.Catalog(), src, nil, func() time.Time { return f.clock })
	if err != nil {
		t.Fatal(err)
	}
	f.stream("orders", 4)
	f.stream("audit", 2)
	for seg := range 3 { // orders segment 3 stays empty
		f.appendN("orders", fmt.Sprint(seg), 10)
	}
	f.appendN("audit", "0", 7)
	if _, err := c.Create(ctx, "acme", CreateRequest{Name: "g", Streams: []string{"orders", "audit"}, Start: Start{Kind: StartHead}}); err != nil {
		t.Fatal(err)
	}
	// check compares the totals with Lag's and returns how many streams
	// the totals described.
	check := func(step string, wantEvents uint64) int64 {
		t.Helper()
		src.describes.Store(0)
		tot, err := c.LagTotal(ctx, "acme", "g")
		if err != nil {
			t.Fatal(err)
		}
		described := src.describes.Load()
		full, err := c.Lag(ctx, "acme", "g")
		if err != nil {
			t.Fatal(err)
		}
		if tot.EventsBehind != wantEvents || full.EventsBehind != wantEvents {
			t.Fatalf("%s: events behind %d in total, %d per segment; want %d", step, tot.EventsBehind, full.EventsBehind, wantEvents)
		}
		if tot.BytesBehind != full.BytesBehind || tot.SecondsBehind != full.SecondsBehind || tot.Generation != full.Generation {
			t.Fatalf("%s: total %+v differs from the per-segment lag's sums %+v", step, tot, full)
		}
		if len(tot.Segments) != 0 {
			t.Fatalf("%s: total has %d segment rows", step, len(tot.Segments))
		}
		return described
	}
	if n := check("backlog", 37); n != 2 {
		t.Fatalf("first total described %d streams, want 2", n)
	}
	f.clock = f.clock.Add(3 * time.Second)
	src.reads.Store(0)
	if n := check("idle", 37); n != 0 {
		t.Fatalf("total of an unchanged group described %d streams, want 0", n)
	}
	if tot, _ := c.LagTotal(ctx, "acme", "g"); tot.SecondsBehind < 3 {
		t.Fatalf("seconds behind %v after 3 s", tot.SecondsBehind)
	}

	a, err := c.Join(ctx, "acme", "g", "a")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Commit(ctx, "acme", "g", "a", a.Generation, []Position{{Stream: "orders", Segment: "1", Offset: 4}}); err != nil {
		t.Fatal(err)
	}
	if n := check("after a commit", 33); n != 1 {
		t.Fatalf("total after a commit to one stream described %d streams, want 1", n)
	}
	f.appendN("audit", "1", 5)
	if n := check("after an append", 38); n != 1 {
		t.Fatalf("total after an append to one stream described %d streams, want 1", n)
	}
	if _, err := c.Reset(ctx, "acme", "g", Start{Kind: StartTail}, true); err != nil {
		t.Fatal(err)
	}
	if n := check("after a reset to the tail", 0); n != 2 {
		t.Fatalf("total after a reset described %d streams, want 2", n)
	}
	f.appendN("orders", "3", 2)
	check("after a reset and an append", 2)
}

// TestLagTotalDeletedStream: a group over a deleted stream gets the same
// conflict from LagTotal as from Lag, also once its totals were cached.
func TestLagTotalDeletedStream(t *testing.T) {
	f := newFixture(t)
	f.stream("orders", 2)
	f.appendN("orders", "0", 3)
	f.create("g", Start{Kind: StartHead}, "orders")
	if _, err := f.c.LagTotal(ctx, "acme", "g"); err != nil {
		t.Fatal(err)
	}
	if err := f.store.DeleteStream(ctx, "acme", "orders"); err != nil {
		t.Fatal(err)
	}
	_, errTotal := f.c.LagTotal(ctx, "acme", "g")
	_, errFull := f.c.Lag(ctx, "acme", "g")
	if errTotal == nil || errFull == nil || errTotal.Error() != errFull.Error() {
		t.Fatalf("LagTotal: %v; Lag: %v; want the same conflict", errTotal, errFull)
	}
}
