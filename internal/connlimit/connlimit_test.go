package connlimit

import (
	"errors"
	"io"
	"net"
	"os"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// faultyListener is a fault-injection fake: its Accept returns the
// queued errors in turn, then connections from the real listener below.
type faultyListener struct {
	net.Listener
	mu   sync.Mutex
	errs []error
}

func (f *faultyListener) Accept() (net.Conn, error) {
	f.mu.Lock()
	if len(f.errs) > 0 {
		err := f.errs[0]
		f.errs = f.errs[1:]
		f.mu.Unlock()
		return nil, err
	}
	f.mu.Unlock()
	return f.Listener.Accept()
}

// acceptErr is an accept failure as the net package reports it.
func acceptErr(errno syscall.Errno) error {
	return &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", errno)}
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// dialFrom connects to ln from the loopback address src (127.0.0.2 and
// up are loopback on Linux), so that a test can be several clients.
func dialFrom(t *testing.T, src string, ln net.Listener) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	c, err := d.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestAcceptBacksOffOnTemporaryErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		errs     []error
		wantConn bool // else Accept returns the last error
	}{
		"EMFILE":                {errs: repeat(acceptErr(syscall.EMFILE), 10), wantConn: true},
		"ENFILE":                {errs: repeat(acceptErr(syscall.ENFILE), 2), wantConn: true},
		"ENOBUFS":               {errs: repeat(acceptErr(syscall.ENOBUFS), 1), wantConn: true},
		"ENOMEM":                {errs: repeat(acceptErr(syscall.ENOMEM), 1), wantConn: true},
		"ECONNABORTED":          {errs: repeat(acceptErr(syscall.ECONNABORTED), 3), wantConn: true},
		"closed":                {errs: []error{&net.OpError{Op: "accept", Err: net.ErrClosed}}},
		"EMFILE then EBADF":     {errs: []error{acceptErr(syscall.EMFILE), acceptErr(syscall.EBADF)}},
		"not a syscall failure": {errs: []error{errors.New("listener broke")}},
	} {
		t.Run(name, func(t *testing.T) {
			real := listen(t)
			fake := &faultyListener{Listener: real, errs: slices.Clone(tc.errs)}
			met := NewMetrics()
			l := New(fake, Options{Head: "test", Limits: Limits{Max: 10, PerClient: 10}, Metrics: met})
			var slept []time.Duration
			l.sleep = func(d time.Duration) { slept = append(slept, d) }
			if tc.wantConn {
				dialFrom(t, "127.0.0.1", real)
			}
			c, err := l.Accept()
			if tc.wantConn {
				if err != nil {
					t.Fatalf("Accept: %v, want a connection after the temporary errors", err)
				}
				c.Close()
				want := backoffs(len(tc.errs))
				if !slices.Equal(slept, want) {
					t.Errorf("slept %v, want %v", slept, want)
				}
				if got := testutil.ToFloat64(met.acceptErrors.WithLabelValues("test")); got != float64(len(tc.errs)) {
					t.Errorf("accept errors counted %v, want %d", got, len(tc.errs))
				}
				return
			}
			last := tc.errs[len(tc.errs)-1]
			if err == nil || err.Error() != last.Error() {
				t.Fatalf("Accept: %v, %v; want error %v", c, err, last)
			}
			if len(slept) != len(tc.errs)-1 {
				t.Errorf("slept %d times, want %d (once per temporary error)", len(slept), len(tc.errs)-1)
			}
		})
	}
}

func repeat(err error, n int) []error {
	out := make([]error, n)
	for i := range out {
		out[i] = err
	}
	return out
}

// backoffs is net/http's sequence: 5 ms doubling, at most 1 s.
func backoffs(n int) []time.Duration {
	var out []time.Duration
	d := 5 * time.Millisecond
	for range n {
		out = append(out, d)
		d = min(2*d, time.Second)
	}
	return out
}

func TestCloseEndsBackoff(t *testing.T) {
	fake := &faultyListener{Listener: listen(t), errs: repeat(acceptErr(syscall.EMFILE), 1000)}
	l := New(fake, Options{Head: "test", Limits: Limits{Max: 1, PerClient: 1}})
	done := make(chan error, 1)
	go func() {
		_, err := l.Accept()
		done <- err
	}()
	// Accept is somewhere in its errors and backoffs; Close must end it
	// with the closed listener's error rather than after 1000 of them.
	for {
		fake.mu.Lock()
		n := len(fake.errs)
		fake.mu.Unlock()
		if n < 995 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	l.Close()
	if err := <-done; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept after Close: %v, want net.ErrClosed", err)
	}
}

// accepted is what the server side of a test sees.
type accepted struct {
	c   *Conn
	err error
}

// serveAccept accepts on l in the background.
func serveAccept(t *testing.T, l *Listener) <-chan accepted {
	t.Helper()
	ch := make(chan accepted)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				ch <- accepted{err: err}
				close(ch)
				return
			}
			ch <- accepted{c: c.(*Conn)}
		}
	}()
	t.Cleanup(func() { l.Close() })
	return ch
}

// isClosedByServer reports whether the server closed the client's
// connection: the client reads EOF (or a reset) rather than data.
func isClosedByServer(c net.Conn) bool {
	_, err := c.Read(make([]byte, 1))
	return err != nil
}

func TestPerClientCap(t *testing.T) {
	ln := listen(t)
	met := NewMetrics()
	l := New(ln, Options{Head: "test", Limits: Limits{Max: 100, PerClient: 2}, Metrics: met})
	acc := serveAccept(t, l)
	var server []*Conn
	// 127.0.0.2 fills its two places; its third connection is closed at
	// once while 127.0.0.3 is still admitted.
	a1, a2 := dialFrom(t, "127.0.0.2", ln), dialFrom(t, "127.0.0.2", ln)
	server = append(server, (<-acc).c, (<-acc).c)
	a3 := dialFrom(t, "127.0.0.2", ln)
	b1 := dialFrom(t, "127.0.0.3", ln)
	server = append(server, (<-acc).c)
	if got := server[2].RemoteAddr().String(); got != b1.LocalAddr().String() {
		t.Fatalf("third admitted connection is from %s, want 127.0.0.3's %s", got, b1.LocalAddr())
	}
	if !isClosedByServer(a3) {
		t.Fatal("127.0.0.2's third connection was not closed")
	}
	if got := testutil.ToFloat64(met.refused.WithLabelValues("test", ReasonPerClient)); got != 1 {
		t.Errorf("refused per_client = %v, want 1", got)
	}
	// Closing one of 127.0.0.2's connections frees its place.
	server[0].Close()
	a1.Close()
	dialFrom(t, "127.0.0.2", ln)
	server = append(server, (<-acc).c)
	if got := l.Open(); got != 3 {
		t.Errorf("open = %d, want 3", got)
	}
	if got := testutil.ToFloat64(met.open.WithLabelValues("test")); got != 3 {
		t.Errorf("silt_connections = %v, want 3", got)
	}
	_ = a2
}

func TestEvictsLongestIdleAtCap(t *testing.T) {
	ln := listen(t)
	met := NewMetrics()
	l := New(ln, Options{Head: "test", Limits: Limits{Max: 3, PerClient: 3}, Metrics: met})
	acc := serveAccept(t, l)
	type pair struct {
		client net.Conn
		server *Conn
	}
	open := func(src string) pair {
		c := dialFrom(t, src, ln)
		a := <-acc
		if a.err != nil {
			t.Fatal(a.err)
		}
		return pair{c, a.server()}
	}
	p1, p2, p3 := open("127.0.0.2"), open("127.0.0.3"), open("127.0.0.4")
	// p2 serves a request; p1 then p3 are idle (p1 the longest).
	Active(p2.server)
	Idle(p3.server)   // no change: new connections are idle already
	Active(p1.server) // p1 becomes active, then idle again: now the youngest idle
	Idle(p1.server)
	p4 := open("127.0.0.5")
	if !closed(l, p3.server) || closed(l, p1.server) || closed(l, p2.server) {
		t.Fatalf("after the 4th connection: closed p1=%v p2=%v p3=%v, want only p3 (longest idle)",
			closed(l, p1.server), closed(l, p2.server), closed(l, p3.server))
	}
	if !isClosedByServer(p3.client) {
		t.Fatal("the evicted connection's client did not see it closed")
	}
	p5 := open("127.0.0.6")
	if !closed(l, p1.server) || closed(l, p2.server) || closed(l, p4.server) {
		t.Fatal("after the 5th connection: want p1 closed, the next longest idle")
	}
	// Every connection busy: the newcomer is refused, nobody evicted.
	Active(p4.server)
	Active(p5.server)
	c6 := dialFrom(t, "127.0.0.7", ln)
	if !isClosedByServer(c6) {
		t.Fatal("a newcomer to a full head with no idle connection was not refused")
	}
	for _, p := range []pair{p2, p4, p5} {
		if closed(l, p.server) {
			t.Fatalf("busy connection %s was closed", p.server.RemoteAddr())
		}
	}
	if got := testutil.ToFloat64(met.evicted.WithLabelValues("test", ReasonMax)); got != 2 {
		t.Errorf("evicted = %v, want 2", got)
	}
	if got := testutil.ToFloat64(met.refused.WithLabelValues("test", ReasonMax)); got != 1 {
		t.Errorf("refused max_connections = %v, want 1", got)
	}
	if got := l.Open(); got != 3 {
		t.Errorf("open = %d, want 3", got)
	}
	// A busy connection that goes idle is the next to go.
	Idle(p2.server)
	open("127.0.0.8")
	if !closed(l, p2.server) {
		t.Fatal("p2, idle again, was not evicted")
	}
}

func (a accepted) server() *Conn { return a.c }

func closed(l *Listener, c *Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return c.closed
}

func TestCloseIsCountedOnce(t *testing.T) {
	ln := listen(t)
	l := New(ln, Options{Head: "test", Limits: Limits{Max: 2, PerClient: 2}})
	acc := serveAccept(t, l)
	dialFrom(t, "127.0.0.2", ln)
	c := (<-acc).c
	c.Close()
	c.Close()
	Active(c) // after Close: ignored
	Idle(c)
	if got := l.Open(); got != 0 {
		t.Fatalf("open = %d after closing the one connection twice, want 0", got)
	}
	// Both places are free again.
	dialFrom(t, "127.0.0.2", ln)
	dialFrom(t, "127.0.0.2", ln)
	<-acc
	<-acc
	if got := l.Open(); got != 2 {
		t.Fatalf("open = %d, want 2", got)
	}
}

func TestClientKey(t *testing.T) {
	for name, tc := range map[string]struct{ a, b string }{
		"IPv4 by address":       {"10.0.0.1:1000", "10.0.0.1:2000"},
		"IPv4-mapped IPv6":      {"[::ffff:10.0.0.1]:1000", "10.0.0.1:2000"},
		"IPv6 by /64":           {"[2001:db8:1:2::1]:1000", "[2001:db8:1:2:ffff::9]:2000"},
		"IPv6 zone ignored /64": {"[fe80::1%eth0]:1000", "[fe80::2]:2000"},
	} {
		t.Run(name, func(t *testing.T) {
			ka, kb := clientOf(addr(tc.a)), clientOf(addr(tc.b))
			if ka != kb {
				t.Fatalf("%s and %s count as different clients (%v, %v)", tc.a, tc.b, ka, kb)
			}
		})
	}
	for name, tc := range map[string]struct{ a, b string }{
		"IPv4 neighbours":   {"10.0.0.1:1000", "10.0.0.2:1000"},
		"IPv6 another /64":  {"[2001:db8:1:2::1]:1000", "[2001:db8:1:3::1]:1000"},
		"IPv4 against IPv6": {"10.0.0.1:1000", "[::1]:1000"},
	} {
		t.Run(name, func(t *testing.T) {
			if clientOf(addr(tc.a)) == clientOf(addr(tc.b)) {
				t.Fatalf("%s and %s count as one client", tc.a, tc.b)
			}
		})
	}
}

type addr string

func (a addr) Network() string { return "tcp" }
func (a addr) String() string  { return string(a) }

// TestConnKeepsFastPaths: wrapping must not cost the heads sendfile
// (net/http looks for io.ReaderFrom on the connection), writev (NFS) or
// half-close (the API's lingering close).
func TestConnKeepsFastPaths(t *testing.T) {
	ln := listen(t)
	l := New(ln, Options{Head: "test", Limits: Limits{Max: 2, PerClient: 2}})
	acc := serveAccept(t, l)
	client := dialFrom(t, "127.0.0.1", ln)
	var c net.Conn = (<-acc).c
	if _, ok := c.(io.ReaderFrom); !ok {
		t.Error("Conn hides io.ReaderFrom")
	}
	if _, ok := c.(interface{ CloseWrite() error }); !ok {
		t.Error("Conn hides CloseWrite")
	}
	bufs := net.Buffers{[]byte("ab"), []byte("cd")}
	if _, err := c.(interface {
		WriteBuffers(*net.Buffers) (int64, error)
	}).WriteBuffers(&bufs); err != nil {
		t.Fatal(err)
	}
	f, err := os.CreateTemp(t.TempDir(), "body")
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("ef")
	f.Seek(0, 0)
	if _, err := c.(io.ReaderFrom).ReadFrom(f); err != nil {
		t.Fatal(err)
	}
	if err := c.(interface{ CloseWrite() error }).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(client)
	if err != nil || string(got) != "abcdef" {
		t.Fatalf("client read %q, %v; want abcdef then EOF", got, err)
	}
}
