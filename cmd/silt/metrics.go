package main

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/silt-io/silt/core"
	"github.com/silt-io/silt/gateways/api"
	"github.com/silt-io/silt/gateways/nfs"
	"github.com/silt-io/silt/gateways/s3"
	"github.com/silt-io/silt/gateways/webhdfs"
	"github.com/silt-io/silt/internal/httpmetrics"
	"github.com/silt-io/silt/internal/metrics"
	"github.com/silt-io/silt/introspect"
	"github.com/silt-io/silt/tiering"
)

// useHeadMetrics gives every head the request series they share (one
// name, a head label) and the API the producer series.
// With introspection on, every head also reports each request to it.
func useHeadMetrics(set *metrics.Set, apiSrv *api.Server, s3srv *s3.Server, nfssrv *nfs.Server, hdfssrv *webhdfs.Server, intro *introspect.Recorder) {
	apiSrv.UseMetrics(set)
	nfssrv.UseMetrics(set.Heads.Head("nfs"))
	var obs httpmetrics.Observer
	if intro != nil {
		obs = intro.ObserveRequest
		apiSrv.UseIntrospection(intro)
		nfssrv.UseCalls(nfsEvents(intro))
	}
	s3srv.Wrap(func(h http.Handler) http.Handler {
		return httpmetrics.Wrap(set.Heads.Head("s3"), s3srv.Operation, obs, h)
	})
	hdfssrv.Wrap(func(h http.Handler) http.Handler {
		return httpmetrics.Wrap(set.Heads.Head("webhdfs"), hdfssrv.Operation, obs, h)
	})
}

// startStorageMetrics exports the bytes each tenant holds in tier 1 (the
// sizes of its segments' log files) and tier 2 (its segments' committed
// chunks, from the catalog).
func startStorageMetrics(reg prometheus.Registerer, cfg metrics.Config, store *core.Store, tierer *tiering.Tierer) (*metrics.Storage, error) {
	return metrics.StartStorage(reg, cfg.StorageRefresh,
		metrics.Tier{Name: "1", Measure: store.TenantLogBytes},
		metrics.Tier{Name: "2", Measure: tierer.TenantBytes},
	)
}
