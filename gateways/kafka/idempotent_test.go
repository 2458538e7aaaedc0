package kafka

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// faultProxy is a fault-injecting TCP proxy between a client and the
// head: it drops the answer to the first Produce request of the first
// connection that sends one, closing that connection, so that the batch
// is stored but the client never learns it and must retry.
type faultProxy struct {
	ln      net.Listener
	target  string
	dropped atomic.Bool
	wg      sync.WaitGroup
}

// newFaultProxy listens; start forwards to the head.
func newFaultProxy(t *testing.T) *faultProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{ln: ln}
	t.Cleanup(func() { ln.Close(); p.wg.Wait() })
	return p
}

func (p *faultProxy) start(target string) {
	p.target = target
	p.wg.Add(1)
	go p.accept()
}

func (p *faultProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		var mu sync.Mutex
		drop := map[int32]bool{} // correlation ids whose answers are dropped
		p.wg.Add(2)
		go func() { // client to server: note the Produce to drop
			defer p.wg.Done()
			defer s.Close()
			for {
				frame, err := readFrame(c)
				if err != nil {
					return
				}
				if binary.BigEndian.Uint16(frame[4:]) == 0 && p.dropped.CompareAndSwap(false, true) {
					mu.Lock()
					drop[int32(binary.BigEndian.Uint32(frame[8:]))] = true
					mu.Unlock()
				}
				if _, err := s.Write(frame); err != nil {
					return
				}
			}
		}()
		go func() { // server to client: drop the noted answer
			defer p.wg.Done()
			defer c.Close()
			for {
				frame, err := readFrame(s)
				if err != nil {
					return
				}
				mu.Lock()
				d := drop[int32(binary.BigEndian.Uint32(frame[4:]))]
				mu.Unlock()
				if d {
					s.Close()
					return
				}
				if _, err := c.Write(frame); err != nil {
					return
				}
			}
		}()
	}
}

// readFrame reads one length-prefixed Kafka frame, the length included.
func readFrame(r io.Reader) ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	frame := make([]byte, 4+binary.BigEndian.Uint32(n[:]))
	copy(frame, n[:])
	_, err := io.ReadFull(r, frame[4:])
	return frame, err
}

// TestIdempotentRetryStoredOnce loses the answer to a stored batch: the
// idempotent franz-go producer retries it on a new connection with the
// same producer id and sequence, and silt stores it once.
func TestIdempotentRetryStoredOnce(t *testing.T) {
	proxy := newFaultProxy(t)
	// The head names the proxy in Metadata, so that the client keeps
	// going through it.
	e := newEnv(t, envOptions{kafka: func(c *Config) { c.Advertise = proxy.ln.Addr().String() }})
	proxy.start(e.addr)
	e.stream("idem", 1)
	cl := e.client("root", e.root, kgo.SeedBrokers(proxy.ln.Addr().String()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var values []string
	for i := range 50 {
		values = append(values, fmt.Sprintf("v%d", i))
	}
	produceAll(t, cl, "acme.idem", 0, values)
	if !proxy.dropped.Load() {
		t.Fatal("the proxy dropped no Produce answer: the retry was not exercised")
	}
	produceAll(t, cl, "acme.idem", 0, []string{"after"})
	got := e.events("idem", 0)
	if len(got) != len(values)+1 {
		t.Fatalf("stored %d events, want %d (each once)", len(got), len(values)+1)
	}
	for i, v := range append(values, "after") {
		if string(got[i]) != v {
			t.Fatalf("event %d = %q, want %q", i, got[i], v)
		}
	}
}
