package nfs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	gonfs "github.com/silt-io/silt/gateways/nfs/internal/gonfs"
	"github.com/silt-io/silt/internal/metrics"
)

// Calls are counted in the shared head series by procedure and status
// class, with the reply bytes, in the registry the server was given.
func TestMetrics(t *testing.T) {
	e := newEnv(t)
	srv, err := New(rootConfig(), e.mem, e.store, testKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	set, err := metrics.New(metrics.DefaultConfig(), reg)
	if err != nil {
		t.Fatal(err)
	}
	srv.UseMetrics(set.Heads.Head("nfs"))
	addr, _ := startServer(t, srv)
	v := mustMount(t, addr, "/")
	f, err := v.Open(chunk)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(f)
	if len(data) == 0 {
		t.Fatalf("read %d bytes: %v", len(data), err)
	}
	f.Close()
	if _, _, err := v.Lookup("/acme/nope"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Lookup of a missing name: %v", err)
	}
	count := func(proc, status string) float64 {
		n, err := seriesValue(reg, "silt_head_requests_total", map[string]string{"head": "nfs", "op": proc, "status": status})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	// Observe runs after the answer is written, so the client may see it
	// a moment before the count moves. READs run beside the connection's
	// other calls, so the LOOKUP after the READ may be counted first: wait
	// for both.
	deadline := time.Now().Add(hangStop)
	for (count("nfs.LOOKUP", metrics.StatusClientError) < 1 || count("nfs.READ", metrics.StatusOK) < 1) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := count("nfs.READ", metrics.StatusOK); n < 1 {
		t.Fatalf("%v READ calls counted", n)
	}
	if n := count("mount.MOUNT", metrics.StatusOK); n < 1 {
		t.Fatalf("%v MOUNT calls counted", n)
	}
	if n := count("nfs.LOOKUP", metrics.StatusClientError); n < 1 {
		t.Fatalf("%v failed LOOKUPs counted after a missing name", n)
	}
	for _, st := range []string{metrics.StatusClientError, metrics.StatusServerError} {
		if n := count("nfs.READ", st); n != 0 {
			t.Fatalf("%v READs counted as %s", n, st)
		}
	}
	sent, err := seriesValue(reg, "silt_head_response_bytes_total", map[string]string{"head": "nfs"})
	if err != nil {
		t.Fatal(err)
	}
	if sent < float64(len(data)) {
		t.Fatalf("%v reply bytes counted after reading %d bytes of data", sent, len(data))
	}
	if n, err := testutil.GatherAndCount(reg, "silt_head_request_duration_seconds"); err != nil || n == 0 {
		t.Fatalf("latency histogram: %d series, %v", n, err)
	}
}

// seriesValue is the counter value of name{labels} in reg.
func seriesValue(reg *prometheus.Registry, name string, labels map[string]string) (float64, error) {
	mfs, err := reg.Gather()
	if err != nil {
		return 0, err
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) != len(labels) {
				continue
			}
			for _, l := range m.GetLabel() {
				if labels[l.GetName()] != l.GetValue() {
					continue next
				}
			}
			return m.GetCounter().GetValue(), nil
		}
	}
	return 0, nil
}

func TestStatusClass(t *testing.T) {
	for name, tc := range map[string]struct {
		err  error
		want string
	}{
		"ok":                {nil, metrics.StatusOK},
		"no such file":      {&gonfs.NFSStatusError{NFSStatus: gonfs.NFSStatusNoEnt}, metrics.StatusClientError},
		"read-only":         {&gonfs.NFSStatusError{NFSStatus: gonfs.NFSStatusROFS}, metrics.StatusClientError},
		"stale handle":      {&gonfs.NFSStatusError{NFSStatus: gonfs.NFSStatusStale}, metrics.StatusClientError},
		"i/o error":         {&gonfs.NFSStatusError{NFSStatus: gonfs.NFSStatusIO}, metrics.StatusServerError},
		"server fault":      {fmt.Errorf("wrapped: %w", &gonfs.NFSStatusError{NFSStatus: gonfs.NFSStatusServerFault}), metrics.StatusServerError},
		"try again":         {&gonfs.NFSStatusError{NFSStatus: gonfs.NFSStatusJukebox}, metrics.StatusServerError},
		"rpc no such prog":  {&gonfs.ResponseCodeProgUnavailableError{}, metrics.StatusClientError},
		"reply not written": {io.ErrClosedPipe, metrics.StatusServerError},
	} {
		t.Run(name, func(t *testing.T) {
			if got := statusClass(tc.err); got != tc.want {
				t.Fatalf("statusClass = %q, want %q", got, tc.want)
			}
		})
	}
}
