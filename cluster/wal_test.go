package cluster

import (
	"context"
	"errors"
	"maps"
	"strconv"
	"testing"

	"github.com/silt-io/silt/core/wal/objwal"
	"github.com/silt-io/silt/internal/etcdtest"
)

// TestWALFence: each Acquire gets a higher epoch and fences the earlier
// writers; a request of the writer's own that etcd applies late (made
// here by restoring the revisions it was built with) never moves the end
// or the checkpoint back.
func TestWALFence(t *testing.T) {
	srv := etcdtest.Start(t)
	cli := srv.Client(t)
	ctx := context.Background()
	const prefix = "/silt/wal/n1/"
	end := func() uint64 {
		t.Helper()
		resp, err := cli.Get(ctx, prefix+"end")
		if err != nil || len(resp.Kvs) == 0 {
			t.Fatalf("read end: %v", err)
		}
		v, _ := strconv.ParseUint(string(resp.Kvs[0].Value), 10, 64)
		return v
	}

	a := NewWALFence(cli, prefix)
	sa, err := a.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if sa.Epoch != 1 || sa.End != 0 || sa.Checkpoint != nil {
		t.Fatalf("first acquire: %+v", sa)
	}
	if err := a.Commit(ctx, sa.Epoch, 100); err != nil {
		t.Fatal(err)
	}
	if err := a.SaveCheckpoint(ctx, sa.Epoch, []byte("ck at 50")); err != nil {
		t.Fatal(err)
	}
	old := maps.Clone(a.revs)
	if err := a.Commit(ctx, sa.Epoch, 200); err != nil {
		t.Fatal(err)
	}
	if err := a.SaveCheckpoint(ctx, sa.Epoch, []byte("ck at 150")); err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	a.revs = old
	a.mu.Unlock()
	if err := a.Commit(ctx, sa.Epoch, 150); err == nil || errors.Is(err, objwal.ErrFenced) {
		t.Fatalf("a late commit: %v, want a refusal that is not a fence", err)
	}
	if err := a.SaveCheckpoint(ctx, sa.Epoch, []byte("ck at 50")); err == nil {
		t.Fatal("a late checkpoint was recorded")
	}
	if got := end(); got != 200 {
		t.Fatalf("end %d after a late commit, want 200", got)
	}
	// The refusal made the writer read the record again: it goes on.
	if err := a.Commit(ctx, sa.Epoch, 250); err != nil {
		t.Fatal(err)
	}
	// Renewing the epoch fences the writer's own requests of the old one;
	// a renewal sent again after its answer was lost finds it done.
	e2, err := a.Renew(ctx, sa.Epoch)
	if err != nil || e2 != sa.Epoch+1 {
		t.Fatalf("renew: %d, %v", e2, err)
	}
	if again, err := a.Renew(ctx, sa.Epoch); err != nil || again != e2 {
		t.Fatalf("renewal sent again: %d, %v; want %d", again, err, e2)
	}
	if err := a.Commit(ctx, sa.Epoch, 260); !errors.Is(err, objwal.ErrFenced) {
		t.Fatalf("a late commit of the renewed epoch: %v, want ErrFenced", err)
	}
	if err := a.Commit(ctx, e2, 300); err != nil {
		t.Fatal(err)
	}

	b := NewWALFence(cli, prefix)
	sb, err := b.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if sb.Epoch != 3 || sb.End != 300 || string(sb.Checkpoint) != "ck at 150" {
		t.Fatalf("second acquire: %+v", sb)
	}
	if err := a.Commit(ctx, e2, 400); !errors.Is(err, objwal.ErrFenced) {
		t.Fatalf("commit of the fenced writer: %v, want ErrFenced", err)
	}
	if err := a.SaveCheckpoint(ctx, e2, []byte("x")); !errors.Is(err, objwal.ErrFenced) {
		t.Fatalf("checkpoint of the fenced writer: %v, want ErrFenced", err)
	}
	// Renewal never takes the log back: only Acquire does.
	if _, err := a.Renew(ctx, e2); !errors.Is(err, objwal.ErrFenced) {
		t.Fatalf("renewal by the fenced writer: %v, want ErrFenced", err)
	}
	if got := end(); got != 300 {
		t.Fatalf("end %d after the fenced writer's commit, want 300", got)
	}
	if err := b.Commit(ctx, sb.Epoch, 350); err != nil {
		t.Fatal(err)
	}
}
