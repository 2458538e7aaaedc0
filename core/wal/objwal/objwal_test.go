package objwal_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/silt-io/silt/cluster"
	"github.com/silt-io/silt/core/wal"
	"github.com/silt-io/silt/core/wal/objwal"
	"github.com/silt-io/silt/core/wal/waltest"
	"github.com/silt-io/silt/internal/etcdtest"
	"github.com/silt-io/silt/internal/mototest"
	"github.com/silt-io/silt/tiering"
)

// env is a real S3 server (moto) and a real etcd for one test.
type env struct {
	moto  *mototest.Server
	etcd  *etcdtest.Server
	cli   *clientv3.Client
	store objwal.Store
	nodes atomic.Int64
}

const bucket = "wal"

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{etcd: etcdtest.Start(t), moto: mototest.Start(t)}
	e.cli = e.etcd.Client(t)
	if err := e.moto.CreateBucket(bucket); err != nil {
		t.Fatal(err)
	}
	e.store = cluster.WALObjects{B: openS3(t, e.moto.Endpoint)}
	return e
}

func openS3(t testing.TB, endpoint string) *tiering.S3Backend {
	c := tiering.DefaultConfig().S3
	c.Endpoint, c.Bucket, c.PathStyle = endpoint, bucket, true
	c.AccessKeyID, c.SecretAccessKey, c.Region = mototest.AccessKeyID, mototest.SecretAccessKey, mototest.Region
	c.PartSize = 5 << 20 // S3's smallest: a large round goes multipart
	s, err := tiering.OpenS3(c)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// newNode names a log of its own.
func (e *env) newNode() string { return fmt.Sprintf("node-%d", e.nodes.Add(1)) }

func options(store objwal.Store, fence objwal.Fence, node string) objwal.Options {
	return objwal.Options{Store: store, Fence: fence, Prefix: "wal/" + node + "/", Timeout: 20 * time.Second}
}

func (e *env) fence(node string) objwal.Fence {
	return cluster.NewWALFence(e.cli, "/silt-test/wal/"+node+"/")
}

// open takes node's log over, as a new process does.
func (e *env) open(t *testing.T, node string) *objwal.Objects {
	t.Helper()
	b, err := objwal.Open(options(e.store, e.fence(node), node))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// keys lists node's log objects (not checkpoints).
func (e *env) keys(t *testing.T, node string) []string {
	t.Helper()
	all, err := e.store.List(context.Background(), "wal/"+node+"/")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, k := range all {
		if !strings.Contains(k, "/checkpoint/") {
			out = append(out, k)
		}
	}
	return out
}

// TestObjectsContract runs the wal.Backend contract on objects in moto,
// fenced in etcd.
func TestObjectsContract(t *testing.T) {
	e := newEnv(t)
	waltest.RunBackendSuite(t, func(t *testing.T) waltest.Open {
		node := e.newNode()
		return func(t *testing.T) wal.Backend { return e.open(t, node) }
	})
}

// writer is a wal.Writer of one body.
type writer struct {
	body []byte
	pos  uint64
	err  error
	done chan struct{}
}

func (w *writer) Seal() [][]byte { return [][]byte{w.body} }
func (w *writer) Done(pos uint64, err error) {
	w.pos, w.err = pos, err
	close(w.done)
}

// appendFrame writes body through l as one round and returns its frame's
// position.
func appendFrame(l *wal.Log, body string) (uint64, error) {
	w := &writer{body: []byte(body), done: make(chan struct{})}
	lead, err := l.Enqueue(w)
	if err != nil {
		return 0, err
	}
	if lead {
		l.Lead()
	}
	<-w.done
	return w.pos, w.err
}

// bodies recovers b from 0 and returns the frames' bodies.
func bodies(t *testing.T, b wal.Backend) ([]string, wal.Recovery) {
	t.Helper()
	var out []string
	rec, err := b.Recover(0, func(_ uint64, body []byte) error {
		out = append(out, string(body))
		return nil
	})
	if err != nil {
		t.Fatalf("recover: %v", err)
	}
	return out, rec
}

// keepOpen stops a wal.Log from closing the backend (the test does).
type keepOpen struct{ wal.Backend }

func (keepOpen) Close() error { return nil }

// TestTakeOverFences: a second process opens the log while the first
// still runs. The first's next write is refused by the fence, although
// its object was put; its checkpoint and truncation are refused too. The
// object it put is never read back, neither by the second process (which
// writes at the same position) nor by a third.
func TestTakeOverFences(t *testing.T) {
	e := newEnv(t)
	node := e.newNode()
	a := e.open(t, node)
	bodies(t, a)
	la := wal.Open(wal.Options{Backend: keepOpen{a}}, 0)
	defer la.Close()
	for i := range 3 {
		if _, err := appendFrame(la, fmt.Sprint("a", i)); err != nil {
			t.Fatal(err)
		}
	}
	end := la.End()

	b := e.open(t, node)
	if b.Epoch() <= a.Epoch() {
		t.Fatalf("second writer's epoch %d, first's %d: not higher", b.Epoch(), a.Epoch())
	}
	if _, err := appendFrame(la, "a-late"); !errors.Is(err, objwal.ErrFenced) {
		t.Fatalf("write of the fenced writer: %v, want ErrFenced", err)
	}
	late := fmt.Sprintf("wal/%s/%020d.%020d", node, end, a.Epoch())
	if !slices.Contains(e.keys(t, node), late) {
		t.Fatalf("the fenced writer's object %s is not in the store (%v): the test would prove nothing", late, e.keys(t, node))
	}
	if err := a.SaveCheckpoint([]byte("from a")); !errors.Is(err, objwal.ErrFenced) {
		t.Fatalf("checkpoint of the fenced writer: %v, want ErrFenced", err)
	}
	if err := a.TruncateBefore(end); !errors.Is(err, objwal.ErrFenced) {
		t.Fatalf("truncation by the fenced writer: %v, want ErrFenced", err)
	}

	got, rec := bodies(t, b)
	if want := []string{"a0", "a1", "a2"}; !slices.Equal(got, want) || rec.End != end {
		t.Fatalf("second writer recovered %q to %d, want %q to %d", got, rec.End, want, end)
	}
	lb := wal.Open(wal.Options{Backend: keepOpen{b}}, rec.End)
	defer lb.Close()
	pos, err := appendFrame(lb, "b0")
	if err != nil || pos != end {
		t.Fatalf("second writer's first frame at %d (%v), want %d", pos, err, end)
	}
	if _, err := appendFrame(lb, "b1"); err != nil {
		t.Fatal(err)
	}
	// Both objects at that position are in the store now.
	if n := len(e.keys(t, node)); n != 6 {
		t.Fatalf("%d objects (%v), want 6: 3 of a, a's late one, 2 of b", n, e.keys(t, node))
	}
	c := e.open(t, node)
	got, _ = bodies(t, c)
	if want := []string{"a0", "a1", "a2", "b0", "b1"}; !slices.Equal(got, want) {
		t.Fatalf("third writer recovered %q, want %q", got, want)
	}
	if _, err := appendFrame(lb, "b-late"); !errors.Is(err, objwal.ErrFenced) {
		t.Fatalf("write of the second writer after the third took over: %v", err)
	}
	// The third writer's first truncation removes the late object.
	if err := c.TruncateBefore(0); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(e.keys(t, node), late) {
		t.Fatalf("late object %s still stored after the new writer's truncation", late)
	}
}

// writeN writes n frames "f0".. through a fresh log on b and returns the
// end.
func writeN(t *testing.T, b wal.Backend, n int) uint64 {
	t.Helper()
	if _, err := b.Recover(0, func(uint64, []byte) error { return nil }); err != nil {
		t.Fatal(err)
	}
	l := wal.Open(wal.Options{Backend: keepOpen{b}}, 0)
	defer l.Close()
	for i := range n {
		if _, err := appendFrame(l, fmt.Sprintf("f%d-%s", i, strings.Repeat("x", 50+i))); err != nil {
			t.Fatal(err)
		}
	}
	return l.End()
}

// TestDamage: what a new owner finds in the store beyond the recorded end
// is ignored; a hole or a damaged object inside it is an error.
func TestDamage(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	cases := map[string]struct {
		damage  func(t *testing.T, node string, keys []string, end, epoch uint64)
		wantErr string // empty: recovers all 5 frames
	}{
		"partial object beyond the end": {damage: func(t *testing.T, node string, keys []string, end, epoch uint64) {
			data, err := e.store.Get(ctx, keys[0])
			if err != nil {
				t.Fatal(err)
			}
			k := fmt.Sprintf("wal/%s/%020d.%020d", node, end, epoch)
			if err := e.store.Put(ctx, k, [][]byte{data[:len(data)/2]}, int64(len(data)/2)); err != nil {
				t.Fatal(err)
			}
		}},
		"missing object inside the log": {damage: func(t *testing.T, _ string, keys []string, _, _ uint64) {
			if err := e.store.Delete(ctx, keys[2]); err != nil {
				t.Fatal(err)
			}
		}, wantErr: "the next object starts"},
		"missing last object": {damage: func(t *testing.T, _ string, keys []string, _, _ uint64) {
			if err := e.store.Delete(ctx, keys[4]); err != nil {
				t.Fatal(err)
			}
		}, wantErr: "the recorded end is"},
		"torn object inside the log": {damage: func(t *testing.T, _ string, keys []string, _, _ uint64) {
			data, err := e.store.Get(ctx, keys[2])
			if err != nil {
				t.Fatal(err)
			}
			if err := e.store.Put(ctx, keys[2], [][]byte{data[:len(data)-3]}, int64(len(data)-3)); err != nil {
				t.Fatal(err)
			}
		}, wantErr: "end inside a frame"},
		"object of another position": {damage: func(t *testing.T, _ string, keys []string, _, _ uint64) {
			data, err := e.store.Get(ctx, keys[1])
			if err != nil {
				t.Fatal(err)
			}
			if err := e.store.Put(ctx, keys[2], [][]byte{data}, int64(len(data))); err != nil {
				t.Fatal(err)
			}
		}, wantErr: "found at"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			node := e.newNode()
			a := e.open(t, node)
			end := writeN(t, a, 5)
			keys := e.keys(t, node)
			if len(keys) != 5 {
				t.Fatalf("%d objects for 5 rounds: %v", len(keys), keys)
			}
			tc.damage(t, node, keys, end, a.Epoch())
			b := e.open(t, node)
			var n int
			rec, err := b.Recover(0, func(uint64, []byte) error { n++; return nil })
			if tc.wantErr != "" {
				if !errors.Is(err, wal.ErrCorrupt) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("recover: %v, want ErrCorrupt saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || n != 5 || rec.End != end {
				t.Fatalf("recover: %d frames to %d (%v), want 5 to %d", n, rec.End, err, end)
			}
		})
	}
}

// scriptedFence injects faults into a real fence (fault injection only):
// each Commit takes the next step of script — "ok", "lost" (applied, but
// the answer lost: an error) or "fail" (not applied, an error).
type scriptedFence struct {
	objwal.Fence
	mu     sync.Mutex
	script []string
}

func (f *scriptedFence) Commit(ctx context.Context, epoch, end uint64) error {
	f.mu.Lock()
	step := "ok"
	if len(f.script) > 0 {
		step, f.script = f.script[0], f.script[1:]
	}
	f.mu.Unlock()
	switch step {
	case "lost":
		if err := f.Fence.Commit(ctx, epoch, end); err != nil {
			return err
		}
		return errors.New("injected: commit applied, answer lost")
	case "fail":
		return errors.New("injected: commit not applied")
	}
	return f.Fence.Commit(ctx, epoch, end)
}

// TestRewriteAfterLostCommit: a commit is applied but its answer lost, so
// the round fails; the log retries at the same position with other
// frames, replacing the object, and the process dies before that commit.
// The end must not be the failed round's (the object now holds other
// frames): the retry first records the end back at its position.
func TestRewriteAfterLostCommit(t *testing.T) {
	e := newEnv(t)
	node := e.newNode()
	fence := &scriptedFence{Fence: e.fence(node), script: []string{"ok", "lost", "ok", "fail"}}
	a, err := objwal.Open(options(e.store, fence, node))
	if err != nil {
		t.Fatal(err)
	}
	bodies(t, a)
	var now atomic.Int64
	clock := func() time.Time { return time.Unix(0, now.Load()) }
	l := wal.Open(wal.Options{Backend: keepOpen{a}, Now: clock}, 0)
	defer l.Close()
	if _, err := appendFrame(l, "acknowledged"); err != nil {
		t.Fatal(err)
	}
	if _, err := appendFrame(l, "lost answer"); err == nil {
		t.Fatal("the round whose commit answer was lost was acknowledged")
	}
	now.Add(int64(2 * time.Second)) // past the log's pause after a failure
	if _, err := appendFrame(l, "a retry of another size, never recorded"); err == nil {
		t.Fatal("the round whose commit failed was acknowledged")
	}
	got, _ := bodies(t, e.open(t, node))
	if want := []string{"acknowledged"}; !slices.Equal(got, want) {
		t.Fatalf("recovered %q, want %q", got, want)
	}
}

// flakyStore fails deletions while failing is set (fault injection).
type flakyStore struct {
	objwal.Store
	failing atomic.Bool
	fails   atomic.Int64
}

func (s *flakyStore) Delete(ctx context.Context, key string) error {
	if s.failing.Load() && s.fails.Add(1)%2 == 1 {
		return errors.New("injected delete failure")
	}
	return s.Store.Delete(ctx, key)
}

// TestTruncateFinishesLater: deletions that fail are retried by the next
// truncation, which removes exactly the objects wholly below its
// position.
func TestTruncateFinishesLater(t *testing.T) {
	e := newEnv(t)
	node := e.newNode()
	store := &flakyStore{Store: e.store}
	a, err := objwal.Open(options(store, e.fence(node), node))
	if err != nil {
		t.Fatal(err)
	}
	bodies(t, a)
	l := wal.Open(wal.Options{Backend: keepOpen{a}}, 0)
	defer l.Close()
	var poss []uint64
	for i := range 10 {
		pos, err := appendFrame(l, fmt.Sprint("frame ", i))
		if err != nil {
			t.Fatal(err)
		}
		poss = append(poss, pos)
	}
	all := e.keys(t, node)
	store.failing.Store(true)
	// A position inside object 6 keeps it: only 0..5 lie wholly below.
	if err := a.TruncateBefore(poss[6] + 3); err == nil {
		t.Fatal("truncation with failing deletions reported no error")
	}
	if left := e.keys(t, node); len(left) <= 4 {
		t.Fatalf("%d objects left; the injected failures should have kept some", len(left))
	}
	store.failing.Store(false)
	if err := a.TruncateBefore(poss[6] + 3); err != nil {
		t.Fatal(err)
	}
	if left := e.keys(t, node); !slices.Equal(left, all[6:]) {
		t.Fatalf("objects left %v, want %v", left, all[6:])
	}
	var got []uint64
	if _, err := e.open(t, node).Recover(poss[6], func(pos uint64, _ []byte) error {
		got = append(got, pos)
		return nil
	}); err != nil || !slices.Equal(got, poss[6:]) {
		t.Fatalf("recovered %v (%v), want %v", got, err, poss[6:])
	}
}

// TestEtcdHangs: with etcd stopped (SIGSTOP), an append fails once the
// fence's transaction times out instead of hanging, and nothing is
// acknowledged; after etcd continues (and may then apply the transaction
// it held), the log goes on and a new process reads exactly the
// acknowledged frames.
func TestEtcdHangs(t *testing.T) {
	e := newEnv(t)
	node := e.newNode()
	opts := options(e.store, e.fence(node), node)
	opts.Timeout = time.Second
	a, err := objwal.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	bodies(t, a)
	var now atomic.Int64
	clock := func() time.Time { return time.Unix(0, now.Load()) }
	l := wal.Open(wal.Options{Backend: keepOpen{a}, Now: clock}, 0)
	defer l.Close()
	if _, err := appendFrame(l, "before"); err != nil {
		t.Fatal(err)
	}
	if err := e.etcd.Pause(); err != nil {
		t.Fatal(err)
	}
	resumed := false
	defer func() {
		if !resumed {
			e.etcd.Resume()
		}
	}()
	// SIGSTOP is queued when kill returns; wait until etcd stops answering.
	for deadline := time.Now().Add(time.Minute); ; {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		_, err := e.cli.Get(ctx, "probe")
		cancel()
		if err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting for the stopped etcd to stop answering")
		}
	}
	done := make(chan error, 1)
	go func() {
		_, err := appendFrame(l, "while etcd hangs")
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || errors.Is(err, objwal.ErrFenced) {
			t.Fatalf("append while etcd hangs: %v, want a failure that is not a fence", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("timed out waiting for the append to fail while etcd hangs")
	}
	if err := e.etcd.Resume(); err != nil {
		t.Fatal(err)
	}
	resumed = true
	now.Add(int64(2 * time.Second))
	if _, err := appendFrame(l, "after"); err != nil {
		t.Fatalf("append after etcd continued: %v", err)
	}
	got, _ := bodies(t, e.open(t, node))
	if want := []string{"before", "after"}; !slices.Equal(got, want) {
		t.Fatalf("recovered %q, want %q", got, want)
	}
}

// TestLargeRound: a round larger than the S3 client's part size is put as
// a multipart upload and read back whole, between small ones.
func TestLargeRound(t *testing.T) {
	e := newEnv(t)
	node := e.newNode()
	a := e.open(t, node)
	bodies(t, a)
	l := wal.Open(wal.Options{Backend: keepOpen{a}}, 0)
	defer l.Close()
	big := strings.Repeat("0123456789abcdef", (6<<20)/16) // 6 MiB
	want := []string{"small", big, "small again"}
	for _, b := range want {
		if _, err := appendFrame(l, b); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := bodies(t, e.open(t, node))
	if len(got) != 3 || got[0] != want[0] || got[1] != big || got[2] != want[2] {
		t.Fatalf("recovered %d frames (sizes %v), want the 3 written", len(got), lens(got))
	}
}

func lens(ss []string) []int {
	var n []int
	for _, s := range ss {
		n = append(n, len(s))
	}
	return n
}

// latePutStore fails the PUT of its n-th object without storing it and
// keeps it, so that the test can deliver it late (fault injection: a PUT
// whose answer timed out and which the store applies afterwards).
type latePutStore struct {
	objwal.Store
	mu      sync.Mutex
	n       int
	held    string
	heldBuf []byte
}

func (s *latePutStore) Put(ctx context.Context, key string, bufs [][]byte, n int64) error {
	s.mu.Lock()
	s.n--
	hold := s.n == 0
	if hold {
		s.held = key
		for _, b := range bufs {
			s.heldBuf = append(s.heldBuf, b...)
		}
	}
	s.mu.Unlock()
	if hold {
		return errors.New("injected: PUT timed out")
	}
	return s.Store.Put(ctx, key, bufs, n)
}

// TestLatePutAfterRetry: a PUT times out, the log retries at the same
// position with other frames, and the first PUT lands after the retry's.
// The retry ran under a renewed epoch, so the late object has a key of its
// own and loses to the retry's: a new process reads the retry's frames.
func TestLatePutAfterRetry(t *testing.T) {
	e := newEnv(t)
	node := e.newNode()
	store := &latePutStore{Store: e.store, n: 2}
	a, err := objwal.Open(options(store, e.fence(node), node))
	if err != nil {
		t.Fatal(err)
	}
	bodies(t, a)
	var now atomic.Int64
	clock := func() time.Time { return time.Unix(0, now.Load()) }
	l := wal.Open(wal.Options{Backend: keepOpen{a}, Now: clock}, 0)
	defer l.Close()
	if _, err := appendFrame(l, "first"); err != nil {
		t.Fatal(err)
	}
	if _, err := appendFrame(l, "timed out"); err == nil {
		t.Fatal("the round whose PUT failed was acknowledged")
	}
	now.Add(int64(2 * time.Second))
	if _, err := appendFrame(l, "the retry, of another size"); err != nil {
		t.Fatal(err)
	}
	if _, err := appendFrame(l, "after"); err != nil {
		t.Fatal(err)
	}
	// The late PUT lands now.
	if err := e.store.Put(context.Background(), store.held, [][]byte{store.heldBuf}, int64(len(store.heldBuf))); err != nil {
		t.Fatal(err)
	}
	got, _ := bodies(t, e.open(t, node))
	if want := []string{"first", "the retry, of another size", "after"}; !slices.Equal(got, want) {
		t.Fatalf("recovered %q, want %q", got, want)
	}
}
