package catalog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/btree"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// EtcdOptions say where on etcd a Catalog keeps its records and how long
// it waits for etcd.
type EtcdOptions struct {
	// Prefix is put before every key; the catalog reads and writes
	// nothing outside it. It must not be empty.
	Prefix string
	// RequestTimeout bounds every call to etcd; a Commit that cannot
	// reach etcd in time fails with ErrUnavailable.
	RequestTimeout time.Duration
	// MaxTxnOps and MaxTxnBytes are the etcd server's --max-txn-ops and
	// --max-request-bytes (128 and 1.5 MiB by default). A Commit above
	// them fails with ErrTooLarge before it is sent.
	MaxTxnOps   int
	MaxTxnBytes int
}

// Defaults of etcd's own server flags.
const (
	DefaultMaxTxnOps   = 128
	DefaultMaxTxnBytes = 3 << 19 // 1.5 MiB
	// txnOpOverhead is what one operation costs in a request beyond its
	// key and value (the protobuf framing), counted generously.
	txnOpOverhead = 32
)

// OpenEtcd opens the catalog kept under opts.Prefix on the etcd cluster
// cli talks to. It loads the prefix into memory and follows it with a
// watch: Get and Scan never wait for etcd. The caller keeps cli and
// closes it after the Catalog.
func OpenEtcd(cli *clientv3.Client, opts EtcdOptions) (*Catalog, error) {
	return openEtcd(cli, opts, nil)
}

// openEtcd is OpenEtcd with a hook between the load and the watch, where
// tests make the watch start at a revision compacted away.
func openEtcd(cli *clientv3.Client, opts EtcdOptions, beforeWatch func()) (*Catalog, error) {
	if opts.Prefix == "" {
		return nil, errors.New("catalog: etcd prefix must not be empty")
	}
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = 5 * time.Second
	}
	if opts.MaxTxnOps <= 0 {
		opts.MaxTxnOps = DefaultMaxTxnOps
	}
	if opts.MaxTxnBytes <= 0 {
		opts.MaxTxnBytes = DefaultMaxTxnBytes
	}
	ctx, cancel := context.WithCancel(context.Background())
	b := &etcdBackend{cli: cli, opts: opts, ctx: ctx, cancel: cancel, done: make(chan struct{})}
	b.mu.tree = btree.NewG(32, itemLess)
	b.mu.advanced = make(chan struct{})
	b.watchers.m = map[int]*watcher{}
	tree, rev, err := b.load()
	if err != nil {
		cancel()
		return nil, fmt.Errorf("open catalog on etcd %s: %w", opts.Prefix, err)
	}
	b.mu.tree, b.mu.rev = tree, rev
	if beforeWatch != nil {
		beforeWatch()
	}
	go b.run(rev)
	return newCatalog(b), nil
}

type item struct {
	key   string
	value []byte
}

func itemLess(a, b item) bool { return a.key < b.key }

type watcher struct {
	prefix string
	fn     func(key string, value []byte, present bool)
}

// etcdBackend mirrors the keys under its prefix in memory. One goroutine
// (run) owns the watch and applies what it reports; commits go to etcd as
// one transaction each and wait until run has applied their revision, so
// that this node reads its own writes.
type etcdBackend struct {
	cli    *clientv3.Client
	opts   EtcdOptions
	ctx    context.Context // cancelled by close
	cancel context.CancelFunc
	done   chan struct{} // closed when run returns

	mu struct {
		sync.RWMutex
		// tree is replaced by a clone for each scan (copy on write), so
		// that a scan's callback runs without the lock.
		tree *btree.BTreeG[item]
		// rev is the etcd revision the mirror and the watchers have
		// seen everything up to; advanced is closed (and replaced)
		// when it grows.
		rev      int64
		advanced chan struct{}
	}

	// reloads counts the mirror's reloads after a watch ended (tests).
	reloads atomic.Int64
	// notifying is held while run calls the watchers (see watch).
	notifying sync.Mutex
	// watchers is its own lock: run calls the watchers without mu.
	watchers struct {
		sync.Mutex
		next int
		m    map[int]*watcher
	}
}

func (b *etcdBackend) shared() bool { return true }

// txnLimits leaves room for the prefix etcd keys carry, which commit
// counts against MaxTxnBytes.
func (b *etcdBackend) txnLimits() (int, int) {
	return b.opts.MaxTxnOps, max(b.opts.MaxTxnBytes-b.opts.MaxTxnOps*len(b.opts.Prefix), b.opts.MaxTxnBytes/2)
}

func (b *etcdBackend) close() error {
	b.cancel()
	<-b.done
	return nil
}

// load reads the whole prefix at one revision, a page at a time, so that
// a large catalog is not one response of unbounded size.
func (b *etcdBackend) load() (*btree.BTreeG[item], int64, error) {
	t := btree.NewG(32, itemLess)
	end := clientv3.GetPrefixRangeEnd(b.opts.Prefix)
	from, rev := b.opts.Prefix, int64(0)
	for {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(loadPage)}
		if rev != 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		ctx, cancel := context.WithTimeout(b.ctx, b.opts.RequestTimeout)
		resp, err := b.cli.Get(ctx, from, opts...)
		cancel()
		if err != nil {
			return nil, 0, b.wrap(err)
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		for _, kv := range resp.Kvs {
			t.ReplaceOrInsert(item{key: strings.TrimPrefix(string(kv.Key), b.opts.Prefix), value: kv.Value})
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return t, rev, nil
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// loadPage is how many keys one request of load reads.
const loadPage = 1000

// wrap gives an etcd error its sentinel: too large for what etcd applies
// in one transaction, closed after close, unavailable for anything else
// (no leader, no connection, timeout), which is what a client should
// retry.
func (b *etcdBackend) wrap(err error) error {
	switch {
	case b.ctx.Err() != nil:
		return fmt.Errorf("%w: %w", ErrClosed, err)
	case errors.Is(err, rpctypes.ErrTooManyOps), errors.Is(err, rpctypes.ErrRequestTooLarge),
		errors.Is(err, rpctypes.ErrGRPCTooManyOps), errors.Is(err, rpctypes.ErrGRPCRequestTooLarge):
		return fmt.Errorf("%w: %w", ErrTooLarge, err)
	default:
		return fmt.Errorf("%w: etcd: %w", ErrUnavailable, err)
	}
}

// run follows the prefix from rev on until close. When the watch ends —
// etcd compacted the revisions it needed, or cancelled it (lost leader) —
// the prefix is read anew and the watch restarted from there.
func (b *etcdBackend) run(rev int64) {
	defer close(b.done)
	// RequireLeader: a member cut off from its cluster ends the watch
	// instead of keeping it quiet, so the mirror reloads rather than
	// missing revocations for as long as the partition lasts.
	ctx := clientv3.WithRequireLeader(b.ctx)
	retry := 50 * time.Millisecond
	for {
		wch := b.cli.Watch(ctx, b.opts.Prefix, clientv3.WithPrefix(), clientv3.WithRev(rev+1),
			clientv3.WithProgressNotify(), clientv3.WithCreatedNotify())
		for resp := range wch {
			if resp.CompactRevision != 0 || resp.Canceled || resp.Err() != nil {
				break
			}
			switch {
			case resp.IsProgressNotify():
				rev = max(rev, resp.Header.Revision)
				b.advance(rev)
			case resp.Created:
				// Nothing to apply; the watch is in place.
			default:
				rev = b.apply(resp.Events, rev)
				retry = 50 * time.Millisecond
			}
		}
		for {
			if b.ctx.Err() != nil {
				return
			}
			tree, r, err := b.load()
			if err == nil {
				b.replace(tree, r)
				rev = r
				break
			}
			select {
			case <-b.ctx.Done():
				return
			case <-time.After(retry):
			}
			retry = min(2*retry, 2*time.Second)
		}
	}
}

// apply puts a watch response's events into the mirror, tells the
// watchers, and only then advances rev, so that a Commit waiting for its
// revision returns after the caches have it.
func (b *etcdBackend) apply(events []*clientv3.Event, rev int64) int64 {
	changes := make([]change, 0, len(events))
	b.mu.Lock()
	for _, ev := range events {
		key := strings.TrimPrefix(string(ev.Kv.Key), b.opts.Prefix)
		switch ev.Type {
		case mvccpb.PUT:
			b.mu.tree.ReplaceOrInsert(item{key: key, value: ev.Kv.Value})
			changes = append(changes, change{key: key, value: ev.Kv.Value, present: true})
		case mvccpb.DELETE:
			b.mu.tree.Delete(item{key: key})
			changes = append(changes, change{key: key})
		}
		rev = max(rev, ev.Kv.ModRevision)
	}
	b.mu.Unlock()
	b.notify(changes)
	b.advance(rev)
	return rev
}

// replace swaps in a freshly loaded mirror and tells the watchers every
// key that differs from the old one.
func (b *etcdBackend) replace(tree *btree.BTreeG[item], rev int64) {
	b.reloads.Add(1)
	b.mu.Lock()
	old := b.mu.tree
	b.mu.tree = tree
	b.mu.Unlock()
	b.notify(diff(old, tree))
	b.advance(rev)
}

type change struct {
	key     string
	value   []byte
	present bool
}

// diff lists the keys whose values differ between two mirrors.
func diff(old, cur *btree.BTreeG[item]) []change {
	var a, c []item
	old.Ascend(func(it item) bool { a = append(a, it); return true })
	cur.Ascend(func(it item) bool { c = append(c, it); return true })
	var out []change
	i, j := 0, 0
	for i < len(a) || j < len(c) {
		switch {
		case j == len(c) || (i < len(a) && a[i].key < c[j].key):
			out = append(out, change{key: a[i].key})
			i++
		case i == len(a) || c[j].key < a[i].key:
			out = append(out, change{key: c[j].key, value: c[j].value, present: true})
			j++
		default:
			if !bytes.Equal(a[i].value, c[j].value) {
				out = append(out, change{key: c[j].key, value: c[j].value, present: true})
			}
			i++
			j++
		}
	}
	return out
}

func (b *etcdBackend) notify(changes []change) {
	if len(changes) == 0 {
		return
	}
	b.notifying.Lock()
	defer b.notifying.Unlock()
	b.watchers.Lock()
	ws := make([]*watcher, 0, len(b.watchers.m))
	ids := make([]int, 0, len(b.watchers.m))
	for id := range b.watchers.m {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	for _, id := range ids {
		ws = append(ws, b.watchers.m[id])
	}
	b.watchers.Unlock()
	for _, ch := range changes {
		for _, w := range ws {
			if strings.HasPrefix(ch.key, w.prefix) {
				w.fn(ch.key, bytes.Clone(ch.value), ch.present)
			}
		}
	}
}

func (b *etcdBackend) advance(rev int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if rev > b.mu.rev {
		b.mu.rev = rev
		close(b.mu.advanced)
		b.mu.advanced = make(chan struct{})
	}
}

// watch registers fn. stop takes notifying, so that once it returns no
// call of fn is under way or to come.
func (b *etcdBackend) watch(prefix string, fn func(key string, value []byte, present bool)) func() {
	b.watchers.Lock()
	id := b.watchers.next
	b.watchers.next++
	b.watchers.m[id] = &watcher{prefix: prefix, fn: fn}
	b.watchers.Unlock()
	return func() {
		b.watchers.Lock()
		delete(b.watchers.m, id)
		b.watchers.Unlock()
		b.notifying.Lock()
		b.notifying.Unlock() //nolint:staticcheck // waits out a call of fn under way
	}
}

// waitRev returns once the mirror has applied rev. Events under the prefix
// advance it; a transaction that changed nothing, or a revision taken by
// keys outside the prefix, needs a progress report from etcd, asked for
// while waiting.
func (b *etcdBackend) waitRev(ctx context.Context, rev int64) error {
	wctx := clientv3.WithRequireLeader(b.ctx)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		b.mu.RLock()
		cur, advanced := b.mu.rev, b.mu.advanced
		b.mu.RUnlock()
		if cur >= rev {
			return nil
		}
		select {
		case <-advanced:
		case <-tick.C:
			// Progress goes to the watch stream opened with the same
			// context metadata as run's.
			_ = b.cli.RequestProgress(wctx)
		case <-ctx.Done():
			return fmt.Errorf("%w: committed at revision %d, not yet seen by this node's watch: %w", ErrUnavailable, rev, ctx.Err())
		}
	}
}

func (b *etcdBackend) get(key []byte) ([]byte, bool, error) {
	b.mu.RLock()
	it, ok := b.mu.tree.Get(item{key: string(key)})
	b.mu.RUnlock()
	if !ok {
		return nil, false, nil
	}
	return bytes.Clone(it.value), true, nil
}

func (b *etcdBackend) scan(prefix, start []byte, fn func(key, value []byte) error) error {
	lower := prefix
	if bytes.Compare(start, prefix) > 0 {
		lower = start
	}
	// The clone is cheap (copy on write) and a consistent snapshot: fn
	// runs without the lock and may commit.
	b.mu.RLock()
	t := b.mu.tree.Clone()
	b.mu.RUnlock()
	p := string(prefix)
	var err error
	t.AscendGreaterOrEqual(item{key: string(lower)}, func(it item) bool {
		if !strings.HasPrefix(it.key, p) {
			return false
		}
		err = fn([]byte(it.key), it.value)
		return err == nil
	})
	return err
}

func (b *etcdBackend) commit(set map[string][]byte, del []string) error {
	deleted := make(map[string]bool, len(del))
	ops := make([]clientv3.Op, 0, len(set)+len(del))
	size := 0
	for _, k := range del {
		if deleted[k] {
			continue
		}
		deleted[k] = true
		ops = append(ops, clientv3.OpDelete(b.opts.Prefix+k))
		size += len(b.opts.Prefix) + len(k) + txnOpOverhead
	}
	// etcd refuses a transaction naming a key twice; pebble's batch
	// applies sets before deletes, so a key in both is deleted.
	for k, v := range set {
		if deleted[k] {
			continue
		}
		ops = append(ops, clientv3.OpPut(b.opts.Prefix+k, string(v)))
		size += len(b.opts.Prefix) + len(k) + len(v) + txnOpOverhead
	}
	if len(ops) == 0 {
		return nil
	}
	// Refused rather than split: callers rely on a commit being atomic
	// (a principal goes with its tokens and grants, a stream with its
	// segments), and halves of one would be seen by other nodes.
	if len(ops) > b.opts.MaxTxnOps || size > b.opts.MaxTxnBytes {
		return fmt.Errorf("%w: %d keys, about %d bytes; etcd applies at most %d keys and %d bytes in one transaction (its --max-txn-ops and --max-request-bytes)",
			ErrTooLarge, len(ops), size, b.opts.MaxTxnOps, b.opts.MaxTxnBytes)
	}
	return b.txn(ops)
}

func (b *etcdBackend) deletePrefix(prefix []byte) error {
	key := b.opts.Prefix + string(prefix)
	return b.txn([]clientv3.Op{clientv3.OpDelete(key, clientv3.WithPrefix())})
}

func (b *etcdBackend) txn(ops []clientv3.Op) error {
	ctx, cancel := context.WithTimeout(b.ctx, b.opts.RequestTimeout)
	defer cancel()
	resp, err := b.cli.Txn(ctx).Then(ops...).Commit()
	if err != nil {
		if b.ctx.Err() == nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			// The request may be in etcd's hands already (a member that
			// hangs still has it in its socket): say that the outcome is
			// unknown, as etcd and Kubernetes do, rather than that it failed.
			return fmt.Errorf("catalog commit: %w (no answer within %s; the change may still be applied when etcd answers again: check before retrying)",
				b.wrap(err), b.opts.RequestTimeout)
		}
		return fmt.Errorf("catalog commit: %w", b.wrap(err))
	}
	return b.waitRev(ctx, resp.Header.Revision)
}

func (b *etcdBackend) compactPrefix([]byte) error { return nil }
