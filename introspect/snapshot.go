package introspect

import (
	"sort"
	"strings"

	dto "github.com/prometheus/client_model/go"
)

// snapshotFamilies are the series a metric snapshot keeps: enough to see
// load, errors, tiering and memory over time without copying /metrics
// whole (per-stream producer series are left out: they grow with the
// streams).
var snapshotFamilies = map[string]bool{
	"silt_head_requests_total":             true,
	"silt_head_response_bytes_total":       true,
	"silt_connections":                     true,
	"silt_api_inflight_bytes":              true,
	"silt_api_overload_rejections_total":   true,
	"silt_tier_backlog_bytes":              true,
	"silt_tier_lag_seconds":                true,
	"silt_tier_errors_total":               true,
	"silt_tier_uploaded_bytes_total":       true,
	"silt_storage_bytes":                   true,
	"silt_introspect_events_dropped_total": true,
	"silt_introspect_events_written_total": true,
	"go_goroutines":                        true,
	"process_resident_memory_bytes":        true,
}

// maxSnapshotSeries bounds one snapshot event (silt_storage_bytes has a
// series per tenant).
const maxSnapshotSeries = 2000

// snapshot gathers the key series into one metrics event.
func (r *Recorder) snapshot() Event {
	e := Event{Kind: KindMetrics, Metrics: map[string]float64{}}
	mfs, err := r.gather.Gather()
	if err != nil && len(mfs) == 0 {
		e.Error = err.Error()
		return e
	}
	sort.Slice(mfs, func(i, j int) bool { return mfs[i].GetName() < mfs[j].GetName() })
	for _, mf := range mfs {
		if !snapshotFamilies[mf.GetName()] {
			continue
		}
		for _, m := range mf.GetMetric() {
			if len(e.Metrics) >= maxSnapshotSeries {
				return e
			}
			key := seriesKey(mf.GetName(), m.GetLabel())
			switch {
			case m.Counter != nil:
				e.Metrics[key] = m.Counter.GetValue()
			case m.Gauge != nil:
				e.Metrics[key] = m.Gauge.GetValue()
			case m.Untyped != nil:
				e.Metrics[key] = m.Untyped.GetValue()
			}
		}
	}
	return e
}

// seriesKey writes a series as Prometheus shows it: name{a="x",b="y"}.
func seriesKey(name string, labels []*dto.LabelPair) string {
	if len(labels) == 0 {
		return name
	}
	var b strings.Builder
	b.WriteString(name)
	b.WriteByte('{')
	for i, l := range labels {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(l.GetName())
		b.WriteString(`="`)
		b.WriteString(l.GetValue())
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}
