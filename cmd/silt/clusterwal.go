package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/silt-io/silt/cluster"
	"github.com/silt-io/silt/core"
	"github.com/silt-io/silt/core/catalog"
	"github.com/silt-io/silt/core/wal"
	"github.com/silt-io/silt/core/wal/objwal"
	"github.com/silt-io/silt/tiering"
)

// clusterWAL returns the store's options for the node's durability: with
// durability cluster, the write-ahead log on objects in tier 2's S3 bucket
// (under cluster.wal.prefix + <node id>/), fenced in etcd, the logs of
// other nodes adopted at start, and segments rebuilt from the log and tier
// 2 (core.SharedWAL). fenced is closed if another node takes this node's
// log over: it can have nothing acknowledged any more, and must stop.
// Without a cluster, or with durability local, the options are core's
// defaults (the log in <core.dir>/wal).
func clusterWAL(cfg serveConfig, node *cluster.Node, cat *catalog.Catalog, log *zap.Logger) (o core.Options, fenced <-chan struct{}, err error) {
	if node == nil {
		return o, nil, nil
	}
	mode := cfg.Cluster.EffectiveDurability(cfg.Tier.Backend)
	if err := checkDurabilitySwitch(cfg, node, mode); err != nil {
		return o, nil, err
	}
	if mode == cluster.DurabilityLocal {
		log.Warn("durability local: an acknowledged append is on this node's disk only; its untiered events are unavailable while the node is down, and lost with its disk",
			zap.String("tiering.backend", cfg.Tier.Backend))
		return o, nil, nil
	}
	if cfg.Tier.Backend != "s3" {
		return o, nil, fmt.Errorf("cluster.durability cluster needs tiering.backend s3 (the write-ahead objects go to its bucket), not %q: set tiering.backend s3, or cluster.durability local", cfg.Tier.Backend)
	}
	s3b, err := tiering.OpenS3(cfg.Tier.S3)
	if err != nil {
		return o, nil, fmt.Errorf("write-ahead log on tier 2: %w", err)
	}
	objects := cluster.WALObjects{B: s3b}
	self := node.NodeID()
	timeout := cfg.Cluster.Etcd.RequestTimeout
	open := func(id string, maxFrame int, zl *zap.Logger) (*objwal.Objects, error) {
		return objwal.Open(objwal.Options{
			Store: objects, Fence: node.WALFence(id), Prefix: cfg.Cluster.WAL.Prefix + id + "/",
			MaxFrameBytes: maxFrame, Timeout: timeout, Log: zl.With(zap.String("wal_node", id)),
		})
	}
	ch := make(chan struct{})
	var once sync.Once
	o.WAL = func(maxFrame int, zl *zap.Logger) (wal.Backend, error) {
		be, err := open(self, maxFrame, zl)
		if err != nil {
			return nil, err
		}
		return &fenceWatch{Backend: be, node: node, fenced: func() { once.Do(func() { close(ch) }) }}, nil
	}
	o.Shared = &core.SharedWAL{
		FlushInterval: cfg.Cluster.WAL.FlushInterval,
		FlushBytes:    cfg.Cluster.WAL.FlushBytes,
		TieredEnd: func(ref core.SegmentRef) (uint64, error) {
			rec, ok, err := tiering.GetStream(cat, ref.Tenant, ref.Stream)
			if err != nil || !ok || rec.Incarnation != ref.Incarnation {
				return 0, err
			}
			seg, err := tiering.GetSegment(cat, ref.Tenant, ref.Stream, ref.Segment)
			return seg.Tiered, err
		},
		// One node serves the prefix (the serving lock): every other
		// node's log is written by nobody, whether that node is dead,
		// stopped or waiting as a standby, so each one that holds frames
		// is adopted. Taking it over fences its old writer for ever.
		Adopt: func(maxFrame int, zl *zap.Logger) ([]core.AdoptedLog, error) {
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			logs, err := node.WALLogs(ctx)
			cancel()
			if err != nil {
				return nil, err
			}
			var out []core.AdoptedLog
			for _, l := range logs {
				if l.Node == self || l.Empty {
					continue
				}
				be, err := open(l.Node, maxFrame, zl)
				if err != nil {
					return nil, fmt.Errorf("adopt the write-ahead log of node %s: %w", l.Node, err)
				}
				out = append(out, core.AdoptedLog{Name: l.Node, Backend: be})
				node.AdoptedWAL()
			}
			return out, nil
		},
	}
	log.Info("durability cluster: appends are acknowledged once in a write-ahead object and committed in etcd",
		zap.String("bucket", cfg.Tier.S3.Bucket), zap.String("wal_prefix", cfg.Cluster.WAL.Prefix+self+"/"),
		zap.Duration("flush_interval", cfg.Cluster.WAL.FlushInterval), zap.Int64("flush_bytes", cfg.Cluster.WAL.FlushBytes))
	return o, ch, nil
}

// fenceWatch times each flush for the metrics, and tells when the log's
// writer has been fenced: another node took the log over, and this one
// must stop serving.
type fenceWatch struct {
	wal.Backend
	node   *cluster.Node
	fenced func()
}

func (f *fenceWatch) Write(pos uint64, bufs [][]byte, n int64) error {
	start := time.Now()
	err := f.Backend.Write(pos, bufs, n)
	f.node.ObserveWALFlush(time.Since(start), n, err)
	if errors.Is(err, objwal.ErrFenced) {
		f.fenced()
	}
	return err
}

func (f *fenceWatch) SaveCheckpoint(data []byte) error {
	err := f.Backend.SaveCheckpoint(data)
	if errors.Is(err, objwal.ErrFenced) {
		f.fenced()
	}
	return err
}

// stepDownAfter is how long a fenced node keeps answering (503) before it
// stops, so that the requests in flight get their answer.
const stepDownAfter = 200 * time.Millisecond

// checkDurabilitySwitch refuses a start whose durability differs from the
// one the node's data last ran with, while that data may hold events the
// new mode would not find: with cluster, the local segment files are a
// cache removed at start, so a directory that ran local (its log in
// <core.dir>/wal, its untiered events in its segment files) would lose
// them; with local, the node's log on objects would not be replayed.
func checkDurabilitySwitch(cfg serveConfig, node *cluster.Node, mode string) error {
	localLog := filepath.Join(cfg.Core.Dir, "wal")
	if mode == cluster.DurabilityCluster {
		if _, err := os.Stat(localLog); err == nil {
			return fmt.Errorf("%w: data directory %s ran with durability local (its write-ahead log is %s, its untiered events in its segment files), and durability cluster would rebuild its segments from the log on objects: start it with --cluster.durability local, or start a node on a new data directory",
				cluster.ErrRefused, cfg.Core.Dir, localLog)
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Cluster.Etcd.RequestTimeout)
	defer cancel()
	logs, err := node.WALLogs(ctx)
	if err != nil {
		return err
	}
	for _, l := range logs {
		if l.Node == node.NodeID() && !l.Empty {
			return fmt.Errorf("%w: this node's write-ahead log on objects (%s%s/) holds events (it ran with durability cluster), which durability local would not replay: start it with --cluster.durability cluster",
				cluster.ErrRefused, cfg.Cluster.WAL.Prefix, l.Node)
		}
	}
	return nil
}
