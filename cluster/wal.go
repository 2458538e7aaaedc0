package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/silt-io/silt/core/catalog"
	"github.com/silt-io/silt/core/wal/objwal"
	"github.com/silt-io/silt/tiering"
)

// WALFence is objwal's fence on etcd: under one log's key prefix
// (<cluster prefix>wal/<node id>/, docs/format/wal.md),
//
//	epoch       "<epoch> <token>": the current writer's epoch, decimal, and
//	            its random token; Acquire increments the epoch
//	end         the log's recorded end, decimal
//	checkpoint  the checkpoint value (inline record or object key)
//
// Every write of end or checkpoint is a transaction whose Compare is the
// writer's epoch: a writer that another took the log over from changes
// nothing, ever again.
//
// The Compare also holds the record's mod revision as this writer last
// wrote or read it, so that a request of its own that etcd applies late
// (one whose answer timed out, applied after a later one) can never
// overwrite a later value: the end or the checkpoint never goes back.
// After a failed write the revision is unknown and read again first.
type WALFence struct {
	cli    *clientv3.Client
	prefix string

	// token is this fence's own, random: the epoch key holds
	// "<epoch> <token>", so that two writers never hold the same value,
	// even when an answer was lost.
	token string

	mu   sync.Mutex
	revs map[string]int64 // record key → its mod revision as last seen
}

func (f *WALFence) value(epoch uint64) string { return strconv.FormatUint(epoch, 10) + " " + f.token }

// NewWALFence returns the fence of the log under prefix (ending in "/").
func NewWALFence(cli *clientv3.Client, prefix string) *WALFence {
	var raw [8]byte
	rand.Read(raw[:])
	return &WALFence{cli: cli, prefix: prefix, token: hex.EncodeToString(raw[:]), revs: map[string]int64{}}
}

// WALFence returns the fence of node's write-ahead log.
func (n *Node) WALFence(node string) *WALFence {
	return NewWALFence(n.cli, n.cfg.Etcd.Prefix+"wal/"+node+"/")
}

func (f *WALFence) key(k string) string { return f.prefix + k }

// Acquire implements objwal.Fence: read the epoch, then in one
// transaction that the epoch's revision has not changed meanwhile, write
// epoch+1 and read the log's records. A concurrent Acquire makes one of
// the two retry, so two processes never get the same epoch.
func (f *WALFence) Acquire(ctx context.Context) (objwal.State, error) {
	ek := f.key("epoch")
	for {
		resp, err := f.cli.Get(ctx, ek)
		if err != nil {
			return objwal.State{}, fmt.Errorf("%w: read write-ahead log epoch: %w", catalog.ErrUnavailable, err)
		}
		var cur uint64
		rev := int64(0)
		if len(resp.Kvs) > 0 {
			num, _, _ := strings.Cut(string(resp.Kvs[0].Value), " ")
			if cur, err = strconv.ParseUint(num, 10, 64); err != nil {
				return objwal.State{}, fmt.Errorf("write-ahead log epoch %s: %q does not start with a number", ek, resp.Kvs[0].Value)
			}
			rev = resp.Kvs[0].ModRevision
		}
		next := cur + 1
		tr, err := f.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(ek), "=", rev)).
			Then(clientv3.OpPut(ek, f.value(next)), clientv3.OpGet(f.key("end")), clientv3.OpGet(f.key("checkpoint"))).
			Commit()
		if err != nil {
			return objwal.State{}, fmt.Errorf("%w: take the write-ahead log over: %w", catalog.ErrUnavailable, err)
		}
		if !tr.Succeeded {
			continue // another process took it over meanwhile: go after it
		}
		st := objwal.State{Epoch: next}
		revs := map[string]int64{"end": 0, "checkpoint": 0}
		if kvs := tr.Responses[1].GetResponseRange().Kvs; len(kvs) > 0 {
			if st.End, err = strconv.ParseUint(string(kvs[0].Value), 10, 64); err != nil {
				return objwal.State{}, fmt.Errorf("write-ahead log end %s: %q is not a number", f.key("end"), kvs[0].Value)
			}
			revs["end"] = kvs[0].ModRevision
		}
		if kvs := tr.Responses[2].GetResponseRange().Kvs; len(kvs) > 0 {
			st.Checkpoint = kvs[0].Value
			revs["checkpoint"] = kvs[0].ModRevision
		}
		f.mu.Lock()
		f.revs = revs
		f.mu.Unlock()
		return st, nil
	}
}

// fenced puts value under key if epoch is still the current one and the
// record is as this writer last saw it.
func (f *WALFence) fenced(ctx context.Context, epoch uint64, key, value, what string) error {
	ek, k := f.key("epoch"), f.key(key)
	f.mu.Lock()
	rev, known := f.revs[key]
	f.mu.Unlock()
	if !known {
		resp, err := f.cli.Get(ctx, k)
		if err != nil {
			return fmt.Errorf("%w: read write-ahead log %s: %w", catalog.ErrUnavailable, what, err)
		}
		if len(resp.Kvs) > 0 {
			rev = resp.Kvs[0].ModRevision
		}
	}
	tr, err := f.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.Value(ek), "=", f.value(epoch)),
			clientv3.Compare(clientv3.ModRevision(k), "=", rev)).
		Then(clientv3.OpPut(k, value)).
		Else(clientv3.OpGet(ek)).
		Commit()
	f.mu.Lock()
	defer f.mu.Unlock()
	if err != nil {
		// Applied or not, or applied later: read the revision again.
		delete(f.revs, key)
		return fmt.Errorf("%w: record write-ahead log %s: %w", catalog.ErrUnavailable, what, err)
	}
	if !tr.Succeeded {
		delete(f.revs, key)
		now := "none"
		if kvs := tr.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
			now = string(kvs[0].Value)
		}
		if now == f.value(epoch) {
			return fmt.Errorf("record write-ahead log %s: it changed since this writer last wrote it (a late request of its own); read again for the next write", what)
		}
		return fmt.Errorf("%w (epoch %d, the log's epoch is now %s)", objwal.ErrFenced, epoch, now)
	}
	f.revs[key] = tr.Header.Revision
	return nil
}

// Renew implements objwal.Fence: epoch+1 if epoch is still the current
// one. Unlike Acquire it never takes the log from another writer.
func (f *WALFence) Renew(ctx context.Context, epoch uint64) (uint64, error) {
	ek := f.key("epoch")
	next := epoch + 1
	tr, err := f.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.Value(ek), "=", f.value(epoch))).
		Then(clientv3.OpPut(ek, f.value(next))).
		Else(clientv3.OpGet(ek)).
		Commit()
	if err != nil {
		return 0, fmt.Errorf("%w: renew write-ahead log epoch: %w", catalog.ErrUnavailable, err)
	}
	if !tr.Succeeded {
		now := "none"
		if kvs := tr.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
			now = string(kvs[0].Value)
		}
		if now == f.value(next) {
			// This very renewal, applied with its answer lost and then
			// sent again: the token says the epoch is this writer's.
			return next, nil
		}
		return 0, fmt.Errorf("%w (epoch %d, the log's epoch is now %s)", objwal.ErrFenced, epoch, now)
	}
	return next, nil
}

// Commit implements objwal.Fence.
func (f *WALFence) Commit(ctx context.Context, epoch, end uint64) error {
	return f.fenced(ctx, epoch, "end", strconv.FormatUint(end, 10), "end")
}

// SaveCheckpoint implements objwal.Fence.
func (f *WALFence) SaveCheckpoint(ctx context.Context, epoch uint64, value []byte) error {
	return f.fenced(ctx, epoch, "checkpoint", string(value), "checkpoint")
}

var _ objwal.Fence = (*WALFence)(nil)

// WALObjects is objwal's store on a tier-2 backend (S3, or a directory
// for tests): a Put is one upload, finished before it returns.
type WALObjects struct {
	B tiering.Backend
}

// Put implements objwal.Store.
func (s WALObjects) Put(ctx context.Context, key string, bufs [][]byte, n int64) error {
	w, err := s.B.Create(ctx, key)
	if err != nil {
		return err
	}
	for _, b := range bufs {
		if _, err := w.Write(b); err != nil {
			w.Abort()
			return err
		}
	}
	return w.Finish()
}

// Get implements objwal.Store.
func (s WALObjects) Get(ctx context.Context, key string) ([]byte, error) {
	o, err := s.B.Open(ctx, key)
	if errors.Is(err, tiering.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", objwal.ErrNotExist, key)
	}
	if err != nil {
		return nil, err
	}
	defer o.Close()
	data := make([]byte, o.Size())
	if n, err := o.ReadAt(data, 0); err != nil && !(errors.Is(err, io.EOF) && n == len(data)) {
		return nil, err
	}
	return data, nil
}

// List implements objwal.Store.
func (s WALObjects) List(ctx context.Context, prefix string) ([]string, error) {
	return s.B.List(ctx, prefix)
}

// Delete implements objwal.Store.
func (s WALObjects) Delete(ctx context.Context, key string) error { return s.B.Delete(ctx, key) }

var _ objwal.Store = WALObjects{}

// WALLog is a node's write-ahead log as the fence records it.
type WALLog struct {
	Node string
	// Empty is set when its checkpoint starts where the log ends: there
	// is nothing to replay (a log adopted and emptied by another node, or
	// one closed cleanly and then tiered).
	Empty bool
}

// WALLogs lists the write-ahead logs recorded under the prefix.
func (n *Node) WALLogs(ctx context.Context) ([]WALLog, error) {
	p := n.cfg.Etcd.Prefix + "wal/"
	resp, err := n.cli.Get(ctx, p, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("%w: list write-ahead logs: %w", catalog.ErrUnavailable, err)
	}
	type rec struct {
		end, from uint64
		hasEnd    bool
		inline    bool
	}
	logs := map[string]*rec{}
	var order []string
	for _, kv := range resp.Kvs {
		node, field, ok := strings.Cut(strings.TrimPrefix(string(kv.Key), p), "/")
		if !ok {
			continue
		}
		r := logs[node]
		if r == nil {
			r = &rec{}
			logs[node] = r
			order = append(order, node)
		}
		switch field {
		case "end":
			r.end, err = strconv.ParseUint(string(kv.Value), 10, 64)
			r.hasEnd = err == nil
		case "checkpoint":
			// An inline checkpoint is core's record: only its start
			// matters here.
			if len(kv.Value) > 0 && kv.Value[0] == 0 {
				var cp struct {
					From uint64 `json:"from"`
				}
				if json.Unmarshal(kv.Value[1:], &cp) == nil {
					r.from, r.inline = cp.From, true
				}
			}
		}
	}
	out := make([]WALLog, 0, len(order))
	for _, node := range order {
		r := logs[node]
		out = append(out, WALLog{Node: node, Empty: !r.hasEnd || r.end == 0 || (r.inline && r.from == r.end)})
	}
	return out, nil
}
