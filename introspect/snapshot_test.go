package introspect

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/silt-io/silt/internal/metrics"
)

// TestSnapshotKeepsKeySeries checks that a metric snapshot holds the
// listed families' series under their Prometheus names and labels, with
// their values, and leaves the others out.
func TestSnapshotKeepsKeySeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	set, err := metrics.New(metrics.DefaultConfig(), reg)
	if err != nil {
		t.Fatal(err)
	}
	s3 := set.Heads.Head("s3")
	s3.Observe("GetObject", metrics.StatusOK, 100, time.Millisecond)
	s3.Observe("GetObject", metrics.StatusOK, 50, time.Millisecond)
	r := &Recorder{gather: reg}
	e := r.snapshot()
	if e.Kind != KindMetrics || e.Error != "" {
		t.Fatalf("snapshot = %+v", e)
	}
	want := map[string]float64{
		`silt_head_requests_total{head="s3",op="GetObject",status="ok"}`: 2,
		`silt_head_response_bytes_total{head="s3"}`:                      150,
	}
	for k, v := range want {
		if got, ok := e.Metrics[k]; !ok || got != v {
			t.Errorf("%s = %v (present %v), want %v", k, got, ok, v)
		}
	}
	for k := range e.Metrics {
		if _, ok := want[k]; !ok {
			t.Errorf("snapshot holds %s, which is not a kept family or was never set", k)
		}
	}
}
