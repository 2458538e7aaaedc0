package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/silt-io/silt/internal/etcdtest"
)

// A single node's data directory becomes a cluster's first node with
// silt cluster init, and silt serve on etcd then serves the same tenants,
// streams, events, principals, tokens, S3 keys, grants and groups. The
// node lists itself in silt cluster nodes, and /readyz follows etcd.
func TestClusterInitFromSingleNode(t *testing.T) {
	etcd := etcdtest.Start(t)
	dir := t.TempDir()
	s3Addr := freeAddr(t)
	single := startServer(t, dir, "--s3.listen", s3Addr)

	// A single node is not in a cluster, and says so.
	if code, body := get(t, single, "/v1/cluster/nodes"); code != http.StatusNotFound || !strings.Contains(body, `"not_in_cluster"`) {
		t.Fatalf("cluster nodes on a single node: %d %s", code, body)
	}
	if r := single.run(t, "", "cluster", "nodes"); r.code != 1 || !strings.Contains(r.stderr, "not in cluster mode") {
		t.Fatalf("silt cluster nodes on a single node: exit %d, %s", r.code, r.stderr)
	}

	single.must(t, "", "tenant", "create", "acme")
	single.must(t, "", "stream", "create", "acme/orders", "--segments", "2")
	var events strings.Builder
	for i := range 200 {
		events.WriteString(strings.Repeat("x", i%7) + "event\n")
	}
	single.must(t, events.String(), "append", "acme/orders")
	single.must(t, "", "principal", "create", "reader")
	readerToken := strings.TrimSpace(single.must(t, "", "token", "create", "reader", "--label", "before-init").stdout)
	single.must(t, "", "grant", "reader", "read", "acme/orders")
	var key struct {
		ID     string `json:"access_key_id"`
		Secret string `json:"secret_access_key"`
	}
	if err := json.Unmarshal([]byte(single.must(t, "", "s3-key", "create", "root", "-o", "json").stdout), &key); err != nil || key.Secret == "" {
		t.Fatalf("s3 key: %+v %v", key, err)
	}
	single.must(t, "", "group", "create", "acme/billing", "--stream", "orders")
	snapshot := func(s *siltServer) map[string]string {
		out := map[string]string{}
		for _, args := range [][]string{
			{"tenant", "list"}, {"stream", "list", "acme"}, {"stream", "describe", "acme/orders"},
			{"principal", "list"}, {"token", "list", "reader"}, {"grants", "reader"},
			{"s3-key", "list", "root"}, {"group", "list", "acme"},
		} {
			out[strings.Join(args, " ")] = s.must(t, "", append(args, "-o", "json")...).stdout
		}
		out["read"] = s.must(t, "", "read", "acme/orders").stdout
		// The stream's tiering state moves on its own (pending bytes,
		// lag): the rest of the description is the catalog's.
		var desc map[string]any
		if err := json.Unmarshal([]byte(out["stream describe acme/orders"]), &desc); err != nil {
			t.Fatal(err)
		}
		delete(desc, "tiering")
		b, _ := json.Marshal(desc)
		out["stream describe acme/orders"] = string(b)
		return out
	}
	before := snapshot(single)
	single.stop()

	cluster := []string{"--cluster.etcd.endpoints", etcd.Endpoint, "--cluster.lease_ttl", "1s", "--cluster.etcd.request_timeout", "1s"}
	r := runSilt(t, invocation{args: append([]string{"cluster", "init", "--core.dir", "silt-data"}, cluster...), dir: dir})
	if r.code != 0 || !strings.Contains(r.stderr, "records") || !strings.Contains(r.stdout, "cluster ") {
		t.Fatalf("cluster init: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	t.Logf("init:\n%s%s", r.stderr, r.stdout)
	if _, err := os.Stat(filepath.Join(dir, "silt-data", "catalog")); !os.IsNotExist(err) {
		t.Fatalf("the single node's catalog is still in place: %v", err)
	}
	// Run again: the directory is the cluster's now.
	if r := runSilt(t, invocation{args: append([]string{"cluster", "init", "--core.dir", "silt-data"}, cluster...), dir: dir}); r.code != 1 || !strings.Contains(r.stderr, "already belongs to a cluster") {
		t.Fatalf("second init: exit %d %s", r.code, r.stderr)
	}

	// The S3 key went into etcd sealed, as it was in pebble.
	resp, err := etcd.Client(t).Get(context.Background(), "/silt/catalog/acl/s3/", clientv3.WithPrefix())
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("S3 key records in etcd: %v %v", resp, err)
	}
	if v := string(resp.Kvs[0].Value); strings.Contains(v, key.Secret) || !strings.Contains(v, `"key_id"`) {
		t.Fatalf("the S3 key's record in etcd is not sealed: %s", v)
	}

	node := startServer(t, dir, append([]string{"--s3.listen", s3Addr}, cluster...)...)
	after := snapshot(node)
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s differs after init:\nbefore %s\nafter  %s", k, v, after[k])
		}
	}
	if n := strings.Count(after["read"], "\n"); n != 200 {
		t.Errorf("read %d events after init, want 200", n)
	}
	// The reader's token and grant, and the sealed S3 secret, still work.
	rr := runSilt(t, invocation{args: []string{"read", "acme/orders"}, dir: t.TempDir(), env: []string{"SILT_SERVER=" + node.api, "SILT_TOKEN=" + readerToken}})
	if rr.code != 0 || strings.Count(rr.stdout, "\n") != 200 {
		t.Fatalf("reader after init: exit %d, %d lines, %s", rr.code, strings.Count(rr.stdout, "\n"), rr.stderr)
	}
	s3c := awss3.New(awss3.Options{
		Region: "us-east-1", BaseEndpoint: aws.String("http://" + s3Addr), UsePathStyle: true,
		Credentials:      credentials.NewStaticCredentialsProvider(key.ID, key.Secret, ""),
		RetryMaxAttempts: 1,
	})
	if _, err := s3c.ListObjectsV2(context.Background(), &awss3.ListObjectsV2Input{Bucket: aws.String("acme")}); err != nil {
		t.Fatalf("S3 with the key made before init: %v", err)
	}

	t.Run("cluster nodes", func(t *testing.T) {
		var cn struct {
			ClusterID string `json:"cluster_id"`
			Nodes     []struct {
				ID    string            `json:"id"`
				Self  bool              `json:"self"`
				Addrs map[string]string `json:"addrs"`
			} `json:"nodes"`
		}
		out := node.must(t, "", "cluster", "nodes", "-o", "json").stdout
		if err := json.Unmarshal([]byte(out), &cn); err != nil {
			t.Fatal(err)
		}
		if len(cn.Nodes) != 1 || !cn.Nodes[0].Self || cn.Nodes[0].Addrs["s3"] != s3Addr || "http://"+cn.Nodes[0].Addrs["api"] != node.api {
			t.Fatalf("nodes: %s", out)
		}
		id, err := os.ReadFile(filepath.Join(dir, "silt-data", "cluster.json"))
		if err != nil || !strings.Contains(string(id), cn.Nodes[0].ID) || !strings.Contains(string(id), cn.ClusterID) {
			t.Fatalf("cluster.json %s (%v) does not name node %s of cluster %s", id, err, cn.Nodes[0].ID, cn.ClusterID)
		}
		text := node.must(t, "", "cluster", "nodes").stdout
		if !strings.Contains(text, cn.Nodes[0].ID+" *") || !strings.Contains(text, "1 live node(s)") {
			t.Fatalf("text: %s", text)
		}
		// Admin only.
		rr := runSilt(t, invocation{args: []string{"cluster", "nodes"}, dir: t.TempDir(), env: []string{"SILT_SERVER=" + node.api, "SILT_TOKEN=" + readerToken}})
		if rr.code != 1 || !strings.Contains(rr.stderr, "forbidden") && !strings.Contains(rr.stderr, "403") {
			t.Fatalf("reader's cluster nodes: exit %d %s", rr.code, rr.stderr)
		}
	})

	t.Run("metrics", func(t *testing.T) {
		_, body := get(t, node, "/metrics")
		for _, want := range []string{`silt_etcd_request_duration_seconds_count{op="txn"}`, `silt_etcd_request_duration_seconds_count{op="range"}`,
			"silt_cluster_lease_up 1", "silt_cluster_etcd_reachable 1"} {
			if !strings.Contains(body, want) {
				t.Errorf("/metrics lacks %s", want)
			}
		}
	})

	t.Run("readyz follows etcd", func(t *testing.T) {
		if err := etcd.Pause(); err != nil {
			t.Fatal(err)
		}
		resumed := false
		defer func() {
			if !resumed {
				etcd.Resume()
			}
		}()
		var body string
		waitUntil(t, "/readyz to fail with etcd stopped", func() bool {
			var code int
			code, body = get(t, node, "/readyz")
			return code == http.StatusServiceUnavailable
		})
		if !strings.Contains(body, `"etcd_unreachable"`) || !strings.Contains(body, "unreachable since") {
			t.Fatalf("readyz body %s", body)
		}
		etcd.Resume()
		resumed = true
		waitUntil(t, "/readyz to pass with etcd back", func() bool {
			code, _ := get(t, node, "/readyz")
			return code == http.StatusOK
		})
	})
}

func get(t *testing.T, s *siltServer, path string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", s.api+path, nil)
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestAdvertised(t *testing.T) {
	host, _ := os.Hostname()
	for name, tc := range map[string]struct {
		configured string
		listening  net.Addr
		want       string
	}{
		"configured wins": {"db5:7070", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 7070}, "db5:7070"},
		"loopback":        {"", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 7070}, "127.0.0.1:7070"},
		"wildcard v4":     {"", &net.TCPAddr{IP: net.IPv4zero, Port: 9000}, net.JoinHostPort(host, "9000")},
		"wildcard v6":     {"", &net.TCPAddr{IP: net.IPv6unspecified, Port: 9870}, net.JoinHostPort(host, "9870")},
		"v6 address":      {"", &net.TCPAddr{IP: net.IPv6loopback, Port: 20490}, "[::1]:20490"},
	} {
		if got := advertised(tc.configured, tc.listening); got != tc.want {
			t.Errorf("%s: advertised %q, want %q", name, got, tc.want)
		}
	}
}
