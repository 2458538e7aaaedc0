package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/silt-io/silt/core"
)

func TestKeyHashMatchesServer(t *testing.T) {
	for i := range 10000 {
		k := "key-" + strconv.Itoa(i*7919)
		if KeyHash(k) != core.KeyHash(k) {
			t.Fatalf("KeyHash(%q) = %#x, core says %#x", k, KeyHash(k), core.KeyHash(k))
		}
	}
	for _, k := range []string{"", "a", "é", "\x00\xff", strings.Repeat("long", 1000)} {
		if KeyHash(k) != core.KeyHash(k) {
			t.Fatalf("KeyHash(%q) differs from core", k)
		}
	}
	// Routing by the reported key ranges picks the server's segment.
	s := newServer(t)
	c := s.client(t)
	ctx := t.Context()
	c.CreateTenant(ctx, "acme", nil)
	st, err := c.CreateStream(ctx, "acme", StreamSpec{Name: "logs", Segments: 7})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		k := fmt.Sprintf("user-%d", i)
		res, err := c.Append(ctx, "acme", "logs", [][]byte{[]byte(k)}, AppendOptions{Key: k})
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Segments[segmentFor(st.Segments, KeyHash(k))].ID; got != res.Segment {
			t.Fatalf("key %q: client routes to segment %s, server stored in %s", k, got, res.Segment)
		}
	}
}

// TestProducerExactlyOnce sends through a transport that loses a third of
// the append answers after the server has stored the batch. Every event
// must be stored exactly once, in order per key, and every future must
// name where its event is.
func TestProducerExactlyOnce(t *testing.T) {
	s := newServer(t)
	setup := s.client(t)
	ctx := t.Context()
	setup.CreateTenant(ctx, "acme", nil)
	if _, err := setup.CreateStream(ctx, "acme", StreamSpec{Name: "logs", Segments: 4}); err != nil {
		t.Fatal(err)
	}
	drop := newDropAckTransport(http.DefaultTransport, 0.3, isAppend)
	c := s.client(t, WithHTTPClient(&http.Client{Transport: drop}), WithRetry(2, time.Millisecond, 5*time.Millisecond))
	p, err := c.NewProducer("acme", "logs", ProducerOptions{MaxBatchEvents: 25, Linger: 2 * time.Millisecond, MaxInflight: 200})
	if err != nil {
		t.Fatal(err)
	}
	const (
		keys    = 12
		perKey  = 150
		unkeyed = 300
		total   = keys*perKey + unkeyed
	)
	var (
		mu   sync.Mutex
		sent = map[string]*Future{}
		wg   sync.WaitGroup
	)
	send := func(key, ev string) {
		f, err := p.Send(ctx, key, []byte(ev))
		if err != nil {
			t.Error(err)
			return
		}
		mu.Lock()
		sent[ev] = f
		mu.Unlock()
	}
	for k := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perKey {
				send(fmt.Sprintf("k%02d", k), fmt.Sprintf("k%02d:%04d", k, i))
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range unkeyed {
			send("", fmt.Sprintf("u:%04d", i))
		}
	}()
	wg.Wait()
	if err := p.Flush(ctx); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := p.Send(ctx, "", []byte("late")); !errors.Is(err, ErrProducerClosed) {
		t.Fatalf("Send after Close: %v", err)
	}
	if drop.dropped.Load() == 0 {
		t.Fatal("no answer was dropped; the test proves nothing")
	}
	t.Logf("%d append answers dropped", drop.dropped.Load())

	// Everything stored, by segment and offset.
	type at struct {
		seg string
		off uint64
	}
	stored := map[at]string{}
	count := map[string]int{}
	lastOfKey := map[string]at{}
	cursor := ""
	for {
		b, err := setup.Read(ctx, "acme", "logs", ReadOptions{Cursor: cursor, Max: 10000})
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range b.Events {
			d := string(ev.Data)
			stored[at{ev.Segment, ev.Offset}] = d
			count[d]++
			key, _, _ := strings.Cut(d, ":")
			if key == "u" {
				continue
			}
			if prev, ok := lastOfKey[key]; ok && (prev.seg != ev.Segment || prev.off >= ev.Offset) {
				t.Fatalf("key %s: %s at %v after %v", key, d, at{ev.Segment, ev.Offset}, prev)
			}
			lastOfKey[key] = at{ev.Segment, ev.Offset}
		}
		cursor = b.NextCursor
		if len(b.Events) == 0 {
			break
		}
	}
	if len(stored) != total || len(sent) != total {
		t.Fatalf("stored %d events, sent %d, want %d", len(stored), len(sent), total)
	}
	for d, n := range count {
		if n != 1 {
			t.Fatalf("%s stored %d times", d, n)
		}
	}
	unkeyedSegments := map[string]bool{}
	for ev, f := range sent {
		ack, err := f.Wait(ctx)
		if err != nil {
			t.Fatalf("%s: %v", ev, err)
		}
		if got := stored[at{ack.Segment, ack.Offset}]; got != ev {
			t.Fatalf("future of %s says %v, which holds %q", ev, ack, got)
		}
		if strings.HasPrefix(ev, "u:") {
			unkeyedSegments[ack.Segment] = true
		}
	}
	if len(unkeyedSegments) < 2 {
		t.Fatalf("unkeyed events all went to %v", unkeyedSegments)
	}
}

func TestProducerFailures(t *testing.T) {
	s := newServer(t)
	c := s.client(t)
	ctx := t.Context()
	if _, err := c.NewProducer("acme", "logs", ProducerOptions{Linger: -1}); err == nil {
		t.Fatal("negative linger accepted")
	}
	p, _ := c.NewProducer("acme", "nosuch", ProducerOptions{})
	if _, err := p.Send(ctx, "k", []byte("x")); !IsNotFound(err) {
		t.Fatalf("Send to a missing stream: %v", err)
	}
	p.Close(ctx)

	c.CreateTenant(ctx, "acme", nil)
	c.CreateStream(ctx, "acme", StreamSpec{Name: "logs", Segments: 2})
	p, _ = c.NewProducer("acme", "logs", ProducerOptions{WriterID: "fixed"})
	if p.WriterID() != "fixed" {
		t.Fatalf("writer id %q", p.WriterID())
	}
	bad, _ := p.Send(ctx, "k", []byte("has\nnewline"))
	good, _ := p.Send(ctx, "other", []byte("fine"))
	if err := p.Flush(ctx); !IsInvalid(err) {
		t.Fatalf("Flush after a refused batch: %v", err)
	}
	if _, err := bad.Wait(ctx); !IsInvalid(err) {
		t.Fatalf("refused event: %v", err)
	}
	if ack, err := good.Wait(ctx); err != nil && !IsInvalid(err) {
		t.Fatalf("other event: %v %v", ack, err)
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatalf("second Flush reports the old failure again: %v", err)
	}
	p.Close(ctx)

	// A restarted producer with the same writer id is not mistaken for a
	// retry of its earlier run.
	p2, _ := c.NewProducer("acme", "logs", ProducerOptions{WriterID: "fixed"})
	f, _ := p2.Send(ctx, "k", []byte("after restart"))
	if err := p2.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if ack, err := f.Wait(ctx); err != nil {
		t.Fatalf("restarted writer: %v %v", ack, err)
	}
}

func TestProducerCloseAbandons(t *testing.T) {
	// A server that never answers appends: Close must give up when its
	// context ends and fail the futures.
	block := make(chan struct{})
	s := newServer(t, serverOptions{wrap: func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if isAppend(r) {
				select {
				case <-block:
				case <-r.Context().Done():
				}
				return
			}
			h.ServeHTTP(w, r)
		})
	}})
	defer close(block)
	c := s.client(t)
	ctx := t.Context()
	c.CreateTenant(ctx, "acme", nil)
	c.CreateStream(ctx, "acme", StreamSpec{Name: "logs"})
	p, _ := c.NewProducer("acme", "logs", ProducerOptions{})
	f, err := p.Send(ctx, "", []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if err := p.Close(cctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close: %v", err)
	}
	if _, err := f.Wait(ctx); !errors.Is(err, ErrProducerClosed) {
		t.Fatalf("abandoned event: %v", err)
	}
}

// TestKeylessEventsSpread sends keyless events faster than batches are
// taken and expects every segment to get some, in whole batches.
func TestKeylessEventsSpread(t *testing.T) {
	s := newServer(t)
	c := s.client(t)
	ctx := context.Background()
	if _, err := c.CreateTenant(ctx, "acme", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateStream(ctx, "acme", StreamSpec{Name: "spread", Segments: 3}); err != nil {
		t.Fatal(err)
	}
	p, err := c.NewProducer("acme", "spread", ProducerOptions{MaxBatchEvents: 10, Linger: time.Hour, MaxInflight: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 300; i++ {
		if _, err := p.Send(ctx, "", []byte("e")); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := c.GetStream(ctx, "acme", "spread")
	if err != nil {
		t.Fatal(err)
	}
	total := uint64(0)
	for _, sg := range st.Segments {
		if sg.NextOffset == 0 {
			t.Fatalf("segment %s got no keyless events: %+v", sg.ID, st.Segments)
		}
		total += sg.NextOffset
	}
	if total != 300 {
		t.Fatalf("stored %d events, want 300", total)
	}
}

// A server that keeps refusing appends with 503 (a full tier-2 backlog):
// the batch is retried, OnRetry reports each retry, and after
// DeliveryTimeout its events fail with ErrDeliveryTimeout wrapping the
// server's answer, instead of the producer waiting forever.
func TestProducerDeliveryTimeout(t *testing.T) {
	var refused atomic.Int64
	s := newServer(t, serverOptions{wrap: func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if isAppend(r) {
				refused.Add(1)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusServiceUnavailable)
				w.Write([]byte(`{"error":{"code":"unavailable","message":"tier-2 backlog full"}}`))
				return
			}
			h.ServeHTTP(w, r)
		})
	}})
	c := s.client(t)
	ctx := t.Context()
	c.CreateTenant(ctx, "acme", nil)
	c.CreateStream(ctx, "acme", StreamSpec{Name: "logs"})
	var retries atomic.Int64
	p, err := c.NewProducer("acme", "logs", ProducerOptions{
		DeliveryTimeout: 300 * time.Millisecond,
		OnRetry: func(err error, attempt int, wait time.Duration) {
			if !IsUnavailable(err) || attempt < 1 || wait <= 0 {
				t.Errorf("OnRetry(%v, %d, %v)", err, attempt, wait)
			}
			retries.Add(1)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	f, err := p.Send(ctx, "", []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	// The server refuses for ever, so the event ends at all only if the
	// producer gives up; the minute only stops a producer that does not.
	wctx, cancel := context.WithTimeout(ctx, hangStop)
	defer cancel()
	_, err = f.Wait(wctx)
	if !errors.Is(err, ErrDeliveryTimeout) || !IsUnavailable(err) {
		t.Fatalf("event under a refusing server: %v", err)
	}
	if retries.Load() == 0 || refused.Load() < retries.Load() {
		t.Fatalf("%d retries reported, %d appends refused", retries.Load(), refused.Load())
	}
	if err := p.Close(ctx); !errors.Is(err, ErrDeliveryTimeout) {
		t.Fatalf("Close after the failed batch: %v", err)
	}
	if _, err := c.NewProducer("acme", "logs", ProducerOptions{DeliveryTimeout: -1}); err == nil {
		t.Fatal("negative delivery timeout accepted")
	}
}

// A producer started before its server (or while it restarts) sees
// connections refused while it fetches the stream's segments. That is
// retried like a 503 until DeliveryTimeout: the producer delivers once the
// server is up, and gives up with ErrDeliveryTimeout only after the
// timeout, not after the few attempts of a single request.
func TestProducerRetriesRefusedConnections(t *testing.T) {
	for name, tc := range map[string]struct {
		comesUp bool
	}{
		"server comes up":   {comesUp: true},
		"server stays down": {comesUp: false},
	} {
		t.Run(name, func(t *testing.T) {
			s := newServer(t)
			setup := s.client(t)
			ctx := t.Context()
			setup.CreateTenant(ctx, "acme", nil)
			if _, err := setup.CreateStream(ctx, "acme", StreamSpec{Name: "logs"}); err != nil {
				t.Fatal(err)
			}
			// A loopback address nothing listens on (yet): connections
			// to it are refused.
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := ln.Addr().String()
			ln.Close()
			c, err := New("http://"+addr, WithToken(s.root), WithRetry(4, time.Millisecond, 10*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.CloseIdleConnections)
			const upAfter = 5
			var retries atomic.Int64
			retried := make(chan struct{})
			timeout := time.Minute // a hang stop, never reached when the server comes up
			if !tc.comesUp {
				timeout = 200 * time.Millisecond
			}
			p, err := c.NewProducer("acme", "logs", ProducerOptions{
				DeliveryTimeout: timeout,
				OnRetry: func(err error, attempt int, wait time.Duration) {
					if retries.Add(1) == upAfter {
						close(retried)
					}
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			type sent struct {
				f   *Future
				err error
			}
			done := make(chan sent, 1)
			go func() {
				f, err := p.Send(ctx, "", []byte("x"))
				done <- sent{f, err}
			}()
			if !tc.comesUp {
				r := <-done
				if !errors.Is(r.err, ErrDeliveryTimeout) {
					t.Fatalf("Send to a refusing address: %v, want ErrDeliveryTimeout", r.err)
				}
				if retries.Load() < upAfter {
					t.Fatalf("gave up after %d retries; a request alone makes 4 attempts", retries.Load())
				}
				p.Close(ctx)
				return
			}
			select {
			case r := <-done:
				t.Fatalf("Send returned before the server was up (%d retries): %v", retries.Load(), r.err)
			case <-retried:
			}
			target, _ := url.Parse(s.ts.URL)
			up, err := net.Listen("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			proxy := &http.Server{Handler: httputil.NewSingleHostReverseProxy(target)}
			go proxy.Serve(up)
			t.Cleanup(func() { proxy.Close() })
			r := <-done
			if r.err != nil {
				t.Fatalf("Send after the server came up: %v", r.err)
			}
			if _, err := r.f.Wait(ctx); err != nil {
				t.Fatalf("event after the server came up: %v", err)
			}
			if err := p.Close(ctx); err != nil {
				t.Fatal(err)
			}
			b, err := setup.Read(ctx, "acme", "logs", ReadOptions{})
			if err != nil || len(b.Events) != 1 {
				t.Fatalf("read back: %v, %d events", err, len(b.Events))
			}
		})
	}
}
