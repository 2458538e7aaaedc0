package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"google.golang.org/grpc"

	"github.com/silt-io/silt/core/catalog"
	"github.com/silt-io/silt/core/vfs"
)

// ErrRefused means this node may not start on this data directory and
// prefix; the error says why. Nothing was changed.
var ErrRefused = errors.New("cluster: start refused")

// IdentityFile is the file in the data directory naming the cluster the
// directory belongs to.
const IdentityFile = "cluster.json"

// identity is IdentityFile's content. NodeID names this data directory
// among the cluster's members; it is made once and kept, so that a node
// restarted on its directory registers under the same id. Files written
// before membership lack it, and get one at the next start.
type identity struct {
	ClusterID string `json:"cluster_id"`
	Prefix    string `json:"prefix"`
	NodeID    string `json:"node_id,omitempty"`
}

// holder is what <prefix>cluster/node says about the serving node.
type holder struct {
	Host    string    `json:"host"`
	PID     int       `json:"pid"`
	DataDir string    `json:"data_dir"`
	Since   time.Time `json:"since"`
}

// Node is this process in a cluster: its etcd client, the cluster's id
// and the serving lock it holds.
type Node struct {
	cfg     Config
	opts    options
	dataDir string
	log     *zap.Logger
	cli     *clientv3.Client
	id      string
	nodeID  string
	met     *metrics

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	done   chan struct{} // closed when keep returns
	lost   chan struct{} // closed when the lock went to another node
	// lostErr is set before lost is closed.
	lostErr error

	// sess and mutex are keep's after Start returns; sessMu guards
	// their replacement for readers outside keep.
	sessMu sync.Mutex
	sess   *concurrency.Session
	mutex  *concurrency.Mutex

	// member is the membership loop's state (members.go).
	member membership
}

// An Option changes how Start joins the cluster.
type Option func(*options)

type options struct {
	secretsKeyID string
	haveKeyID    bool
	// wait, if set, makes Start wait for a serving lock held by another
	// node until it is free or wait ends (cluster.standby).
	wait context.Context
}

// WaitForLock makes Start wait for the serving lock while another node
// holds it, until ctx ends, instead of refusing to start.
func WaitForLock(ctx context.Context) Option {
	return func(o *options) { o.wait = ctx }
}

// WithSecretsKeyID gives the id of the secrets key this node seals S3
// secrets with (acl.SecretsKeyID), or "" when it has no key file yet.
// Every node of a cluster must share the key: Start refuses a node whose
// key is not the one the prefix records (RecordSecretsKeyID records it).
// Without the option nothing is checked.
func WithSecretsKeyID(id string) Option {
	return func(o *options) { o.secretsKeyID, o.haveKeyID = id, true }
}

// CheckSingleNode refuses a data directory that belongs to a cluster when
// the node is started without etcd: its metadata is on etcd, and a fresh
// catalog in the directory would make core remove its logs as orphans.
func CheckSingleNode(dataDir string) error {
	id, ok, err := readIdentity(dataDir)
	if err != nil || !ok {
		return err
	}
	return fmt.Errorf("%w: data directory %s belongs to cluster %s (etcd prefix %s): set cluster.etcd.endpoints to that cluster's etcd", ErrRefused, dataDir, id.ClusterID, id.Prefix)
}

// Start connects to etcd, checks that dataDir and the prefix belong to
// one cluster (creating the cluster on first use), and takes the serving
// lock. A refusal wraps ErrRefused and changes nothing.
func Start(cfg Config, dataDir string, log *zap.Logger, opts ...Option) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = zap.NewNop()
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	met := newMetrics()
	cli, err := dial(cfg.Etcd, log, met)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := &Node{cfg: cfg, opts: o, dataDir: dataDir, log: log, cli: cli, met: met, ctx: ctx, cancel: cancel,
		done: make(chan struct{}), lost: make(chan struct{})}
	n.member.done = make(chan struct{})
	if err := n.start(); err != nil {
		cancel()
		cli.Close()
		return nil, err
	}
	go n.keep()
	return n, nil
}

// dial connects to etcd; every unary call of the client (each attempt,
// retries included) is counted and timed in met.
func dial(e EtcdConfig, log *zap.Logger, met *metrics) (*clientv3.Client, error) {
	pw, err := e.password()
	if err != nil {
		return nil, err
	}
	tlsCfg, err := e.tlsConfig()
	if err != nil {
		return nil, err
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   e.Endpoints,
		DialTimeout: e.DialTimeout,
		Username:    e.Username,
		Password:    pw,
		TLS:         tlsCfg,
		// etcd's client logs every retry at info; silt's log keeps
		// its warnings.
		Logger:      log.Named("etcd").WithOptions(zap.IncreaseLevel(zapcore.WarnLevel)),
		DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(met.intercept)},
	})
	if err != nil {
		return nil, fmt.Errorf("connect to etcd %v: %w", e.Endpoints, err)
	}
	return cli, nil
}

func (n *Node) key(k string) string { return n.cfg.Etcd.Prefix + "cluster/" + k }

func (n *Node) start() error {
	e := n.cfg.Etcd
	ctx, cancel := context.WithTimeout(n.ctx, e.DialTimeout)
	defer cancel()
	resp, err := n.cli.Get(ctx, n.key("id"))
	if err != nil {
		return fmt.Errorf("%w: cannot reach etcd at %v within %v: %w", catalog.ErrUnavailable, e.Endpoints, e.DialTimeout, err)
	}
	var etcdID string
	if len(resp.Kvs) > 0 {
		etcdID = string(resp.Kvs[0].Value)
	}
	dirID, inDir, err := readIdentity(n.dataDir)
	if err != nil {
		return err
	}
	switch {
	case inDir && etcdID == "":
		return fmt.Errorf("%w: data directory %s belongs to cluster %s (prefix %s), but etcd holds no cluster under prefix %s: check cluster.etcd.prefix and endpoints",
			ErrRefused, n.dataDir, dirID.ClusterID, dirID.Prefix, e.Prefix)
	case inDir && dirID.ClusterID != etcdID:
		return fmt.Errorf("%w: data directory %s belongs to cluster %s (prefix %s), but prefix %s on etcd is cluster %s: a node serves only the cluster its data directory was made for",
			ErrRefused, n.dataDir, dirID.ClusterID, dirID.Prefix, e.Prefix, etcdID)
	case !inDir:
		if _, err := os.Stat(filepath.Join(n.dataDir, "catalog")); err == nil {
			return fmt.Errorf("%w: data directory %s holds a single node's catalog: make it the first node of a new cluster with silt cluster init (docs/cluster.md), or start a node on a data directory of its own",
				ErrRefused, n.dataDir)
		}
	}
	if err := n.lock(); err != nil {
		return err
	}
	// The secrets key is checked under the lock, so that a second node is
	// told first that another serves the prefix.
	// A fresh deadline: a standby may have waited long for the lock.
	kctx, kcancel := context.WithTimeout(n.ctx, e.DialTimeout)
	defer kcancel()
	if err := n.checkSecretsKey(kctx); err != nil {
		n.unlock()
		return err
	}
	if etcdID == "" {
		if etcdID, err = n.createID(); err != nil {
			n.unlock()
			return err
		}
		n.log.Info("created cluster", zap.String("cluster_id", etcdID), zap.String("prefix", e.Prefix))
	}
	n.id = etcdID
	n.nodeID = dirID.NodeID
	if !inDir || dirID.NodeID == "" {
		if n.nodeID == "" {
			n.nodeID = newNodeID()
		}
		if err := writeIdentity(n.dataDir, identity{ClusterID: etcdID, Prefix: e.Prefix, NodeID: n.nodeID}); err != nil {
			n.unlock()
			return err
		}
	}
	return nil
}

// newNodeID makes a node id: short enough for a table, random enough that
// two data directories never share one.
func newNodeID() string {
	var raw [6]byte
	rand.Read(raw[:])
	return "n" + hex.EncodeToString(raw[:])
}

func newClusterID() string {
	var raw [16]byte
	rand.Read(raw[:])
	return hex.EncodeToString(raw[:])
}

// checkSecretsKey refuses a node whose secrets key is not the one the
// prefix records: its S3 secrets would be sealed with a key the other
// nodes cannot open, and theirs would not open here.
func (n *Node) checkSecretsKey(ctx context.Context) error {
	if !n.opts.haveKeyID {
		return nil
	}
	resp, err := n.cli.Get(ctx, n.key("secrets_key_id"))
	if err != nil {
		return fmt.Errorf("%w: read the cluster's secrets key id: %w", catalog.ErrUnavailable, err)
	}
	if len(resp.Kvs) == 0 {
		return nil
	}
	want := string(resp.Kvs[0].Value)
	switch n.opts.secretsKeyID {
	case want:
		return nil
	case "":
		return fmt.Errorf("%w: the cluster on prefix %s seals S3 secrets with secrets key %s, and this node has no secrets key file: copy the cluster's key file to auth.secrets_key_file (default <core.dir>/keys/secrets.key) before starting it",
			ErrRefused, n.cfg.Etcd.Prefix, want)
	default:
		return fmt.Errorf("%w: the cluster on prefix %s seals S3 secrets with secrets key %s, but this node's key (auth.secrets_key_file) is %s: every node of a cluster needs the same key file",
			ErrRefused, n.cfg.Etcd.Prefix, want, n.opts.secretsKeyID)
	}
}

// RecordSecretsKeyID records id as the cluster's secrets key unless one is
// recorded already; a different one recorded is refused (ErrRefused).
// silt serve calls it once the access-control store opened with the key,
// which proves that the key opens the S3 secrets already sealed: a node
// with a wrong key that started first on a cluster made before keys were
// recorded fails there and records nothing.
func (n *Node) RecordSecretsKeyID(id string) error {
	ctx, cancel := context.WithTimeout(n.ctx, n.cfg.Etcd.RequestTimeout)
	defer cancel()
	k := n.key("secrets_key_id")
	resp, err := n.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).
		Then(clientv3.OpPut(k, id)).
		Else(clientv3.OpGet(k)).Commit()
	if err != nil {
		return fmt.Errorf("%w: record the cluster's secrets key id: %w", catalog.ErrUnavailable, err)
	}
	if !resp.Succeeded {
		if got := string(resp.Responses[0].GetResponseRange().Kvs[0].Value); got != id {
			return fmt.Errorf("%w: the cluster on prefix %s seals S3 secrets with secrets key %s, but this node's key (auth.secrets_key_file) is %s: every node of a cluster needs the same key file",
				ErrRefused, n.cfg.Etcd.Prefix, got, id)
		}
	}
	return nil
}

// lock takes the serving lock. Two nodes serving one prefix would both
// write the same segments, so until segments have owners the second is
// refused.
func (n *Node) lock() error {
	// The session's context outlives n.ctx: Close cancels n.ctx first
	// and then revokes the lease, which needs a live context.
	sess, err := concurrency.NewSession(n.cli, concurrency.WithTTL(int(n.cfg.Etcd.LockTTL/time.Second)))
	if err != nil {
		return fmt.Errorf("%w: etcd session: %w", catalog.ErrUnavailable, err)
	}
	m := concurrency.NewMutex(sess, n.key("serving/"))
	ctx, cancel := context.WithTimeout(n.ctx, n.cfg.Etcd.RequestTimeout)
	defer cancel()
	err = m.TryLock(ctx)
	if errors.Is(err, concurrency.ErrLocked) && n.opts.wait != nil {
		n.log.Info("another node serves the prefix; waiting for the serving lock (standby)",
			zap.String("prefix", n.cfg.Etcd.Prefix), zap.String("holder", n.holder(ctx)))
		wctx, wcancel := context.WithCancel(n.opts.wait)
		stop := context.AfterFunc(n.ctx, wcancel)
		err = m.Lock(wctx)
		stop()
		wcancel()
		if err == nil {
			n.log.Info("took the serving lock", zap.String("prefix", n.cfg.Etcd.Prefix))
		}
	}
	if err != nil {
		sess.Close()
		if errors.Is(err, concurrency.ErrLocked) {
			return fmt.Errorf("%w: another silt node serves prefix %s (%s); one node serves a prefix until segments have owners, so stop it first or use another prefix",
				ErrRefused, n.cfg.Etcd.Prefix, n.holder(ctx))
		}
		return fmt.Errorf("%w: serving lock: %w", catalog.ErrUnavailable, err)
	}
	host, _ := os.Hostname()
	abs, _ := filepath.Abs(n.dataDir)
	h, _ := json.Marshal(holder{Host: host, PID: os.Getpid(), DataDir: abs, Since: time.Now().UTC()})
	// A fresh deadline: a standby's wait may have outlasted the first.
	ctx, cancel2 := context.WithTimeout(n.ctx, n.cfg.Etcd.RequestTimeout)
	defer cancel2()
	if _, err := n.cli.Put(ctx, n.key("node"), string(h), clientv3.WithLease(sess.Lease())); err != nil {
		m.Unlock(ctx)
		sess.Close()
		return fmt.Errorf("%w: record serving node: %w", catalog.ErrUnavailable, err)
	}
	n.sessMu.Lock()
	n.sess, n.mutex = sess, m
	n.sessMu.Unlock()
	return nil
}

func (n *Node) holder(ctx context.Context) string {
	resp, err := n.cli.Get(ctx, n.key("node"))
	if err != nil || len(resp.Kvs) == 0 {
		return "holder unknown"
	}
	var h holder
	if json.Unmarshal(resp.Kvs[0].Value, &h) != nil {
		return "holder unknown"
	}
	return fmt.Sprintf("host %s, pid %d, data directory %s, since %s", h.Host, h.PID, h.DataDir, h.Since.Format(time.RFC3339))
}

func (n *Node) unlock() {
	ctx, cancel := context.WithTimeout(context.Background(), n.cfg.Etcd.RequestTimeout)
	defer cancel()
	if n.mutex != nil {
		_ = n.mutex.Unlock(ctx)
	}
	if n.sess != nil {
		_ = n.sess.Close()
	}
}

// createID creates the cluster's id unless another node just did.
func (n *Node) createID() (string, error) {
	id := newClusterID()
	ctx, cancel := context.WithTimeout(n.ctx, n.cfg.Etcd.RequestTimeout)
	defer cancel()
	k := n.key("id")
	resp, err := n.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).
		Then(clientv3.OpPut(k, id)).
		Else(clientv3.OpGet(k)).Commit()
	if err != nil {
		return "", fmt.Errorf("%w: create cluster id: %w", catalog.ErrUnavailable, err)
	}
	if !resp.Succeeded {
		return string(resp.Responses[0].GetResponseRange().Kvs[0].Value), nil
	}
	return id, nil
}

// keep holds the lock: when the session ends (etcd unreachable for longer
// than the lease TTL), it takes the lock again, unless another node took
// it meanwhile — then this node must stop serving (Lost).
func (n *Node) keep() {
	defer close(n.done)
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-n.sess.Done():
		}
		n.log.Warn("serving lock's etcd session ended; taking it again")
		if err := n.relock(n.sess.Lease()); err != nil {
			if errors.Is(err, ErrRefused) {
				n.lostErr = fmt.Errorf("lost the serving lock: %w", err)
				close(n.lost)
			}
			return
		}
		n.log.Info("serving lock taken again")
	}
}

// relock takes the lock again after the session of lease old ended. The
// old lease may still be alive in etcd (a restarted etcd extends leases),
// holding this node's own lock key: it is revoked first, or the node
// would find itself in the way.
func (n *Node) relock(old clientv3.LeaseID) error {
	retry := 100 * time.Millisecond
	for {
		ctx, cancel := context.WithTimeout(n.ctx, n.cfg.Etcd.RequestTimeout)
		_, err := n.cli.Revoke(ctx, old)
		cancel()
		if err == nil || errors.Is(err, rpctypes.ErrLeaseNotFound) {
			err = n.lock()
		}
		if err == nil || errors.Is(err, ErrRefused) || n.ctx.Err() != nil {
			return err
		}
		select {
		case <-n.ctx.Done():
			return n.ctx.Err()
		case <-time.After(retry):
		}
		retry = min(2*retry, 2*time.Second)
	}
}

// Lost is closed when another node took the serving lock; Err then says
// so, and this node must stop.
func (n *Node) Lost() <-chan struct{} { return n.lost }

// Err is why Lost was closed.
func (n *Node) Err() error {
	select {
	case <-n.lost:
		return n.lostErr
	default:
		return nil
	}
}

// ClusterID is the id of the cluster the node serves.
func (n *Node) ClusterID() string { return n.id }

// Client is the node's etcd client.
func (n *Node) Client() *clientv3.Client { return n.cli }

// OpenCatalog opens the cluster's catalog on etcd.
func (n *Node) OpenCatalog() (*catalog.Catalog, error) {
	e := n.cfg.Etcd
	return catalog.OpenEtcd(n.cli, catalog.EtcdOptions{
		Prefix:         e.Prefix + "catalog/",
		RequestTimeout: e.RequestTimeout,
		MaxTxnOps:      e.MaxTxnOps,
		MaxTxnBytes:    e.MaxTxnBytes,
	})
}

// Close releases the serving lock and closes the etcd client. Close
// catalogs opened by OpenCatalog first.
func (n *Node) Close() error {
	n.cancel()
	<-n.done
	n.leave()
	n.unlock()
	return n.cli.Close()
}

// NodeID is this node's id among the cluster's members.
func (n *Node) NodeID() string { return n.nodeID }

func readIdentity(dataDir string) (identity, bool, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, IdentityFile))
	if errors.Is(err, os.ErrNotExist) {
		return identity{}, false, nil
	}
	if err != nil {
		return identity{}, false, fmt.Errorf("read cluster identity: %w", err)
	}
	var id identity
	if err := json.Unmarshal(b, &id); err != nil || id.ClusterID == "" {
		return identity{}, false, fmt.Errorf("%w: %s is not a cluster identity (restore it from a backup)", ErrRefused, filepath.Join(dataDir, IdentityFile))
	}
	return id, true, nil
}

func writeIdentity(dataDir string, id identity) error {
	if err := vfs.MkdirAllDurable(vfs.OS{}, dataDir); err != nil {
		return fmt.Errorf("create data dir %s: %w", dataDir, err)
	}
	b, _ := json.MarshalIndent(id, "", "  ")
	if err := vfs.WriteFileDurable(vfs.OS{}, dataDir, IdentityFile+".tmp", IdentityFile, append(b, '\n')); err != nil {
		return fmt.Errorf("write cluster identity: %w", err)
	}
	return nil
}

// sessionLease is the lease the lock is held under now (tests).
func (n *Node) sessionLease() clientv3.LeaseID {
	n.sessMu.Lock()
	defer n.sessMu.Unlock()
	return n.sess.Lease()
}
