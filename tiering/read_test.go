package tiering

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/silt-io/silt/core"
)

// tieredEnv appends n events of about size bytes to acme/<name> segment 0
// in batches of 5, returns what tier 1 held before tiering, then seals
// everything into chunks and truncates tier 1.
func tieredEnv(t *testing.T, enc core.Encoding, name string, n, size int) (*env, []core.Event) {
	t.Helper()
	e := newEnv(t, testConfig())
	e.createStream("acme", name, enc, 1)
	evs := events(name, n, size)
	for i := 0; i < n; i += 5 {
		e.append("acme", name, "0", evs[i:min(i+5, n)]...)
	}
	var want []core.Event
	for from := uint64(0); from < uint64(n); {
		res, err := e.store.Read(context.Background(), core.ReadRequest{Tenant: "acme", Stream: name, Segment: "0", From: from})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, res.Events...)
		from = res.Next
	}
	e.scan()
	e.clock.Advance(e.cfg.MaxLag)
	e.scan()
	if info := e.segInfo("acme", name, "0"); info.FirstOffset == 0 {
		t.Fatalf("tier 1 was not truncated: %+v", info)
	}
	if cs := e.chunks("acme", name, "0"); len(cs) < 4 || cs[len(cs)-1].LastOffset != uint64(n-1) {
		t.Fatalf("want several chunks ending at %d, got %+v", n-1, cs)
	}
	return e, want
}

func TestReadTieredMatchesTier1(t *testing.T) {
	for _, enc := range []core.Encoding{core.EncodingLines, core.EncodingFramed} {
		t.Run(string(enc), func(t *testing.T) {
			const n = 60
			e, want := tieredEnv(t, enc, "s-"+string(enc), n, 100)
			ctx := context.Background()
			chunks := e.chunks("acme", "s-"+string(enc), "0")
			chunkOf := func(off uint64) ChunkRecord {
				for _, c := range chunks {
					if c.FirstOffset <= off && off <= c.LastOffset {
						return c
					}
				}
				t.Fatalf("no chunk holds %d", off)
				return ChunkRecord{}
			}
			// Chunk starts, middles and ends, with bounds that stop
			// inside a chunk, at its end and several chunks further.
			cases := map[string]struct {
				from      uint64
				maxEvents int
				maxBytes  int
			}{
				"all from 0":           {0, 0, 0},
				"first event":          {0, 1, 0},
				"mid first chunk":      {3, 4, 0},
				"chunk start":          {chunks[1].FirstOffset, 2, 0},
				"chunk end":            {chunks[1].LastOffset, 1, 0},
				"across chunks":        {chunks[0].LastOffset, 25, 0},
				"mid chunk to the end": {chunks[2].FirstOffset + 2, 0, 0},
				"last event":           {n - 1, 0, 0},
				"byte bound":           {5, 0, 250},
				"byte bound below one": {7, 0, 1},
			}
			for name, tc := range cases {
				got, next, err := e.tr.ReadTiered(ctx, "acme", "s-"+string(enc), "0", tc.from, tc.maxEvents, tc.maxBytes)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				wantN := n - int(tc.from)
				if tc.maxEvents > 0 {
					wantN = min(wantN, tc.maxEvents)
				}
				if tc.maxBytes > 0 {
					// Events are exactly 100 bytes: one past the bound.
					wantN = min(wantN, max(1, (tc.maxBytes+99)/100))
				}
				if len(got) != wantN || next != tc.from+uint64(wantN) {
					t.Fatalf("%s: %d events, next %d; want %d, next %d", name, len(got), next, wantN, tc.from+uint64(wantN))
				}
				for i, ev := range got {
					w := want[int(tc.from)+i]
					c := chunkOf(w.Offset)
					if ev.Offset != w.Offset || string(ev.Data) != string(w.Data) {
						t.Fatalf("%s: event %d is %d %q, want %d %q", name, i, ev.Offset, ev.Data, w.Offset, w.Data)
					}
					if ev.Time.Before(c.FirstTime) || ev.Time.After(c.LastTime) {
						t.Fatalf("%s: event %d time %v outside its chunk's [%v, %v]", name, w.Offset, ev.Time, c.FirstTime, c.LastTime)
					}
					if (w.Offset == c.FirstOffset || w.Offset == c.LastOffset) && !ev.Time.Equal(w.Time) {
						t.Fatalf("%s: event %d at a chunk edge has time %v, want %v", name, w.Offset, ev.Time, w.Time)
					}
				}
			}

			// At and past the tiered offset: nothing, the caller reads tier 1.
			for _, from := range []uint64{n, n + 10} {
				got, next, err := e.tr.ReadTiered(ctx, "acme", "s-"+string(enc), "0", from, 0, 0)
				if err != nil || len(got) != 0 || next != from {
					t.Fatalf("from %d: %d events, next %d, %v; want none at %d", from, len(got), next, err, from)
				}
			}
		})
	}
}

func TestReadTieredErrors(t *testing.T) {
	e, _ := tieredEnv(t, core.EncodingLines, "s", 60, 100)
	ctx := context.Background()
	chunks := e.chunks("acme", "s", "0")
	read := func(from uint64) error {
		_, _, err := e.tr.ReadTiered(ctx, "acme", "s", "0", from, 0, 0)
		return err
	}

	// A corrupted object is reported, not served.
	c := chunks[2]
	w, err := e.be.Create(ctx, c.Key)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(make([]byte, c.Size))
	if err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	var ce *CorruptChunkError
	if err := read(c.FirstOffset + 1); !errors.As(err, &ce) || ce.Offset != c.FirstOffset {
		t.Fatalf("corrupt chunk: %v", err)
	}

	// A missing object is a backend failure.
	if err := e.be.Delete(ctx, chunks[1].Key); err != nil {
		t.Fatal(err)
	}
	if err := read(chunks[1].FirstOffset); !errors.Is(err, core.ErrUnavailable) {
		t.Fatalf("missing object: %v, want ErrUnavailable", err)
	}

	// Below the first chunk left (as after retention): out of range.
	if err := e.store.Catalog().Delete(chunkKey("acme", "s", "0", chunks[0].FirstOffset)); err != nil {
		t.Fatal(err)
	}
	for _, from := range []uint64{0, chunks[0].LastOffset} {
		if err := read(from); !errors.Is(err, core.ErrOutOfRange) {
			t.Fatalf("from %d after retention: %v, want ErrOutOfRange", from, err)
		}
	}
	// The rest of tier 2 still reads.
	if got, _, err := e.tr.ReadTiered(ctx, "acme", "s", "0", chunks[3].FirstOffset, 1, 0); err != nil || len(got) != 1 {
		t.Fatalf("read after retention: %d events, %v", len(got), err)
	}
}

// TestChunkHolding checks the seek against a linear search over chunks of
// uneven lengths.
func TestChunkHolding(t *testing.T) {
	e := newEnv(t, testConfig())
	cat := e.store.Catalog()
	lens := []uint64{1, 1, 7, 1, 33, 2, 100, 1}
	var recs []ChunkRecord
	first := uint64(5) // offsets below 5 are gone (retention)
	for _, n := range lens {
		r := ChunkRecord{Segment: "0", FirstOffset: first, LastOffset: first + n - 1}
		if err := cat.Set(chunkKey("acme", "s", "0", first), []byte(fmt.Sprintf(`{"first_offset":%d,"last_offset":%d}`, r.FirstOffset, r.LastOffset))); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
		first += n
	}
	for off := uint64(0); off < first+3; off++ {
		got, ok, err := chunkHolding(cat, "acme", "s", "0", off)
		if err != nil {
			t.Fatal(err)
		}
		var want ChunkRecord
		wantOK := false
		for _, r := range recs {
			if r.FirstOffset <= off && off <= r.LastOffset {
				want, wantOK = r, true
			}
		}
		if ok != wantOK || (ok && (got.FirstOffset != want.FirstOffset || got.LastOffset != want.LastOffset)) {
			t.Fatalf("offset %d: got %+v %v, want %+v %v", off, got, ok, want, wantOK)
		}
	}
}
