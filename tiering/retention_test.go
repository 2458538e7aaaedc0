package tiering

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/silt-io/silt/core"
)

// retainedEnv creates acme/s with retention r.
func retainedEnv(t *testing.T, r core.Retention, segments int) *env {
	t.Helper()
	e := newEnv(t, testConfig())
	e.createStreamConfig("acme", "s", core.StreamConfig{Encoding: core.EncodingLines, Segments: segments, Retention: r})
	return e
}

// appendChunks appends n chunks' worth (ten 100-byte events each) to a
// segment of acme/s, the chunks' newest events apart in time so that an
// age cutoff can fall between any two of them.
func (e *env) appendChunks(seg string, n int) {
	e.t.Helper()
	for i := 0; i < n; i++ {
		for _, ev := range events("e", 10, 99) {
			e.append("acme", "s", seg, ev)
		}
		time.Sleep(2 * time.Millisecond) // distinct LastTimes across chunks
	}
}

func (e *env) checkRetained(seg string, first uint64, chunks int) {
	e.t.Helper()
	cs := e.chunks("acme", "s", seg)
	if len(cs) != chunks || (chunks > 0 && cs[0].FirstOffset != first) {
		e.t.Fatalf("segment %s: %d chunks %+v, want %d from offset %d", seg, len(cs), cs, chunks, first)
	}
	st, err := e.tr.Status("acme", "s")
	if err != nil {
		e.t.Fatal(err)
	}
	for _, s := range st.Segments {
		if s.Segment == seg && (s.FirstTieredOffset != first || s.Chunks != chunks || s.TieredBytes != int64(chunks)*1000) {
			e.t.Fatalf("status %+v, want first %d, %d chunks", s, first, chunks)
		}
	}
	rec, err := GetSegment(e.store.Catalog(), "acme", "s", seg)
	if err != nil || rec.First != first || rec.Chunks != chunks || rec.Bytes != int64(chunks)*1000 {
		e.t.Fatalf("segment record %+v, %v; want first %d, %d chunks", rec, err, first, chunks)
	}
	e.checkNoOrphans("acme/s/")
}

func TestRetentionByAge(t *testing.T) {
	e := retainedEnv(t, core.Retention{MaxAge: time.Hour}, 1)
	e.appendChunks("0", 5)
	e.scan()
	cs := e.chunks("acme", "s", "0")
	if len(cs) != 5 {
		t.Fatalf("%d chunks sealed, want 5", len(cs))
	}
	// Young enough: nothing goes.
	e.scan()
	e.checkRetained("0", 0, 5)

	// The cutoff falls just after chunk 1's newest event.
	e.clock.Set(cs[1].LastTime.Add(time.Hour + time.Nanosecond))
	e.scan()
	e.checkRetained("0", 20, 3)
	if info := e.segInfo("acme", "s", "0"); info.NextOffset != 50 {
		t.Fatalf("tier 1 changed: %+v", info)
	}

	ctx := context.Background()
	for _, from := range []uint64{0, 19} {
		if _, _, err := e.tr.ReadTiered(ctx, "acme", "s", "0", from, 0, 0); !errors.Is(err, core.ErrOutOfRange) {
			t.Fatalf("ReadTiered(%d) below the first retained chunk: %v, want ErrOutOfRange", from, err)
		}
	}
	if got, next, err := e.tr.ReadTiered(ctx, "acme", "s", "0", 20, 0, 0); err != nil || len(got) != 30 || got[0].Offset != 20 || next != 50 {
		t.Fatalf("ReadTiered(20) = %d events, next %d, %v", len(got), next, err)
	}

	// Retention survives a restart, and then everything expires.
	e.restart()
	e.clock.Set(cs[4].LastTime.Add(time.Hour + time.Nanosecond))
	e.scan()
	e.checkRetained("0", 50, 0)
	if _, _, err := e.tr.ReadTiered(ctx, "acme", "s", "0", 49, 0, 0); !errors.Is(err, core.ErrOutOfRange) {
		t.Fatalf("ReadTiered(49) with no chunk left: %v, want ErrOutOfRange", err)
	}
	// New events are tiered as before.
	e.clock.Set(time.Time{})
	e.appendChunks("0", 1)
	e.scan()
	e.checkRetained("0", 50, 1)
}

func TestRetentionByBytes(t *testing.T) {
	e := retainedEnv(t, core.Retention{MaxBytes: 2500}, 2)
	// Oldest first: 0:[0,10) 0:[10,20) 1:[0,10) 1:[10,20) 0:[20,30).
	e.appendChunks("0", 2)
	e.appendChunks("1", 2)
	e.appendChunks("0", 1)
	e.scan()
	// 5000 bytes, bounded to 2500 over both segments: the three oldest go.
	e.checkRetained("0", 20, 1)
	e.checkRetained("1", 10, 1)
	e.scan()
	e.checkRetained("0", 20, 1)
	e.checkRetained("1", 10, 1)
}

// TestRetentionCrashBeforeObjectDelete crashes between the catalog commit
// and the object's deletion: the chunk is gone from the catalog (so from
// every read path) and its object is removed at the next start.
func TestRetentionCrashBeforeObjectDelete(t *testing.T) {
	e := retainedEnv(t, core.Retention{MaxBytes: 3000}, 1)
	e.appendChunks("0", 4)
	e.tr.hooks.beforeRetentionDelete = func() error { return errInjected }
	e.scan()
	ctx := context.Background()
	cs := e.chunks("acme", "s", "0")
	if len(cs) != 3 || cs[0].FirstOffset != 10 {
		t.Fatalf("chunks after retention %+v", cs)
	}
	orphan := ObjectKey("acme", "s", "0", ChunkName(core.EncodingLines, 0, 9))
	if _, err := e.fs.Stat(ctx, orphan); err != nil {
		t.Fatalf("the crash should have left %s: %v", orphan, err)
	}
	if _, _, err := e.tr.ReadTiered(ctx, "acme", "s", "0", 0, 0, 0); !errors.Is(err, core.ErrOutOfRange) {
		t.Fatalf("ReadTiered(0) after the retention commit: %v, want ErrOutOfRange", err)
	}
	e.restart() // recover deletes the object; no scan needed
	if _, err := e.fs.Stat(ctx, orphan); !errors.Is(err, ErrNotExist) {
		t.Fatalf("orphan %s after restart: %v", orphan, err)
	}
	e.scan()
	e.checkRetained("0", 10, 3)
}

func TestRetentionValidated(t *testing.T) {
	e := newEnv(t, testConfig())
	ctx := context.Background()
	if _, err := e.store.CreateTenant(ctx, "acme", nil); err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]core.Retention{
		"negative age":   {MaxAge: -time.Second},
		"negative bytes": {MaxBytes: -1},
	} {
		if _, err := e.store.CreateStream(ctx, "acme", "s", core.StreamConfig{Retention: r}); !errors.Is(err, core.ErrInvalid) {
			t.Fatalf("%s: %v, want ErrInvalid", name, err)
		}
	}
	st, err := e.store.CreateStream(ctx, "acme", "s", core.StreamConfig{Retention: core.Retention{MaxAge: time.Hour, MaxBytes: 1 << 30}})
	if err != nil {
		t.Fatal(err)
	}
	e.restart()
	got, err := e.store.GetStream(ctx, "acme", "s")
	if err != nil || got.Config.Retention != st.Config.Retention {
		t.Fatalf("retention after restart %+v, %v; want %+v", got.Config.Retention, err, st.Config.Retention)
	}
}
