package api

import (
	"context"
	"net/http"
	"time"
)

// Cluster is what the API needs from cluster membership: the live nodes
// and whether this node may take traffic. The API does not import the
// cluster package; the server wiring passes an adapter in.
type Cluster interface {
	// Ready is nil while the node reaches etcd and holds its membership
	// lease, else an error saying what is wrong and since when.
	Ready() error
	// Nodes lists the live nodes, read from etcd.
	Nodes(ctx context.Context) (clusterID string, nodes []ClusterNode, err error)
}

// ClusterNode is one live node of GET /v1/cluster/nodes.
type ClusterNode struct {
	ID      string       `json:"id"`
	Self    bool         `json:"self"`
	Addrs   ClusterAddrs `json:"addrs"`
	TLS     bool         `json:"tls"`
	Version string       `json:"version"`
	Started time.Time    `json:"started"`
	Host    string       `json:"host"`
	PID     int          `json:"pid"`
}

// ClusterAddrs are a node's advertised head addresses (host:port).
type ClusterAddrs struct {
	API     string `json:"api"`
	S3      string `json:"s3"`
	NFS     string `json:"nfs"`
	WebHDFS string `json:"webhdfs"`
}

type clusterNodes struct {
	ClusterID string        `json:"cluster_id"`
	Nodes     []ClusterNode `json:"nodes"`
}

// UseCluster connects cluster membership. Call it before serving; without
// it the server is a single node.
func (s *Server) UseCluster(c Cluster) { s.cluster = c }

// errNotInCluster answers the cluster routes of a single node: a list of
// one node without a cluster would tell tools a cluster exists.
var errNotInCluster = &httpError{status: http.StatusNotFound, code: "not_in_cluster",
	msg: "this server is a single node, not in cluster mode (start it with cluster.etcd.endpoints to make it a cluster's node)"}

func (s *Server) clusterNodes(c *call) (op, error) {
	return op{run: func() error {
		if s.cluster == nil {
			return errNotInCluster
		}
		id, nodes, err := s.cluster.Nodes(c.r.Context())
		if err != nil {
			return err
		}
		writeJSON(c.w, http.StatusOK, clusterNodes{ClusterID: id, Nodes: nodes})
		return nil
	}}, nil
}

// clusterReady is readyz's cluster check: a node cut off from etcd (or
// without its lease) cannot keep metadata in step with the others, so
// load balancers should move traffic to one that can.
func (s *Server) clusterReady() error {
	if s.cluster == nil {
		return nil
	}
	if err := s.cluster.Ready(); err != nil {
		return &httpError{status: http.StatusServiceUnavailable, code: "etcd_unreachable", msg: err.Error()}
	}
	return nil
}
