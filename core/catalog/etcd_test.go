package catalog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/btree"

	"github.com/silt-io/silt/internal/etcdtest"
)

func openTestEtcd(t *testing.T, srv *etcdtest.Server, opts EtcdOptions) *Catalog {
	t.Helper()
	c, err := OpenEtcd(srv.Client(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// recorder keeps what a Watch reported.
type recorder struct {
	mu  sync.Mutex
	got []string
}

func (r *recorder) fn(key string, value []byte, present bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if present {
		r.got = append(r.got, "put "+key+"="+string(value))
	} else {
		r.got = append(r.got, "del "+key)
	}
}

func (r *recorder) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// Two catalogs on one prefix are two nodes: what one commits, the other
// reads from its mirror and its watchers hear of, in commit order.
func TestEtcdSecondCatalogSeesChanges(t *testing.T) {
	srv := sharedEtcd(t)
	opts := EtcdOptions{Prefix: "/test/" + t.Name() + "/"}
	a, b := openTestEtcd(t, srv, opts), openTestEtcd(t, srv, opts)
	if !a.Shared() {
		t.Fatal("etcd catalog not Shared")
	}
	var rec recorder
	stop := a.Watch("acl/", rec.fn)
	defer stop()

	if err := b.Commit(map[string][]byte{"acl/t/1": []byte("one"), "core/x": []byte("x")}, nil); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete("acl/t/1"); err != nil {
		t.Fatal(err)
	}
	if err := b.DeletePrefix("core/"); err != nil {
		t.Fatal(err)
	}
	want := "[put acl/t/1=one del acl/t/1]"
	waitFor(t, "watch on the first catalog", 10*time.Second, func() bool { return fmt.Sprint(rec.list()) == want })
	// A Commit returns after this node's watchers have its changes.
	if err := a.Set("acl/t/2", []byte("two")); err != nil {
		t.Fatal(err)
	}
	if got := rec.list(); got[len(got)-1] != "put acl/t/2=two" {
		t.Errorf("own commit not reported before it returned: %v", got)
	}
	waitFor(t, "b's mirror", 10*time.Second, func() bool {
		v, ok, _ := b.Get([]byte("acl/t/2"))
		return ok && string(v) == "two"
	})
	if _, ok, _ := a.Get([]byte("core/x")); ok {
		t.Error("key deleted by the other catalog's DeletePrefix still in the mirror")
	}
	stop()
	if err := b.Set("acl/t/3", nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a's mirror", 10*time.Second, func() bool { _, ok, _ := a.Get([]byte("acl/t/3")); return ok })
	if got := rec.list(); slices.Contains(got, "put acl/t/3=") {
		t.Errorf("watch called after stop: %v", got)
	}
}

// The prefix is a fence: keys outside it are neither read nor written.
func TestEtcdPrefixIsolation(t *testing.T) {
	srv := sharedEtcd(t)
	a := openTestEtcd(t, srv, EtcdOptions{Prefix: "/test/" + t.Name() + "/a/"})
	b := openTestEtcd(t, srv, EtcdOptions{Prefix: "/test/" + t.Name() + "/ab/"})
	if err := b.Set("k", []byte("b")); err != nil {
		t.Fatal(err)
	}
	if err := a.DeletePrefix(""); err != nil {
		t.Fatal(err)
	}
	if err := a.Set("k", []byte("a")); err != nil {
		t.Fatal(err)
	}
	if v, _, _ := b.Get([]byte("k")); string(v) != "b" {
		t.Errorf("b's key after a wrote and cleared its own prefix: %q", v)
	}
	if got := fmt.Sprint(scanAll(t, a, "", "")); got != "[k=a]" {
		t.Errorf("a sees %s", got)
	}
}

func TestEtcdCommitTooLarge(t *testing.T) {
	srv := sharedEtcd(t)
	c := openTestEtcd(t, srv, EtcdOptions{Prefix: "/test/" + t.Name() + "/"})
	many := map[string][]byte{}
	for i := range DefaultMaxTxnOps + 1 {
		many[fmt.Sprintf("k/%03d", i)] = []byte("v")
	}
	for name, tc := range map[string]struct {
		set map[string][]byte
		del []string
	}{
		"too many keys": {set: many},
		"too many bytes": {set: map[string][]byte{
			"a": bytes.Repeat([]byte("x"), 1<<20), "b": bytes.Repeat([]byte("x"), 1<<20),
		}},
		"too many deletes": {del: slices.Collect(func(yield func(string) bool) {
			for k := range many {
				if !yield(k) {
					return
				}
			}
		})},
	} {
		err := c.Commit(tc.set, tc.del)
		if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "max-txn-ops") {
			t.Errorf("%s: %v, want ErrTooLarge naming etcd's limits", name, err)
		}
	}
	if got := scanAll(t, c, "", ""); len(got) != 0 {
		t.Errorf("a refused commit left %d keys", len(got))
	}
	// DeletePrefix is one range delete, whatever it covers.
	for i := range 3 * DefaultMaxTxnOps {
		if err := c.Set(fmt.Sprintf("r/%04d", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.DeletePrefix("r/"); err != nil {
		t.Fatal(err)
	}
	if got := scanAll(t, c, "r/", ""); len(got) != 0 {
		t.Errorf("%d keys left by DeletePrefix", len(got))
	}
}

// With etcd down, commits fail with ErrUnavailable once the request
// timeout has passed, reads go on from the mirror, and when etcd is back
// the mirror catches up with what another node wrote meanwhile.
func TestEtcdDown(t *testing.T) {
	srv := etcdtest.Start(t)
	opts := EtcdOptions{Prefix: "/test/", RequestTimeout: 300 * time.Millisecond}
	a, b := openTestEtcd(t, srv, opts), openTestEtcd(t, srv, opts)
	if err := a.Set("k", []byte("before")); err != nil {
		t.Fatal(err)
	}
	var rec recorder
	defer a.Watch("", rec.fn)()
	srv.Stop()
	for name, err := range map[string]error{
		"commit":        a.Set("k", []byte("during")),
		"delete prefix": a.DeletePrefix("k"),
	} {
		if !errors.Is(err, ErrUnavailable) {
			t.Errorf("%s with etcd down: %v, want ErrUnavailable", name, err)
		}
	}
	if v, ok, err := a.Get([]byte("k")); err != nil || !ok || string(v) != "before" {
		t.Errorf("read from the mirror with etcd down: %q %v %v", v, ok, err)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	// b's client reconnects on its own; its commit may need a retry
	// while it does.
	waitFor(t, "commit after etcd restarted", 30*time.Second, func() bool { return b.Set("k", []byte("after")) == nil })
	waitFor(t, "a's mirror after etcd restarted", 30*time.Second, func() bool {
		v, _, _ := a.Get([]byte("k"))
		return string(v) == "after"
	})
	if got := rec.list(); !slices.Contains(got, "put k=after") {
		t.Errorf("watch after etcd restarted: %v", got)
	}
}

// After a reload the watchers hear of every key that differs.
func TestDiff(t *testing.T) {
	tree := func(kv ...string) *btree.BTreeG[item] {
		t := btree.NewG(4, itemLess)
		for i := 0; i < len(kv); i += 2 {
			t.ReplaceOrInsert(item{key: kv[i], value: []byte(kv[i+1])})
		}
		return t
	}
	for name, tc := range map[string]struct {
		old, cur *btree.BTreeG[item]
		want     string
	}{
		"same":      {tree("a", "1"), tree("a", "1"), "[]"},
		"added":     {tree("a", "1"), tree("a", "1", "b", "2"), "[{b [50] true}]"},
		"removed":   {tree("a", "1", "b", "2"), tree("b", "2"), "[{a [] false}]"},
		"changed":   {tree("a", "1"), tree("a", "2"), "[{a [50] true}]"},
		"from none": {tree(), tree("a", "1"), "[{a [49] true}]"},
		"to none":   {tree("a", "1", "c", "3"), tree(), "[{a [] false} {c [] false}]"},
	} {
		if got := fmt.Sprint(diff(tc.old, tc.cur)); got != tc.want {
			t.Errorf("%s: diff = %s, want %s", name, got, tc.want)
		}
	}
}

// A watch that starts at a compacted revision ends at once; the mirror
// reloads and the watchers hear of what changed meanwhile.
func TestEtcdReloadAfterCompaction(t *testing.T) {
	srv := sharedEtcd(t)
	prefix := "/test/" + t.Name() + "/"
	cli := srv.Client(t)
	ctx, cancel := contextTimeout()
	defer cancel()
	if _, err := cli.Put(ctx, prefix+"gone", "x"); err != nil {
		t.Fatal(err)
	}
	var rec recorder
	a, err := openEtcd(cli, EtcdOptions{Prefix: prefix}, func() {
		if _, err := cli.Delete(ctx, prefix+"gone"); err != nil {
			t.Error(err)
		}
		if _, err := cli.Put(ctx, prefix+"new", "y"); err != nil {
			t.Error(err)
		}
		srv.Compact(t)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	defer a.Watch("", rec.fn)()
	waitFor(t, "mirror after compaction", 30*time.Second, func() bool {
		_, gone, _ := a.Get([]byte("gone"))
		_, added, _ := a.Get([]byte("new"))
		return !gone && added
	})
	if n := a.b.(*etcdBackend).reloads.Load(); n == 0 {
		t.Error("mirror caught up without a reload")
	}
	// The watcher may have been registered after the reload; what it
	// must never see is a stale value.
	for _, got := range rec.list() {
		if got == "put gone=x" {
			t.Errorf("watch reported the deleted key: %v", rec.list())
		}
	}
}

// etcd restarted under a catalog: its watch resumes or reloads, and a
// change made after the restart reaches the mirror and the watchers.
func TestEtcdRestart(t *testing.T) {
	srv := etcdtest.Start(t)
	a := openTestEtcd(t, srv, EtcdOptions{Prefix: "/test/"})
	var rec recorder
	defer a.Watch("", rec.fn)()
	if err := a.Set("k", []byte("1")); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	cli := srv.Client(t)
	ctx, cancel := contextTimeout()
	defer cancel()
	if _, err := cli.Put(ctx, "/test/k", "2"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "mirror after restart", 30*time.Second, func() bool { v, _, _ := a.Get([]byte("k")); return string(v) == "2" })
	if got := rec.list(); !slices.Contains(got, "put k=2") {
		t.Errorf("watch after restart: %v", got)
	}
}

func TestAttach(t *testing.T) {
	srv := sharedEtcd(t)
	c := openTestEtcd(t, srv, EtcdOptions{Prefix: "/test/" + t.Name() + "/"})
	dir := t.TempDir()
	detach := Attach(filepath.Join(dir, "catalog"), c)
	defer detach()
	got, err := Open(filepath.Join(dir, ".", "catalog"))
	if err != nil {
		t.Fatal(err)
	}
	if got != c {
		t.Fatal("Open did not return the attached catalog")
	}
	// Only once: a second Open is pebble's again.
	p, err := Open(filepath.Join(dir, "catalog"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p == c || p.Shared() {
		t.Fatal("attached catalog returned twice")
	}
}

// A catalog larger than one page of load comes back whole, at one
// revision.
func TestEtcdLoadPages(t *testing.T) {
	srv := sharedEtcd(t)
	opts := EtcdOptions{Prefix: "/test/" + t.Name() + "/"}
	a := openTestEtcd(t, srv, opts)
	const n = 2*loadPage + 7
	for i := 0; i < n; i += 100 {
		set := map[string][]byte{}
		for j := i; j < min(i+100, n); j++ {
			set[fmt.Sprintf("p/%05d", j)] = []byte{byte(j)}
		}
		if err := a.Commit(set, nil); err != nil {
			t.Fatal(err)
		}
	}
	b := openTestEtcd(t, srv, opts)
	if got := len(scanAll(t, b, "p/", "")); got != n {
		t.Fatalf("loaded %d keys, want %d", got, n)
	}
}

// A commit that etcd received but did not answer in time (a member that
// hangs) fails as unavailable with an unknown outcome, and says so:
// whether etcd applies it when it goes on depends on whether the client's
// cancellation reached it first. Either way the mirror ends up agreeing
// with etcd, so a client that checks before retrying sees the truth.
func TestEtcdHungCommitMayApply(t *testing.T) {
	srv := etcdtest.Start(t)
	c := openTestEtcd(t, srv, EtcdOptions{Prefix: "/test/", RequestTimeout: 500 * time.Millisecond})
	if err := c.Set("before", []byte("1")); err != nil {
		t.Fatal(err)
	}
	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	err := c.Set("k", []byte("sent while hung"))
	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "may still be applied") {
		t.Fatalf("commit to a hung etcd: %v, want ErrUnavailable saying the change may still be applied", err)
	}
	cli := srv.Client(t)
	waitFor(t, "the mirror agrees with etcd after etcd went on", 30*time.Second, func() bool {
		// A commit after the hang passes through etcd after any
		// earlier request, and the mirror has seen it when it returns.
		if c.Set("after", []byte("1")) != nil {
			return false
		}
		resp, err := cli.Get(context.Background(), "/test/k")
		if err != nil {
			return false
		}
		v, ok, _ := c.Get([]byte("k"))
		if len(resp.Kvs) == 0 {
			return !ok
		}
		return ok && string(v) == string(resp.Kvs[0].Value)
	})
}
