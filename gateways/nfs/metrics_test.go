package nfs

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// Calls are counted by procedure, failures apart, and open connections
// are a gauge, in the registry the server was given.
func TestMetrics(t *testing.T) {
	e := newEnv(t)
	srv, err := New(rootConfig(), e.mem, e.store, testKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	if err := srv.RegisterMetrics(reg); err != nil {
		t.Fatal(err)
	}
	addr, _ := startServer(t, srv)
	v := mustMount(t, addr, "/")
	f, err := v.Open(chunk)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 100)
	if n, err := f.Read(buf); n == 0 {
		t.Fatalf("read %d bytes: %v", n, err)
	}
	f.Close()
	if _, _, err := v.Lookup("/acme/nope"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Lookup of a missing name: %v", err)
	}
	// Observe runs after the answer is written, so the client may see it
	// a moment before the count moves. READs run beside the connection's
	// other calls, so the LOOKUP after the READ may be counted first: wait
	// for both.
	deadline := time.Now().Add(hangStop)
	for (testutil.ToFloat64(srv.met.failed.WithLabelValues("nfs.LOOKUP")) < 1 ||
		testutil.ToFloat64(srv.met.requests.WithLabelValues("nfs.READ")) < 1) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := testutil.ToFloat64(srv.met.requests.WithLabelValues("nfs.READ")); n < 1 {
		t.Fatalf("%v READ calls counted", n)
	}
	if n := testutil.ToFloat64(srv.met.requests.WithLabelValues("mount.MOUNT")); n < 1 {
		t.Fatalf("%v MOUNT calls counted", n)
	}
	if n := testutil.ToFloat64(srv.met.failed.WithLabelValues("nfs.LOOKUP")); n < 1 {
		t.Fatalf("%v failed LOOKUPs counted after a missing name", n)
	}
	if n := testutil.ToFloat64(srv.met.failed.WithLabelValues("nfs.READ")); n != 0 {
		t.Fatalf("%v failed READs counted", n)
	}
	if n := testutil.ToFloat64(srv.met.conns); n < 1 {
		t.Fatalf("connections gauge %v with a mount open", n)
	}
	if n, err := testutil.GatherAndCount(reg, "silt_nfs_request_seconds"); err != nil || n == 0 {
		t.Fatalf("latency histogram: %d series, %v", n, err)
	}
}
