package nfs

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/silt-io/silt/internal/connlimit"
)

// faultyListener is a fault-injection fake: its Accept fails with
// EMFILE, as accept(2) does when the process is out of descriptors, the
// given number of times before it accepts from the real listener.
type faultyListener struct {
	net.Listener
	mu       sync.Mutex
	failures int
}

func (f *faultyListener) Accept() (net.Conn, error) {
	f.mu.Lock()
	if f.failures > 0 {
		f.failures--
		f.mu.Unlock()
		return nil, &net.OpError{Op: "accept", Net: "tcp", Addr: f.Addr(), Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	f.mu.Unlock()
	return f.Listener.Accept()
}

// serveOn serves srv on ln until the test ends; Serve must then return
// nil. It returns a channel that receives Serve's result if it returns
// early.
func serveOn(t *testing.T, srv *Server, ln net.Listener) <-chan error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	early := make(chan error, 1)
	stopped := make(chan struct{})
	go func() {
		select {
		case err := <-done:
			early <- err
		case <-stopped:
		}
	}()
	t.Cleanup(func() {
		cancel()
		close(stopped)
		select {
		case err := <-early:
			t.Errorf("Serve returned before the test ended: %v", err)
		default:
			if err := <-done; err != nil {
				t.Errorf("Serve: %v", err)
			}
		}
	})
	return early
}

// TestServeSurvivesEMFILE: running out of descriptors made go-nfs's
// accept loop return, and the head (and with it silt serve) exit.
func TestServeSurvivesEMFILE(t *testing.T) {
	e := newEnv(t)
	srv, err := New(rootConfig(), e.mem, e.store, testKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	early := serveOn(t, srv, &faultyListener{Listener: ln, failures: 5})
	v := mustMount(t, ln.Addr().String(), "/")
	f, err := v.Open(chunk)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := io.ReadAll(f)
	if err != nil || !bytes.Equal(got, e.files[chunk]) {
		t.Fatalf("read after accept failures: %q, %v", got, err)
	}
	select {
	case err := <-early:
		t.Fatalf("Serve returned after accept failures: %v", err)
	default:
	}
}

// limited serves a Server over e's view (each read held for at least
// delay) with cfg on a connlimit listener of the given caps.
func limited(t *testing.T, e *env, cfg Config, delay time.Duration, lim connlimit.Limits) (*connlimit.Listener, *gatedView, *prometheus.Registry) {
	t.Helper()
	sv := newGatedView(e.mem)
	if delay <= 0 {
		sv.open.Store(true)
	} else {
		// Reads are held, not timed: a slower machine only holds them
		// longer, which is what these tests need (a connection that
		// stays busy past its idle timeout).
		stop := make(chan struct{})
		t.Cleanup(func() { close(stop); sv.open.Store(true) })
		go func() {
			for {
				select {
				case r := <-sv.arrived:
					go func() {
						select {
						case <-time.After(delay):
						case <-stop:
						}
						close(r)
					}()
				case <-stop:
					for len(sv.arrived) > 0 {
						close(<-sv.arrived)
					}
					return
				}
			}
		}()
	}
	srv, err := New(cfg, sv, e.store, testKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	met := connlimit.NewMetrics()
	reg := prometheus.NewRegistry()
	if err := met.Register(reg); err != nil {
		t.Fatal(err)
	}
	cl := connlimit.New(ln, connlimit.Options{Head: "nfs", Limits: lim, Metrics: met})
	serveOn(t, srv, cl)
	return cl, sv, reg
}

// evicted is the head's silt_connections_evicted_total for reason.
func evicted(t *testing.T, reg *prometheus.Registry, reason string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "silt_connections_evicted_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == reason {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// closedByServer blocks until the server closes c, and reports whether
// it did so without sending anything.
func closedByServer(c net.Conn) bool {
	c.SetDeadline(time.Time{})
	n, err := c.Read(make([]byte, 1))
	return n == 0 && err != nil
}

func TestIdleTimeout(t *testing.T) {
	e := newEnv(t)
	cfg := rootConfig()
	cfg.IdleTimeout = time.Second
	ln, _, met := limited(t, e, cfg, 0, connlimit.Limits{Max: 100, PerClient: 100})
	addr := ln.Addr().String()
	for name, prepare := range map[string]func(*rawConn){
		"silent from the start": func(*rawConn) {},
		"after a request": func(c *rawConn) {
			if rep := c.call(2, progNFS, 3, 0, nil); rep.denied || rep.stat != 0 {
				t.Fatalf("NULL: %+v", rep)
			}
		},
		// A client that starts a request and stops holds the connection
		// no longer than an idle one.
		"in the middle of a request": func(c *rawConn) {
			c.c.Write(be(100 | 1<<31)[:3])
		},
	} {
		t.Run(name, func(t *testing.T) {
			c := dialRaw(t, addr)
			prepare(c)
			if !closedByServer(c.c) {
				t.Fatal("the server sent data instead of closing the idle connection")
			}
		})
	}
	if got := evicted(t, met, connlimit.ReasonIdleTimeout); got != 3 {
		t.Errorf("connections closed for idleness counted %v, want 3", got)
	}
}

// A request that takes longer than the idle timeout is not cut off, nor
// is its connection.
func TestIdleTimeoutSparesBusyConnection(t *testing.T) {
	e := newEnv(t)
	cfg := rootConfig()
	cfg.IdleTimeout = time.Second
	ln, _, _ := limited(t, e, cfg, 2500*time.Millisecond, connlimit.Limits{Max: 100, PerClient: 100})
	addr := ln.Addr().String()
	v := mustMount(t, addr, "/")
	f, err := v.Open(chunk)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := io.ReadAll(f)
	if err != nil || !bytes.Equal(got, e.files[chunk]) {
		t.Fatalf("a READ slower than the idle timeout: %q, %v", got, err)
	}
	// The same connection still serves.
	if _, _, err := v.Lookup("/acme"); err != nil {
		t.Fatalf("LOOKUP after the slow READ: %v", err)
	}
}

// At the head's cap the newcomer displaces an idle connection, never one
// whose request is being served, though that one is older.
func TestCapEvictsIdleNotBusy(t *testing.T) {
	e := newEnv(t)
	const delay = 1500 * time.Millisecond
	ln, sv, met := limited(t, e, rootConfig(), delay, connlimit.Limits{Max: 2, PerClient: 10})
	addr := ln.Addr().String()
	busy := mustMount(t, addr, "/")
	f, err := busy.Open(chunk)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	read := make(chan error, 1)
	go func() {
		got, err := io.ReadAll(f)
		if err == nil && !bytes.Equal(got, e.files[chunk]) {
			err = errors.New("wrong data")
		}
		read <- err
	}()
	for sv.inflight.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	idle := dialRaw(t, addr)
	if rep := idle.call(2, progNFS, 3, 0, nil); rep.denied || rep.stat != 0 {
		t.Fatalf("NULL on the second connection: %+v", rep)
	}
	// The server marks the connection idle just after its reply is out,
	// which the client may see first.
	for {
		if open, idle := ln.Counts(); open == 2 && idle == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	newcomer := dialRaw(t, addr)
	if rep := newcomer.call(2, progNFS, 3, 0, nil); rep.denied || rep.stat != 0 {
		t.Fatalf("NULL on the newcomer: %+v", rep)
	}
	if !closedByServer(idle.c) {
		t.Fatal("the idle connection was not closed for the newcomer")
	}
	if err := <-read; err != nil {
		t.Fatalf("the busy connection's READ: %v", err)
	}
	if got := evicted(t, met, connlimit.ReasonMax); got != 1 {
		t.Errorf("evictions counted %v, want 1", got)
	}
}

func TestConfigAdmission(t *testing.T) {
	for name, tc := range map[string]struct {
		edit func(*Config)
		want string // "" = valid
	}{
		"defaults":               {func(*Config) {}, ""},
		"caps set":               {func(c *Config) { c.MaxConnections, c.MaxConnectionsPerClient = 100, 10 }, ""},
		"negative cap":           {func(c *Config) { c.MaxConnections = -1 }, "nfs: max_connections -1"},
		"per client over cap":    {func(c *Config) { c.MaxConnections, c.MaxConnectionsPerClient = 10, 20 }, "nfs: max_connections_per_client 20 exceeds max_connections 10"},
		"idle timeout off":       {func(c *Config) { c.IdleTimeout = 0 }, "nfs: idle_timeout 0s: want at least 1s"},
		"idle timeout too short": {func(c *Config) { c.IdleTimeout = 500 * time.Millisecond }, "nfs: idle_timeout 500ms"},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := rootConfig()
			tc.edit(&cfg)
			err := cfg.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)):
				t.Fatalf("Validate: %v, want %q…", err, tc.want)
			}
		})
	}
}
