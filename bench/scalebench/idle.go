package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/silt-io/silt/client"
)

const idleTenants = 10

func idleName(i int) (string, string) {
	return fmt.Sprintf("idle-%02d", i%idleTenants), fmt.Sprintf("s%07d", i)
}

// forEach runs fn(from) … fn(to-1) on workers goroutines, stopping at the
// first error, which it returns with the index that failed.
func forEach(ctx context.Context, from, to, workers int, fn func(i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var next atomic.Int64
	next.Store(int64(from))
	var once sync.Once
	var first error
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= to {
					return
				}
				if err := fn(i); err != nil {
					once.Do(func() { first = err; cancel() })
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// createAll creates streams 0 … n-1 (named by name) with segments
// segments each (0: the server's default). A 503 is retried after a
// pause, as Retry-After asks; a 409 after such a retry means the refused
// attempt was stored after all.
func createAll(ctx context.Context, cl *client.Client, name func(i int) (string, string), n, workers, segments int) error {
	return createRange(ctx, cl, name, 0, n, workers, segments)
}

func createRange(ctx context.Context, cl *client.Client, name func(i int) (string, string), from, to, workers, segments int) error {
	return forEach(ctx, from, to, workers, func(i int) error {
		tenant, stream := name(i)
		retried := false
		for attempt := 1; ; attempt++ {
			_, err := cl.CreateStream(ctx, tenant, client.StreamSpec{Name: stream, Segments: segments})
			var ae *client.APIError
			switch {
			case err == nil:
				return nil
			case errors.As(err, &ae) && ae.Status == http.StatusServiceUnavailable && attempt < 60:
				retried = true
				time.Sleep(time.Second)
			case errors.Is(err, client.ErrExists) && retried:
				return nil
			default:
				return fmt.Errorf("create stream %d (%s/%s): %w", i, tenant, stream, err)
			}
		}
	})
}

// appendRange appends one event to every segment of streams from … to-1,
// with a writer id, so that each becomes a stream with data that tiering
// then moves to tier 2.
func appendRange(ctx context.Context, cl *client.Client, from, to, workers int) error {
	return forEach(ctx, from, to, workers, func(i int) error {
		tenant, stream := idleName(i)
		for _, seg := range []string{"0", "1"} {
			_, err := cl.Append(ctx, tenant, stream, [][]byte{fmt.Appendf(nil, "%s/%s %s", tenant, stream, seg)},
				client.AppendOptions{Segment: seg, WriterID: "bench", Seq: 1})
			if err != nil {
				return fmt.Errorf("append to stream %d (%s/%s) segment %s: %w", i, tenant, stream, seg, err)
			}
		}
		return nil
	})
}

// waitTiered waits until the server's tier-2 backlog is empty; a server
// without the backlog gauge is asked for the tiering status of the
// streams in check instead.
func waitTiered(ctx context.Context, srv *server, check []int) error {
	for deadline := time.Now().Add(30 * time.Minute); time.Now().Before(deadline); time.Sleep(time.Second) {
		v, ok, err := metric(ctx, srv, "silt_tier_backlog_bytes")
		if err != nil {
			return err
		}
		if ok {
			if v == 0 {
				return nil
			}
			continue
		}
		done := true
		for _, i := range check {
			tenant, stream := idleName(i)
			st, err := srv.CL.GetStream(ctx, tenant, stream)
			if err != nil {
				return err
			}
			if st.Tiering == nil {
				done = false
				break
			}
			for _, sg := range st.Tiering.Segments {
				if sg.TieredOffset < 1 {
					done = false
				}
			}
		}
		if done {
			return nil
		}
	}
	return errors.New("tier 2 did not catch up within 30 minutes")
}

// idlePoint is what the server costs with a given number of idle streams.
type idlePoint struct {
	streams      int
	restartClean time.Duration // SIGTERM, then start until /readyz answers 200
	restartKill  time.Duration // SIGKILL, then the same
	firstRead    time.Duration // a read of an idle stream right after
	fds          int
	rss, tier1   int64
	createRate   float64       // streams/s over the window created after this point
	createSerial time.Duration // one create at a time, each
}

// measureIdle restarts the server twice (clean, then after kill -9),
// lets it settle, and takes its descriptors, RSS and tier-1 disk.
func measureIdle(ctx context.Context, srv *server, streams int, settle time.Duration) (idlePoint, error) {
	p := idlePoint{streams: streams}
	var err error
	srv.Stop()
	if p.restartClean, err = srv.Start(); err != nil {
		return p, err
	}
	srv.Kill()
	if p.restartKill, err = srv.Start(); err != nil {
		return p, err
	}
	time.Sleep(settle)
	if p.fds, err = srv.FDs(); err != nil {
		return p, err
	}
	if p.rss, err = srv.RSS(); err != nil {
		return p, err
	}
	if p.tier1, err = tier1Bytes(srv); err != nil {
		return p, err
	}
	tenant, stream := idleName(streams / 2)
	t := time.Now()
	if _, err := srv.CL.Read(ctx, tenant, stream, client.ReadOptions{Segment: "0", Max: 10}); err != nil {
		return p, fmt.Errorf("read %s/%s after the restart: %w", tenant, stream, err)
	}
	p.firstRead = time.Since(t)
	fmt.Printf("%d idle streams: restart %s (after kill -9: %s), %d descriptors, RSS %d MiB, tier 1 %d MiB, first read %s\n",
		streams, p.restartClean.Round(time.Millisecond), p.restartKill.Round(time.Millisecond), p.fds, p.rss>>20, p.tier1>>20, p.firstRead.Round(time.Microsecond))
	return p, nil
}

// timedCreate creates streams from … to-1 with workers concurrent
// requests and returns their rate.
func timedCreate(ctx context.Context, srv *server, from, to, workers int) (float64, error) {
	t := time.Now()
	if err := createRange(ctx, srv.CL, idleName, from, to, workers, 2); err != nil {
		return 0, err
	}
	return float64(to-from) / time.Since(t).Seconds(), nil
}

// creationAt measures creation at the current count, from: window
// streams with workers concurrent requests (the rate), then serial
// streams one at a time (what one create costs, which concurrency can
// hide). It returns the next free index.
func creationAt(ctx context.Context, srv *server, p *idlePoint, from, window, serial, workers int) (int, error) {
	var err error
	if p.createRate, err = timedCreate(ctx, srv, from, from+window, workers); err != nil {
		return 0, err
	}
	from += window
	if serial > 0 {
		t := time.Now()
		if err := createRange(ctx, srv.CL, idleName, from, from+serial, 1, 2); err != nil {
			return 0, err
		}
		p.createSerial = time.Since(t) / time.Duration(serial)
	}
	return from + serial, nil
}

// idleRuns grows one server to n idle streams of two segments (each with
// one event per segment, tiered) and compares it at base and at n
// streams: restart time, descriptors and RSS per stream, and the rate of
// creating window more streams.
func idleRuns(ctx context.Context, srv *server, n, base, window, serial, workers int, settle time.Duration) error {
	if n < base+2*(window+serial) {
		return fmt.Errorf("-streams %d: want at least -base + 2×(-window + -serial) (%d)", n, base+2*(window+serial))
	}
	for i := range idleTenants {
		if _, err := srv.CL.CreateTenant(ctx, fmt.Sprintf("idle-%02d", i), nil); err != nil {
			return err
		}
	}
	grow := func(from, to int) error {
		t := time.Now()
		if err := appendRange(ctx, srv.CL, from, to, workers); err != nil {
			return err
		}
		fmt.Printf("appended to streams %d–%d at %.0f streams/s (2 batches each)\n", from, to-1, float64(to-from)/time.Since(t).Seconds())
		t = time.Now()
		if err := waitTiered(ctx, srv, []int{from, (from + to) / 2, to - 1}); err != nil {
			return err
		}
		fmt.Printf("tiered in %s\n", time.Since(t).Round(time.Millisecond))
		return nil
	}
	t := time.Now()
	if err := createRange(ctx, srv.CL, idleName, 0, base, workers, 2); err != nil {
		return err
	}
	fmt.Printf("created streams 0–%d at %.0f/s\n", base-1, float64(base)/time.Since(t).Seconds())
	if err := grow(0, base); err != nil {
		return err
	}
	at1, err := measureIdle(ctx, srv, base, settle)
	if err != nil {
		return err
	}
	next, err := creationAt(ctx, srv, &at1, base, window, serial, workers)
	if err != nil {
		return err
	}
	// The bulk of the streams, with the rate every tenth of the way.
	last := n - window - serial
	step := max((last-next)/10, 1)
	for from := next; from < last; from += step {
		to := min(from+step, last)
		r, err := timedCreate(ctx, srv, from, to, workers)
		if err != nil {
			fds, _ := srv.FDs()
			return fmt.Errorf("%w (the server holds %d descriptors)", err, fds)
		}
		fds, _ := srv.FDs()
		fmt.Printf("created streams %d–%d at %.0f/s; the server holds %d descriptors\n", from, to-1, r, fds)
	}
	// The same pause as the first point had after its restart, so that
	// both windows start with tiering idle: without it the window at N
	// races tiering's record of the bulk's last streams, which the first
	// window never does.
	time.Sleep(settle)
	var atN idlePoint
	if _, err := creationAt(ctx, srv, &atN, last, window, serial, workers); err != nil {
		return err
	}
	if err := grow(base, n); err != nil {
		return err
	}
	m, err := measureIdle(ctx, srv, n, settle)
	if err != nil {
		return err
	}
	m.createRate, m.createSerial = atN.createRate, atN.createSerial
	reportIdle(at1, m, window, workers)
	return nil
}

func reportIdle(a, b idlePoint, window, workers int) {
	more := float64(b.streams - a.streams)
	fmt.Printf("\nIdle streams (2 segments, one event each, tiered), %d against %d:\n\n", b.streams, a.streams)
	fmt.Printf("| measure | %d streams | %d streams | result | target |\n", a.streams, b.streams)
	fmt.Println("|---|---:|---:|---:|---|")
	fmt.Printf("| descriptors (whole server) | %d | %d | %.3f per idle segment | 0 |\n", a.fds, b.fds, float64(b.fds-a.fds)/(2*more))
	fmt.Printf("| RSS | %d MiB | %d MiB | %.2f KiB per stream | ≤ 2 KiB |\n", a.rss>>20, b.rss>>20, float64(b.rss-a.rss)/1024/more)
	fmt.Printf("| tier-1 disk | %d MiB | %d MiB | %.1f KiB per stream | |\n", a.tier1>>20, b.tier1>>20, float64(b.tier1-a.tier1)/1024/more)
	fmt.Printf("| restart (SIGTERM, start until ready) | %s | %s | %.2f× | ≤ 2× |\n", a.restartClean.Round(time.Millisecond), b.restartClean.Round(time.Millisecond), b.restartClean.Seconds()/a.restartClean.Seconds())
	fmt.Printf("| restart after kill -9 | %s | %s | %.2f× | ≤ 2× |\n", a.restartKill.Round(time.Millisecond), b.restartKill.Round(time.Millisecond), b.restartKill.Seconds()/a.restartKill.Seconds())
	fmt.Printf("| first read of an idle stream after restart | %s | %s | | |\n", a.firstRead.Round(time.Microsecond), b.firstRead.Round(time.Microsecond))
	fmt.Printf("| creating %d more streams, %d at a time, streams/s | %.0f | %.0f | %.2f× | ≥ 0.8× |\n", window, workers, a.createRate, b.createRate, b.createRate/a.createRate)
	if a.createSerial > 0 {
		fmt.Printf("| one create at a time, each | %s | %s | %.2f× the rate | |\n", a.createSerial.Round(time.Microsecond), b.createSerial.Round(time.Microsecond), a.createSerial.Seconds()/b.createSerial.Seconds())
	}
}
