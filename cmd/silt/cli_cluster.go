package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/silt-io/silt/client"
	"github.com/silt-io/silt/cluster"
	"github.com/silt-io/silt/internal/config"
	"github.com/silt-io/silt/internal/datadir"
)

func (a *app) clusterCmd() *cobra.Command {
	nodes := &cobra.Command{
		Use:   "nodes",
		Short: "list the cluster's live nodes",
		Long: `Lists the nodes registered in the cluster under a live lease, with the
address of each head. A node that died leaves the list cluster.lease_ttl
(5s by default) after its last heartbeat; one stopped cleanly leaves at once.
A single-node server answers that it is not in cluster mode.`,
		Example: "  silt cluster nodes\n  silt cluster nodes -o json | jq -r '.nodes[].addrs.api'",
		Args:    args(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := a.client(cmd)
			if err != nil {
				return err
			}
			cn, err := cl.ClusterNodes(cmd.Context())
			if err != nil {
				return err
			}
			return a.print(cn, func(w io.Writer) { printNodes(w, cn) })
		},
	}
	return group("cluster", "cluster membership, and moving a single node into a cluster",
		"  silt cluster nodes\n  silt cluster init --core.dir silt-data --cluster.etcd.endpoints http://127.0.0.1:2379",
		nodes, a.clusterInitCmd())
}

func printNodes(w io.Writer, cn client.ClusterNodes) {
	fmt.Fprintf(w, "cluster %s: %d live node(s)\n", cn.ClusterID, len(cn.Nodes))
	fmt.Fprintln(w, "NODE\tAPI\tS3\tNFS\tWEBHDFS\tVERSION\tSTARTED\tHOST")
	for _, n := range cn.Nodes {
		id := n.ID
		if n.Self {
			id += " *"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", id, n.Addrs.API, n.Addrs.S3, n.Addrs.NFS, n.Addrs.WebHDFS, n.Version, fmtTime(n.Started), n.Host)
	}
}

const clusterInitLong = `Turns a single node's data directory into the first node of a new cluster:
every record of its catalog (tenants, streams, segments, principals, tokens,
S3 keys still sealed with the secrets key, grants, groups, the tier-2 chunk
catalog) is copied into etcd under cluster.etcd.prefix, in transactions
within cluster.etcd.max_txn_ops and max_txn_bytes; the cluster's id and the
secrets key's id are recorded there; the data directory gets its identity
(cluster.json) and its pebble catalog is moved to catalog.single-node.
Then start the node with silt serve and the same cluster flags: it serves
the same tenants, streams and events.

Stop silt serve on the directory first: init refuses a directory in use. It
also refuses a directory that already belongs to a cluster, and a prefix
that already holds a cluster (or records another directory's init), and
changes nothing then. Interrupted, it can be run again: it starts the copy
over. It takes the same configuration as silt serve (--config, SILT_*,
flags); it uses core.dir, cluster.* and auth.secrets_key_file.`

func (a *app) clusterInitCmd() *cobra.Command {
	cfg := defaultServeConfig()
	cmd := &cobra.Command{
		Use:   "init",
		Short: "make a single node's data directory the first node of a cluster",
		Long:  clusterInitLong,
		Example: `  silt cluster init --core.dir /var/lib/silt --cluster.etcd.endpoints http://127.0.0.1:2379
  silt cluster init --config silt.yaml --cluster.etcd.prefix /prod/`,
		Args:        args(0, 0),
		Annotations: map[string]string{annotLocal: "true"},
	}
	loader, err := config.NewLoader(&cfg, config.WithIgnoredEnv(clientEnvVars()...))
	if err == nil {
		err = loader.RegisterFlags(cmd.Flags())
	}
	if err != nil {
		cmd.RunE = func(*cobra.Command, []string) error { return err }
		return cmd
	}
	// The same keys as silt serve, grouped the same way.
	cmd.SetHelpFunc(func(c *cobra.Command, _ []string) { serveHelp(c, c.OutOrStdout()) })
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if _, err := loader.Load(os.Environ()); err != nil {
			return usageError{err}
		}
		if err := cfg.Cluster.Validate(); err != nil {
			return usageError{fmt.Errorf("invalid configuration: %w", err)}
		}
		if !cfg.Cluster.Enabled() {
			return usageError{errors.New("--cluster.etcd.endpoints is required: the etcd of the new cluster")}
		}
		if fi, err := os.Stat(cfg.Core.Dir); err != nil || !fi.IsDir() {
			return fmt.Errorf("data directory %s: not found (core.dir): init moves an existing single node's directory", cfg.Core.Dir)
		}
		datadir.RestrictUmask()
		lock, err := lockDataDir(cfg.Core.Dir)
		if err != nil {
			return err
		}
		defer lock.Close()
		keyID, err := secretsKeyID(cfg)
		if err != nil {
			return err
		}
		res, err := cluster.Init(cfg.Cluster, cfg.Core.Dir, nil, cluster.InitOptions{SecretsKeyID: keyID, Progress: a.stderr})
		if err != nil {
			return err
		}
		return a.done(map[string]any{"cluster_id": res.ClusterID, "node_id": res.NodeID, "records": res.Records, "prefix": cfg.Cluster.Etcd.Prefix},
			fmt.Sprintf("cluster %s made on prefix %s from %s (%d records); start it with: silt serve --core.dir %s --cluster.etcd.endpoints %s",
				res.ClusterID, cfg.Cluster.Etcd.Prefix, cfg.Core.Dir, res.Records, cfg.Core.Dir, strings.Join(cfg.Cluster.Etcd.Endpoints, ",")))
	}
	return cmd
}
