package api

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/silt-io/silt/acl"
	"github.com/silt-io/silt/core"
	"github.com/silt-io/silt/tiering"
)

// newTieredEnv is newEnv with small tier-1 files, so that tiering
// truncates them, and a real Tierer sealing 1000-byte chunks into an fs
// backend; only full chunks are sealed (the lag ceiling is an hour).
func newTieredEnv(t *testing.T) (*env, *tiering.Tierer) {
	t.Helper()
	ccfg := core.DefaultConfig()
	ccfg.Dir = t.TempDir()
	ccfg.SegmentFileBytes = 4096
	ccfg.Limits = core.Limits{MaxEventBytes: testMaxEvent, MaxBatchBytes: testMaxBatch, MaxBatchEvents: 1 << 20, MaxSegments: 16}
	store, err := core.Open(ccfg, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	as, err := acl.Open(store.Catalog())
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, store: store, acl: as, reg: prometheus.NewRegistry()}
	if _, err := as.CreatePrincipal("root"); err != nil {
		t.Fatal(err)
	}
	if _, err := as.AddGrant("root", acl.Admin, "*"); err != nil {
		t.Fatal(err)
	}
	e.root = e.token("root")
	e.srv, err = New(DefaultConfig(), store, Auth{Authn: as.Authenticate, Authz: as, Admin: as}, zaptest.NewLogger(t, zaptest.Level(zap.InfoLevel)), e.reg)
	if err != nil {
		t.Fatal(err)
	}

	tcfg := tiering.DefaultConfig()
	tcfg.MaxChunkBytes = 1000
	tcfg.Interval = 10 * time.Millisecond
	tcfg.MaxLag = time.Hour
	be, err := tiering.OpenFS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tr, err := tiering.New(tcfg, store, be, tiering.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() }) // before the store closes
	e.srv.UseTiering(tr)
	e.ts = serveTest(t, e.srv)
	t.Cleanup(e.ts.Close)
	return e, tr
}

func TestReadWalksFromTier2IntoTier1(t *testing.T) {
	e, _ := newTieredEnv(t)
	e.mkStream("acme", "clicks", "lines", 1)
	const n = 60
	var want []string
	for i := 0; i < n; i += 5 {
		var batch []string
		for j := i; j < i+5; j++ {
			ev := fmt.Sprintf("ev-%03d-%s", j, strings.Repeat("x", 93))
			batch = append(batch, ev)
			want = append(want, ev)
		}
		e.must(http.StatusOK, req{method: "POST", path: eventsPath("acme", "clicks"), body: []byte(strings.Join(batch, "\n") + "\n"), contentType: contentNDJSON})
	}

	// Six full chunks of nine 101-byte lines are sealed; the last six
	// events stay in tier 1 alone.
	var info core.SegmentInfo
	deadline := time.Now().Add(10 * time.Second)
	for {
		rec, err := tiering.GetSegment(e.store.Catalog(), "acme", "clicks", "0")
		if err != nil {
			t.Fatal(err)
		}
		st, err := e.store.GetStream(t.Context(), "acme", "clicks")
		if err != nil {
			t.Fatal(err)
		}
		info = st.Segments[0]
		if rec.Tiered == 54 && info.FirstOffset > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not tiered and truncated: tiered %d, tier 1 %+v", rec.Tiered, info)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := e.store.Read(t.Context(), core.ReadRequest{Tenant: "acme", Stream: "clicks", Segment: "0", From: 0}); !errors.Is(err, core.ErrOutOfRange) {
		t.Fatalf("tier 1 still serves offset 0 (first %d): %v", info.FirstOffset, err)
	}

	check := func(name string, got []readLine, from int) {
		t.Helper()
		for i, ev := range got {
			if ev.Offset != uint64(from+i) || ev.Text == nil || *ev.Text != want[from+i] {
				t.Fatalf("%s: event %d is %d %v, want %d %q", name, i, ev.Offset, ev.Text, from+i, want[from+i])
			}
		}
	}
	// One read from 0 crosses from tier 2 into tier 1.
	got, _ := parseLines(t, e.must(http.StatusOK, req{method: "GET", path: eventsPath("acme", "clicks") + "?segment=0&from=0"}).body)
	if len(got) != n {
		t.Fatalf("read from 0: %d events, want %d", len(got), n)
	}
	check("read from 0", got, 0)

	// Small pages, continued by cursor, walk the same events.
	var all []readLine
	path := eventsPath("acme", "clicks") + "?segment=0&from=3&max=7"
	for range n {
		page, cur := parseLines(t, e.must(http.StatusOK, req{method: "GET", path: path}).body)
		if len(page) == 0 {
			break
		}
		all = append(all, page...)
		path = eventsPath("acme", "clicks") + "?max=7&cursor=" + cur
	}
	if len(all) != n-3 {
		t.Fatalf("paged read from 3: %d events, want %d", len(all), n-3)
	}
	check("paged read from 3", all, 3)

	// A cursor below tier 1 reads tier 2 too.
	cur := encodeCursor([]position{{segment: "0", next: 20}})
	got, _ = parseLines(t, e.must(http.StatusOK, req{method: "GET", path: eventsPath("acme", "clicks") + "?cursor=" + cur}).body)
	if len(got) != n-20 {
		t.Fatalf("cursor read from 20: %d events, want %d", len(got), n-20)
	}
	check("cursor read from 20", got, 20)

	// Reads "from the beginning" (no cursor, no from=) start at the oldest
	// event tier 2 holds, not at tier 1's first offset.
	got, _ = parseLines(t, e.must(http.StatusOK, req{method: "GET", path: eventsPath("acme", "clicks")}).body)
	if len(got) != n {
		t.Fatalf("read from the beginning: %d events, want %d", len(got), n)
	}
	check("read from the beginning", got, 0)
	got, _ = parseLines(t, e.must(http.StatusOK, req{method: "GET", path: eventsPath("acme", "clicks") + "?segment=0"}).body)
	if len(got) != n {
		t.Fatalf("segment read from the beginning: %d events, want %d", len(got), n)
	}

	// Past the end is still out of range.
	if rep := e.do(req{method: "GET", path: eventsPath("acme", "clicks") + "?segment=0&from=61", token: e.root}); rep.status != http.StatusRequestedRangeNotSatisfiable {
		t.Fatalf("read past the end: %d %s", rep.status, rep.body)
	}
}
