package core_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/silt-io/silt/cluster"
	"github.com/silt-io/silt/core"
	"github.com/silt-io/silt/core/catalog"
	"github.com/silt-io/silt/core/wal"
	"github.com/silt-io/silt/core/wal/objwal"
	"github.com/silt-io/silt/internal/etcdtest"
	"github.com/silt-io/silt/internal/mototest"
	"github.com/silt-io/silt/tiering"
)

// tier2Ends stands in for tiering's catalog records: how far tier 2 holds
// each segment.
type tier2Ends struct {
	mu sync.Mutex
	m  map[string]uint64
}

func (e *tier2Ends) set(seg string, v uint64) {
	e.mu.Lock()
	e.m[seg] = v
	e.mu.Unlock()
}

func (e *tier2Ends) get(ref core.SegmentRef) (uint64, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.m[ref.Segment], nil
}

// openSharedStore opens a store in dir as node's, with its catalog on etcd
// and its write-ahead log on objects as a shared log (core.SharedWAL),
// adopting the logs of the nodes in adopt.
func openSharedStore(t *testing.T, s3Endpoint string, cli *clientv3.Client, dir, node string, adopt []string, ends *tier2Ends) *core.Store {
	t.Helper()
	cat, err := catalog.OpenEtcd(cli, catalog.EtcdOptions{Prefix: "/silt-test/catalog/", RequestTimeout: 10 * time.Second,
		MaxTxnOps: catalog.DefaultMaxTxnOps, MaxTxnBytes: catalog.DefaultMaxTxnBytes})
	if err != nil {
		t.Fatal(err)
	}
	detach := catalog.Attach(filepath.Join(dir, "catalog"), cat)
	defer detach()
	c := tiering.DefaultConfig().S3
	c.Endpoint, c.Bucket, c.PathStyle = s3Endpoint, "wal", true
	c.AccessKeyID, c.SecretAccessKey, c.Region = mototest.AccessKeyID, mototest.SecretAccessKey, mototest.Region
	s3b, err := tiering.OpenS3(c)
	if err != nil {
		t.Fatal(err)
	}
	open := func(id string, maxFrame int, log *zap.Logger) (*objwal.Objects, error) {
		return objwal.Open(objwal.Options{Store: cluster.WALObjects{B: s3b}, Fence: cluster.NewWALFence(cli, "/silt-test/wal/"+id+"/"),
			Prefix: "_wal/" + id + "/", MaxFrameBytes: maxFrame, Log: log})
	}
	cfg := core.DefaultConfig()
	cfg.Dir = dir
	st, err := core.OpenWith(cfg, nil, core.Options{
		WAL: func(maxFrame int, log *zap.Logger) (wal.Backend, error) { return open(node, maxFrame, log) },
		Shared: &core.SharedWAL{
			TieredEnd: ends.get,
			Adopt: func(maxFrame int, log *zap.Logger) ([]core.AdoptedLog, error) {
				var out []core.AdoptedLog
				for _, id := range adopt {
					be, err := open(id, maxFrame, log)
					if err != nil {
						return nil, err
					}
					out = append(out, core.AdoptedLog{Name: id, Backend: be})
				}
				return out, nil
			},
		},
	})
	if err != nil {
		cat.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		st.Close()
		cat.Close()
	})
	return st
}

// checkpointFrom reads the "from" of node's checkpoint in etcd.
func checkpointFrom(t *testing.T, cli *clientv3.Client, node string) string {
	t.Helper()
	resp, err := cli.Get(context.Background(), "/silt-test/wal/"+node+"/checkpoint")
	if err != nil || len(resp.Kvs) == 0 {
		t.Fatalf("checkpoint of %s: %v", node, err)
	}
	v := string(resp.Kvs[0].Value[1:])
	_, rest, _ := strings.Cut(v, `"from":`)
	from, _, _ := strings.Cut(rest, ",")
	return from
}

// TestSharedWALTieringBoundsCheckpoints: with a shared log, a checkpoint
// keeps every frame whose events tier 2 does not hold, although the local
// files are synced; a node on a fresh directory that adopts the log then
// serves the untiered events from it, starts the segments tier 2 holds
// wholly at their tier-2 end, and continues every segment's offsets.
func TestSharedWALTieringBoundsCheckpoints(t *testing.T) {
	moto := mototest.Start(t)
	if err := moto.CreateBucket("wal"); err != nil {
		t.Fatal(err)
	}
	etcd := etcdtest.Start(t)
	cli := etcd.Client(t)
	ends := &tier2Ends{m: map[string]uint64{}}
	ctx := context.Background()

	st := openSharedStore(t, moto.Endpoint, cli, t.TempDir(), "a", nil, ends)
	if _, err := st.CreateTenant(ctx, "acme", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateStream(ctx, "acme", "s", core.StreamConfig{Segments: 2}); err != nil {
		t.Fatal(err)
	}
	// 300 KiB a segment, in 30 batches: past the log's mark spacing.
	pad := strings.Repeat("x", 1000)
	for i := range 30 {
		for _, seg := range []string{"0", "1"} {
			var evs [][]byte
			for j := range 10 {
				evs = append(evs, []byte(fmt.Sprintf("%s-%d-%d-%s", seg, i, j, pad)))
			}
			if _, err := st.Append(ctx, core.AppendRequest{Tenant: "acme", Stream: "s", Segment: seg, Events: evs}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Tier 2 holds segment 0 up to 250 of its 300 events, and all of
	// segment 1; tiering truncates tier 1 accordingly.
	ends.set("0", 250)
	ends.set("1", 300)
	for seg, off := range map[string]uint64{"0": 250, "1": 300} {
		if err := st.TruncateBefore("acme", "s", seg, off); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	from := checkpointFrom(t, cli, "a")
	if from == "0" {
		t.Fatal("the checkpoint kept the whole log although tier 2 holds most of it")
	}

	// Another node, a fresh directory: it adopts a's log.
	bdir := t.TempDir()
	nb := openSharedStore(t, moto.Endpoint, cli, bdir, "b", []string{"a"}, ends)
	res, err := nb.Read(ctx, core.ReadRequest{Tenant: "acme", Stream: "s", Segment: "0", From: 250, MaxEvents: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Events) != 50 || res.Events[0].Offset != 250 || !strings.HasPrefix(string(res.Events[0].Data), "0-25-0-") ||
		!strings.HasPrefix(string(res.Events[49].Data), "0-29-9-") {
		t.Fatalf("segment 0 from 250 after the takeover: %d events, first %+v", len(res.Events), res.Events[0])
	}
	for seg, want := range map[string]uint64{"0": 300, "1": 300} {
		r, err := nb.Append(ctx, core.AppendRequest{Tenant: "acme", Stream: "s", Segment: seg, Events: [][]byte{[]byte("next")}})
		if err != nil {
			t.Fatal(err)
		}
		if r.FirstOffset != want {
			t.Fatalf("segment %s: the first append after the takeover got offset %d, want %d", seg, r.FirstOffset, want)
		}
	}
	if got := checkpointFrom(t, cli, "a"); got == from {
		t.Fatalf("a's log was not emptied after its adoption (checkpoint from %s)", got)
	}
	t.Logf("a's checkpoint started at %s of its log before the takeover", from)

	// b restarts on its directory: its segment files are removed and
	// rebuilt from its own log (which holds a's frames, copied) and tier 2.
	if err := nb.Close(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(bdir, "logs", "stale")
	if err := os.WriteFile(stale, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	nb = openSharedStore(t, moto.Endpoint, cli, bdir, "b", nil, ends)
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Fatalf("a file of the old segment files is still there after the restart: %v", err)
	}
	res, err = nb.Read(ctx, core.ReadRequest{Tenant: "acme", Stream: "s", Segment: "0", From: 250, MaxEvents: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Events) != 51 || res.Events[0].Offset != 250 || string(res.Events[50].Data) != "next" {
		t.Fatalf("segment 0 from 250 after b's restart: %d events", len(res.Events))
	}
	r, err := nb.Append(ctx, core.AppendRequest{Tenant: "acme", Stream: "s", Segment: "1", Events: [][]byte{[]byte("again")}})
	if err != nil || r.FirstOffset != 301 {
		t.Fatalf("segment 1 after b's restart: offset %d, %v; want 301", r.FirstOffset, err)
	}
}
