package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"

	"github.com/silt-io/silt/core/catalog"
)

// Member is one live node as it registered under
// <prefix>cluster/members/<id>, bound to its lease: the key goes when the
// node stops renewing the lease (Close revokes it at once).
type Member struct {
	ID string `json:"id"`
	// Addrs are where each head of the node is reached (host:port).
	Addrs Addrs `json:"addrs"`
	// TLS is set when the node's HTTP heads and API serve https.
	TLS     bool      `json:"tls"`
	Version string    `json:"version"`
	Started time.Time `json:"started"`
	Host    string    `json:"host"`
	PID     int       `json:"pid"`
}

// Addrs are a node's advertised head addresses.
type Addrs struct {
	API     string `json:"api"`
	S3      string `json:"s3"`
	NFS     string `json:"nfs"`
	WebHDFS string `json:"webhdfs"`
}

// membership is the state of Register's loop: whether this node holds its
// lease, and whether etcd answered the last probe. /readyz is built on it.
type membership struct {
	done    chan struct{} // closed when runMembership returns
	started atomic.Bool

	mu struct {
		sync.Mutex
		sess *concurrency.Session
		// reachable is false from the first failed probe to the next
		// good one; downSince is when it turned false.
		reachable bool
		downSince time.Time
		lastErr   error
		// leased is false from the moment the lease is lost until the
		// node registered again; lostSince is when.
		leased    bool
		lostSince time.Time
	}
}

func (n *Node) memberKey(id string) string { return n.key("members/" + id) }

// Register puts this node in the list of live nodes under a lease of
// cluster.lease_ttl, kept alive until Close. Its loop probes etcd every
// third of the TTL (Ready reports the result) and registers the node
// again under a new lease when the old one was lost (etcd away past the
// TTL). m's ID, Host, PID and Started are filled in when empty.
func (n *Node) Register(m Member) error {
	if n.member.started.Load() {
		return errors.New("cluster: Register called twice")
	}
	m.ID = n.nodeID
	if m.Host == "" {
		m.Host, _ = os.Hostname()
	}
	if m.PID == 0 {
		m.PID = os.Getpid()
	}
	if m.Started.IsZero() {
		m.Started = time.Now().UTC()
	}
	rec, err := json.Marshal(m)
	if err != nil {
		return err
	}
	sess, err := n.register(rec)
	if err != nil {
		return err
	}
	n.member.mu.Lock()
	n.member.mu.sess, n.member.mu.leased, n.member.mu.reachable = sess, true, true
	n.member.mu.Unlock()
	n.met.leaseUp.Set(1)
	n.met.reachable.Set(1)
	n.member.started.Store(true)
	go n.runMembership(rec, sess)
	n.log.Info("registered as a cluster member", zap.String("node_id", m.ID), zap.Duration("lease_ttl", n.cfg.LeaseTTL))
	return nil
}

// register grants a lease and puts the record under it. The grant has a
// deadline (a session's own grant has none), so that a node cut off from
// etcd keeps probing instead of hanging here.
func (n *Node) register(rec []byte) (*concurrency.Session, error) {
	ttl := int64(n.cfg.LeaseTTL / time.Second)
	ctx, cancel := context.WithTimeout(n.ctx, n.cfg.Etcd.RequestTimeout)
	defer cancel()
	lease, err := n.cli.Grant(ctx, ttl)
	if err != nil {
		return nil, fmt.Errorf("%w: membership lease: %w", catalog.ErrUnavailable, err)
	}
	// The session's context outlives n.ctx, as the lock's does: Close
	// revokes the lease after cancelling n.ctx.
	sess, err := concurrency.NewSession(n.cli, concurrency.WithLease(lease.ID), concurrency.WithTTL(int(ttl)))
	if err != nil {
		n.cli.Revoke(ctx, lease.ID)
		return nil, fmt.Errorf("%w: membership session: %w", catalog.ErrUnavailable, err)
	}
	if _, err := n.cli.Put(ctx, n.memberKey(n.nodeID), string(rec), clientv3.WithLease(lease.ID)); err != nil {
		sess.Close()
		return nil, fmt.Errorf("%w: register node: %w", catalog.ErrUnavailable, err)
	}
	return sess, nil
}

// runMembership probes etcd and renews the registration until Close.
func (n *Node) runMembership(rec []byte, sess *concurrency.Session) {
	defer close(n.member.done)
	every := n.cfg.LeaseTTL / 3
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		var sessDone <-chan struct{}
		if sess != nil {
			sessDone = sess.Done()
		}
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
		case <-sessDone:
		}
		if sess != nil {
			select {
			case <-sess.Done():
				n.setLeased(false, nil)
				n.log.Warn("membership lease lost (etcd out of reach past cluster.lease_ttl); registering again")
				// The lease may still live in etcd (a restarted etcd
				// extends leases): revoke it, so that the old record goes.
				ctx, cancel := context.WithTimeout(n.ctx, every)
				n.cli.Revoke(ctx, sess.Lease())
				cancel()
				sess = nil
			default:
			}
		}
		n.probe(every)
		if sess == nil && n.ctx.Err() == nil {
			if s, err := n.register(rec); err == nil {
				sess = s
				n.setLeased(true, s)
				n.log.Info("registered again as a cluster member", zap.String("node_id", n.nodeID))
			}
		}
	}
}

// probe asks etcd for the number of live nodes: a linearizable read, so
// it fails when etcd has no quorum, not only when it is unreachable.
func (n *Node) probe(timeout time.Duration) {
	ctx, cancel := context.WithTimeout(n.ctx, timeout)
	defer cancel()
	resp, err := n.cli.Get(ctx, n.key("members/"), clientv3.WithPrefix(), clientv3.WithCountOnly())
	if n.ctx.Err() != nil {
		return
	}
	n.member.mu.Lock()
	defer n.member.mu.Unlock()
	if err != nil {
		if n.member.mu.reachable {
			n.member.mu.reachable, n.member.mu.downSince = false, time.Now().UTC()
			n.log.Warn("etcd out of reach; /readyz answers 503 until it is back", zap.Error(err))
		}
		n.member.mu.lastErr = err
		n.met.reachable.Set(0)
		return
	}
	if !n.member.mu.reachable {
		n.log.Info("etcd reachable again", zap.Duration("after", time.Since(n.member.mu.downSince)))
	}
	n.member.mu.reachable, n.member.mu.lastErr = true, nil
	n.met.reachable.Set(1)
	n.met.nodes.Set(float64(resp.Count))
}

func (n *Node) setLeased(up bool, sess *concurrency.Session) {
	n.member.mu.Lock()
	defer n.member.mu.Unlock()
	if !up && n.member.mu.leased {
		n.member.mu.lostSince = time.Now().UTC()
	}
	n.member.mu.leased, n.member.mu.sess = up, sess
	n.met.leaseUp.Set(boolGauge(up))
}

// ErrNotReady is what Ready returns, wrapped with the reason.
var ErrNotReady = errors.New("cluster: node not ready")

// Ready is nil while etcd answers and this node holds its membership
// lease; otherwise it says which is wrong and since when.
func (n *Node) Ready() error {
	if !n.member.started.Load() {
		return fmt.Errorf("%w: not registered in the cluster yet", ErrNotReady)
	}
	n.member.mu.Lock()
	defer n.member.mu.Unlock()
	m := &n.member.mu
	now := time.Now().UTC()
	if !m.reachable {
		return fmt.Errorf("%w: etcd %v unreachable since %s (%s): %v", ErrNotReady, n.cfg.Etcd.Endpoints,
			m.downSince.Format(time.RFC3339), now.Sub(m.downSince).Round(time.Second), m.lastErr)
	}
	if !m.leased {
		return fmt.Errorf("%w: membership lease lost since %s (%s); registering again", ErrNotReady,
			m.lostSince.Format(time.RFC3339), now.Sub(m.lostSince).Round(time.Second))
	}
	return nil
}

// Members lists the live nodes, sorted by id, from etcd (not a cache: a
// node that died is gone once its lease expired).
func (n *Node) Members(ctx context.Context) ([]Member, error) {
	ctx, cancel := context.WithTimeout(ctx, n.cfg.Etcd.RequestTimeout)
	defer cancel()
	resp, err := n.cli.Get(ctx, n.key("members/"), clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("%w: list cluster members: %w", catalog.ErrUnavailable, err)
	}
	out := make([]Member, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		var m Member
		if err := json.Unmarshal(kv.Value, &m); err != nil {
			n.log.Warn("skipping a member record that is not JSON", zap.ByteString("key", kv.Key))
			continue
		}
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// leave ends the membership loop and revokes the lease, so that the node
// leaves the list at once rather than after the TTL.
func (n *Node) leave() {
	if !n.member.started.Load() {
		return
	}
	<-n.member.done
	n.member.mu.Lock()
	sess := n.member.mu.sess
	n.member.mu.Unlock()
	if sess != nil {
		sess.Close()
	}
}

// memberLease is the lease the registration is held under now (tests).
func (n *Node) memberLease() clientv3.LeaseID {
	n.member.mu.Lock()
	defer n.member.mu.Unlock()
	if n.member.mu.sess == nil {
		return clientv3.NoLease
	}
	return n.member.mu.sess.Lease()
}
