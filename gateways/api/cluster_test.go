package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/silt-io/silt/core/catalog"
)

// faultCluster stands in for cluster membership so that the API's side
// can be driven through every state; the real one is tested against a
// real etcd in cluster/ and cmd/silt.
type faultCluster struct {
	ready    error
	nodesErr error
	nodes    []ClusterNode
}

func (f *faultCluster) Ready() error { return f.ready }

func (f *faultCluster) Nodes(context.Context) (string, []ClusterNode, error) {
	return "c1", f.nodes, f.nodesErr
}

func TestClusterNodes(t *testing.T) {
	e := newEnv(t)
	reader := e.user("reader", "read:*")

	// A single node.
	r := e.must(http.StatusNotFound, req{method: "GET", path: "/v1/cluster/nodes"})
	if r.errCode(t) != "not_in_cluster" || !strings.Contains(string(r.body), "not in cluster mode") {
		t.Fatalf("single node: %s", r.body)
	}

	fc := &faultCluster{nodes: []ClusterNode{{ID: "n1", Self: true, Addrs: ClusterAddrs{API: "db5:7070", S3: "db5:9000"}, Started: time.Unix(1, 0).UTC()}, {ID: "n2"}}}
	e.srv.UseCluster(fc)
	var got clusterNodes
	e.must(http.StatusOK, req{method: "GET", path: "/v1/cluster/nodes"}).json(t, &got)
	if got.ClusterID != "c1" || len(got.Nodes) != 2 || !got.Nodes[0].Self || got.Nodes[0].Addrs.S3 != "db5:9000" {
		t.Fatalf("nodes %+v", got)
	}
	if r := e.do(req{method: "GET", path: "/v1/cluster/nodes", token: reader}); r.status != http.StatusForbidden {
		t.Fatalf("a reader lists nodes: %d %s", r.status, r.body)
	}
	if r := e.do(req{method: "GET", path: "/v1/cluster/nodes"}); r.status != http.StatusUnauthorized {
		t.Fatalf("anonymous lists nodes: %d %s", r.status, r.body)
	}
	fc.nodesErr = fmt.Errorf("%w: list cluster members: context deadline exceeded", catalog.ErrUnavailable)
	if r := e.must(http.StatusServiceUnavailable, req{method: "GET", path: "/v1/cluster/nodes"}); r.errCode(t) != "unavailable" {
		t.Fatalf("etcd down: %s", r.body)
	}
}

func TestReadyzFollowsCluster(t *testing.T) {
	e := newEnv(t)
	fc := &faultCluster{}
	e.srv.UseCluster(fc)
	for _, tc := range []struct {
		name  string
		ready error
		want  int
	}{
		{"etcd answers", nil, http.StatusOK},
		{"etcd away", errors.New("cluster: node not ready: etcd [http://10.0.0.2:2379] unreachable since 2026-12-06T02:10:04Z (12s): context deadline exceeded"), http.StatusServiceUnavailable},
		{"etcd back", nil, http.StatusOK},
	} {
		fc.ready = tc.ready
		r := e.do(req{method: "GET", path: "/readyz"})
		if r.status != tc.want {
			t.Fatalf("%s: %d %s", tc.name, r.status, r.body)
		}
		if tc.ready != nil && (r.errCode(t) != "etcd_unreachable" || !strings.Contains(string(r.body), "unreachable since 2026-12-06T02:10:04Z")) {
			t.Fatalf("%s: body %s", tc.name, r.body)
		}
	}
}
