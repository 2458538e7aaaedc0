package tiering

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"runtime/trace"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/silt-io/silt/core"
)

// keyFaultBackend (fault injection) fails the Finish of chosen chunk
// uploads, by the chunk's first offset in its name, once each.
type keyFaultBackend struct {
	Backend
	mu   sync.Mutex
	fail map[string]bool // name prefix (first offset) -> fail next Finish
}

func (b *keyFaultBackend) Create(ctx context.Context, key string) (Writer, error) {
	w, err := b.Backend.Create(ctx, key)
	if err != nil || isManifest(key) {
		return w, err
	}
	return &keyFaultWriter{Writer: w, b: b, key: key}, nil
}

type keyFaultWriter struct {
	Writer
	b   *keyFaultBackend
	key string
}

func (w *keyFaultWriter) Finish() error {
	w.b.mu.Lock()
	var hit bool
	for first, on := range w.b.fail {
		if on && strings.Contains(w.key, "/"+first+"-") {
			hit = true
			w.b.fail[first] = false
		}
	}
	w.b.mu.Unlock()
	if hit {
		w.Writer.Abort()
		return errInjected
	}
	return w.Writer.Finish()
}

// intentKeys returns the upload intent the catalog holds for a segment.
func (e *env) intentKeys(tenant, stream, seg string) []string {
	e.t.Helper()
	var in uploadIntent
	if _, err := getJSON(e.store.Catalog(), intentKey(tenant, stream, seg), &in); err != nil {
		e.t.Fatal(err)
	}
	return in.keys()
}

// A backlog of full chunks is sealed through a window of builds. When one
// chunk fails, the chunks before it are committed, the failed one and
// those started after it stay in the intent (they may have been uploaded,
// but no chunk record names them), and the retry — in this run or after a
// restart — tiers the rest exactly once.
func TestGroupCommitsPrefixOnFailure(t *testing.T) {
	for _, restart := range []bool{false, true} {
		name := "retry"
		if restart {
			name = "restart"
		}
		t.Run(name, func(t *testing.T) {
			cfg := testConfig()
			cfg.ChunksInFlight = 4
			e := newEnv(t, cfg)
			kb := &keyFaultBackend{Backend: e.fs, fail: map[string]bool{"00000000000000000020": true}}
			e.be = kb
			e.restart()
			e.createStream("acme", "s", core.EncodingLines, 1)
			evs := events("e", 100, 99) // 10 full chunks of 10 events
			for i := 0; i < len(evs); i += 10 {
				e.append("acme", "s", "0", evs[i:i+10]...)
			}
			e.scan()
			cs := e.chunks("acme", "s", "0")
			if len(cs) != 2 || cs[1].LastOffset != 19 {
				t.Fatalf("after the failing group: %d chunks %+v, want the 2 before the failure", len(cs), cs)
			}
			// The intent names the failed chunk and the ones started after
			// it: at least the rest of its window, at most one window on.
			keys := e.intentKeys("acme", "s", "0")
			if len(keys) < 2 || len(keys) > 4 || !strings.Contains(keys[0], "/00000000000000000020-") {
				t.Fatalf("intent after the failure = %v, want the failed chunk and the ones started after it", keys)
			}
			for i, k := range keys {
				if want := fmt.Sprintf("/%020d-", 20+10*i); !strings.Contains(k, want) {
					t.Fatalf("intent key %d = %s, want the chunk starting at %d", i, k, 20+10*i)
				}
			}
			st, _ := e.tr.Status("acme", "s")
			if s := st.Segments[0]; s.TieredOffset != 20 || s.LastError == "" || s.PendingBytes != 8000 {
				t.Fatalf("status after the failure %+v", s)
			}
			if info := e.segInfo("acme", "s", "0"); info.FirstOffset > 20 {
				t.Fatalf("tier 1 truncated to %d, above the committed offset 20", info.FirstOffset)
			}
			if restart {
				e.restart()
				// The recovery removed every object the intent named.
				if objs, _ := e.fs.List(context.Background(), "acme/s/"); len(objs) != 2+countManifests(objs) {
					t.Fatalf("after restart tier 2 holds %v", objs)
				}
			}
			e.clock.Advance(time.Hour)
			for i := 0; i < 3; i++ {
				e.scan()
			}
			if got, want := e.tier2Bytes("acme", "s", "0"), encodeAll(core.EncodingLines, evs); !bytes.Equal(got, want) {
				t.Fatalf("tier 2 holds %d bytes, want %d", len(got), len(want))
			}
			if cs := e.chunks("acme", "s", "0"); len(cs) != 10 {
				t.Fatalf("%d chunks, want 10", len(cs))
			}
			if keys := e.intentKeys("acme", "s", "0"); len(keys) != 0 {
				t.Fatalf("intent left after everything committed: %v", keys)
			}
			e.checkNoOrphans("acme/s/")
		})
	}
}

func countManifests(keys []string) int {
	n := 0
	for _, k := range keys {
		if isManifest(k) {
			n++
		}
	}
	return n
}

// One segment's backlog uploads chunks_in_flight chunks at once: eight
// full chunks go in two rounds of four.
func TestSegmentBacklogUploadsInParallel(t *testing.T) {
	cfg := testConfig()
	cfg.ChunksInFlight = 4
	e := newEnv(t, cfg)
	gb := newGatedFinishBackend(e.fs)
	e.be = gb
	e.restart()
	e.createStream("acme", "s", core.EncodingFramed, 1)
	evs := events("e", 80, 96) // 100 encoded bytes each: 8 full chunks
	e.append("acme", "s", "0", evs...)
	rounds := releaseInRounds(t, gb, 8, 4, e.scan)
	if cs := e.chunks("acme", "s", "0"); len(cs) != 8 {
		t.Fatalf("%d chunks after one pass, want 8", len(cs))
	}
	if got := int(gb.maxNow.Load()); got != 4 {
		t.Fatalf("at most %d uploads at once, want 4", got)
	}
	if rounds != 2 {
		t.Fatalf("%d rounds of uploads, want 2", rounds)
	}
	if got, want := e.tier2Bytes("acme", "s", "0"), encodeAll(core.EncodingFramed, evs); !bytes.Equal(got, want) {
		t.Fatalf("tier 2 holds %d bytes, want %d", len(got), len(want))
	}
}

// Events larger than a build's piece are written straight through, and the
// chunk's bytes and checksums are still exactly the encoding.
func TestChunkOfEventsLargerThanAPiece(t *testing.T) {
	for _, enc := range []core.Encoding{core.EncodingLines, core.EncodingFramed} {
		t.Run(string(enc), func(t *testing.T) {
			cfg := testConfig()
			cfg.MaxChunkBytes = 4 << 20
			cfg.MaxBacklogBytes = 64 << 20
			e := newEnv(t, cfg)
			e.createStream("acme", "s", enc, 1)
			big := strings.Repeat("b", 1<<20) // a piece plus its framing
			evs := []string{"small", big, "x", big, big, big, "tail"}
			for _, ev := range evs {
				e.append("acme", "s", "0", ev)
			}
			e.clock.Advance(time.Hour)
			e.scan()
			e.scan()
			want := encodeAll(enc, evs)
			if got := e.tier2Bytes("acme", "s", "0"); !bytes.Equal(got, want) {
				t.Fatalf("tier 2 holds %d bytes, want %d", len(got), len(want))
			}
			cs := e.chunks("acme", "s", "0")
			if len(cs) != 2 {
				t.Fatalf("%d chunks, want 2 (4 MiB limit): %+v", len(cs), cs)
			}
			off := 0
			for _, c := range cs {
				data := want[off : off+int(c.Size)]
				off += int(c.Size)
				sum := md5.Sum(data)
				if c.MD5 != hex.EncodeToString(sum[:]) || c.CRC32C != crc32.Checksum(data, castagnoli) {
					t.Fatalf("chunk %s: md5 %s crc %08x, want %x %08x", c.Name, c.MD5, c.CRC32C, sum, crc32.Checksum(data, castagnoli))
				}
			}
		})
	}
}

// An intent written in the one-key form (before uploads went in groups)
// still has its object removed at start.
func TestSingleKeyIntentRecovered(t *testing.T) {
	e := newEnv(t, testConfig())
	e.createStream("acme", "s", core.EncodingLines, 1)
	key := PrefixedObjectKey("", "acme", "s", "0", ChunkName(core.EncodingLines, 0, 9))
	w, err := e.fs.Create(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("left behind\n"))
	if err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	v, _ := json.Marshal(map[string]string{"key": key})
	if err := e.store.Catalog().Set(intentKey("acme", "s", "0"), v); err != nil {
		t.Fatal(err)
	}
	e.restart()
	if _, err := e.fs.Stat(context.Background(), key); err == nil {
		t.Fatalf("%s survived the restart", key)
	}
	if keys := e.intentKeys("acme", "s", "0"); len(keys) != 0 {
		t.Fatalf("intent survived the restart: %v", keys)
	}
}

// Sealing runs under Go's execution tracer (what /debug/pprof/trace
// starts on a live server): hashing code whose assembly breaks the
// tracer's stack walk would crash the process here.
func TestSealUnderExecutionTrace(t *testing.T) {
	if err := trace.Start(io.Discard); err != nil {
		t.Skipf("tracer already running: %v", err)
	}
	defer trace.Stop()
	cfg := testConfig()
	e := newEnv(t, cfg)
	e.createStream("acme", "s", core.EncodingLines, 1)
	evs := events("e", 200, 99)
	e.append("acme", "s", "0", evs...)
	e.scan()
	e.scan()
	if cs := e.chunks("acme", "s", "0"); len(cs) != 20 {
		t.Fatalf("%d chunks, want 20", len(cs))
	}
}

// While a segment catches up on a backlog its tier-1 files stay (their
// removal would put discards into the uploads' fsyncs); once it has caught
// up they go.
func TestTier1TruncatedWhenCaughtUp(t *testing.T) {
	e := newEnv(t, testConfig())
	e.createStream("acme", "s", core.EncodingLines, 1)
	evs := events("e", 200, 99) // 20 chunks: more than one pass seals
	for i := 0; i < len(evs); i += 10 {
		e.append("acme", "s", "0", evs[i:i+10]...)
	}
	e.scan()
	if n := len(e.chunks("acme", "s", "0")); n != maxSealsPerPass {
		t.Fatalf("%d chunks after the first pass, want %d", n, maxSealsPerPass)
	}
	if first := e.segInfo("acme", "s", "0").FirstOffset; first != 0 {
		t.Fatalf("tier 1 truncated to %d while catching up", first)
	}
	e.scan()
	if n := len(e.chunks("acme", "s", "0")); n != 20 {
		t.Fatalf("%d chunks after the second pass, want 20", n)
	}
	if first := e.segInfo("acme", "s", "0").FirstOffset; first == 0 {
		t.Fatal("tier 1 not truncated after catching up")
	}
}

// While a backlog's complete chunks are sealed, the next pass's worth of
// tier 1 is counted at once; every chunk still comes out once, in order,
// with exactly the events' bytes, in both encodings.
func TestBacklogCountedWhileSealing(t *testing.T) {
	for _, enc := range []core.Encoding{core.EncodingLines, core.EncodingFramed} {
		t.Run(string(enc), func(t *testing.T) {
			cfg := testConfig()
			cfg.ChunksInFlight = 3
			cfg.MaxBacklogBytes = 1 << 20
			e := newEnv(t, cfg)
			e.tr.passBytes = 2500 // three records of ten events a count
			e.createStream("acme", "s", enc, 1)
			evs := events("e", 300, 94) // 10 events a chunk in either encoding
			for i := 0; i < len(evs); i += 10 {
				e.append("acme", "s", "0", evs[i:i+10]...)
			}
			e.scan()
			ss := e.tr.mu.streams["acme/s"]
			if ss == nil {
				t.Fatal("no stream state after a scan")
			}
			e.tr.mu.Lock()
			scanned := ss.segs[0].scanned
			e.tr.mu.Unlock()
			if scanned != 60 {
				t.Fatalf("one pass counted up to offset %d, want 60 (30, then 30 more while sealing)", scanned)
			}
			for i := 0; i < 20; i++ {
				e.scan()
			}
			e.clock.Advance(time.Hour) // the last, partial chunk is sealed by age
			e.scan()
			if got, want := e.tier2Bytes("acme", "s", "0"), encodeAll(enc, evs); !bytes.Equal(got, want) {
				t.Fatalf("tier 2 holds %d bytes, want %d", len(got), len(want))
			}
			if cs := e.chunks("acme", "s", "0"); len(cs) != 30 {
				t.Fatalf("%d chunks, want 30", len(cs))
			}
			e.checkNoOrphans("acme/s/")
		})
	}
}
