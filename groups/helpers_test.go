package groups

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/silt-io/silt/core"
)

// storeSource is a Source over tier 1 of a real core.Store.
type storeSource struct{ *core.Store }

func (s storeSource) Oldest(_ context.Context, _ core.Stream, sg core.SegmentInfo) (uint64, error) {
	return sg.FirstOffset, nil
}

func (s storeSource) EventAt(ctx context.Context, tenant, stream, segment string, off uint64) (core.Event, bool, error) {
	res, err := s.Read(ctx, core.ReadRequest{Tenant: tenant, Stream: stream, Segment: segment, From: off, MaxEvents: 1})
	if errors.Is(err, core.ErrOutOfRange) || err == nil && len(res.Events) == 0 {
		return core.Event{}, false, nil
	}
	if err != nil {
		return core.Event{}, false, err
	}
	return res.Events[0], true, nil
}

type fixture struct {
	t     testing.TB
	store *core.Store
	c     *Coordinator
	clock time.Time
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	cfg := core.DefaultConfig()
	cfg.Dir = t.TempDir()
	store, err := core.Open(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	if _, err := store.CreateTenant(context.Background(), "acme", nil); err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, store: store, clock: time.Unix(1_800_000_000, 0)}
	f.reopen()
	return f
}

// reopen builds a new coordinator over the same catalog, as a restart does.
func (f *fixture) reopen() {
	f.t.Helper()
	c, err := newWithClock(DefaultConfig(), f.store.Catalog(), storeSource{f.store}, nil, func() time.Time { return f.clock })
	if err != nil {
		f.t.Fatal(err)
	}
	f.c = c
}

func (f *fixture) stream(name string, segments int) {
	f.t.Helper()
	if _, err := f.store.CreateStream(context.Background(), "acme", name, core.StreamConfig{Encoding: core.EncodingLines, Segments: segments}); err != nil {
		f.t.Fatal(err)
	}
}

// appendN appends n events of 10 bytes to one segment.
func (f *fixture) appendN(stream, segment string, n int) {
	f.t.Helper()
	evs := make([][]byte, n)
	for i := range evs {
		evs[i] = fmt.Appendf(nil, "event-%04d", i)
	}
	if _, err := f.store.Append(context.Background(), core.AppendRequest{Tenant: "acme", Stream: stream, Segment: segment, Events: evs}); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) create(name string, start Start, streams ...string) Group {
	f.t.Helper()
	g, err := f.c.Create(context.Background(), "acme", CreateRequest{Name: name, Streams: streams, Start: start})
	if err != nil {
		f.t.Fatal(err)
	}
	return g
}

func (f *fixture) join(group, member string) Assignment {
	f.t.Helper()
	a, err := f.c.Join(context.Background(), "acme", group, member)
	if err != nil {
		f.t.Fatal(err)
	}
	return a
}

func segs(a Assignment) []SegmentRef {
	var out []SegmentRef
	for _, p := range a.Segments {
		out = append(out, p.ref())
	}
	return out
}
