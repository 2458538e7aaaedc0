package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/silt-io/silt/core/catalog"
	"github.com/silt-io/silt/internal/etcdtest"
)

// singleNode makes a data directory with a pebble catalog of records:
// 300 small ones and 80 of 20 KiB, so that a copy in one transaction
// would pass both etcd's 128 operations and its 1.5 MiB.
func singleNode(t *testing.T) (dir string, records map[string][]byte) {
	t.Helper()
	dir = t.TempDir()
	cat, err := catalog.Open(filepath.Join(dir, "catalog"))
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	records = map[string][]byte{}
	for i := range 300 {
		records[fmt.Sprintf("core/s/acme/s%03d", i)] = []byte(fmt.Sprintf(`{"n":%d}`, i))
	}
	for i := range 80 {
		records[fmt.Sprintf("tier/c/acme/s%03d", i)] = bytes.Repeat([]byte{'a' + byte(i%26)}, 20<<10)
	}
	batch := map[string][]byte{}
	for k, v := range records {
		batch[k] = v
		if len(batch) == 50 {
			if err := cat.Commit(batch, nil); err != nil {
				t.Fatal(err)
			}
			batch = map[string][]byte{}
		}
	}
	if err := cat.Commit(batch, nil); err != nil {
		t.Fatal(err)
	}
	return dir, records
}

func TestInit(t *testing.T) {
	srv := etcdtest.Start(t)
	cfg := testConfig(srv, "/init/")
	dir, records := singleNode(t)
	var progress bytes.Buffer
	res, err := Init(cfg, dir, nil, InitOptions{SecretsKeyID: "abababababababab", Progress: &progress})
	if err != nil {
		t.Fatalf("init: %v\n%s", err, progress.String())
	}
	if res.Records != len(records) || !strings.Contains(progress.String(), fmt.Sprintf("%d/%d records", len(records), len(records))) {
		t.Fatalf("result %+v, progress:\n%s", res, progress.String())
	}
	if n := strings.Count(progress.String(), " records\n"); n < 4 {
		t.Errorf("%d transactions; 380 records of 1.6 MiB need at least 4 within etcd's limits:\n%s", n, progress.String())
	}
	// Every record is in etcd, byte for byte.
	cat, err := catalog.OpenEtcd(srv.Client(t), catalog.EtcdOptions{Prefix: "/init/catalog/"})
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	cat.Scan(nil, nil, func(k, v []byte) error {
		got++
		if !bytes.Equal(records[string(k)], v) {
			t.Errorf("record %s differs", k)
		}
		return nil
	})
	cat.Close()
	if got != len(records) {
		t.Fatalf("etcd holds %d records, want %d", got, len(records))
	}
	if _, err := os.Stat(filepath.Join(dir, "catalog")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the pebble catalog is still in place: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, SingleNodeBackup)); err != nil {
		t.Fatal(err)
	}
	// The directory now starts as the cluster's node, with the same ids
	// and the secrets key checked.
	n, err := Start(cfg, dir, nil, WithSecretsKeyID("abababababababab"))
	if err != nil {
		t.Fatal(err)
	}
	if n.ClusterID() != res.ClusterID || n.NodeID() != res.NodeID {
		t.Fatalf("started as %s/%s, init made %s/%s", n.ClusterID(), n.NodeID(), res.ClusterID, res.NodeID)
	}
	n.Close()
	if _, err := Start(cfg, t.TempDir(), nil, WithSecretsKeyID("cdcdcdcdcdcdcdcd")); !errors.Is(err, ErrRefused) {
		t.Fatalf("a node with another secrets key: %v", err)
	}
}

func TestInitRefusals(t *testing.T) {
	srv := etcdtest.Start(t)
	for name, tc := range map[string]struct {
		setup func(t *testing.T) (cfg Config, dir string)
		want  string
	}{
		"prefix holds a cluster": {
			setup: func(t *testing.T) (Config, string) {
				cfg := testConfig(srv, "/taken/")
				mustStart(t, cfg, t.TempDir()).Close()
				dir, _ := singleNode(t)
				return cfg, dir
			},
			want: "prefix /taken/ on etcd already holds cluster",
		},
		"directory already a cluster's": {
			setup: func(t *testing.T) (Config, string) {
				cfg := testConfig(srv, "/done/")
				dir, _ := singleNode(t)
				if _, err := Init(cfg, dir, nil, InitOptions{}); err != nil {
					t.Fatal(err)
				}
				return testConfig(srv, "/done2/"), dir
			},
			want: "already belongs to a cluster",
		},
		"no single node's catalog": {
			setup: func(t *testing.T) (Config, string) {
				return testConfig(srv, "/nocat/"), t.TempDir()
			},
			want: "holds no single node's catalog",
		},
		"prefix not empty": {
			setup: func(t *testing.T) (Config, string) {
				if _, err := srv.Client(t).Put(context.Background(), "/junk/catalog/x", "y"); err != nil {
					t.Fatal(err)
				}
				dir, _ := singleNode(t)
				return testConfig(srv, "/junk/"), dir
			},
			want: "holds 1 catalog records but no cluster",
		},
		"another directory's init under way": {
			setup: func(t *testing.T) (Config, string) {
				if _, err := srv.Client(t).Put(context.Background(), "/busy/cluster/init", `{"host":"elsewhere","data_dir":"/srv/silt"}`); err != nil {
					t.Fatal(err)
				}
				dir, _ := singleNode(t)
				return testConfig(srv, "/busy/"), dir
			},
			want: "is being initialised from data directory /srv/silt on host elsewhere",
		},
	} {
		t.Run(name, func(t *testing.T) {
			cfg, dir := tc.setup(t)
			before := state(t, srv, cfg.Etcd.Prefix, dir)
			_, err := Init(cfg, dir, nil, InitOptions{})
			if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("init: %v, want ErrRefused saying %q", err, tc.want)
			}
			if after := state(t, srv, cfg.Etcd.Prefix, dir); after != before {
				t.Errorf("refused init changed things:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

// An init that stopped half-way (its marker and some records in etcd)
// starts over when run again on the same directory.
func TestInitAgainAfterCrash(t *testing.T) {
	srv := etcdtest.Start(t)
	cfg := testConfig(srv, "/again/")
	dir, records := singleNode(t)
	abs, _ := filepath.Abs(dir)
	host, _ := os.Hostname()
	cli := srv.Client(t)
	ctx := context.Background()
	if _, err := cli.Put(ctx, "/again/cluster/init", fmt.Sprintf(`{"host":%q,"data_dir":%q}`, host, abs)); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, "/again/catalog/stale", "from the first try"); err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	res, err := Init(cfg, dir, nil, InitOptions{Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(progress.String(), "stopped half-way") || res.Records != len(records) {
		t.Fatalf("result %+v, progress:\n%s", res, progress.String())
	}
	resp, err := cli.Get(ctx, "/again/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range resp.Kvs {
		if k := string(kv.Key); k == "/again/catalog/stale" || k == "/again/cluster/init" {
			t.Errorf("%s left behind", k)
		}
	}
}
