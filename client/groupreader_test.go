package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"
)

type readRec struct {
	reader  string
	segment string
	offset  uint64
}

// TestGroupReaderTakeover: three readers share a 12-segment stream; one
// is killed (its context cancelled, no leave) after reading past its last
// commit. Its segments go to the other two once its session times out,
// every event is read at least once, only events at or after the dead
// reader's last commit are read twice, and each reader reads each segment
// in order.
func TestGroupReaderTakeover(t *testing.T) {
	const segments, perSegment = 12, 150
	s := newServer(t)
	c := s.client(t)
	ctx := context.Background()
	if _, err := c.CreateTenant(ctx, "acme", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateStream(ctx, "acme", StreamSpec{Name: "orders", Encoding: "lines", Segments: segments}); err != nil {
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
	if _, err := c.CreateGroup(ctx, "acme", GroupSpec{Name: "g", Streams: []string{"orders"}, SessionTimeout: time.Second}); err != nil {
		t.Fatal(err)
	}

	var (
		mu      sync.Mutex
		log     []readRec
		seen    = map[[2]string]bool{}
		allRead = make(chan struct{})
	)
	record := func(reader string, evs []GroupEvent) {
		mu.Lock()
		defer mu.Unlock()
		for _, ev := range evs {
			if want := fmt.Sprintf("s%s-%d", ev.Segment, ev.Offset); string(ev.Data) != want {
				t.Errorf("event %s/%d holds %q, want %q", ev.Segment, ev.Offset, ev.Data, want)
			}
			log = append(log, readRec{reader, ev.Segment, ev.Offset})
			seen[[2]string{ev.Segment, fmt.Sprint(ev.Offset)}] = true
		}
		if len(seen) == segments*perSegment {
			select {
			case <-allRead:
			default:
				close(allRead)
			}
		}
	}

	open := func(ctx context.Context, name string) *GroupReader {
		r, err := c.NewGroupReader(ctx, "acme", "g", GroupReaderOptions{Member: name, Max: 10, Wait: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	// The victim joins first and reads a few batches, committing all but
	// the last, then dies.
	victimCtx, kill := context.WithCancel(ctx)
	victim := open(victimCtx, "victim")
	a, b := open(ctx, "a"), open(ctx, "b")
	committed := map[string]uint64{} // the victim's last commit per segment
	for batches := 0; batches < 6; {
		evs, err := victim.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) == 0 {
			continue
		}
		batches++
		record("victim", evs)
		if batches == 6 {
			break // read, not committed
		}
		err = victim.Commit(ctx)
		if errors.Is(err, ErrRebalanced) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range victim.Assigned() {
			committed[p.Segment] = p.Offset
		}
	}
	victimSegs := map[string]bool{}
	for _, p := range victim.Assigned() {
		victimSegs[p.Segment] = true
	}
	if len(victimSegs) != 4 {
		t.Fatalf("victim holds %d segments, want 4 of 12", len(victimSegs))
	}
	kill()

	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for name, r := range map[string]*GroupReader{"a": a, "b": b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-allRead:
					// Leave only once both are done: a leave rebalances,
					// and the other's last commit would be refused.
					return
				default:
				}
				evs, err := r.Next(ctx)
				if err != nil {
					errs <- fmt.Errorf("%s: %w", name, err)
					return
				}
				record(name, evs)
				if err := r.Commit(ctx); err != nil && !errors.Is(err, ErrRebalanced) {
					errs <- fmt.Errorf("%s: commit: %w", name, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	errs <- a.Close(ctx)
	errs <- b.Close(ctx)
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}

	// Per reader and segment, offsets follow one another; a segment read
	// twice was the victim's, and only from its last commit on.
	last := map[[2]string]uint64{}
	count := map[[2]string]int{}
	for _, r := range log {
		k := [2]string{r.reader, r.segment}
		if prev, ok := last[k]; ok && r.offset != prev+1 {
			t.Errorf("reader %s read segment %s at %d after %d", r.reader, r.segment, r.offset, prev)
		}
		last[k] = r.offset
		count[[2]string{r.segment, fmt.Sprint(r.offset)}]++
	}
	rereads := 0
	for _, r := range log {
		if count[[2]string{r.segment, fmt.Sprint(r.offset)}] < 2 || r.reader == "victim" {
			continue
		}
		rereads++
		if !victimSegs[r.segment] || r.offset < committed[r.segment] {
			t.Errorf("event %s/%d read again by %s, though the victim had committed past it (%d)", r.segment, r.offset, r.reader, committed[r.segment])
		}
	}
	if rereads == 0 {
		t.Errorf("no event was read twice, though the victim died with a batch read and not committed")
	}
	g, err := c.GetGroup(ctx, "acme", "g")
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Members) != 0 {
		t.Errorf("members after both readers closed: %+v", g.Members)
	}
	l, err := c.GroupLag(ctx, "acme", "g")
	if err != nil {
		t.Fatal(err)
	}
	if l.EventsBehind != 0 {
		t.Errorf("lag after everything was read and committed: %d events", l.EventsBehind)
	}
}

// TestGroupReaderLostAnswers: a third of the answers to the reader's
// requests (joins, heartbeats, reads, commits) are lost after the server
// acted on them. Every call is safe to repeat, so the client's retries
// (exponential backoff with jitter, capped) carry the reader through: each
// event is read once, in order, and everything ends up committed.
func TestGroupReaderLostAnswers(t *testing.T) {
	const perSegment = 120
	s := newServer(t)
	c := s.client(t)
	ctx := context.Background()
	if _, err := c.CreateTenant(ctx, "acme", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateStream(ctx, "acme", StreamSpec{Name: "orders", Encoding: "lines", Segments: 2}); err != nil {
		t.Fatal(err)
	}
	for seg := range 2 {
		evs := make([][]byte, perSegment)
		for i := range evs {
			evs[i] = fmt.Appendf(nil, "s%d-%d", seg, i)
		}
		if _, err := c.Append(ctx, "acme", "orders", evs, AppendOptions{Segment: fmt.Sprint(seg)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.CreateGroup(ctx, "acme", GroupSpec{Name: "g", Streams: []string{"orders"}}); err != nil {
		t.Fatal(err)
	}
	lossy := newDropAckTransport(http.DefaultTransport, 0.3, func(r *http.Request) bool { return true })
	flaky := s.client(t, WithHTTPClient(&http.Client{Transport: lossy}), WithRetry(20, time.Millisecond, 20*time.Millisecond))
	r, err := flaky.NewGroupReader(ctx, "acme", "g", GroupReaderOptions{Member: "r", Max: 7, Wait: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	next := map[string]uint64{}
	for read := 0; read < 2*perSegment; {
		evs, err := r.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			if ev.Offset != next[ev.Segment] {
				t.Fatalf("segment %s: read offset %d, want %d", ev.Segment, ev.Offset, next[ev.Segment])
			}
			next[ev.Segment]++
			read++
		}
		if err := r.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if lossy.dropped.Load() == 0 {
		t.Fatal("no answer was lost; the test tested nothing")
	}
	l, err := c.GroupLag(ctx, "acme", "g")
	if err != nil {
		t.Fatal(err)
	}
	if l.EventsBehind != 0 {
		t.Fatalf("lag after reading and committing everything: %d", l.EventsBehind)
	}
}
