package core_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
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

// objChildEnv carries "<s3 endpoint> <etcd endpoint> <data dir>" to the
// child of TestWALObjectsKillNine.
const objChildEnv = "SILT_CORE_WALOBJ_CHILD"

// TestWALObjectsKillNine: a store whose write-ahead log is on objects
// (moto) fenced in etcd, with its catalog on etcd, runs as a child process
// appending from 4 producers, and is killed with SIGKILL. A store opened
// on a fresh, empty data directory over the same etcd and objects serves
// every acknowledged event at its offset: the log alone rebuilt the
// segment files.
func TestWALObjectsKillNine(t *testing.T) {
	if spec := os.Getenv(objChildEnv); spec != "" {
		runObjChild(t, strings.Fields(spec))
		return
	}
	moto := mototest.Start(t)
	if err := moto.CreateBucket("wal"); err != nil {
		t.Fatal(err)
	}
	etcd := etcdtest.Start(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestWALObjectsKillNine$", "-test.count=1")
	cmd.Env = append(os.Environ(), objChildEnv+"="+moto.Endpoint+" "+etcd.Endpoint+" "+t.TempDir())
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	type ack struct {
		seg    string
		first  uint64
		events []string
	}
	var acks []ack
	sc := bufio.NewScanner(out)
	killed := false
	for sc.Scan() {
		var a ack
		var evs string
		if _, err := fmt.Sscanf(sc.Text(), "ack %s %d %s", &a.seg, &a.first, &evs); err != nil {
			t.Logf("child: %s", sc.Text())
			continue
		}
		a.events = strings.Split(evs, ",")
		acks = append(acks, a)
		if len(acks) == 120 && !killed {
			cmd.Process.Kill()
			killed = true
		}
	}
	cmd.Wait()
	if !killed {
		t.Fatalf("the child ended after %d acknowledgements without being killed", len(acks))
	}

	st := openObjStore(t, moto.Endpoint, etcd.Client(t), t.TempDir())
	for _, a := range acks {
		res, err := st.Read(context.Background(), core.ReadRequest{Tenant: "acme", Stream: "s", Segment: a.seg, From: a.first, MaxEvents: len(a.events)})
		if err != nil {
			t.Fatalf("read segment %s at %d: %v", a.seg, a.first, err)
		}
		var got []string
		for _, e := range res.Events {
			got = append(got, string(e.Data))
		}
		if strings.Join(got, ",") != strings.Join(a.events, ",") {
			t.Fatalf("segment %s at %d: read %q, acknowledged %q", a.seg, a.first, got, a.events)
		}
	}
	t.Logf("%d acknowledged batches read back from a fresh data directory", len(acks))
}

// openObjStore opens a store in dir with its catalog on etcd and its
// write-ahead log on objects, closed at the test's end.
func openObjStore(t *testing.T, s3Endpoint string, cli *clientv3.Client, dir string) *core.Store {
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
	cfg := core.DefaultConfig()
	cfg.Dir = dir
	st, err := core.OpenWith(cfg, nil, core.Options{WAL: func(maxFrame int, log *zap.Logger) (wal.Backend, error) {
		return objwal.Open(objwal.Options{
			Store: cluster.WALObjects{B: s3b}, Fence: cluster.NewWALFence(cli, "/silt-test/wal/n1/"),
			Prefix: "wal/n1/", MaxFrameBytes: maxFrame, Log: log,
		})
	}})
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

// runObjChild is the killed process: it creates the stream and appends
// batches of 3 events from 4 producers until killed, printing
// "ack <segment> <first offset> <events>" for each acknowledged batch.
func runObjChild(t *testing.T, spec []string) {
	if len(spec) != 3 {
		t.Fatalf("%s: want 3 fields, got %q", objChildEnv, spec)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{spec[1]}, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	st := openObjStore(t, spec[0], cli, spec[2])
	ctx := context.Background()
	if _, err := st.CreateTenant(ctx, "acme", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateStream(ctx, "acme", "s", core.StreamConfig{Segments: 2}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				evs := []string{fmt.Sprintf("g%d-%d-a", g, i), fmt.Sprintf("g%d-%d-b", g, i), fmt.Sprintf("g%d-%d-c", g, i)}
				req := core.AppendRequest{Tenant: "acme", Stream: "s", RoutingKey: fmt.Sprint("key", g)}
				for _, e := range evs {
					req.Events = append(req.Events, []byte(e))
				}
				res, err := st.Append(ctx, req)
				if err != nil {
					fmt.Fprintln(os.Stderr, "child append:", err)
					return
				}
				mu.Lock()
				fmt.Printf("ack %s %d %s\n", res.Segment, res.FirstOffset, strings.Join(evs, ","))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	t.Fatal("every producer stopped before the kill")
}
