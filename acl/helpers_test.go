package acl

import (
	"crypto/rand"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/silt-io/silt/core/catalog"
)

// env is a Store on a real catalog in a temporary directory, reopenable to
// check durability. Its Store seals S3 secrets under key, as silt serve's
// does; a test sets key to nil before reopen for a Store without one.
type env struct {
	t   *testing.T
	dir string
	key []byte
	cat *catalog.Catalog
	s   *Store
	clk *clock
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir(), key: newSecretsKey(), clk: newClock()}
	e.open()
	t.Cleanup(func() {
		if e.cat != nil {
			e.cat.Close()
		}
	})
	return e
}

func (e *env) open() {
	e.t.Helper()
	cat, err := catalog.Open(e.dir)
	if err != nil {
		e.t.Fatal(err)
	}
	s, err := e.tryOpen(cat)
	if err != nil {
		cat.Close()
		e.t.Fatal(err)
	}
	e.cat, e.s = cat, s
}

func (e *env) tryOpen(kv KV) (*Store, error) {
	var opts []Option
	if e.key != nil {
		opts = append(opts, WithSecretsKey(e.key))
	}
	s, err := Open(kv, opts...)
	if err != nil {
		return nil, err
	}
	s.now = e.clk.now
	return s, nil
}

func newSecretsKey() []byte {
	k := make([]byte, SecretsKeySize)
	rand.Read(k)
	return k
}

// reopen closes the catalog and opens a fresh Store on the same directory,
// as a restart would.
func (e *env) reopen() {
	e.t.Helper()
	if err := e.cat.Close(); err != nil {
		e.t.Fatal(err)
	}
	e.cat = nil
	e.open()
}

func (e *env) principal(name string) {
	e.t.Helper()
	if _, err := e.s.CreatePrincipal(name); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) grant(principal string, a Action, resource string) Grant {
	e.t.Helper()
	g, err := e.s.AddGrant(principal, a, resource)
	if err != nil {
		e.t.Fatal(err)
	}
	return g
}

func (e *env) token(principal string, ttl time.Duration) (string, TokenInfo) {
	e.t.Helper()
	secret, info, err := e.s.IssueToken(principal, "test", ttl)
	if err != nil {
		e.t.Fatal(err)
	}
	return secret, info
}

// clock is a settable time source, so that expiry tests need not sleep.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// memKV is an in-memory KV whose commits can be made to fail, to check
// that a failed commit leaves the Store unchanged.
type memKV struct {
	mu   sync.Mutex
	m    map[string][]byte
	fail bool
}

var errInjected = errors.New("injected commit failure")

func newMemKV() *memKV { return &memKV{m: make(map[string][]byte)} }

func (k *memKV) Get(key []byte) ([]byte, bool, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	v, ok := k.m[string(key)]
	return slices.Clone(v), ok, nil
}

func (k *memKV) Scan(prefix, start []byte, fn func(key, value []byte) error) error {
	k.mu.Lock()
	keys := slices.Sorted(maps.Keys(k.m))
	snapshot := maps.Clone(k.m)
	k.mu.Unlock()
	for _, key := range keys {
		if !strings.HasPrefix(key, string(prefix)) || key < string(start) {
			continue
		}
		if err := fn([]byte(key), snapshot[key]); err != nil {
			return err
		}
	}
	return nil
}

func (k *memKV) DeleteKeys(keys []string) error { return k.Commit(nil, keys) }

func (k *memKV) Commit(set map[string][]byte, del []string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.fail {
		return errInjected
	}
	for key, v := range set {
		k.m[key] = slices.Clone(v)
	}
	for _, key := range del {
		delete(k.m, key)
	}
	return nil
}

func (k *memKV) setFail(fail bool) {
	k.mu.Lock()
	k.fail = fail
	k.mu.Unlock()
}

// snapshot is everything a Store reports, for comparing two Stores.
type snapshot struct {
	Principals []PrincipalInfo
	Grants     []Grant
	Tokens     map[string][]TokenInfo
}

func takeSnapshot(t *testing.T, s *Store) snapshot {
	t.Helper()
	ps, err := s.ListPrincipals()
	if err != nil {
		t.Fatal(err)
	}
	gs, err := s.ListGrants("")
	if err != nil {
		t.Fatal(err)
	}
	snap := snapshot{Principals: ps, Grants: gs, Tokens: make(map[string][]TokenInfo)}
	for _, p := range ps {
		ts, err := s.ListTokens(p.Name)
		if err != nil {
			t.Fatal(err)
		}
		snap.Tokens[p.Name] = ts
	}
	return snap
}
