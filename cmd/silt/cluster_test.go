package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/silt-io/silt/acl"
	"github.com/silt-io/silt/core/catalog"
	"github.com/silt-io/silt/internal/etcdtest"
)

// A revocation written to etcd by another node — here a second catalog on
// the server's prefix with the cluster's secrets key — stops the token or
// grant at this server's API within the 1 s the cluster issue asks.
func TestClusterRevocationFromAnotherNode(t *testing.T) {
	etcd := etcdtest.Start(t)
	dir := t.TempDir()
	s := startServer(t, dir, "--cluster.etcd.endpoints", etcd.Endpoint)
	s.must(t, "", "tenant", "create", "acme")
	s.must(t, "", "stream", "create", "acme/orders")
	for _, p := range []string{"ann", "ben"} {
		s.must(t, "", "principal", "create", p)
		s.must(t, "", "grant", p, "read", "acme/orders")
	}
	annToken := strings.TrimSpace(s.must(t, "", "token", "create", "ann").stdout)
	benToken := strings.TrimSpace(s.must(t, "", "token", "create", "ben").stdout)

	key, err := os.ReadFile(filepath.Join(dir, "silt-data", "keys", "secrets.key"))
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.OpenEtcd(etcd.Client(t), catalog.EtcdOptions{Prefix: "/silt/catalog/"})
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	other, err := acl.Open(cat, acl.WithSecretsKey(key))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()

	status := func(token string) int {
		req, _ := http.NewRequest("GET", s.api+"/v1/tenants/acme/streams/orders", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for name, tc := range map[string]struct {
		token  string
		revoke func() error
		want   int
	}{
		"token revoked": {annToken, func() error {
			toks, err := other.ListTokens("ann")
			if err != nil || len(toks) != 1 {
				t.Fatalf("ann's tokens on the other node: %v %v", toks, err)
			}
			return other.RevokeToken("ann", toks[0].ID)
		}, http.StatusUnauthorized},
		"grant removed": {benToken, func() error {
			gs, err := other.ListGrants("ben")
			if err != nil || len(gs) != 1 {
				t.Fatalf("ben's grants on the other node: %v %v", gs, err)
			}
			return other.RemoveGrant(gs[0].ID)
		}, http.StatusForbidden},
	} {
		t.Run(name, func(t *testing.T) {
			if got := status(tc.token); got != http.StatusOK {
				t.Fatalf("before: %d", got)
			}
			if err := tc.revoke(); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			for {
				got := status(tc.token)
				if got == tc.want {
					t.Logf("refused %v after the revocation", time.Since(start))
					break
				}
				if got != http.StatusOK {
					t.Fatalf("status %d, want 200 then %d", got, tc.want)
				}
				if time.Since(start) > time.Second {
					t.Fatalf("still 200 %v after the revocation", time.Since(start))
				}
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
}
