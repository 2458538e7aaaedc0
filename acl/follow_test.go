package acl

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/silt-io/silt/core/catalog"
	"github.com/silt-io/silt/internal/etcdtest"
)

// nodes opens two Stores on two catalogs on one etcd prefix, as two silt
// nodes would: with one secrets key, without which neither could open
// the S3 secrets the other sealed.
func nodes(t *testing.T, srv *etcdtest.Server, prefix string) (a, b *Store) {
	t.Helper()
	key := newSecretsKey()
	open := func() *Store {
		cat, err := catalog.OpenEtcd(srv.Client(t), catalog.EtcdOptions{Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cat.Close() })
		s, err := Open(cat, WithSecretsKey(key))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		return s
	}
	return open(), open()
}

// stopsWithin polls works until it returns false, failing t if that takes
// longer than the issue's bound for a revocation to reach every node.
func stopsWithin(t *testing.T, what string, works func() bool) {
	t.Helper()
	const bound = time.Second
	start := time.Now()
	for works() {
		if time.Since(start) > bound {
			t.Fatalf("%s still works %v after it was revoked on another node", what, bound)
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Logf("%s stopped working after %v", what, time.Since(start))
}

// A change made through another node's Store reaches this node's caches:
// each case sets up through a, checks it works on a, changes it through b
// and polls a.
func TestFollowRemoteChanges(t *testing.T) {
	srv := etcdtest.Start(t)
	var appendOnStream = Resource{Tenant: "acme", Stream: "orders"}
	for name, tc := range map[string]func(t *testing.T, a, b *Store){
		"token revoked": func(t *testing.T, a, b *Store) {
			secret, info := mustToken(t, a, "alice")
			waitKnown(t, "token on b", func() bool { _, err := b.Authenticate(secret); return err == nil })
			if err := b.RevokeToken("alice", info.ID); err != nil {
				t.Fatal(err)
			}
			stopsWithin(t, "token", func() bool { _, err := a.Authenticate(secret); return err == nil })
		},
		"grant removed": func(t *testing.T, a, b *Store) {
			mustPrincipal(t, a, "bob")
			g, err := a.AddGrant("bob", Append, "acme/orders")
			if err != nil {
				t.Fatal(err)
			}
			// A Store reads its own writes at once, shared or not.
			if err := a.Authorize(Principal{Name: "bob"}, Append, appendOnStream); err != nil {
				t.Fatalf("own grant: %v", err)
			}
			waitKnown(t, "grant on b", func() bool { _, err := b.ListGrants("bob"); return err == nil })
			waitKnown(t, "grant on b", func() bool { gs, _ := b.ListGrants("bob"); return len(gs) == 1 })
			if err := b.RemoveGrant(g.ID); err != nil {
				t.Fatal(err)
			}
			stopsWithin(t, "grant", func() bool { return a.Authorize(Principal{Name: "bob"}, Append, appendOnStream) == nil })
			if err := a.Authorize(Principal{Name: "bob"}, Append, appendOnStream); !errors.Is(err, ErrDenied) {
				t.Errorf("after removal: %v, want ErrDenied", err)
			}
		},
		"principal deleted": func(t *testing.T, a, b *Store) {
			secret, _ := mustToken(t, a, "carol")
			if _, err := a.AddGrant("carol", Read, "acme"); err != nil {
				t.Fatal(err)
			}
			waitKnown(t, "carol on b", func() bool { gs, _ := b.ListGrants("carol"); return len(gs) == 1 })
			if err := b.DeletePrincipal("carol"); err != nil {
				t.Fatal(err)
			}
			stopsWithin(t, "deleted principal's token", func() bool { _, err := a.Authenticate(secret); return err == nil })
			if a.Visible(Principal{Name: "carol"}, "acme") {
				t.Error("deleted principal's grant still visible")
			}
			if _, err := a.GetPrincipal("carol"); !errors.Is(err, ErrNotFound) {
				t.Errorf("deleted principal: %v", err)
			}
		},
		"s3 key revoked": func(t *testing.T, a, b *Store) {
			mustPrincipal(t, a, "dave")
			id, _, err := a.IssueS3Key("dave")
			if err != nil {
				t.Fatal(err)
			}
			waitKnown(t, "key on b", func() bool { _, _, err := b.LookupS3Key(id); return err == nil })
			if err := b.RevokeS3Key(id); err != nil {
				t.Fatal(err)
			}
			stopsWithin(t, "s3 key", func() bool { _, _, err := a.LookupS3Key(id); return err == nil })
		},
		"grant added": func(t *testing.T, a, b *Store) {
			mustPrincipal(t, a, "erin")
			waitKnown(t, "erin on b", func() bool { _, err := b.GetPrincipal("erin"); return err == nil })
			if _, err := b.AddGrant("erin", Read, "acme"); err != nil {
				t.Fatal(err)
			}
			waitKnown(t, "remote grant on a", func() bool {
				return a.Authorize(Principal{Name: "erin"}, Read, Resource{Tenant: "acme"}) == nil
			})
		},
	} {
		t.Run(name, func(t *testing.T) {
			a, b := nodes(t, srv, "/"+t.Name()+"/")
			tc(t, a, b)
		})
	}
}

func mustPrincipal(t *testing.T, s *Store, name string) {
	t.Helper()
	if _, err := s.CreatePrincipal(name); err != nil {
		t.Fatal(err)
	}
}

func mustToken(t *testing.T, s *Store, principal string) (string, TokenInfo) {
	t.Helper()
	mustPrincipal(t, s, principal)
	secret, info, err := s.IssueToken(principal, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Authenticate(secret); err != nil {
		t.Fatalf("own token: %v", err)
	}
	return secret, info
}

// waitKnown waits for a change to reach the other node before a case
// acts on it there; the bound is generous, since only revocations have
// one to meet.
func waitKnown(t *testing.T, what string, ok func() bool) {
	t.Helper()
	end := time.Now().Add(30 * time.Second)
	for !ok() {
		if time.Now().After(end) {
			t.Fatalf("%s: not seen", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// A principal with more tokens and grants than etcd applies in one
// transaction is deleted whole, and no credential of it works after.
func TestDeletePrincipalPastOneTransaction(t *testing.T) {
	srv := etcdtest.Start(t)
	a, b := nodes(t, srv, "/"+t.Name()+"/")
	secret, _ := mustToken(t, a, "many")
	for i := range catalog.DefaultMaxTxnOps + 20 {
		if _, err := a.AddGrant("many", Read, fmt.Sprintf("acme/s%03d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.DeletePrincipal("many"); err != nil {
		t.Fatalf("delete a principal with %d grants on etcd: %v", catalog.DefaultMaxTxnOps+20, err)
	}
	for name, s := range map[string]*Store{"a": a, "b": b} {
		waitKnown(t, "the deletion on node "+name, func() bool {
			_, err := s.Authenticate(secret)
			return err != nil
		})
		if _, ok := s.lookupPrincipal("many"); ok {
			t.Errorf("node %s still has the principal", name)
		}
	}
	if gs, err := a.ListGrants("many"); err == nil && len(gs) > 0 {
		t.Errorf("%d grants outlived their principal", len(gs))
	}
}
