package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/silt-io/silt/core/catalog"
	"github.com/silt-io/silt/core/vfs"
)

// SingleNodeBackup is where Init moves a single node's pebble catalog
// once its records are in etcd: kept as a backup, never read again (the
// identity file makes silt refuse the directory without etcd).
const SingleNodeBackup = "catalog.single-node"

// initMarker is <prefix>cluster/init while Init copies records: it names
// the data directory being moved, so that Init run again on the same
// directory after a crash starts the copy over, and any other is refused.
type initMarker struct {
	Host    string    `json:"host"`
	DataDir string    `json:"data_dir"`
	Since   time.Time `json:"since"`
}

// InitOptions are what Init needs besides the configuration.
type InitOptions struct {
	// SecretsKeyID is the id of the data directory's secrets key
	// (acl.SecretsKeyID), recorded as the cluster's: the S3 secrets are
	// copied sealed, and every node needs that key to open them.
	SecretsKeyID string
	// Progress receives one line per transaction (nil: none).
	Progress io.Writer
}

// InitResult says what Init did.
type InitResult struct {
	ClusterID string
	NodeID    string
	Records   int
}

// Init turns a single node's data directory into the first node of a new
// cluster on the prefix cfg names: it copies every record of the pebble
// catalog in <dataDir>/catalog into etcd (in transactions within
// max_txn_ops and max_txn_bytes), creates the cluster's id and records the
// secrets key id, writes the identity file, and moves the pebble catalog
// aside (SingleNodeBackup). The caller holds the data directory's lock, so
// that no silt serve runs on it meanwhile. It refuses (ErrRefused,
// changing nothing) when the directory already belongs to a cluster, holds
// no single node's catalog, or the prefix already holds a cluster or is
// being initialised from another directory; it takes the serving lock
// while it copies, so no node serves the prefix half-filled.
func Init(cfg Config, dataDir string, log *zap.Logger, opts InitOptions) (InitResult, error) {
	if err := cfg.Validate(); err != nil {
		return InitResult{}, err
	}
	if !cfg.Enabled() {
		return InitResult{}, errors.New("cluster.etcd.endpoints: set it to the new cluster's etcd")
	}
	if log == nil {
		log = zap.NewNop()
	}
	progress := opts.Progress
	if progress == nil {
		progress = io.Discard
	}
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return InitResult{}, err
	}
	pebbleDir := filepath.Join(dataDir, "catalog")
	if _, err := os.Stat(pebbleDir); err != nil {
		if _, ok, _ := readIdentity(dataDir); ok {
			return InitResult{}, fmt.Errorf("%w: data directory %s already belongs to a cluster (%s): nothing to do", ErrRefused, dataDir, IdentityFile)
		}
		return InitResult{}, fmt.Errorf("%w: data directory %s holds no single node's catalog (%s): a new node needs no init, start it with silt serve and the cluster.etcd flags", ErrRefused, dataDir, pebbleDir)
	}
	dirID, inDir, err := readIdentity(dataDir)
	if err != nil {
		return InitResult{}, err
	}

	n := &Node{cfg: cfg, dataDir: dataDir, log: log, met: newMetrics()}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	defer n.cancel()
	if n.cli, err = dial(cfg.Etcd, log, n.met); err != nil {
		return InitResult{}, err
	}
	defer n.cli.Close()
	ctx, cancel := context.WithTimeout(n.ctx, cfg.Etcd.DialTimeout)
	etcdID, err := n.get(ctx, n.key("id"))
	cancel()
	if err != nil {
		return InitResult{}, fmt.Errorf("%w: cannot reach etcd at %v within %v: %w", catalog.ErrUnavailable, cfg.Etcd.Endpoints, cfg.Etcd.DialTimeout, err)
	}
	backup := filepath.Join(dataDir, SingleNodeBackup)
	if etcdID != "" && inDir && dirID.ClusterID == etcdID {
		// A crash after the cluster was made, before the catalog moved.
		if err := moveAside(pebbleDir, backup); err != nil {
			return InitResult{}, fmt.Errorf("move the single node's catalog aside: %w", err)
		}
		fmt.Fprintf(progress, "cluster %s was made by an earlier init of this directory; moved the single node's catalog to %s\n", etcdID, backup)
		return InitResult{ClusterID: etcdID, NodeID: dirID.NodeID}, nil
	}
	if etcdID != "" {
		return InitResult{}, fmt.Errorf("%w: prefix %s on etcd already holds cluster %s: init makes a new cluster; to add this data directory's metadata to a running cluster is not supported, pick a fresh cluster.etcd.prefix",
			ErrRefused, cfg.Etcd.Prefix, etcdID)
	}
	if err := n.lock(); err != nil {
		return InitResult{}, err
	}
	defer n.unlock()

	// The marker: a copy left by a crashed init of this directory is
	// started over; anything else under the catalog prefix is refused.
	ctx, cancel = context.WithTimeout(n.ctx, cfg.Etcd.RequestTimeout)
	defer cancel()
	host, _ := os.Hostname()
	mine := initMarker{Host: host, DataDir: abs, Since: time.Now().UTC()}
	rec, _ := json.Marshal(mine)
	mk, catPrefix := n.key("init"), cfg.Etcd.Prefix+"catalog/"
	resp, err := n.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(mk), "=", 0)).
		Then(clientv3.OpGet(catPrefix, clientv3.WithPrefix(), clientv3.WithCountOnly())).
		Else(clientv3.OpGet(mk)).Commit()
	if err != nil {
		return InitResult{}, fmt.Errorf("%w: %w", catalog.ErrUnavailable, err)
	}
	if resp.Succeeded {
		if c := resp.Responses[0].GetResponseRange().Count; c > 0 {
			return InitResult{}, fmt.Errorf("%w: prefix %s holds %d catalog records but no cluster: it is not empty; pick another cluster.etcd.prefix or delete what is under it",
				ErrRefused, catPrefix, c)
		}
	} else {
		var other initMarker
		_ = json.Unmarshal(resp.Responses[0].GetResponseRange().Kvs[0].Value, &other)
		if other.Host != host || other.DataDir != abs {
			return InitResult{}, fmt.Errorf("%w: prefix %s is being initialised from data directory %s on host %s (since %s): one data directory makes a cluster",
				ErrRefused, cfg.Etcd.Prefix, other.DataDir, other.Host, other.Since.Format(time.RFC3339))
		}
		fmt.Fprintf(progress, "an earlier init of %s stopped half-way (since %s): starting the copy over\n", abs, other.Since.Format(time.RFC3339))
		if _, err := n.cli.Delete(ctx, catPrefix, clientv3.WithPrefix()); err != nil {
			return InitResult{}, fmt.Errorf("%w: clear the half-copied catalog: %w", catalog.ErrUnavailable, err)
		}
	}
	if _, err := n.cli.Put(ctx, mk, string(rec)); err != nil {
		return InitResult{}, fmt.Errorf("%w: %w", catalog.ErrUnavailable, err)
	}

	copied, err := copyCatalog(n, pebbleDir, progress)
	if err != nil {
		return InitResult{}, err
	}

	// The identity first, then the id in etcd: a crash between the two
	// leaves a directory that init, run again, finishes (the marker is
	// still there, the catalog not moved yet).
	clusterID, nodeID := newClusterID(), newNodeID()
	if inDir {
		clusterID, nodeID = dirID.ClusterID, dirID.NodeID
		if nodeID == "" {
			nodeID = newNodeID()
		}
	}
	if err := writeIdentity(dataDir, identity{ClusterID: clusterID, Prefix: cfg.Etcd.Prefix, NodeID: nodeID}); err != nil {
		return InitResult{}, err
	}
	ik := n.key("id")
	ops := []clientv3.Op{clientv3.OpPut(ik, clusterID), clientv3.OpDelete(mk)}
	if opts.SecretsKeyID != "" {
		ops = append(ops, clientv3.OpPut(n.key("secrets_key_id"), opts.SecretsKeyID))
	}
	ctx2, cancel2 := context.WithTimeout(n.ctx, cfg.Etcd.RequestTimeout)
	defer cancel2()
	resp, err = n.cli.Txn(ctx2).
		If(clientv3.Compare(clientv3.CreateRevision(ik), "=", 0),
			clientv3.Compare(clientv3.Value(mk), "=", string(rec))).
		Then(ops...).Commit()
	if err != nil {
		return InitResult{}, fmt.Errorf("%w: create the cluster: %w", catalog.ErrUnavailable, err)
	}
	if !resp.Succeeded {
		return InitResult{}, fmt.Errorf("%w: prefix %s changed while init copied (another init or node); run init again", ErrRefused, cfg.Etcd.Prefix)
	}
	if err := moveAside(pebbleDir, backup); err != nil {
		return InitResult{}, fmt.Errorf("move the single node's catalog aside (the cluster is made; run init again to finish): %w", err)
	}
	fmt.Fprintf(progress, "created cluster %s on prefix %s; this data directory is its node %s; the single node's catalog is kept in %s\n",
		clusterID, cfg.Etcd.Prefix, nodeID, backup)
	return InitResult{ClusterID: clusterID, NodeID: nodeID, Records: copied}, nil
}

// copyCatalog copies every record of the pebble catalog in dir into the
// catalog on etcd, a transaction at a time, and checks the count.
func copyCatalog(n *Node, dir string, progress io.Writer) (int, error) {
	src, err := catalog.Open(dir)
	if err != nil {
		return 0, fmt.Errorf("open the single node's catalog: %w", err)
	}
	defer src.Close()
	total := 0
	if err := src.Scan(nil, nil, func(_, _ []byte) error { total++; return nil }); err != nil {
		return 0, fmt.Errorf("read the single node's catalog: %w", err)
	}
	dst, err := n.OpenCatalog()
	if err != nil {
		return 0, fmt.Errorf("open the catalog on etcd: %w", err)
	}
	defer dst.Close()
	fmt.Fprintf(progress, "copying %d catalog records into etcd under %scatalog/\n", total, n.cfg.Etcd.Prefix)

	e := n.cfg.Etcd
	// What catalog's etcd backend counts for one put, so that a batch it
	// accepts is never refused as too large.
	cost := func(k, v []byte) int { return len(e.Prefix) + len("catalog/") + len(k) + len(v) + 32 }
	batch, size, copied := map[string][]byte{}, 0, 0
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := dst.Commit(batch, nil); err != nil {
			return fmt.Errorf("copy records into etcd: %w", err)
		}
		copied += len(batch)
		fmt.Fprintf(progress, "  %d/%d records\n", copied, total)
		batch, size = map[string][]byte{}, 0
		return nil
	}
	err = src.Scan(nil, nil, func(k, v []byte) error {
		c := cost(k, v)
		if c > e.MaxTxnBytes {
			return fmt.Errorf("%w: catalog record %q is %d bytes, more than one etcd request takes (cluster.etcd.max_txn_bytes %d): raise etcd's --max-request-bytes and max_txn_bytes with it",
				catalog.ErrTooLarge, k, len(v), e.MaxTxnBytes)
		}
		if len(batch)+1 > e.MaxTxnOps || size+c > e.MaxTxnBytes {
			if err := flush(); err != nil {
				return err
			}
		}
		batch[string(k)] = append([]byte(nil), v...)
		size += c
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return copied, err
	}
	got := 0
	if err := dst.Scan(nil, nil, func(_, _ []byte) error { got++; return nil }); err != nil {
		return copied, err
	}
	if got != total || copied != total {
		return copied, fmt.Errorf("copied %d of %d records, etcd holds %d: the single node's catalog changed during init? run init again", copied, total, got)
	}
	return copied, nil
}

// get returns the value of k, "" when absent.
func (n *Node) get(ctx context.Context, k string) (string, error) {
	resp, err := n.cli.Get(ctx, k)
	if err != nil || len(resp.Kvs) == 0 {
		return "", err
	}
	return string(resp.Kvs[0].Value), nil
}

// moveAside renames the pebble catalog durably: a node that finds it back
// after a crash would refuse to start.
func moveAside(from, to string) error {
	if err := os.Rename(from, to); err != nil {
		return err
	}
	return vfs.OS{}.SyncDir(filepath.Dir(from))
}
