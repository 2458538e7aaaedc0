package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/silt-io/silt/acl"
	"github.com/silt-io/silt/cluster"
	"github.com/silt-io/silt/core/catalog"
	"github.com/silt-io/silt/gateways/api"
	"github.com/silt-io/silt/internal/datadir"
)

// joinCluster starts the node in the cluster cfg.Cluster names and hands
// core the catalog on etcd: core.Open opens its catalog by directory, and
// takes the attached one instead of pebble's. Without endpoints it only
// checks that the data directory is a single node's. node is nil then;
// leave is always to be called, after the store is closed.
func joinCluster(ctx context.Context, cfg serveConfig, log *zap.Logger) (node *cluster.Node, cat *catalog.Catalog, leave func(), err error) {
	if !cfg.Cluster.Enabled() {
		return nil, nil, func() {}, cluster.CheckSingleNode(cfg.Core.Dir)
	}
	keyID, err := secretsKeyID(cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	opts := []cluster.Option{cluster.WithSecretsKeyID(keyID)}
	if cfg.Cluster.Standby {
		opts = append(opts, cluster.WaitForLock(ctx))
	}
	node, err = cluster.Start(cfg.Cluster, cfg.Core.Dir, log.Named("cluster"), opts...)
	if err != nil {
		return nil, nil, nil, err
	}
	cat, err = node.OpenCatalog()
	if err != nil {
		node.Close()
		return nil, nil, nil, fmt.Errorf("cluster catalog: %w", err)
	}
	detach := catalog.Attach(filepath.Join(cfg.Core.Dir, "catalog"), cat)
	log.Info("metadata on etcd", zap.Strings("endpoints", cfg.Cluster.Etcd.Endpoints),
		zap.String("prefix", cfg.Cluster.Etcd.Prefix), zap.String("cluster_id", node.ClusterID()))
	return node, cat, func() {
		detach()
		cat.Close()
		node.Close()
	}, nil
}

// secretsKeyID is the id of the node's secrets key, "" when the file does
// not exist yet (openACL creates it). It is read, never created, here: a
// node refused for joining with no key must leave nothing behind.
func secretsKeyID(cfg serveConfig) (string, error) {
	b, err := os.ReadFile(secretsKeyPath(cfg))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("secrets key (auth.secrets_key_file): %w", err)
	}
	if len(b) != datadir.KeySize {
		return "", fmt.Errorf("secrets key (auth.secrets_key_file) %s holds %d bytes, want %d: restore it from a backup", secretsKeyPath(cfg), len(b), datadir.KeySize)
	}
	return acl.SecretsKeyID(b), nil
}

// joinMembers registers the node as a live member of its cluster (with
// the addresses its heads listen on, unless cluster.advertise says
// otherwise), registers the cluster's metrics, and gives the API the list
// of nodes and the readiness /readyz reports. A single node (node nil)
// does nothing: its API answers GET /v1/cluster/nodes with 404
// not_in_cluster.
func joinMembers(node *cluster.Node, cfg serveConfig, st *startup, tls bool, reg prometheus.Registerer, srv *api.Server) error {
	if node == nil {
		return nil
	}
	// openACL has opened the catalog's sealed secrets with the key (and
	// created the key if this first node had none): the cluster's from now.
	keyID, err := secretsKeyID(cfg)
	if err != nil {
		return err
	}
	if keyID != "" {
		if err := node.RecordSecretsKeyID(keyID); err != nil {
			return err
		}
	}
	if err := node.RegisterMetrics(reg); err != nil {
		return err
	}
	adv := cfg.Cluster.Advertise
	m := cluster.Member{
		Addrs: cluster.Addrs{
			API:     advertised(adv.API, st.api.Addr()),
			S3:      advertised(adv.S3, st.s3.Addr()),
			NFS:     advertised(adv.NFS, st.nfs.Addr()),
			WebHDFS: advertised(adv.WebHDFS, st.hdfs.Addr()),
		},
		TLS:     tls,
		Version: buildVersion().Version,
	}
	if err := node.Register(m); err != nil {
		return err
	}
	srv.UseCluster(apiCluster{node})
	return nil
}

// advertised is the configured address, else the one a head listens on
// with a wildcard host replaced by the host name.
func advertised(configured string, listening net.Addr) string {
	if configured != "" {
		return configured
	}
	addr := listening.String()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		if h, err := os.Hostname(); err == nil {
			host = h
		}
	}
	return net.JoinHostPort(host, port)
}

// apiCluster lets the API list the cluster's nodes and report readiness.
type apiCluster struct{ n *cluster.Node }

func (a apiCluster) Ready() error { return a.n.Ready() }

func (a apiCluster) Nodes(ctx context.Context) (string, []api.ClusterNode, error) {
	ms, err := a.n.Members(ctx)
	if err != nil {
		return "", nil, err
	}
	out := make([]api.ClusterNode, 0, len(ms))
	for _, m := range ms {
		out = append(out, api.ClusterNode{
			ID: m.ID, Self: m.ID == a.n.NodeID(),
			Addrs:   api.ClusterAddrs{API: m.Addrs.API, S3: m.Addrs.S3, NFS: m.Addrs.NFS, WebHDFS: m.Addrs.WebHDFS},
			TLS:     m.TLS,
			Version: m.Version, Started: m.Started, Host: m.Host, PID: m.PID,
		})
	}
	return a.n.ClusterID(), out, nil
}
