package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/silt-io/silt/internal/config"
	"github.com/silt-io/silt/internal/etcdtest"
)

func testConfig(srv *etcdtest.Server, prefix string) Config {
	c := DefaultConfig()
	c.Etcd.Endpoints = []string{srv.Endpoint}
	c.Etcd.Prefix = prefix
	c.Etcd.LockTTL = 2 * time.Second
	return c
}

// state is everything a refused start must leave as it was: the keys
// under the prefix and the data directory's files.
func state(t *testing.T, srv *etcdtest.Server, prefix, dir string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := srv.Client(t).Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, kv := range resp.Kvs {
		keys = append(keys, fmt.Sprintf("%s=%s", kv.Key, kv.Value))
	}
	var files []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil {
			b, _ := os.ReadFile(p)
			files = append(files, p+":"+string(b))
		}
		return nil
	})
	return fmt.Sprint(keys, files)
}

func mustStart(t *testing.T, cfg Config, dir string, opts ...Option) *Node {
	t.Helper()
	n, err := Start(cfg, dir, nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

func TestStartRefusals(t *testing.T) {
	srv := etcdtest.Start(t)
	for name, tc := range map[string]struct {
		// setup prepares the data dir and etcd and returns the config
		// the refused node starts with.
		setup func(t *testing.T, dir string) Config
		opts  []Option
		want  string
	}{
		"another node serves the prefix": {
			setup: func(t *testing.T, dir string) Config {
				cfg := testConfig(srv, "/lock/")
				mustStart(t, cfg, t.TempDir())
				return cfg
			},
			want: "another silt node serves prefix /lock/ (host ",
		},
		"data dir of another cluster": {
			setup: func(t *testing.T, dir string) Config {
				a := mustStart(t, testConfig(srv, "/a/"), dir)
				a.Close()
				b := mustStart(t, testConfig(srv, "/b/"), t.TempDir())
				b.Close()
				return testConfig(srv, "/b/")
			},
			want: "but prefix /b/ on etcd is cluster",
		},
		"prefix holds no cluster": {
			setup: func(t *testing.T, dir string) Config {
				a := mustStart(t, testConfig(srv, "/c/"), dir)
				a.Close()
				return testConfig(srv, "/empty/")
			},
			want: "etcd holds no cluster under prefix /empty/",
		},
		"single node's data dir": {
			setup: func(t *testing.T, dir string) Config {
				if err := os.MkdirAll(filepath.Join(dir, "catalog"), 0o700); err != nil {
					t.Fatal(err)
				}
				return testConfig(srv, "/d/")
			},
			want: "holds a single node's catalog",
		},
		"another secrets key": {
			setup: func(t *testing.T, dir string) Config {
				cfg := testConfig(srv, "/keys/")
				n, err := Start(cfg, t.TempDir(), nil, WithSecretsKeyID("1111111111111111"))
				if err != nil {
					t.Fatal(err)
				}
				if err := n.RecordSecretsKeyID("1111111111111111"); err != nil {
					t.Fatal(err)
				}
				n.Close()
				return cfg
			},
			opts: []Option{WithSecretsKeyID("2222222222222222")},
			want: "seals S3 secrets with secrets key 1111111111111111, but this node's key (auth.secrets_key_file) is 2222222222222222",
		},
		"no secrets key in a cluster that has one": {
			setup: func(t *testing.T, dir string) Config {
				cfg := testConfig(srv, "/nokey/")
				n, err := Start(cfg, t.TempDir(), nil, WithSecretsKeyID("1111111111111111"))
				if err != nil {
					t.Fatal(err)
				}
				if err := n.RecordSecretsKeyID("1111111111111111"); err != nil {
					t.Fatal(err)
				}
				n.Close()
				return cfg
			},
			opts: []Option{WithSecretsKeyID("")},
			want: "this node has no secrets key file: copy the cluster's key file",
		},
		"damaged identity": {
			setup: func(t *testing.T, dir string) Config {
				if err := os.WriteFile(filepath.Join(dir, IdentityFile), []byte("{"), 0o600); err != nil {
					t.Fatal(err)
				}
				return testConfig(srv, "/e/")
			},
			want: "is not a cluster identity",
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := tc.setup(t, dir)
			before := state(t, srv, cfg.Etcd.Prefix, dir)
			n, err := Start(cfg, dir, nil, tc.opts...)
			if err == nil {
				n.Close()
				t.Fatal("start not refused")
			}
			if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("start: %v, want ErrRefused saying %q", err, tc.want)
			}
			if after := state(t, srv, cfg.Etcd.Prefix, dir); after != before {
				t.Errorf("refused start changed things:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

func TestIdentityAndLockLifecycle(t *testing.T) {
	srv := etcdtest.Start(t)
	cfg := testConfig(srv, "/life/")
	dir := t.TempDir()
	a := mustStart(t, cfg, dir)
	id := a.ClusterID()
	if len(id) != 32 {
		t.Fatalf("cluster id %q", id)
	}
	if err := CheckSingleNode(dir); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), id) {
		t.Errorf("single-node start on a cluster's data dir: %v", err)
	}
	if err := CheckSingleNode(t.TempDir()); err != nil {
		t.Errorf("fresh dir: %v", err)
	}
	if _, err := Start(cfg, t.TempDir(), nil); !errors.Is(err, ErrRefused) {
		t.Fatalf("second node while the first serves: %v", err)
	}
	a.Close()
	// The lock is released at Close: the same data dir starts again and
	// finds the same cluster; so does a new node's.
	b := mustStart(t, cfg, dir)
	if b.NodeID() != a.NodeID() {
		t.Errorf("node id after restart %s, want %s", b.NodeID(), a.NodeID())
	}
	if b.ClusterID() != id {
		t.Errorf("cluster id after restart %s, want %s", b.ClusterID(), id)
	}
	b.Close()
	c := mustStart(t, cfg, t.TempDir())
	if c.ClusterID() != id {
		t.Errorf("new node's cluster id %s, want %s", c.ClusterID(), id)
	}
}

// A node killed without Close holds the lock until its lease expires;
// then another may serve.
func TestLockFreedByLeaseExpiry(t *testing.T) {
	srv := etcdtest.Start(t)
	cfg := testConfig(srv, "/expiry/")
	a := mustStart(t, cfg, t.TempDir())
	// Stop keeping the lease alive without releasing anything, as a
	// killed process would.
	a.cancel()
	<-a.done
	a.sess.Orphan()
	deadline := time.Now().Add(30 * time.Second)
	for {
		n, err := Start(cfg, t.TempDir(), nil)
		if err == nil {
			n.Close()
			return
		}
		if !errors.Is(err, ErrRefused) || time.Now().After(deadline) {
			t.Fatalf("start after the first node's lease expired: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestEtcdDownAtStart(t *testing.T) {
	srv := etcdtest.Start(t)
	cfg := testConfig(srv, "/down/")
	cfg.Etcd.DialTimeout = 500 * time.Millisecond
	srv.Stop()
	_, err := Start(cfg, t.TempDir(), nil)
	if err == nil || !strings.Contains(err.Error(), "cannot reach etcd") {
		t.Fatalf("start with etcd down: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	for name, tc := range map[string]struct {
		edit func(*EtcdConfig)
		want string
		// cfg edits the rest of the section.
		cfg func(*Config)
	}{
		"default":           {func(*EtcdConfig) {}, "", nil},
		"endpoint no url":   {func(e *EtcdConfig) { e.Endpoints = []string{"127.0.0.1:2379"} }, "not an http:// or https:// URL", nil},
		"prefix no slash":   {func(e *EtcdConfig) { e.Prefix = "silt" }, "must start and end with /", nil},
		"prefix root":       {func(e *EtcdConfig) { e.Prefix = "/" }, "must start and end with /", nil},
		"two passwords":     {func(e *EtcdConfig) { e.Username, e.Password, e.PasswordFile = "u", "p", "f" }, "both set", nil},
		"password no user":  {func(e *EtcdConfig) { e.Password = "p" }, "needs cluster.etcd.username", nil},
		"cert no key":       {func(e *EtcdConfig) { e.CertFile = "c" }, "go together", nil},
		"zero timeout":      {func(e *EtcdConfig) { e.RequestTimeout = 0 }, "must be positive", nil},
		"tiny txn":          {func(e *EtcdConfig) { e.MaxTxnOps = 0 }, "max_txn_ops", nil},
		"lease under 1s":    {func(*EtcdConfig) {}, "cluster.lease_ttl: 500ms must be a whole number of seconds", func(c *Config) { c.LeaseTTL = 500 * time.Millisecond }},
		"lease fraction":    {func(*EtcdConfig) {}, "cluster.lease_ttl: 1.5s", func(c *Config) { c.LeaseTTL = 1500 * time.Millisecond }},
		"advertise no port": {func(*EtcdConfig) {}, `cluster.advertise.s3: "db5" is not host:port`, func(c *Config) { c.Advertise.S3 = "db5" }},
		"advertise port 0":  {func(*EtcdConfig) {}, `cluster.advertise.api: "db5:0"`, func(c *Config) { c.Advertise.API = "db5:0" }},
		"advertise ok":      {func(*EtcdConfig) {}, "", func(c *Config) { c.Advertise.NFS, c.Advertise.WebHDFS = "db5:2049", "[::1]:9870" }},
		"durability typo":   {func(*EtcdConfig) {}, `cluster.durability: "clustr"`, func(c *Config) { c.Durability = "clustr" }},
		"durability local":  {func(*EtcdConfig) {}, "", func(c *Config) { c.Durability = DurabilityLocal }},
		"flush too long":    {func(*EtcdConfig) {}, "cluster.wal.flush_interval: 2s", func(c *Config) { c.WAL.FlushInterval = 2 * time.Second }},
		"flush bytes < 0":   {func(*EtcdConfig) {}, "cluster.wal.flush_bytes", func(c *Config) { c.WAL.FlushBytes = -1 }},
		"wal prefix tenant": {func(*EtcdConfig) {}, `cluster.wal.prefix: "wal/" must start with _`, func(c *Config) { c.WAL.Prefix = "wal/" }},
	} {
		c := DefaultConfig()
		tc.edit(&c.Etcd)
		if tc.cfg != nil {
			tc.cfg(&c)
		}
		err := c.Validate()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
}

// The password never leaves the process: not in a config dump, not in
// an error.
func TestPasswordNotPrinted(t *testing.T) {
	const pw = "s3cr3t-etcd-password"
	var cfg struct {
		Cluster Config `koanf:"cluster"`
	}
	cfg.Cluster = DefaultConfig()
	if _, err := config.Load(&cfg, nil, []string{"SILT_CLUSTER_ETCD_PASSWORD=" + pw, "SILT_CLUSTER_ETCD_USERNAME=u"}); err != nil {
		t.Fatal(err)
	}
	if cfg.Cluster.Etcd.Password != pw {
		t.Fatalf("password from the environment not loaded: %q", cfg.Cluster.Etcd.Password)
	}
	out, err := config.Dump(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), pw) || !strings.Contains(string(out), config.Redacted) {
		t.Errorf("config dump shows the password:\n%s", out)
	}
	f := filepath.Join(t.TempDir(), "pw")
	os.WriteFile(f, []byte(pw+"\n"), 0o600)
	e := EtcdConfig{PasswordFile: f}
	if got, err := e.password(); err != nil || got != pw {
		t.Errorf("password from file: %q %v", got, err)
	}
	cfg.Cluster.Etcd.Endpoints = []string{"http://127.0.0.1:1"}
	cfg.Cluster.Etcd.DialTimeout = 200 * time.Millisecond
	if _, err := Start(cfg.Cluster, t.TempDir(), nil); err == nil || strings.Contains(err.Error(), pw) {
		t.Errorf("start error shows the password or none came: %v", err)
	}
}

// A session that ended while its lease lives on (etcd restarted and
// extended it) is the node's own: it takes the lock again, not loses it.
func TestLockRetakenAfterSessionEnds(t *testing.T) {
	srv := etcdtest.Start(t)
	cfg := testConfig(srv, "/retake/")
	a := mustStart(t, cfg, t.TempDir())
	old := a.sess.Lease()
	a.sess.Orphan() // ends the session, leaves the lease and its keys
	deadline := time.Now().Add(30 * time.Second)
	for a.sessionLease() == old {
		if a.Err() != nil || time.Now().After(deadline) {
			t.Fatalf("lock not re-taken: %v", a.Err())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := Start(cfg, t.TempDir(), nil); !errors.Is(err, ErrRefused) {
		t.Fatalf("a second node after the first re-took its lock: %v", err)
	}
	if err := a.Err(); err != nil {
		t.Fatalf("node lost its lock: %v", err)
	}
}

// When another node took the lock while this one's lease was gone, this
// one is told to stop.
func TestLockLost(t *testing.T) {
	srv := etcdtest.Start(t)
	cfg := testConfig(srv, "/lost/")
	cli := srv.Client(t)
	a := mustStart(t, cfg, t.TempDir())
	// etcd expiring a's lease, as it does when a is cut off past its
	// TTL; b starts at once, before a notices. a may still win the race
	// (it notices within a third of the TTL): then try again.
	for range 5 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := cli.Revoke(ctx, a.sessionLease())
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		b, err := Start(cfg, t.TempDir(), nil)
		if errors.Is(err, ErrRefused) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		select {
		case <-a.Lost():
		case <-time.After(30 * time.Second):
			t.Fatal("the node whose lock another took was not told")
		}
		if err := a.Err(); err == nil || !strings.Contains(err.Error(), "lost the serving lock") {
			t.Fatalf("Err: %v", err)
		}
		return
	}
	t.Fatal("the first node re-took its lock before a second could start, five times")
}

// TLS to etcd: the configured CA verifies etcd's certificate; without it
// (the system's roots) the start fails, saying why, within dial_timeout.
func TestStartTLS(t *testing.T) {
	srv := etcdtest.StartWith(t, etcdtest.Options{TLS: true})
	for name, tc := range map[string]struct {
		ca   string
		want string
	}{
		"with the CA":    {srv.CAFile, ""},
		"without the CA": {"", "cannot reach etcd"},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig(srv, "/tls/")
			cfg.Etcd.CAFile = tc.ca
			cfg.Etcd.DialTimeout = time.Second
			n, err := Start(cfg, t.TempDir(), nil)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				n.Close()
				return
			}
			if err == nil {
				n.Close()
				t.Fatal("started without trusting etcd's certificate")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("start: %v, want %q", err, tc.want)
			}
		})
	}
}

// etcd with authentication: the user and password (from a file) let the
// node in; a wrong password is refused without the error showing it.
func TestStartAuth(t *testing.T) {
	srv := etcdtest.Start(t)
	cli := srv.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const pw = "etcd-root-password"
	for _, step := range []func() error{
		func() error { _, err := cli.UserAdd(ctx, "root", pw); return err },
		func() error { _, err := cli.UserGrantRole(ctx, "root", "root"); return err },
		func() error { _, err := cli.AuthEnable(ctx); return err },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	for name, tc := range map[string]struct {
		password string
		ok       bool
	}{
		"right password": {pw, true},
		"wrong password": {"not-" + pw, false},
	} {
		t.Run(name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "pw")
			if err := os.WriteFile(f, []byte(tc.password+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg := testConfig(srv, "/auth/")
			cfg.Etcd.Username, cfg.Etcd.PasswordFile = "root", f
			n, err := Start(cfg, t.TempDir(), nil)
			if tc.ok {
				if err != nil {
					t.Fatal(err)
				}
				n.Close()
				return
			}
			if err == nil {
				n.Close()
				t.Fatal("started with a wrong password")
			}
			t.Logf("refused: %v", err)
			if strings.Contains(err.Error(), tc.password) {
				t.Errorf("error shows the password: %v", err)
			}
		})
	}
}

// The first key recorded is the cluster's; another is refused, the same
// one accepted again. Start alone records nothing: only silt serve, once
// the key opened the catalog's sealed secrets, records it.
func TestSecretsKeyRecord(t *testing.T) {
	srv := etcdtest.Start(t)
	cfg := testConfig(srv, "/record/")
	n := mustStart(t, cfg, t.TempDir())
	resp, err := srv.Client(t).Get(context.Background(), "/record/cluster/secrets_key_id")
	if err != nil || len(resp.Kvs) != 0 {
		t.Fatalf("Start recorded a key: %v %v", resp.Kvs, err)
	}
	n.Close()
	n = mustStart(t, cfg, t.TempDir(), WithSecretsKeyID("aaaaaaaaaaaaaaaa"))
	if err := n.RecordSecretsKeyID("aaaaaaaaaaaaaaaa"); err != nil {
		t.Fatal(err)
	}
	if err := n.RecordSecretsKeyID("aaaaaaaaaaaaaaaa"); err != nil {
		t.Fatalf("the same key again: %v", err)
	}
	if err := n.RecordSecretsKeyID("bbbbbbbbbbbbbbbb"); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "every node of a cluster needs the same key file") {
		t.Fatalf("another key: %v", err)
	}
}

// An empty durability is cluster on an S3 tier 2 and local otherwise; a
// set one is kept.
func TestEffectiveDurability(t *testing.T) {
	for _, tc := range []struct{ set, backend, want string }{
		{"", "s3", DurabilityCluster},
		{"", "fs", DurabilityLocal},
		{"", "hdfs", DurabilityLocal},
		{DurabilityLocal, "s3", DurabilityLocal},
		{DurabilityCluster, "fs", DurabilityCluster},
	} {
		c := DefaultConfig()
		c.Durability = tc.set
		if got := c.EffectiveDurability(tc.backend); got != tc.want {
			t.Errorf("durability %q on %s: %s, want %s", tc.set, tc.backend, got, tc.want)
		}
	}
}
