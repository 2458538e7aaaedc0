package client

import (
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// faultProxy is a fault-injection TCP proxy for tests: a real listener on
// 127.0.0.1 that forwards connections to a server and, as it is told,
// breaks them — the network between an SDK client and silt going wrong,
// with both ends real. It can
//
//   - cut each connection after a random number of bytes have passed
//     (cutAfter), in the middle of a request or of an answer the server has
//     already acted on;
//   - delay every chunk it forwards (delay), and every new connection before
//     it is forwarded;
//   - drop every open connection at once (dropAll), and hold new ones
//     unanswered for a while (holdFor), as a network partition does.
//
// It counts what it did, so that a test can fail when no fault happened.
type faultProxy struct {
	t      *testing.T
	ln     net.Listener
	target string

	cutAfter atomic.Int64 // 0: never; else a random 1..cutAfter bytes
	delay    atomic.Int64 // nanoseconds added to every forwarded chunk
	held     atomic.Int64 // unix nanoseconds until which new connections wait

	cuts, drops, conns atomic.Int64

	mu struct {
		sync.Mutex
		rng    *rand.Rand
		open   map[net.Conn]struct{}
		closed bool
	}
	wg sync.WaitGroup
}

func newFaultProxy(t *testing.T, target string) *faultProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{t: t, ln: ln, target: target}
	p.mu.rng = rand.New(rand.NewPCG(7, 11))
	p.mu.open = map[net.Conn]struct{}{}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// URL is the proxy's base URL for a client.
func (p *faultProxy) URL() string { return "http://" + p.ln.Addr().String() }

func (p *faultProxy) setCutAfter(n int64)         { p.cutAfter.Store(n) }
func (p *faultProxy) setDelay(d time.Duration)    { p.delay.Store(int64(d)) }
func (p *faultProxy) holdFor(d time.Duration)     { p.held.Store(time.Now().Add(d).UnixNano()) }
func (p *faultProxy) faults() (cuts, drops int64) { return p.cuts.Load(), p.drops.Load() }

// dropAll resets every open connection.
func (p *faultProxy) dropAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.mu.open {
		reset(c)
		p.drops.Add(1)
	}
}

// dropSome drops every open connection, waiting for one to be open
// first (a client may be between a cut and its reconnect).
func (p *faultProxy) dropSome(t *testing.T) {
	before := p.drops.Load()
	for deadline := time.Now().Add(time.Minute); p.drops.Load() == before; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Error("timed out waiting for a connection to drop")
			return
		}
		p.dropAll()
	}
}

func (p *faultProxy) close() {
	p.mu.Lock()
	p.mu.closed = true
	for c := range p.mu.open {
		c.Close()
	}
	p.mu.Unlock()
	p.ln.Close()
	p.wg.Wait()
}

// track registers c as open; false when the proxy is closing.
func (p *faultProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.closed {
		return false
	}
	p.mu.open[c] = struct{}{}
	return true
}

func (p *faultProxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.mu.open, c)
	p.mu.Unlock()
	c.Close()
}

// budget is how many bytes the next connection may carry before it is
// cut (-1: no limit).
func (p *faultProxy) budget() int64 {
	n := p.cutAfter.Load()
	if n <= 0 {
		return -1
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return 1 + p.mu.rng.Int64N(n)
}

func (p *faultProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(c) {
			c.Close()
			return
		}
		p.conns.Add(1)
		p.wg.Add(1)
		go p.serve(c)
	}
}

func (p *faultProxy) serve(c net.Conn) {
	defer p.wg.Done()
	defer p.untrack(c)
	// A held connection waits (unanswered, as across a partition) until
	// the hold ends or the proxy closes; a delayed one waits the delay.
	for time.Now().UnixNano() < p.held.Load() {
		time.Sleep(10 * time.Millisecond)
		p.mu.Lock()
		closed := p.mu.closed
		p.mu.Unlock()
		if closed {
			return
		}
	}
	time.Sleep(time.Duration(p.delay.Load()))
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	if !p.track(up) {
		up.Close()
		return
	}
	defer p.untrack(up)
	left := &atomic.Int64{}
	left.Store(p.budget())
	done := make(chan struct{}, 2)
	go func() { p.pipe(up, c, left); done <- struct{}{} }()
	go func() { p.pipe(c, up, left); done <- struct{}{} }()
	<-done
	// One direction ended (EOF, error or cut): end both.
	reset(c)
	reset(up)
	<-done
}

// pipe copies src to dst in chunks, delaying each, until src ends or the
// connection's byte budget (shared by both directions) runs out.
func (p *faultProxy) pipe(dst, src net.Conn, left *atomic.Int64) {
	buf := make([]byte, 4096)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if d := p.delay.Load(); d > 0 {
				time.Sleep(time.Duration(d))
			}
			chunk := buf[:n]
			cut := false
			if l := left.Load(); l >= 0 {
				if int64(n) >= l {
					chunk, cut = buf[:l], true
				}
				left.Add(-int64(n))
			}
			if _, werr := dst.Write(chunk); werr != nil {
				return
			}
			if cut {
				p.cuts.Add(1)
				return
			}
		}
		if err != nil {
			return // EOF or a broken connection: serve ends both sides
		}
	}
}

// reset closes c with an RST where it can, as a broken network does.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}
