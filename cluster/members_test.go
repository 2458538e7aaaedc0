package cluster

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"
	"go.uber.org/zap"

	"github.com/silt-io/silt/internal/etcdtest"
)

// extraMember is another node registering on the prefix. Until segments
// have owners only one node serves a prefix (the lock); membership does
// not depend on that, and this is a node that registers without serving.
func extraMember(t *testing.T, cfg Config, id string) *Node {
	t.Helper()
	met := newMetrics()
	cli, err := dial(cfg.Etcd, zap.NewNop(), met)
	if err != nil {
		t.Fatal(err)
	}
	n := &Node{cfg: cfg, log: zap.NewNop(), cli: cli, met: met, nodeID: id,
		done: make(chan struct{}), lost: make(chan struct{})}
	close(n.done)
	n.member.done = make(chan struct{})
	n.ctx, n.cancel = context.WithCancel(context.Background())
	if err := n.Register(Member{Addrs: Addrs{API: id + ":7070"}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// kill ends n as a kill -9 would: no more heartbeats, nothing revoked.
func (n *Node) kill() {
	n.cancel()
	<-n.member.done
	n.cli.Close()
}

func ids(t *testing.T, n *Node) []string {
	t.Helper()
	ms, err := n.Members(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range ms {
		out = append(out, m.ID)
	}
	return out
}

// waitFor polls cond; the deadline only stops a hung test.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func TestMembership(t *testing.T) {
	srv := etcdtest.Start(t)
	cfg := testConfig(srv, "/members/")
	cfg.LeaseTTL = 2 * time.Second
	dir := t.TempDir()
	a := mustStart(t, cfg, dir)
	if a.NodeID() == "" || !strings.HasPrefix(a.NodeID(), "n") {
		t.Fatalf("node id %q", a.NodeID())
	}
	if err := a.Ready(); err == nil {
		t.Fatal("ready before it registered")
	}
	if err := a.Register(Member{Addrs: Addrs{API: "127.0.0.1:7070", S3: "127.0.0.1:9000", NFS: "127.0.0.1:20490", WebHDFS: "127.0.0.1:9870"}, Version: "v-test"}); err != nil {
		t.Fatal(err)
	}
	if err := a.Ready(); err != nil {
		t.Fatal(err)
	}
	b := extraMember(t, cfg, "nbbbbbb")
	c := extraMember(t, cfg, "ncccccc")

	ms, err := a.Members(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 3 {
		t.Fatalf("members %+v, want 3", ms)
	}
	var self Member
	for _, m := range ms {
		if m.ID == a.NodeID() {
			self = m
		}
	}
	if self.Addrs.S3 != "127.0.0.1:9000" || self.Addrs.WebHDFS != "127.0.0.1:9870" || self.Version != "v-test" || self.PID == 0 || self.Started.IsZero() {
		t.Fatalf("this node's record %+v", self)
	}
	// The lease is the configured TTL.
	ttl, err := srv.Client(t).TimeToLive(context.Background(), a.memberLease())
	if err != nil || ttl.GrantedTTL != 2 {
		t.Fatalf("lease TTL %+v %v, want 2s", ttl, err)
	}

	t.Run("a dead node leaves after its lease", func(t *testing.T) {
		lease := b.memberLease()
		b.kill()
		// Its lease still exists right after the kill: it is the TTL, not
		// the kill, that removes the node.
		if r, err := srv.Client(t).TimeToLive(context.Background(), lease); err != nil || r.TTL <= 0 {
			t.Fatalf("lease after the kill: %+v %v", r, err)
		}
		waitFor(t, "the killed node to leave", func() bool { return !contains(ids(t, a), "nbbbbbb") })
		if got := ids(t, a); !contains(got, a.NodeID()) || !contains(got, "ncccccc") {
			t.Fatalf("members %v", got)
		}
	})
	t.Run("a node stopped cleanly leaves at once", func(t *testing.T) {
		c.Close()
		if got := ids(t, a); contains(got, "ncccccc") {
			t.Fatalf("members after Close: %v", got)
		}
	})
	t.Run("a revoked lease: the node registers again", func(t *testing.T) {
		old := a.memberLease()
		if _, err := srv.Client(t).Revoke(context.Background(), old); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "a new lease", func() bool {
			l := a.memberLease()
			return l != old && l != clientv3.NoLease && contains(ids(t, a), a.NodeID())
		})
		waitFor(t, "ready", func() bool { return a.Ready() == nil })
	})
	t.Run("the node id is kept in the data directory", func(t *testing.T) {
		id, ok, err := readIdentity(dir)
		if err != nil || !ok || id.NodeID != a.NodeID() {
			t.Fatalf("identity %+v %v %v, node %s", id, ok, err, a.NodeID())
		}
	})
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// With etcd paused (SIGSTOP: it answers nothing), Ready says etcd is
// unreachable and since when, the lease is lost once the TTL passes; with
// etcd back, the node registers again and is ready.
func TestReadyFollowsEtcd(t *testing.T) {
	srv := etcdtest.Start(t)
	cfg := testConfig(srv, "/ready/")
	cfg.LeaseTTL = time.Second
	cfg.Etcd.RequestTimeout = time.Second
	n := mustStart(t, cfg, t.TempDir())
	reg := prometheus.NewRegistry()
	if err := n.RegisterMetrics(reg); err != nil {
		t.Fatal(err)
	}
	if err := n.Register(Member{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the probe to count this node", func() bool { return testutil.ToFloat64(n.met.nodes) == 1 })
	if got := testutil.ToFloat64(n.met.leaseUp); got != 1 {
		t.Fatalf("lease_up %v", got)
	}
	old := n.memberLease()

	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	resumed := false
	defer func() {
		if !resumed {
			srv.Resume()
		}
	}()
	waitFor(t, "not ready", func() bool { return n.Ready() != nil })
	err := n.Ready()
	if !strings.Contains(err.Error(), "etcd ["+srv.Endpoint+"] unreachable since ") {
		t.Fatalf("Ready: %v", err)
	}
	if got := testutil.ToFloat64(n.met.reachable); got != 0 {
		t.Fatalf("etcd_reachable %v while paused", got)
	}
	waitFor(t, "the lease to be lost", func() bool { return testutil.ToFloat64(n.met.leaseUp) == 0 })
	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
	resumed = true
	waitFor(t, "ready again", func() bool { return n.Ready() == nil })
	if l := n.memberLease(); l == old {
		t.Fatal("ready on the lease it lost")
	}
	if !contains(ids(t, n), n.NodeID()) {
		t.Fatal("not registered after etcd came back")
	}
	// Round trips were counted by operation.
	if c := testutil.CollectAndCount(n.met.rtt); c < 3 {
		t.Fatalf("%d operations timed, want range, txn, lease_grant and more", c)
	}
	if got := testutil.ToFloat64(n.met.errors.WithLabelValues("range")); got == 0 {
		t.Fatal("no failed range counted while etcd was paused")
	}
}

func TestOpName(t *testing.T) {
	for in, want := range map[string]string{
		"/etcdserverpb.KV/Range":         "range",
		"/etcdserverpb.Lease/LeaseGrant": "lease_grant",
		"/etcdserverpb.KV/DeleteRange":   "delete_range",
	} {
		if got := opName(in); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}

// Close ends the membership loop and everything the node started.
func TestCloseEndsMembership(t *testing.T) {
	srv := etcdtest.Start(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	n, err := Start(testConfig(srv, "/leak/"), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Register(Member{}); err != nil {
		t.Fatal(err)
	}
	n.Close()
}
