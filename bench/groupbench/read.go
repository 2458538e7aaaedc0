package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/silt-io/silt/client"
)

const (
	tenant     = "bench"
	readStream = "backlog"
	readers    = 4
)

// readCase appends n events of size bytes to each of 4 segments, then
// alternates 4 plain readers with a group of 4 GroupReaders.
func readCase(ctx context.Context, srv *server, n, size, batch, rounds int) error {
	cl := srv.CL
	if _, err := cl.CreateTenant(ctx, tenant, nil); err != nil {
		return err
	}
	st, err := cl.CreateStream(ctx, tenant, client.StreamSpec{Name: readStream, Segments: readers})
	if err != nil {
		return err
	}
	segs := make([]string, len(st.Segments))
	for i, sg := range st.Segments {
		segs[i] = sg.ID
	}
	began := time.Now()
	if err := appendBacklog(ctx, cl, segs, n, size); err != nil {
		return err
	}
	total := int64(n) * int64(len(segs)) * int64(size)
	fmt.Printf("\nappended %d MiB (%d events of %d bytes per segment) in %v; ", total>>20, n, size, time.Since(began).Round(time.Millisecond))
	waited, err := waitTiered(ctx, cl, n)
	if err != nil {
		return err
	}
	fmt.Printf("tiering caught up %v later, so no tiering runs while reading\n\n", waited.Round(time.Millisecond))

	fmt.Println("| round | plain readers MB/s | group MB/s | group ÷ plain |")
	fmt.Println("|---|---:|---:|---:|")
	var ratios []float64
	for r := range rounds {
		plain, err := plainRead(ctx, cl, segs, n, batch)
		if err != nil {
			return fmt.Errorf("plain readers: %w", err)
		}
		group, err := groupRead(ctx, cl, fmt.Sprintf("round-%d", r), segs, n, batch)
		if err != nil {
			return fmt.Errorf("group: %w", err)
		}
		pm, gm := float64(total)/plain.Seconds()/1e6, float64(total)/group.Seconds()/1e6
		ratios = append(ratios, gm/pm)
		fmt.Printf("| %d | %.0f | %.0f | %.2f |\n", r+1, pm, gm, gm/pm)
	}
	fmt.Printf("\nread: group ÷ plain readers, median of %d rounds: %.2f (target ≥ 0.9); every event read exactly once in each run\n", rounds, median(ratios))
	return nil
}

// appendBacklog appends n events to each segment in 1 MiB batches, one
// appender per segment.
func appendBacklog(ctx context.Context, cl *client.Client, segs []string, n, size int) error {
	per := max(1, (1<<20)/size)
	ev := bytes.Repeat([]byte{'e'}, size)
	var wg sync.WaitGroup
	errs := make([]error, len(segs))
	for i, sg := range segs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for done := 0; done < n && errs[i] == nil; {
				k := min(per, n-done)
				evs := make([][]byte, k)
				for j := range evs {
					evs[j] = ev
				}
				_, errs[i] = cl.Append(ctx, tenant, readStream, evs, client.AppendOptions{Segment: sg})
				done += k
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// waitTiered waits until tier 2 holds every segment's n events: the
// tierer then has nothing left to do, and does not compete with the
// reads (which go to tier 2 for what tier 1 no longer holds).
func waitTiered(ctx context.Context, cl *client.Client, n int) (time.Duration, error) {
	began := time.Now()
	for {
		st, err := cl.GetStream(ctx, tenant, readStream)
		if err != nil {
			return 0, err
		}
		done := st.Tiering != nil
		if done {
			for _, sg := range st.Tiering.Segments {
				done = done && sg.TieredOffset >= uint64(n)
			}
		}
		if done {
			return time.Since(began), nil
		}
		if time.Since(began) > 10*time.Minute {
			return 0, fmt.Errorf("tiering did not catch up in 10 minutes: %+v", st.Tiering)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// checker checks that each segment's events arrive in order, each once,
// and says when all of them have.
type checker struct {
	mu   sync.Mutex
	next map[string]uint64
	n    uint64
	left atomic.Int64
	end  time.Time
	done chan struct{}
}

func newChecker(segs []string, n int) *checker {
	c := &checker{next: map[string]uint64{}, n: uint64(n), done: make(chan struct{})}
	for _, sg := range segs {
		c.next[sg] = 0
	}
	c.left.Store(int64(n * len(segs)))
	return c
}

func (c *checker) saw(evs []client.Event) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ev := range evs {
		want, ok := c.next[ev.Segment]
		if !ok || ev.Offset != want || ev.Offset >= c.n {
			return fmt.Errorf("segment %q: read offset %d, want %d (of %d): an event read twice, skipped or unknown", ev.Segment, ev.Offset, want, c.n)
		}
		c.next[ev.Segment] = want + 1
	}
	if len(evs) > 0 && c.left.Add(-int64(len(evs))) == 0 {
		c.end = time.Now()
		close(c.done)
	}
	return nil
}

// plainRead reads every segment with its own reader and returns the time
// until the last event arrived.
func plainRead(ctx context.Context, cl *client.Client, segs []string, n, batch int) (time.Duration, error) {
	chk := newChecker(segs, n)
	began := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, len(segs))
	for i, sg := range segs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for from := uint64(0); from < uint64(n); {
				b, err := cl.Read(ctx, tenant, readStream, client.ReadOptions{Segment: sg, From: from, Max: batch})
				if err == nil {
					err = chk.saw(b.Events)
				}
				if err != nil {
					errs[i] = err
					return
				}
				from += uint64(len(b.Events))
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	return chk.end.Sub(began), nil
}

// groupRead creates a group at the head of the stream, starts 4 readers,
// waits until each holds one segment, and returns the time from the
// readers' first Next until the last event arrived.
func groupRead(ctx context.Context, cl *client.Client, name string, segs []string, n, batch int) (time.Duration, error) {
	if _, err := cl.CreateGroup(ctx, tenant, client.GroupSpec{Name: name, Streams: []string{readStream}}); err != nil {
		return 0, err
	}
	defer cl.DeleteGroup(context.Background(), tenant, name, true)
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	const beat = 100 * time.Millisecond
	rs := make([]*client.GroupReader, readers)
	for i := range rs {
		r, err := cl.NewGroupReader(rctx, tenant, name, client.GroupReaderOptions{
			Member: "reader-" + strconv.Itoa(i), Max: batch, Wait: 50 * time.Millisecond, HeartbeatInterval: beat})
		if err != nil {
			return 0, err
		}
		rs[i] = r
		defer r.Close(context.Background())
	}
	if err := waitSettled(ctx, cl, name); err != nil {
		return 0, err
	}
	// Every reader's heartbeat has seen the last generation by now, so its
	// first Next takes its one segment.
	time.Sleep(3 * beat)

	chk := newChecker(segs, n)
	began := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, len(rs))
	seen := make([]map[string]bool, len(rs))
	for i, r := range rs {
		seen[i] = map[string]bool{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				evs, err := r.Next(rctx)
				if err == nil {
					for _, ev := range evs {
						seen[i][ev.Segment] = true
					}
					plain := make([]client.Event, len(evs))
					for j, ev := range evs {
						plain[j] = ev.Event
					}
					if err = chk.saw(plain); err == nil {
						err = r.Commit(rctx)
					}
				}
				select {
				case <-chk.done:
					return
				default:
				}
				if err != nil {
					errs[i] = err
					cancel()
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	for i, s := range seen {
		if len(s) != 1 {
			return 0, fmt.Errorf("reader %d read %d segments, want 1: the group was not settled", i, len(s))
		}
	}
	return chk.end.Sub(began), nil
}

// waitSettled waits until the group has 4 members with one segment each.
func waitSettled(ctx context.Context, cl *client.Client, name string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		g, err := cl.GetGroup(ctx, tenant, name)
		if err != nil {
			return err
		}
		ok := len(g.Members) == readers
		for _, m := range g.Members {
			ok = ok && len(m.Segments) == 1
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("group %s did not settle to one segment per reader in 30 s: %+v", name, g.Members)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
