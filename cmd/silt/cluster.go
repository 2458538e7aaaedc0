package main

import (
	"fmt"
	"path/filepath"

	"go.uber.org/zap"

	"github.com/silt-io/silt/cluster"
	"github.com/silt-io/silt/core/catalog"
)

// joinCluster starts the node in the cluster cfg.Cluster names and hands
// core the catalog on etcd: core.Open opens its catalog by directory, and
// takes the attached one instead of pebble's. Without endpoints it only
// checks that the data directory is a single node's. node is nil then;
// leave is always to be called, after the store is closed.
func joinCluster(cfg serveConfig, log *zap.Logger) (node *cluster.Node, leave func(), err error) {
	if !cfg.Cluster.Enabled() {
		return nil, func() {}, cluster.CheckSingleNode(cfg.Core.Dir)
	}
	node, err = cluster.Start(cfg.Cluster, cfg.Core.Dir, log.Named("cluster"))
	if err != nil {
		return nil, nil, err
	}
	cat, err := node.OpenCatalog()
	if err != nil {
		node.Close()
		return nil, nil, fmt.Errorf("cluster catalog: %w", err)
	}
	detach := catalog.Attach(filepath.Join(cfg.Core.Dir, "catalog"), cat)
	log.Info("metadata on etcd", zap.Strings("endpoints", cfg.Cluster.Etcd.Endpoints),
		zap.String("prefix", cfg.Cluster.Etcd.Prefix), zap.String("cluster_id", node.ClusterID()))
	return node, func() {
		detach()
		cat.Close()
		node.Close()
	}, nil
}
