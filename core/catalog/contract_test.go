package catalog

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/silt-io/silt/internal/etcdtest"
)

// backends opens a fresh, empty catalog of each kind. Every contract case
// runs against each: the catalog's users must not be able to tell them
// apart.
var backends = map[string]func(t *testing.T) *Catalog{
	"pebble": func(t *testing.T) *Catalog {
		c, err := Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	},
	"etcd": func(t *testing.T) *Catalog {
		srv := sharedEtcd(t)
		c, err := OpenEtcd(srv.Client(t), EtcdOptions{Prefix: "/test/" + t.Name() + "/"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	},
}

// sharedEtcd is one etcd server for the package's tests; each test keeps
// to its own prefix.
var etcdOnce struct {
	sync.Mutex
	srv *etcdtest.Server
}

func sharedEtcd(t *testing.T) *etcdtest.Server { return sharedEtcdTB(t) }

func sharedEtcdTB(t testing.TB) *etcdtest.Server {
	t.Helper()
	etcdOnce.Lock()
	defer etcdOnce.Unlock()
	if etcdOnce.srv == nil {
		etcdOnce.srv = etcdtest.Start(&packageTB{TB: t})
	}
	return etcdOnce.srv
}

// packageTB lets the shared server outlive the test that started it: its
// cleanup runs at the end of TestMain instead.
type packageTB struct{ testing.TB }

var packageCleanups []func()

func (p *packageTB) Cleanup(f func()) { packageCleanups = append(packageCleanups, f) }
func (p *packageTB) TempDir() string {
	d, err := mkdirTemp()
	if err != nil {
		p.TB.Fatal(err)
	}
	packageCleanups = append(packageCleanups, func() { removeAll(d) })
	return d
}

func scanAll(t *testing.T, c *Catalog, prefix, start string) []string {
	t.Helper()
	var got []string
	var s []byte
	if start != "" {
		s = []byte(start)
	}
	if err := c.Scan([]byte(prefix), s, func(k, v []byte) error {
		got = append(got, string(k)+"="+string(v))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

var contract = map[string]func(t *testing.T, c *Catalog){
	"delete keys beyond one transaction": func(t *testing.T, c *Catalog) {
		// More keys, and more bytes of keys, than etcd applies at once.
		var keys []string
		for i := range 3*DefaultMaxTxnOps + 5 {
			k := fmt.Sprintf("d/%04d/%s", i, strings.Repeat("k", 8<<10))
			keys = append(keys, k)
			if err := c.Set(k, []byte("v")); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.Set("keep", []byte("v")); err != nil {
			t.Fatal(err)
		}
		if err := c.DeleteKeys(append(keys, "d/missing")); err != nil {
			t.Fatal(err)
		}
		if got := scanAll(t, c, "", ""); fmt.Sprint(got) != "[keep=v]" {
			t.Errorf("after DeleteKeys: %d keys left (%.60v)", len(got), got)
		}
	},
	"scan in order from start keys": func(t *testing.T, c *Catalog) {
		for _, k := range []string{"s/b", "s/a", "s/c", "s/c/x", "r/z", "s0", "t"} {
			if err := c.Set(k, []byte(k[len(k)-1:])); err != nil {
				t.Fatal(err)
			}
		}
		for name, tc := range map[string]struct{ prefix, start, want string }{
			"whole prefix":        {"s/", "", "[s/a=a s/b=b s/c=c s/c/x=x]"},
			"start inside":        {"s/", "s/b", "[s/b=b s/c=c s/c/x=x]"},
			"start between keys":  {"s/", "s/bb", "[s/c=c s/c/x=x]"},
			"start before prefix": {"s/", "a", "[s/a=a s/b=b s/c=c s/c/x=x]"},
			"start past prefix":   {"s/", "s0", "[]"},
			"empty prefix":        {"", "s0", "[s0=0 t=t]"},
			"no such prefix":      {"q/", "", "[]"},
		} {
			if got := fmt.Sprint(scanAll(t, c, tc.prefix, tc.start)); got != tc.want {
				t.Errorf("%s: scan(%q, %q) = %s, want %s", name, tc.prefix, tc.start, got, tc.want)
			}
		}
	},
	"prefix ending in 0xff": func(t *testing.T, c *Catalog) {
		for _, k := range []string{"a\xff", "a\xff\x01", "a\xff\xff", "b"} {
			if err := c.Set(k, []byte("v")); err != nil {
				t.Fatal(err)
			}
		}
		if got := len(scanAll(t, c, "a\xff", "")); got != 3 {
			t.Errorf("scan of a\\xff: %d keys, want 3", got)
		}
		if err := c.DeletePrefix("a\xff"); err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(scanAll(t, c, "", "")); got != "[b=v]" {
			t.Errorf("after DeletePrefix(a\\xff): %s, want [b=v]", got)
		}
	},
	"commit sets and deletes atomically": func(t *testing.T, c *Catalog) {
		if err := c.Commit(map[string][]byte{"k/1": []byte("1"), "k/2": []byte("2"), "k/3": []byte("3")}, nil); err != nil {
			t.Fatal(err)
		}
		// k/3 both set and deleted: deleted, as pebble's batch does.
		err := c.Commit(map[string][]byte{"k/4": []byte("4"), "k/3": []byte("x")}, []string{"k/1", "k/3", "k/1", "k/absent"})
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(scanAll(t, c, "k/", "")); got != "[k/2=2 k/4=4]" {
			t.Errorf("after commit: %s, want [k/2=2 k/4=4]", got)
		}
		if err := c.Commit(nil, nil); err != nil {
			t.Errorf("empty commit: %v", err)
		}
	},
	"get returns a copy": func(t *testing.T, c *Catalog) {
		if err := c.Set("g", []byte("abc")); err != nil {
			t.Fatal(err)
		}
		v, ok, err := c.Get([]byte("g"))
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		v[0] = 'X'
		if v, _, _ := c.Get([]byte("g")); string(v) != "abc" {
			t.Errorf("stored value changed through Get's slice: %q", v)
		}
		if _, ok, err := c.Get([]byte("missing")); ok || err != nil {
			t.Errorf("missing key: ok=%v err=%v", ok, err)
		}
	},
	"delete prefix": func(t *testing.T, c *Catalog) {
		for _, k := range []string{"d/a/1", "d/a/2", "d/ab", "d/b", "e"} {
			if err := c.Set(k, []byte("v")); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.DeletePrefix("d/a"); err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(scanAll(t, c, "", "")); got != "[d/b=v e=v]" {
			t.Errorf("after DeletePrefix(d/a): %s", got)
		}
		if err := c.Delete("e"); err != nil {
			t.Fatal(err)
		}
		if _, ok, _ := c.Get([]byte("e")); ok {
			t.Error("deleted key present")
		}
	},
	"big values": func(t *testing.T, c *Catalog) {
		big := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB
		if err := c.Set("big", big); err != nil {
			t.Fatal(err)
		}
		v, ok, err := c.Get([]byte("big"))
		if err != nil || !ok || !bytes.Equal(v, big) {
			t.Fatalf("1 MiB value: ok=%v err=%v len=%d", ok, err, len(v))
		}
	},
	"concurrent writers": func(t *testing.T, c *Catalog) {
		const writers, each = 8, 25
		var wg sync.WaitGroup
		errs := make(chan error, writers)
		for w := range writers {
			wg.Go(func() {
				for i := range each {
					k := fmt.Sprintf("w/%d/%03d", w, i)
					if err := c.Commit(map[string][]byte{k: []byte(k), "w/last": []byte(k)}, nil); err != nil {
						errs <- err
						return
					}
					// Each writer reads its own write at once.
					if v, ok, err := c.Get([]byte(k)); err != nil || !ok || string(v) != k {
						errs <- fmt.Errorf("read of own write %s: %q ok=%v err=%v", k, v, ok, err)
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if got := len(scanAll(t, c, "w/", "")); got != writers*each+1 {
			t.Errorf("%d keys after concurrent commits, want %d", got, writers*each+1)
		}
	},
	"ErrStop ends a scan": func(t *testing.T, c *Catalog) {
		for i := range 5 {
			if err := c.Set(fmt.Sprintf("x/%d", i), nil); err != nil {
				t.Fatal(err)
			}
		}
		n := 0
		err := c.Scan([]byte("x/"), nil, func(k, v []byte) error {
			n++
			if n == 2 {
				return ErrStop
			}
			return nil
		})
		if err != nil || n != 2 {
			t.Errorf("scan with ErrStop: n=%d err=%v", n, err)
		}
		boom := errors.New("boom")
		if err := c.Scan([]byte("x/"), nil, func(k, v []byte) error { return boom }); !errors.Is(err, boom) {
			t.Errorf("scan error: %v, want boom", err)
		}
	},
	"commit inside a scan": func(t *testing.T, c *Catalog) {
		for i := range 3 {
			if err := c.Set(fmt.Sprintf("y/%d", i), []byte("old")); err != nil {
				t.Fatal(err)
			}
		}
		err := c.Scan([]byte("y/"), nil, func(k, v []byte) error {
			return c.Commit(map[string][]byte{"z/" + string(k): []byte("new")}, nil)
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := len(scanAll(t, c, "z/", "")); got != 3 {
			t.Errorf("%d keys written inside the scan, want 3", got)
		}
	},
	"closed catalog": func(t *testing.T, c *Catalog) {
		if err := c.Set("c", []byte("v")); err != nil {
			t.Fatal(err)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if err := c.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
		_, _, err := c.Get([]byte("c"))
		for name, err := range map[string]error{
			"get":           err,
			"scan":          c.Scan(nil, nil, func(k, v []byte) error { return nil }),
			"commit":        c.Set("c", nil),
			"delete prefix": c.DeletePrefix("c"),
		} {
			if !errors.Is(err, ErrClosed) {
				t.Errorf("%s after Close: %v, want ErrClosed", name, err)
			}
		}
	},
}

func TestContract(t *testing.T) {
	for bname, open := range backends {
		t.Run(bname, func(t *testing.T) {
			for name, tc := range contract {
				t.Run(strings.ReplaceAll(name, " ", "_"), func(t *testing.T) {
					tc(t, open(t))
				})
			}
		})
	}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, deadline time.Duration, cond func() bool) {
	t.Helper()
	end := time.Now().Add(deadline)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("%s: not within %v", what, deadline)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
