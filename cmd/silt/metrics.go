package main

import (
	"context"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/silt-io/silt/core"
	"github.com/silt-io/silt/gateways/api"
	"github.com/silt-io/silt/gateways/nfs"
	"github.com/silt-io/silt/gateways/s3"
	"github.com/silt-io/silt/gateways/webhdfs"
	"github.com/silt-io/silt/internal/httpmetrics"
	"github.com/silt-io/silt/internal/metrics"
	"github.com/silt-io/silt/tiering"
)

// useHeadMetrics gives every head the request series they share (one
// name, a head label) and the API the producer series.
func useHeadMetrics(set *metrics.Set, apiSrv *api.Server, s3srv *s3.Server, nfssrv *nfs.Server, hdfssrv *webhdfs.Server) {
	apiSrv.UseMetrics(set)
	nfssrv.UseMetrics(set.Heads.Head("nfs"))
	s3srv.Wrap(func(h http.Handler) http.Handler { return httpmetrics.Wrap(set.Heads.Head("s3"), s3srv.Operation, h) })
	hdfssrv.Wrap(func(h http.Handler) http.Handler {
		return httpmetrics.Wrap(set.Heads.Head("webhdfs"), hdfssrv.Operation, h)
	})
}

// startStorageMetrics exports the bytes each tenant holds in tier 1 (the
// sizes of its segments' log files, which the engine keeps) and tier 2
// (its segments' committed chunks, from the catalog).
func startStorageMetrics(reg prometheus.Registerer, cfg metrics.Config, store *core.Store, tierer *tiering.Tierer) (*metrics.Storage, error) {
	return metrics.StartStorage(reg, cfg.StorageRefresh,
		metrics.Tier{Name: "1", Measure: func(context.Context) (map[string]int64, error) { return tier1Bytes(store), nil }},
		metrics.Tier{Name: "2", Measure: tierer.TenantBytes},
	)
}

// tier1Bytes adds up the tier-1 bytes of every tenant's segments from the
// engine's live segment state (no log is read). A tenant without streams
// has no series.
func tier1Bytes(store *core.Store) map[string]int64 {
	out := map[string]int64{}
	for _, st := range store.Streams() {
		for _, sg := range st.Segments {
			out[st.Tenant] += sg.Bytes
		}
	}
	return out
}
