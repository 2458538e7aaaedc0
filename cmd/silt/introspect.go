package main

import (
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/silt-io/silt/core"
	"github.com/silt-io/silt/core/names"
	"github.com/silt-io/silt/gateways/nfs"
	"github.com/silt-io/silt/introspect"
	"github.com/silt-io/silt/tiering"
)

// startIntrospect starts the introspection recorder, or returns nil when
// introspect.enabled is off (a nil recorder records nothing).
func startIntrospect(cfg serveConfig, store *core.Store, reg *prometheus.Registry, log *zap.Logger) (*introspect.Recorder, error) {
	if !cfg.Introspect.Enabled {
		log.Info("introspection is off (introspect.enabled=false): no events are kept in tenant " + names.SystemTenant)
		return nil, nil
	}
	node, err := os.Hostname()
	if err != nil || node == "" {
		node = "local"
	}
	return introspect.New(cfg.Introspect, store, introspect.Options{
		Node: node, Logger: log.Named("introspect"), Registerer: reg, Gatherer: reg,
	})
}

// nfsEvents turns the NFS head's answered calls into request events.
func nfsEvents(r *introspect.Recorder) func(nfs.Call) {
	return func(c nfs.Call) {
		r.Record(introspect.Event{
			Time: time.Now().Add(-c.Took), Kind: introspect.KindRequest, Head: "nfs",
			Principal: c.Principal, Tenant: c.Tenant, Stream: c.Stream,
			Operation: c.Proc, Status: c.Status, Class: c.Class,
			Bytes: c.Bytes, LatencyMS: introspect.Millis(c.Took), Client: c.Client,
		})
	}
}

// chunkEvents turns the tier policy's chunk outcomes into tiering events.
// The system streams' own chunks make none: each such event would be
// written, tiered and reported again, without end.
func chunkEvents(r *introspect.Recorder) func(tiering.ChunkEvent) {
	if r == nil {
		return nil
	}
	return func(c tiering.ChunkEvent) {
		if c.Tenant == names.SystemTenant {
			return
		}
		e := introspect.Event{Time: c.Time, Kind: introspect.KindTiering, Tenant: c.Tenant, Stream: c.Stream, Segment: c.Segment}
		if c.Err != nil {
			e.Outcome, e.Error = "failed", c.Err.Error()
		} else {
			e.Outcome, e.FirstOffset, e.Events, e.Bytes, e.LagMS = "uploaded", c.FirstOffset, c.Events, c.Bytes, introspect.Millis(c.Lag)
		}
		r.Record(e)
	}
}
