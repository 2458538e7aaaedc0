package introspect

import (
	"context"
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/silt-io/silt/internal/httpmetrics"
	"github.com/silt-io/silt/internal/metrics"
)

// The HTTP heads' requests are recorded here; the NFS head's calls and
// the tier policy's chunks are turned into events by the server wiring
// (cmd/silt), so that this package imports no head.

// ObserveRequest records an HTTP head's answered request (the API's, and
// S3's and WebHDFS's through httpmetrics.Wrap).
func (r *Recorder) ObserveRequest(q httpmetrics.Request) {
	r.Record(Event{
		Time: timeOf(q.Took), Kind: KindRequest, Head: q.Head,
		Principal: q.Principal, Tenant: q.Tenant, Stream: q.Stream,
		Operation: q.Op, Status: q.Code, Class: metrics.HTTPStatus(q.Code),
		Bytes: q.Bytes, LatencyMS: Millis(q.Took), Client: q.Client,
	})
}

// ForgetTenant is Forget, for the API's deletion of a tenant.
func (r *Recorder) ForgetTenant(ctx context.Context, tenant string) { r.Forget(ctx, tenant) }

func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if c == nil || c.Write(&m) != nil {
		return 0
	}
	return m.GetCounter().GetValue()
}

var errNoReader = errors.New("introspect: no reader connected")
