package client

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The tests here put a faultProxy between the SDK and a real server: the
// client's connections are cut mid-request and mid-answer, delayed, and
// all dropped at once, and every long-lived user of a connection must come
// through by reconnecting.

// proxied returns a root client that reaches s through p, with fast
// retries (still exponential, jittered and capped).
func (s *server) proxied(t *testing.T, p *faultProxy) *Client {
	t.Helper()
	c, err := New(p.URL(), WithToken(s.root), WithRetry(4, time.Millisecond, 20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

func proxyTo(t *testing.T, s *server) *faultProxy {
	u, err := url.Parse(s.ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	return newFaultProxy(t, u.Host)
}

// A Producer whose connections are cut, delayed and dropped stores every
// event exactly once, in order per routing key.
func TestProducerThroughFaultProxy(t *testing.T) {
	const keys, perKey = 20, 150
	s := newServer(t)
	c := s.client(t)
	ctx := t.Context()
	if _, err := c.CreateTenant(ctx, "acme", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateStream(ctx, "acme", StreamSpec{Name: "orders", Segments: 4}); err != nil {
		t.Fatal(err)
	}
	p := proxyTo(t, s)
	p.setCutAfter(6 << 10)
	p.setDelay(200 * time.Microsecond)
	prod, err := s.proxied(t, p).NewProducer("acme", "orders", ProducerOptions{MaxBatchEvents: 25, Linger: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var futs []*Future
	for i := range perKey {
		for k := range keys {
			f, err := prod.Send(ctx, fmt.Sprintf("k%02d", k), fmt.Appendf(nil, "k%02d-%04d", k, i))
			if err != nil {
				t.Fatal(err)
			}
			futs = append(futs, f)
		}
		if i == perKey/3 {
			p.dropSome(t)
		}
		if i == 2*perKey/3 {
			p.dropSome(t)
			p.holdFor(300 * time.Millisecond) // a short partition
		}
	}
	if err := prod.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for _, f := range futs {
		if _, err := f.Wait(ctx); err != nil {
			t.Fatalf("an event failed: %v", err)
		}
	}
	if cuts, drops := p.faults(); cuts == 0 || drops == 0 {
		t.Fatalf("the proxy cut %d and dropped %d connections; the test proves nothing", cuts, drops)
	}

	// Read everything back directly: each event once, in order per key.
	count := map[string]int{}
	last := map[string]int{}
	st, err := c.GetStream(ctx, "acme", "orders")
	if err != nil {
		t.Fatal(err)
	}
	for _, sg := range st.Segments {
		b, err := c.Read(ctx, "acme", "orders", ReadOptions{Segment: sg.ID, Max: keys * perKey})
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range b.Events {
			d := string(ev.Data)
			count[d]++
			key, n, _ := strings.Cut(d, "-")
			i, _ := strconv.Atoi(n)
			if l, ok := last[key]; ok && i <= l {
				t.Fatalf("key %s: event %d stored after %d", key, i, l)
			}
			last[key] = i
		}
	}
	for k := range keys {
		for i := range perKey {
			if d := fmt.Sprintf("k%02d-%04d", k, i); count[d] != 1 {
				t.Fatalf("event %s stored %d times, want once", d, count[d])
			}
		}
	}
	if len(count) != keys*perKey {
		t.Fatalf("%d distinct events stored, want %d", len(count), keys*perKey)
	}
	cuts, drops := p.faults()
	t.Logf("%d events through %d connections, %d cut, %d dropped", keys*perKey, p.conns.Load(), cuts, drops)
}

// A follow (silt tail) through the proxy resumes from its cursor after
// every cut and drop: each event is given once, in order per segment.
func TestFollowThroughFaultProxy(t *testing.T) {
	const total = 600
	s := newServer(t)
	c := s.client(t)
	ctx := t.Context()
	if _, err := c.CreateTenant(ctx, "acme", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateStream(ctx, "acme", StreamSpec{Name: "logs", Segments: 3}); err != nil {
		t.Fatal(err)
	}
	p := proxyTo(t, s)
	p.setCutAfter(4 << 10)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range total {
			ev := fmt.Sprintf("event-%04d", i)
			if _, err := c.Append(ctx, "acme", "logs", [][]byte{[]byte(ev)}, AppendOptions{Key: ev}); err != nil {
				t.Error(err)
				return
			}
			if i == total/2 {
				p.dropSome(t)
				p.holdFor(200 * time.Millisecond)
			}
		}
	}()
	defer wg.Wait()
	seen := map[string]bool{}
	last := map[string]uint64{}
	errEnough := errors.New("enough")
	err := s.proxied(t, p).Follow(ctx, "acme", "logs", "", func(ev Event) error {
		if seen[string(ev.Data)] {
			t.Errorf("%s given twice", ev.Data)
		}
		seen[string(ev.Data)] = true
		if l, ok := last[ev.Segment]; ok && ev.Offset != l+1 {
			t.Errorf("segment %s: offset %d after %d", ev.Segment, ev.Offset, l)
		}
		last[ev.Segment] = ev.Offset
		if len(seen) == total {
			return errEnough
		}
		return nil
	})
	if !errors.Is(err, errEnough) {
		t.Fatalf("Follow: %v", err)
	}
	if cuts, drops := p.faults(); cuts == 0 || drops == 0 {
		t.Fatalf("the proxy cut %d and dropped %d connections; the test proves nothing", cuts, drops)
	}
}

// Two GroupReaders share a group; one reaches the server through the
// proxy. Its connections are cut and delayed (it keeps its segments), then
// it is partitioned for longer than the session timeout: the other reader
// takes its segments, and when the network comes back it rejoins and
// reads on. Every event is read, no reader skips ahead in a segment, and
// the group ends with nothing behind.
func TestGroupReaderThroughFaultProxy(t *testing.T) {
	const segments, perSegment = 4, 300
	const session = time.Second
	s := newServer(t)
	c := s.client(t)
	ctx := t.Context()
	if _, err := c.CreateTenant(ctx, "acme", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateStream(ctx, "acme", StreamSpec{Name: "orders", Segments: segments}); err != nil {
		t.Fatal(err)
	}
	for seg := range segments {
		evs := make([][]byte, perSegment)
		for i := range evs {
			evs[i] = fmt.Appendf(nil, "s%d-%d", seg, i)
		}
		if _, err := c.Append(ctx, "acme", "orders", evs, AppendOptions{Segment: fmt.Sprint(seg)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.CreateGroup(ctx, "acme", GroupSpec{Name: "g", Streams: []string{"orders"}, SessionTimeout: session}); err != nil {
		t.Fatal(err)
	}
	p := proxyTo(t, s)
	p.setCutAfter(32 << 10)
	p.setDelay(100 * time.Microsecond)

	var (
		mu      sync.Mutex
		seen    = map[string]int{}
		last    = map[[2]string]uint64{} // reader, segment -> last offset read
		allRead = make(chan struct{})
		readByA = make(chan struct{})
		nA      int
	)
	record := func(reader string, evs []GroupEvent) {
		mu.Lock()
		defer mu.Unlock()
		for _, ev := range evs {
			if want := fmt.Sprintf("s%s-%d", ev.Segment, ev.Offset); string(ev.Data) != want {
				t.Errorf("event %s/%d holds %q", ev.Segment, ev.Offset, ev.Data)
			}
			k := [2]string{reader, ev.Segment}
			// Going back (a restart from a commit) is allowed; skipping
			// ahead would lose events.
			if l, ok := last[k]; ok && ev.Offset > l+1 {
				t.Errorf("reader %s skipped from %d to %d in segment %s", reader, l, ev.Offset, ev.Segment)
			}
			last[k] = ev.Offset
			seen[want(ev)]++
		}
		if reader == "a" {
			if nA += len(evs); nA >= perSegment/2 {
				select {
				case <-readByA:
				default:
					close(readByA)
				}
			}
		}
		if len(seen) == segments*perSegment {
			select {
			case <-allRead:
			default:
				close(allRead)
			}
		}
	}
	rctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	run := func(name string, cl *Client) {
		defer wg.Done()
		r, err := cl.NewGroupReader(rctx, "acme", "g", GroupReaderOptions{Member: name, Max: 20, Wait: 20 * time.Millisecond})
		if err != nil {
			t.Error(err)
			return
		}
		defer r.Close(context.Background())
		for rctx.Err() == nil {
			evs, err := r.Next(rctx)
			if rctx.Err() != nil {
				return
			}
			if err != nil {
				t.Errorf("reader %s: Next: %v", name, err)
				return
			}
			record(name, evs)
			if err := r.Commit(rctx); err != nil && !errors.Is(err, ErrRebalanced) && rctx.Err() == nil {
				t.Errorf("reader %s: Commit: %v", name, err)
				return
			}
		}
	}
	wg.Add(1)
	go run("a", s.proxied(t, p))
	waitFor(t, readByA, "reader a to read through the proxy")
	wg.Add(1)
	go run("b", c)

	g0, err := c.GetGroup(ctx, "acme", "g")
	if err != nil {
		t.Fatal(err)
	}
	// The partition: a's connections drop and new ones hang for well over
	// the session timeout.
	p.dropSome(t)
	p.holdFor(3 * session)
	waitFor(t, allRead, "every event to be read")
	// Wait for a to come back: the group's members include it again.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		g, err := c.GetGroup(ctx, "acme", "g")
		if err != nil {
			t.Fatal(err)
		}
		l, err := c.GroupLag(ctx, "acme", "g")
		if err != nil {
			t.Fatal(err)
		}
		if g.Generation > g0.Generation && len(g.Members) == 2 && l.EventsBehind == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for reader a to rejoin and the group to catch up: %+v, lag %d", g, l.EventsBehind)
		}
	}
	stop()
	wg.Wait()
	for seg := range segments {
		for i := range perSegment {
			if n := seen[fmt.Sprintf("s%d-%d", seg, i)]; n < 1 {
				t.Fatalf("event s%d-%d never read", seg, i)
			}
		}
	}
	if cuts, drops := p.faults(); cuts == 0 || drops == 0 {
		t.Fatalf("the proxy cut %d and dropped %d connections; the test proves nothing", cuts, drops)
	}
}

func want(ev GroupEvent) string { return fmt.Sprintf("s%s-%d", ev.Segment, ev.Offset) }

func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(time.Minute):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// With the server unreachable, Next retries (telling OnRetry) for
// RetryTimeout and then returns the network error; once the server is
// back, the same reader carries on.
func TestGroupReaderRetryTimeout(t *testing.T) {
	s := newServer(t)
	c := s.client(t)
	ctx := t.Context()
	if _, err := c.CreateTenant(ctx, "acme", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateStream(ctx, "acme", StreamSpec{Name: "orders", Segments: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Append(ctx, "acme", "orders", [][]byte{[]byte("a"), []byte("b")}, AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateGroup(ctx, "acme", GroupSpec{Name: "g", Streams: []string{"orders"}}); err != nil {
		t.Fatal(err)
	}
	p := proxyTo(t, s)
	var retries atomic.Int64
	r, err := s.proxied(t, p).NewGroupReader(ctx, "acme", "g", GroupReaderOptions{Member: "r", Max: 1,
		RetryTimeout: 200 * time.Millisecond, OnRetry: func(error, int, time.Duration) { retries.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(ctx)
	p.setCutAfter(1) // every new connection breaks after its first byte
	p.dropAll()      // and the pooled ones go
	if _, err := r.Next(ctx); err == nil || !retryable(err) {
		t.Fatalf("Next with every connection cut: %v, want a network error after the retry timeout", err)
	}
	if retries.Load() == 0 {
		t.Fatal("OnRetry was never called")
	}
	p.setCutAfter(0)
	evs, err := r.Next(ctx)
	if err != nil || len(evs) != 1 || string(evs[0].Data) != "a" {
		t.Fatalf("Next once the network is back: %v, %v; want event a", evs, err)
	}
}
