// Package catalog is silt's metadata store: a small ordered key-value map
// that makes every change durable before it returns, so that a tenant,
// stream, principal or grant that was acknowledged survives a crash.
//
// Keys are byte strings with a one-word prefix per kind of record (see the
// users of the package); values are whatever the caller encodes. The catalog
// knows nothing about what it stores.
//
// Two backends keep the records: pebble in the data directory (one node,
// the default; Open) and etcd (a cluster; OpenEtcd). Every user goes
// through *Catalog and sees the same behaviour from both; the contract
// tests run one suite against each. On etcd, reads are served from an
// in-memory mirror fed by a watch, and Watch tells caches built on the
// catalog about changes that other nodes made.
package catalog

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
)

var (
	// ErrStop ends a Scan early.
	ErrStop = errors.New("catalog: stop scan")
	// ErrClosed is returned by every operation after Close.
	ErrClosed = errors.New("catalog: closed")
	// ErrUnavailable means the store behind the catalog could not be
	// reached in time (etcd down or without a leader). A Commit that
	// returns it may or may not have been applied.
	ErrUnavailable = errors.New("catalog: metadata store unavailable")
	// ErrTooLarge means one Commit holds more than the store applies
	// atomically (etcd's per-transaction limits). Nothing was applied.
	ErrTooLarge = errors.New("catalog: commit too large")
)

// backend is what a Catalog keeps its records in. A Catalog guards it, so
// that no method is called after close.
type backend interface {
	get(key []byte) ([]byte, bool, error)
	scan(prefix, start []byte, fn func(key, value []byte) error) error
	// commit applies sets and then deletes, atomically and durably; a key
	// in both ends up deleted.
	commit(set map[string][]byte, del []string) error
	deletePrefix(prefix []byte) error
	compactPrefix(prefix []byte) error
	// watch and shared: see Catalog.Watch and Catalog.Shared.
	watch(prefix string, fn func(key string, value []byte, present bool)) (stop func())
	shared() bool
	// txnLimits are the most keys and bytes one commit may hold (0: no
	// limit).
	txnLimits() (ops, bytes int)
	close() error
}

// Catalog is safe for concurrent use.
type Catalog struct {
	b backend

	// life counts the operations in flight, so that Close waits for them
	// instead of pulling the store from under them (pebble panics on a
	// closed DB). A counter rather than an RWMutex: a Scan callback may
	// call the catalog again, and a nested RLock with Close waiting would
	// deadlock.
	life struct {
		sync.Mutex
		inflight int
		closed   bool
		idle     sync.Cond
	}
	closeOnce sync.Once
	closeErr  error
}

func newCatalog(b backend) *Catalog {
	c := &Catalog{b: b}
	c.life.idle.L = &c.life.Mutex
	return c
}

func (c *Catalog) enter() error {
	c.life.Lock()
	defer c.life.Unlock()
	if c.life.closed {
		return ErrClosed
	}
	c.life.inflight++
	return nil
}

func (c *Catalog) exit() {
	c.life.Lock()
	c.life.inflight--
	if c.life.inflight == 0 && c.life.closed {
		c.life.idle.Broadcast()
	}
	c.life.Unlock()
}

// Open opens (creating if needed) the pebble catalog in dir, or returns
// the catalog attached to dir (see Attach).
func Open(dir string) (*Catalog, error) {
	if c := takeAttached(dir); c != nil {
		return c, nil
	}
	b, err := openPebble(dir)
	if err != nil {
		return nil, err
	}
	return newCatalog(b), nil
}

// attached holds catalogs that the next Open of a directory returns
// instead of the pebble catalog there: core.Store opens its catalog by
// directory, and a server in a cluster hands it the one on etcd this way
// without core knowing about backends.
var attached struct {
	sync.Mutex
	m map[string]*Catalog
}

// Attach makes the next Open(dir) return c (once). detach withdraws c if
// Open has not taken it yet; the caller still owns c either way and
// closes it when done (Close is idempotent).
func Attach(dir string, c *Catalog) (detach func()) {
	key := attachKey(dir)
	attached.Lock()
	defer attached.Unlock()
	if attached.m == nil {
		attached.m = map[string]*Catalog{}
	}
	attached.m[key] = c
	return func() {
		attached.Lock()
		defer attached.Unlock()
		if attached.m[key] == c {
			delete(attached.m, key)
		}
	}
}

func takeAttached(dir string) *Catalog {
	key := attachKey(dir)
	attached.Lock()
	defer attached.Unlock()
	c := attached.m[key]
	delete(attached.m, key)
	return c
}

func attachKey(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		return abs
	}
	return filepath.Clean(dir)
}

// Close waits for the operations in flight and closes the catalog. Later
// calls return the first call's result.
func (c *Catalog) Close() error {
	c.closeOnce.Do(func() {
		c.life.Lock()
		c.life.closed = true
		for c.life.inflight > 0 {
			c.life.idle.Wait()
		}
		c.life.Unlock()
		c.closeErr = c.b.close()
	})
	return c.closeErr
}

// Get returns a copy of the value stored at key; ok is false when the key is
// absent.
func (c *Catalog) Get(key []byte) (value []byte, ok bool, err error) {
	if err := c.enter(); err != nil {
		return nil, false, fmt.Errorf("catalog get: %w", err)
	}
	defer c.exit()
	return c.b.get(key)
}

// Scan calls fn for each key with the given prefix, in key order, starting
// at the first key >= start (start may be nil). fn's slices are only valid
// during the call. Returning ErrStop from fn ends the scan without error.
// fn may call the catalog, Commit included; whether a scan in progress
// sees such a change depends on the backend.
func (c *Catalog) Scan(prefix, start []byte, fn func(key, value []byte) error) error {
	if err := c.enter(); err != nil {
		return fmt.Errorf("catalog scan: %w", err)
	}
	defer c.exit()
	err := c.b.scan(prefix, start, fn)
	if errors.Is(err, ErrStop) {
		return nil
	}
	return err
}

// Commit atomically and durably applies puts (key → value) and deletes. A
// key in both is deleted.
func (c *Catalog) Commit(set map[string][]byte, del []string) error {
	if err := c.enter(); err != nil {
		return fmt.Errorf("catalog commit: %w", err)
	}
	defer c.exit()
	return c.b.commit(set, del)
}

// Set durably stores one key.
func (c *Catalog) Set(key string, value []byte) error {
	return c.Commit(map[string][]byte{key: value}, nil)
}

// Delete durably removes one key.
func (c *Catalog) Delete(key string) error { return c.Commit(nil, []string{key}) }

// DeleteKeys durably removes keys, in their order, in as few commits as
// the backend allows: each commit is atomic, the whole is not. It is for
// removals that need not be seen at once — what remains after a failure
// part-way is what the caller removes again — and whose count has no
// bound, so that a commit holding them all could pass what etcd applies
// in one transaction. Callers put the key whose removal means "gone"
// last.
func (c *Catalog) DeleteKeys(keys []string) error {
	if err := c.enter(); err != nil {
		return fmt.Errorf("catalog commit: %w", err)
	}
	defer c.exit()
	maxOps, maxBytes := c.b.txnLimits()
	for len(keys) > 0 {
		n, size := 0, 0
		for n < len(keys) {
			k := len(keys[n]) + keyOverhead
			if (maxOps > 0 && n+1 > maxOps) || (maxBytes > 0 && n > 0 && size+k > maxBytes) {
				break
			}
			size += k
			n++
		}
		if err := c.b.commit(nil, keys[:n]); err != nil {
			return err
		}
		keys = keys[n:]
	}
	return nil
}

// keyOverhead is what one key of a commit costs beyond its bytes: etcd's
// framing, as etcd's commit counts it (txnOpOverhead); the prefix every
// etcd key carries is taken off the byte limit by txnLimits.
const keyOverhead = txnOpOverhead

// DeletePrefix durably removes every key with the given prefix.
func (c *Catalog) DeletePrefix(prefix string) error {
	if err := c.enter(); err != nil {
		return fmt.Errorf("catalog delete range: %w", err)
	}
	defer c.exit()
	return c.b.deletePrefix([]byte(prefix))
}

// CompactPrefix rewrites the catalog's tables under prefix, so that the
// values overwritten or deleted there no longer sit in any file once the
// superseded files are removed (in the background, or by Close). Callers
// use it after replacing values that must not stay on disk, such as
// secrets written in clear by an earlier version. On etcd it does nothing:
// old revisions go with etcd's own compaction, which is the operator's
// (--auto-compaction-retention).
func (c *Catalog) CompactPrefix(prefix string) error {
	if err := c.enter(); err != nil {
		return fmt.Errorf("catalog compact: %w", err)
	}
	defer c.exit()
	return c.b.compactPrefix([]byte(prefix))
}

// Watch calls fn(key, value, present) for every key under prefix that a
// commit changed — of this Catalog or of another one on the same store —
// once the change is visible to Get and Scan, in commit order, one call at
// a time; present is false for a deleted key, and value is fn's to keep. A
// Commit of this Catalog returns after fn has seen its changes. fn must
// not call Commit, Set, Delete or DeletePrefix (it runs on the goroutine
// that makes commits visible), nor stop. After the store lost track of
// changes (etcd compacted the history the watch needed), fn is called for
// every key that differs from what it was told. fn's type is spelled out,
// not named, so that a user can take a *Catalog through an interface of
// its own without importing this package.
//
// On pebble, where this process makes every change and its callers update
// their caches themselves, fn is never called. Once stop returns, fn is
// not running and will not be called.
func (c *Catalog) Watch(prefix string, fn func(key string, value []byte, present bool)) (stop func()) {
	return c.b.watch(prefix, fn)
}

// Shared reports whether processes other than this one change the
// catalog (it is on etcd): caches built on it must then follow Watch.
func (c *Catalog) Shared() bool { return c.b.shared() }

// prefixEnd returns the smallest key greater than every key with prefix p,
// or nil when p is all 0xff (no upper bound).
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		end[i]++
		if end[i] != 0 {
			return end[:i+1]
		}
	}
	return nil
}
