package metrics

import (
	"context"
	"errors"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestHTTPStatusClasses(t *testing.T) {
	for code, want := range map[int]string{
		200: StatusOK, 206: StatusOK, 304: StatusOK, 307: StatusOK,
		400: StatusClientError, 404: StatusClientError, 499: StatusClientError,
		500: StatusServerError, 503: StatusServerError,
	} {
		if got := HTTPStatus(code); got != want {
			t.Errorf("HTTPStatus(%d) = %q, want %q", code, got, want)
		}
	}
}

// The producer series carry the stream label only when PerStream is on;
// off, two streams of a tenant add up in one series.
func TestProducersPerStream(t *testing.T) {
	for name, tc := range map[string]struct {
		perStream bool
		want      string
	}{
		"per stream": {true, `
# HELP silt_producer_events_total Events stored by appends (retried duplicates not counted).
# TYPE silt_producer_events_total counter
silt_producer_events_total{stream="a",tenant="t1"} 3
silt_producer_events_total{stream="b",tenant="t1"} 4
silt_producer_events_total{stream="a",tenant="t2"} 5
# HELP silt_producer_errors_total Appends to an existing stream that failed, by reason (the native API's error code).
# TYPE silt_producer_errors_total counter
silt_producer_errors_total{reason="too_large",stream="b",tenant="t1"} 1
`},
		"per tenant": {false, `
# HELP silt_producer_events_total Events stored by appends (retried duplicates not counted).
# TYPE silt_producer_events_total counter
silt_producer_events_total{tenant="t1"} 7
silt_producer_events_total{tenant="t2"} 5
# HELP silt_producer_errors_total Appends to an existing stream that failed, by reason (the native API's error code).
# TYPE silt_producer_errors_total counter
silt_producer_errors_total{reason="too_large",tenant="t1"} 1
`},
	} {
		t.Run(name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			cfg := DefaultConfig()
			cfg.PerStream = tc.perStream
			set, err := New(cfg, reg)
			if err != nil {
				t.Fatal(err)
			}
			p := set.Producers
			p.Appended("t1", "a", 3, 30, time.Millisecond)
			p.Appended("t1", "b", 4, 40, time.Millisecond)
			p.Appended("t2", "a", 5, 50, time.Millisecond)
			p.Failed("t1", "b", "too_large")
			g := set.Gatherer(reg)
			if err := testutil.GatherAndCompare(g, strings.NewReader(tc.want), "silt_producer_events_total", "silt_producer_errors_total"); err != nil {
				t.Fatal(err)
			}
			// The latency histogram is per tenant either way.
			if n := testutil.CollectAndCount(p.seconds); n != 2 {
				t.Fatalf("%d latency histograms, want 2 (one per tenant)", n)
			}
			p.ForgetTenant("t1")
			if n, err := testutil.GatherAndCount(g, "silt_producer_events_total"); err != nil || n != 1 {
				t.Fatalf("%d event series after the tenant went (%v), want 1", n, err)
			}
			if n := testutil.CollectAndCount(p.seconds); n != 1 {
				t.Fatalf("%d latency histograms after the tenant went, want 1", n)
			}
		})
	}
}

func TestProducersForgetStream(t *testing.T) {
	p := newProducers(true)
	p.Appended("t", "a", 1, 1, 0)
	p.Appended("t", "b", 1, 1, 0)
	p.Duplicate("t", "a", 0)
	p.Failed("t", "a", "unavailable")
	p.ForgetStream("t", "a")
	for name, want := range map[string]int{
		"silt_producer_events_total": 1, "silt_producer_bytes_total": 1, // stream b's
		"silt_producer_duplicates_total": 0, "silt_producer_errors_total": 0,
	} {
		if n, err := testutil.GatherAndCount(p, name); err != nil || n != want {
			t.Errorf("%s: %d series after stream a went (%v), want %d", name, n, err, want)
		}
	}
}

// Gather's families are what a registry would make of the same counts:
// sorted families, series in label order, errors by reason; and a
// registry that gathers them checks them all.
func TestProducersGatherIsValid(t *testing.T) {
	p := newProducers(true)
	p.Appended("t2", "b", 2, 20, 0)
	p.Appended("t1", "b", 1, 10, 0)
	p.Appended("t1", "a", 3, 30, 0)
	p.Duplicate("t1", "a", 0)
	p.Failed("t1", "b", "unavailable")
	p.Failed("t1", "a", "unavailable")
	p.Failed("t1", "a", "too_large")
	p.Failed("t1", "c", "canceled") // a stream that never stored anything
	want := `
# HELP silt_producer_bytes_total Event bytes stored by appends (retried duplicates not counted).
# TYPE silt_producer_bytes_total counter
silt_producer_bytes_total{stream="a",tenant="t1"} 30
silt_producer_bytes_total{stream="b",tenant="t1"} 10
silt_producer_bytes_total{stream="b",tenant="t2"} 20
# HELP silt_producer_duplicates_total Appends recognised by writer id and sequence number as retries of a stored batch, acknowledged without storing it again.
# TYPE silt_producer_duplicates_total counter
silt_producer_duplicates_total{stream="a",tenant="t1"} 1
# HELP silt_producer_errors_total Appends to an existing stream that failed, by reason (the native API's error code).
# TYPE silt_producer_errors_total counter
silt_producer_errors_total{reason="canceled",stream="c",tenant="t1"} 1
silt_producer_errors_total{reason="too_large",stream="a",tenant="t1"} 1
silt_producer_errors_total{reason="unavailable",stream="a",tenant="t1"} 1
silt_producer_errors_total{reason="unavailable",stream="b",tenant="t1"} 1
# HELP silt_producer_events_total Events stored by appends (retried duplicates not counted).
# TYPE silt_producer_events_total counter
silt_producer_events_total{stream="a",tenant="t1"} 3
silt_producer_events_total{stream="b",tenant="t1"} 1
silt_producer_events_total{stream="b",tenant="t2"} 2
`
	if err := testutil.GatherAndCompare(p, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
	// Gathered again through a registry's checks (Gatherers checks
	// every series it merges), nothing is refused.
	if _, err := (prometheus.Gatherers{prometheus.NewRegistry(), p}).Gather(); err != nil {
		t.Fatalf("a registry refuses the producer families: %v", err)
	}
	mfs, err := p.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if !sort.SliceIsSorted(mf.Metric, func(i, j int) bool {
			return labelString(mf.Metric[i].Label) < labelString(mf.Metric[j].Label)
		}) {
			t.Errorf("%s: series not in label order", mf.GetName())
		}
	}
}

func labelString(ls []*dto.LabelPair) string {
	var b strings.Builder
	for _, l := range ls {
		b.WriteString(l.GetValue() + "\x00")
	}
	return b.String()
}

func TestNewTwiceOnOneRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := New(DefaultConfig(), reg); err != nil {
		t.Fatal(err)
	}
	if _, err := New(DefaultConfig(), reg); err == nil || !strings.Contains(err.Error(), "registered twice") {
		t.Fatalf("second New on one registry: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	c := DefaultConfig()
	c.StorageRefresh = 0
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "storage_refresh") {
		t.Fatalf("zero storage_refresh: %v", err)
	}
}

// Storage exports what its tiers measured at the last refresh; a tier that
// fails keeps its previous figures and counts the failure.
func TestStorage(t *testing.T) {
	reg := prometheus.NewRegistry()
	var calls atomic.Int64
	var fail atomic.Bool
	tier2 := func(context.Context) (map[string]int64, error) {
		calls.Add(1)
		if fail.Load() {
			return nil, errors.New("catalog closed")
		}
		return map[string]int64{"acme": 200, "beta": 0}, nil
	}
	tier1 := func(context.Context) (map[string]int64, error) { return map[string]int64{"acme": 10}, nil }
	// An hour between refreshes: only the first, which the loop makes
	// at once, and the ones the test asks for happen.
	s, err := StartStorage(reg, time.Hour, Tier{"1", tier1}, Tier{"2", tier2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	<-s.first
	want := `
# HELP silt_storage_bytes Bytes a tenant holds in a tier (1: the node's log files; 2: committed chunks), as of the last refresh (metrics.storage_refresh).
# TYPE silt_storage_bytes gauge
silt_storage_bytes{tenant="acme",tier="1"} 10
silt_storage_bytes{tenant="acme",tier="2"} 200
silt_storage_bytes{tenant="beta",tier="2"} 0
# HELP silt_storage_refresh_errors_total Refreshes of silt_storage_bytes that failed for a tier (the tier keeps its previous figures).
# TYPE silt_storage_refresh_errors_total counter
silt_storage_refresh_errors_total 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "silt_storage_bytes", "silt_storage_refresh_errors_total"); err != nil {
		t.Fatal(err)
	}
	// A scrape measures nothing.
	before := calls.Load()
	for i := 0; i < 3; i++ {
		if _, err := reg.Gather(); err != nil {
			t.Fatal(err)
		}
	}
	if calls.Load() != before {
		t.Fatalf("scrapes measured tier 2 %d times", calls.Load()-before)
	}
	fail.Store(true)
	s.Refresh(t.Context())
	want = strings.Replace(want, "silt_storage_refresh_errors_total 0", "silt_storage_refresh_errors_total 1", 1)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "silt_storage_bytes", "silt_storage_refresh_errors_total"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if n, err := testutil.GatherAndCount(reg, "silt_storage_bytes"); err != nil || n != 0 {
		t.Fatalf("after Close: %d series, %v", n, err)
	}
}
