package kafka

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kgo"

	smetrics "github.com/silt-io/silt/internal/metrics"
)

// TestMetrics: Kafka appends feed the producer series the API feeds, and
// Kafka requests the heads' request series under head="kafka".
func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	set, err := smetrics.New(smetrics.DefaultConfig(), reg)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, envOptions{metrics: set})
	e.stream("m", 1)
	produceAll(t, e.client("root", e.root, kgo.RecordPartitioner(kgo.ManualPartitioner())), "acme.m", 0, []string{"ab", "cde"})
	g := set.Gatherer(reg)
	n, err := testutil.GatherAndCount(g, "silt_producer_events_total")
	if err != nil || n == 0 {
		t.Fatalf("silt_producer_events_total: %d series, %v", n, err)
	}
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			labels := ""
			for _, l := range m.GetLabel() {
				labels += l.GetName() + "=" + l.GetValue() + ","
			}
			v := m.GetCounter().GetValue()
			got[mf.GetName()+"{"+labels+"}"] = v
		}
	}
	if v := got["silt_producer_events_total{stream=m,tenant=acme,}"]; v != 2 {
		t.Errorf("events %v, want 2; series %v", v, got)
	}
	if v := got["silt_producer_bytes_total{stream=m,tenant=acme,}"]; v != 5 {
		t.Errorf("bytes %v, want 5", v)
	}
	if v := got["silt_head_requests_total{head=kafka,op=Produce,status=ok,}"]; v < 1 {
		t.Errorf("kafka Produce requests %v, want at least 1", v)
	}
}
