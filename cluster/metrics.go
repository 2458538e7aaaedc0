package cluster

import (
	"context"
	"strings"
	"time"
	"unicode"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
)

// metrics are the node's etcd round trips and membership state. They are
// made before the client is dialled, since the client's interceptor
// observes into them, and registered later (RegisterMetrics), when the
// server has its registry.
type metrics struct {
	rtt       *prometheus.HistogramVec
	errors    *prometheus.CounterVec
	leaseUp   prometheus.Gauge
	reachable prometheus.Gauge
	nodes     prometheus.Gauge
	// The write-ahead log on objects (durability cluster): each flush is
	// one PUT and one fenced etcd transaction.
	walFlush   prometheus.Histogram
	walBytes   prometheus.Counter
	walErrors  prometheus.Counter
	walAdopted prometheus.Counter
}

func newMetrics() *metrics {
	return &metrics{
		rtt: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "silt_etcd_request_duration_seconds",
			Help: "Round trips to etcd by operation (range, txn, put, lease_grant, …), each attempt counted; the count is the number of round trips.",
			// From a loopback etcd (~0.2 ms) to a request timeout.
			Buckets: prometheus.ExponentialBuckets(0.0002, 2.5, 12),
		}, []string{"op"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "silt_etcd_request_errors_total",
			Help: "Round trips to etcd that failed (timeouts, no leader, refused), by operation.",
		}, []string{"op"}),
		leaseUp: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "silt_cluster_lease_up",
			Help: "1 while this node holds its membership lease in etcd, 0 while it has none (lost, or not registered yet).",
		}),
		reachable: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "silt_cluster_etcd_reachable",
			Help: "1 when the last health probe reached an etcd quorum, 0 when it failed; /readyz answers 503 while 0.",
		}),
		nodes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "silt_cluster_nodes",
			Help: "Live nodes registered in the cluster, as the last successful health probe counted them.",
		}),
		walFlush: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "silt_wal_flush_duration_seconds",
			Help: "Flushes of the write-ahead log on objects (durability cluster): one PUT of a round's frames and the etcd transaction recording the log's end; the count is the number of flushes.",
			// From a local object store (~1 ms) to S3 Standard under load.
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
		}),
		walBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "silt_wal_flush_bytes_total",
			Help: "Bytes of frames the write-ahead log on objects flushed (acknowledged once flushed).",
		}),
		walErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "silt_wal_flush_errors_total",
			Help: "Flushes of the write-ahead log on objects that failed (object store or etcd unavailable, or fenced): their appends got 503.",
		}),
		walAdopted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "silt_wal_adopted_logs_total",
			Help: "Write-ahead logs of other nodes this node took over and replayed at start.",
		}),
	}
}

// ObserveWALFlush records one flush of the write-ahead log on objects.
func (n *Node) ObserveWALFlush(d time.Duration, bytes int64, err error) {
	if err != nil {
		n.met.walErrors.Inc()
		return
	}
	n.met.walFlush.Observe(d.Seconds())
	n.met.walBytes.Add(float64(bytes))
}

// AdoptedWAL counts a write-ahead log taken over from another node.
func (n *Node) AdoptedWAL() { n.met.walAdopted.Inc() }

// RegisterMetrics registers the node's metrics on reg.
func (n *Node) RegisterMetrics(reg prometheus.Registerer) error {
	m := n.met
	for _, c := range []prometheus.Collector{m.rtt, m.errors, m.leaseUp, m.reachable, m.nodes, m.walFlush, m.walBytes, m.walErrors, m.walAdopted} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// intercept times one unary call to etcd. method is gRPC's full name,
// "/etcdserverpb.KV/Range": its last element, in snake case, is the op.
func (m *metrics) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	start := time.Now()
	err := invoker(ctx, method, req, reply, cc, opts...)
	op := opName(method)
	m.rtt.WithLabelValues(op).Observe(time.Since(start).Seconds())
	if err != nil {
		m.errors.WithLabelValues(op).Inc()
	}
	return err
}

// opName turns "/etcdserverpb.Lease/LeaseGrant" into "lease_grant".
func opName(method string) string {
	name := method[strings.LastIndexByte(method, '/')+1:]
	var b strings.Builder
	for i, r := range name {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
