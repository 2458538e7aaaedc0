package client

import (
	"context"
	"time"
)

// ClusterNode is one live node of a cluster.
type ClusterNode struct {
	ID   string `json:"id"`
	Self bool   `json:"self"` // the node that answered
	// Addrs are where its heads are reached (host:port).
	Addrs struct {
		API     string `json:"api"`
		S3      string `json:"s3"`
		NFS     string `json:"nfs"`
		WebHDFS string `json:"webhdfs"`
	} `json:"addrs"`
	TLS     bool      `json:"tls"`
	Version string    `json:"version"`
	Started time.Time `json:"started"`
	Host    string    `json:"host"`
	PID     int       `json:"pid"`
}

// ClusterNodes is the answer of GET /v1/cluster/nodes.
type ClusterNodes struct {
	ClusterID string        `json:"cluster_id"`
	Nodes     []ClusterNode `json:"nodes"`
}

// ClusterNodes lists the cluster's live nodes (server-wide admin). A
// single-node server answers 404 with the code not_in_cluster.
func (c *Client) ClusterNodes(ctx context.Context) (ClusterNodes, error) {
	var out ClusterNodes
	err := c.doJSON(ctx, get("/v1/cluster/nodes"), nil, &out)
	return out, err
}
