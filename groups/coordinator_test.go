package groups

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/silt-io/silt/core"
)

var ctx = context.Background()

func TestCreateRefusals(t *testing.T) {
	f := newFixture(t)
	f.stream("orders", 2)
	f.appendN("orders", "0", 5)
	f.create("taken", Start{Kind: StartHead}, "orders")
	for _, tc := range []struct {
		name string
		req  CreateRequest
		want error
	}{
		{"bad name", CreateRequest{Name: "_x", Streams: []string{"orders"}, Start: Start{Kind: StartHead}}, ErrInvalid},
		{"no streams", CreateRequest{Name: "g", Start: Start{Kind: StartHead}}, ErrInvalid},
		{"stream twice", CreateRequest{Name: "g", Streams: []string{"orders", "orders"}, Start: Start{Kind: StartHead}}, ErrInvalid},
		{"unknown stream", CreateRequest{Name: "g", Streams: []string{"nope"}, Start: Start{Kind: StartHead}}, core.ErrNotFound},
		{"timeout too short", CreateRequest{Name: "g", Streams: []string{"orders"}, SessionTimeout: time.Millisecond, Start: Start{Kind: StartHead}}, ErrInvalid},
		{"timeout too long", CreateRequest{Name: "g", Streams: []string{"orders"}, SessionTimeout: time.Hour, Start: Start{Kind: StartHead}}, ErrInvalid},
		{"unknown start", CreateRequest{Name: "g", Streams: []string{"orders"}, Start: Start{Kind: "earliest"}}, ErrInvalid},
		{"time start without time", CreateRequest{Name: "g", Streams: []string{"orders"}, Start: Start{Kind: StartTime}}, ErrInvalid},
		{"position past the end", CreateRequest{Name: "g", Streams: []string{"orders"}, Start: Start{Kind: StartPositions, Positions: []Position{{Stream: "orders", Segment: "0", Offset: 6}}}}, ErrInvalid},
		{"position of an unknown segment", CreateRequest{Name: "g", Streams: []string{"orders"}, Start: Start{Kind: StartPositions, Positions: []Position{{Stream: "orders", Segment: "9"}}}}, ErrInvalid},
		{"position of another stream", CreateRequest{Name: "g", Streams: []string{"orders"}, Start: Start{Kind: StartPositions, Positions: []Position{{Stream: "other", Segment: "0"}}}}, ErrInvalid},
		{"exists", CreateRequest{Name: "taken", Streams: []string{"orders"}, Start: Start{Kind: StartTail}}, ErrExists},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := f.c.Create(ctx, "acme", tc.req); !errors.Is(err, tc.want) {
				t.Fatalf("Create = %v, want %v", err, tc.want)
			}
			if got := f.c.List("acme"); len(got) != 1 || got[0].Name != "taken" {
				t.Fatalf("groups after a refused create: %+v", got)
			}
		})
	}
}

func TestStartPositions(t *testing.T) {
	f := newFixture(t)
	f.stream("orders", 2)
	f.appendN("orders", "0", 5)
	f.appendN("orders", "1", 3)
	before := time.Now()
	time.Sleep(10 * time.Millisecond) // append times must differ from before
	f.appendN("orders", "0", 4)
	for _, tc := range []struct {
		name  string
		start Start
		want  map[string]uint64
	}{
		{"head", Start{Kind: StartHead}, map[string]uint64{"0": 0, "1": 0}},
		{"tail", Start{Kind: StartTail}, map[string]uint64{"0": 9, "1": 3}},
		{"time", Start{Kind: StartTime, Time: before}, map[string]uint64{"0": 5, "1": 3}},
		{"positions", Start{Kind: StartPositions, Positions: []Position{{Stream: "orders", Segment: "0", Offset: 7}}}, map[string]uint64{"0": 7, "1": 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.create("g-"+tc.name, tc.start, "orders")
			d, err := f.c.Describe(ctx, "acme", "g-"+tc.name)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]uint64{}
			for _, p := range d.Positions {
				got[p.Segment] = p.Offset
			}
			if !sameOffsets(got, tc.want) {
				t.Fatalf("positions %v, want %v", got, tc.want)
			}
		})
	}
}

func sameOffsets(a, b map[string]uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestMembership(t *testing.T) {
	f := newFixture(t)
	f.stream("orders", 12)
	f.create("g", Start{Kind: StartHead}, "orders")
	a := f.join("g", "a")
	if len(a.Segments) != 12 || a.Generation != 1 {
		t.Fatalf("first reader: %d segments in generation %d", len(a.Segments), a.Generation)
	}
	f.join("g", "b")
	f.join("g", "c")
	before := map[string][]SegmentRef{}
	for _, id := range []string{"a", "b", "c"} {
		before[id] = segs(f.join("g", id)) // joining again changes nothing
	}
	if d, _ := f.c.Describe(ctx, "acme", "g"); d.Generation != 3 {
		t.Fatalf("generation %d after three joins and three re-joins, want 3", d.Generation)
	}
	for id, ss := range before {
		if len(ss) != 4 {
			t.Fatalf("reader %s has %d segments, want 4", id, len(ss))
		}
	}

	// A stale generation is fenced, for commits and heartbeats.
	if err := f.c.Commit(ctx, "acme", "g", "a", 1, []Position{{Stream: "orders", Segment: before["a"][0].Segment}}); !errors.Is(err, ErrRejoin) {
		t.Fatalf("commit from generation 1: %v, want ErrRejoin", err)
	}
	if _, err := f.c.Heartbeat(ctx, "acme", "g", "a", 2); !errors.Is(err, ErrRejoin) {
		t.Fatalf("heartbeat from generation 2: %v, want ErrRejoin", err)
	}
	// A segment of another reader cannot be committed.
	if err := f.c.Commit(ctx, "acme", "g", "a", 3, []Position{{Stream: "orders", Segment: before["b"][0].Segment}}); !errors.Is(err, ErrRejoin) {
		t.Fatalf("commit of b's segment by a: %v, want ErrRejoin", err)
	}

	// c stops heartbeating: past its session its segments go to a and b,
	// noticed on their heartbeat; a and b keep what they had.
	f.clock = f.clock.Add(6 * time.Second)
	for _, id := range []string{"a", "b"} {
		if _, err := f.c.Heartbeat(ctx, "acme", "g", id, 3); err != nil {
			t.Fatal(err)
		}
	}
	f.clock = f.clock.Add(5 * time.Second)
	if _, err := f.c.Heartbeat(ctx, "acme", "g", "a", 3); !errors.Is(err, ErrRejoin) {
		t.Fatalf("heartbeat after c expired: %v, want ErrRejoin (rebalanced)", err)
	}
	after := map[string][]SegmentRef{"a": segs(f.join("g", "a")), "b": segs(f.join("g", "b"))}
	for _, id := range []string{"a", "b"} {
		if len(after[id]) != 6 {
			t.Errorf("reader %s has %d segments after c expired, want 6", id, len(after[id]))
		}
		for _, s := range before[id] {
			if !slices.Contains(after[id], s) {
				t.Errorf("reader %s lost segment %v in the rebalance", id, s)
			}
		}
	}
	if _, err := f.c.Heartbeat(ctx, "acme", "g", "c", 3); !errors.Is(err, ErrRejoin) {
		t.Fatalf("heartbeat of expired c: %v, want ErrRejoin", err)
	}

	// Leaving hands the segments over at once.
	if err := f.c.Leave(ctx, "acme", "g", "b"); err != nil {
		t.Fatal(err)
	}
	if got := segs(f.join("g", "a")); len(got) != 12 {
		t.Fatalf("a has %d segments after b left, want 12", len(got))
	}
	if err := f.c.Leave(ctx, "acme", "g", "b"); err != nil {
		t.Fatalf("leaving twice: %v", err)
	}
}

func TestCommit(t *testing.T) {
	f := newFixture(t)
	f.stream("orders", 1)
	f.appendN("orders", "0", 10)
	f.create("g", Start{Kind: StartHead}, "orders")
	a := f.join("g", "a")
	p := func(off uint64) []Position { return []Position{{Stream: "orders", Segment: "0", Offset: off}} }
	for _, tc := range []struct {
		name string
		pos  []Position
		want error
		at   uint64 // the stored position afterwards
	}{
		{"forward", p(4), nil, 4},
		{"to the end", p(10), nil, 10},
		{"back (re-read)", p(2), nil, 2},
		{"past the end", p(11), ErrInvalid, 2},
		{"none", nil, ErrInvalid, 2},
		{"twice", append(p(3), p(5)...), ErrInvalid, 2},
		{"unknown segment", []Position{{Stream: "orders", Segment: "7"}}, ErrRejoin, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := f.c.Commit(ctx, "acme", "g", "a", a.Generation, tc.pos)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("Commit = %v, want %v", err, tc.want)
			}
			if got := f.join("g", "a").Segments[0].Offset; got != tc.at {
				t.Fatalf("stored position %d, want %d", got, tc.at)
			}
		})
	}
}

func TestLag(t *testing.T) {
	f := newFixture(t)
	f.stream("orders", 2)
	f.appendN("orders", "0", 30)
	f.appendN("orders", "1", 12)
	f.create("g", Start{Kind: StartHead}, "orders")
	f.create("idle", Start{Kind: StartTail}, "orders")
	lagOf := func(group string) Lag {
		t.Helper()
		l, err := f.c.Lag(ctx, "acme", group)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	if l := lagOf("idle"); l.EventsBehind != 0 || l.BytesBehind != 0 || l.SecondsBehind != 0 {
		t.Fatalf("idle group lag %+v, want zeros", l)
	}
	f.clock = time.Now().Add(time.Minute)
	l := lagOf("g")
	if l.EventsBehind != 42 || l.Segments[0].EventsBehind != 30 || l.Segments[1].EventsBehind != 12 {
		t.Fatalf("lag %+v, want 42 = 30 + 12 events", l)
	}
	if l.SecondsBehind < 60 {
		t.Fatalf("seconds behind %v, want the age of the first event (at least 60 s on the test clock)", l.SecondsBehind)
	}
	if l.BytesBehind <= 42*11 {
		t.Fatalf("bytes behind %d, want above the 42 encoded events' %d bytes (records carry headers)", l.BytesBehind, 42*11)
	}

	a := f.join("g", "a")
	if err := f.c.Commit(ctx, "acme", "g", "a", a.Generation, []Position{{Stream: "orders", Segment: "0", Offset: 25}, {Stream: "orders", Segment: "1", Offset: 12}}); err != nil {
		t.Fatal(err)
	}
	l = lagOf("g")
	if l.EventsBehind != 5 || l.Segments[0].Committed != 25 || l.Segments[1].EventsBehind != 0 || l.Segments[1].SecondsBehind != 0 {
		t.Fatalf("lag after commit %+v, want 5 events, all in segment 0", l)
	}
	if l.Segments[0].Reader != "a" {
		t.Fatalf("segment 0 read by %q, want a", l.Segments[0].Reader)
	}

	// A reset needs the readers gone, or force.
	if _, err := f.c.Reset(ctx, "acme", "g", Start{Kind: StartTail}, false); !errors.Is(err, ErrConflict) {
		t.Fatalf("reset with a live reader: %v, want ErrConflict", err)
	}
	if l := lagOf("g"); l.EventsBehind != 5 {
		t.Fatalf("a refused reset changed the lag to %d", l.EventsBehind)
	}
	if _, err := f.c.Reset(ctx, "acme", "g", Start{Kind: StartTail}, true); err != nil {
		t.Fatal(err)
	}
	if l := lagOf("g"); l.EventsBehind != 0 {
		t.Fatalf("lag after reset to tail: %d events", l.EventsBehind)
	}
	if err := f.c.Commit(ctx, "acme", "g", "a", a.Generation, []Position{{Stream: "orders", Segment: "0", Offset: 1}}); !errors.Is(err, ErrRejoin) {
		t.Fatalf("commit after a forced reset: %v, want ErrRejoin", err)
	}
	if _, err := f.c.Reset(ctx, "acme", "g", Start{Kind: StartHead}, false); err != nil {
		t.Fatal(err)
	}
	if l := lagOf("g"); l.EventsBehind != 42 {
		t.Fatalf("lag after reset to head: %d events, want 42", l.EventsBehind)
	}
}

func TestDeletedStream(t *testing.T) {
	f := newFixture(t)
	f.stream("orders", 1)
	f.create("g", Start{Kind: StartHead}, "orders")
	if err := f.store.DeleteStream(ctx, "acme", "orders"); err != nil {
		t.Fatal(err)
	}
	f.stream("orders", 1) // same name, another stream
	for name, call := range map[string]func() error{
		"join":  func() error { _, err := f.c.Join(ctx, "acme", "g", "a"); return err },
		"lag":   func() error { _, err := f.c.Lag(ctx, "acme", "g"); return err },
		"reset": func() error { _, err := f.c.Reset(ctx, "acme", "g", Start{Kind: StartHead}, true); return err },
	} {
		if err := call(); !errors.Is(err, ErrConflict) {
			t.Errorf("%s on a group over a deleted stream: %v, want ErrConflict", name, err)
		}
	}
	if d, err := f.c.Describe(ctx, "acme", "g"); err != nil || d.Generation != 0 || len(d.Members) != 0 {
		t.Fatalf("describe after refusals: %+v, %v; want generation 0, no members", d, err)
	}
	if err := f.c.Delete(ctx, "acme", "g", false); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, err := f.c.Describe(ctx, "acme", "g"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("describe after delete: %v, want ErrNotFound", err)
	}
}

func TestDelete(t *testing.T) {
	f := newFixture(t)
	f.stream("orders", 2)
	f.create("g", Start{Kind: StartHead}, "orders")
	f.join("g", "a")
	if err := f.c.Delete(ctx, "acme", "g", false); !errors.Is(err, ErrConflict) {
		t.Fatalf("delete with a live reader: %v, want ErrConflict", err)
	}
	f.clock = f.clock.Add(11 * time.Second) // a's session runs out
	if err := f.c.Delete(ctx, "acme", "g", false); err != nil {
		t.Fatalf("delete once the reader expired: %v", err)
	}
	n := 0
	f.store.Catalog().Scan([]byte("groups/"), nil, func(k, v []byte) error { n++; return nil })
	if n != 0 {
		t.Fatalf("%d catalog keys left under groups/ after delete", n)
	}
	// The name is free again, with fresh positions.
	f.create("g", Start{Kind: StartTail}, "orders")
	if _, err := f.c.Heartbeat(ctx, "acme", "g", "a", 1); !errors.Is(err, ErrRejoin) {
		t.Fatalf("old reader in the new group: %v, want ErrRejoin", err)
	}
}

// TestRebuild restarts the coordinator over the same catalog: groups,
// positions, members and generations come back, and members get a whole
// session to be heard from.
func TestRebuild(t *testing.T) {
	f := newFixture(t)
	f.stream("orders", 4)
	f.appendN("orders", "0", 8)
	f.create("g", Start{Kind: StartHead}, "orders")
	f.join("g", "a")
	b := f.join("g", "b")
	var mine string
	for _, p := range b.Segments {
		mine = p.Segment
	}
	if err := f.c.Commit(ctx, "acme", "g", "b", b.Generation, []Position{{Stream: "orders", Segment: mine, Offset: 0}}); err != nil {
		t.Fatal(err)
	}
	f.create("other", Start{Kind: StartTail}, "orders")
	before, _ := f.c.Describe(ctx, "acme", "g")

	f.clock = f.clock.Add(time.Hour) // down for longer than any session
	f.reopen()
	after, err := f.c.Describe(ctx, "acme", "g")
	if err != nil {
		t.Fatal(err)
	}
	if after.Generation != before.Generation || len(after.Members) != 2 || !slices.EqualFunc(after.Positions, before.Positions, func(x, y Position) bool { return x.ref() == y.ref() && x.Offset == y.Offset }) {
		t.Fatalf("after restart %+v\nbefore %+v", after, before)
	}
	if _, err := f.c.Heartbeat(ctx, "acme", "g", "b", b.Generation); err != nil {
		t.Fatalf("heartbeat after restart: %v", err)
	}
	if got := f.c.List("acme"); len(got) != 2 {
		t.Fatalf("%d groups after restart, want 2", len(got))
	}
}
