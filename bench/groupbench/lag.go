package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/silt-io/silt/client"
)

// lagGroup is a group whose lag is measured, and what its lag must be.
type lagGroup struct {
	name     string
	segments int
	behind   uint64
}

// lagCase builds a group over one segment and one over 4 streams of 250
// segments, each segment holding events events and every other one a
// committed position of 1, lets the segment logs go idle, and times
// GroupLag on both: the first call on idle logs (with the server's
// descriptors before and after), then calls taking turns.
func lagCase(ctx context.Context, srv *server, events, calls int, idleClose time.Duration) error {
	cl := srv.CL
	if _, err := cl.CreateTenant(ctx, tenant, nil); err != nil && !client.IsConflict(err) {
		return err
	}
	one, err := buildLagGroup(ctx, cl, "lag-1", []string{"lag-one"}, 1, events)
	if err != nil {
		return err
	}
	many, err := buildLagGroup(ctx, cl, "lag-1000", []string{"lag-a", "lag-b", "lag-c", "lag-d"}, 250, events)
	if err != nil {
		return err
	}
	// Wait for the idle sweep to close the logs the appends opened, and
	// for tiering to have taken the events: descriptors stop changing.
	fdsIdle, err := settleFDs(ctx, srv, idleClose)
	if err != nil {
		return err
	}
	fmt.Printf("\nlag: every segment holds %d events, every other one has a committed position of 1; logs idle (%d server descriptors)\n\n", events, fdsIdle)
	// The first call of each group on idle logs, then the later calls
	// taking turns; the server's descriptors around each phase say whether
	// lag opened segment logs.
	cold := map[string]time.Duration{}
	fdsAfter := map[string]int{}
	for _, g := range []lagGroup{one, many} {
		t0 := time.Now()
		if err := checkLag(ctx, cl, g); err != nil {
			return err
		}
		cold[g.name] = time.Since(t0)
		if fdsAfter[g.name], err = srv.FDs(); err != nil {
			return err
		}
	}
	// Later calls on idle logs again: what a scrape of a group that is
	// not reading costs.
	fdsBefore, err := settleFDs(ctx, srv, idleClose)
	if err != nil {
		return err
	}
	// Calls with a row per segment, then calls for the totals only
	// (?segments=false), the two groups taking turns in each; the totals
	// are not interleaved with row calls, whose garbage (a 1,000-row
	// answer) the next call would pay for.
	times := map[string][]time.Duration{}
	totals := map[string][]time.Duration{}
	for _, c := range []struct {
		out   map[string][]time.Duration
		check func(context.Context, *client.Client, lagGroup) error
	}{{times, checkLag}, {totals, checkLagTotal}} {
		for range calls {
			for _, g := range []lagGroup{one, many} {
				t0 := time.Now()
				if err := c.check(ctx, cl, g); err != nil {
					return err
				}
				c.out[g.name] = append(c.out[g.name], time.Since(t0))
			}
		}
	}
	fdsEnd, err := srv.FDs()
	if err != nil {
		return err
	}
	fmt.Println("| group | first call, on idle logs | server descriptors after it | p50 of later calls | p50 per segment | p50 of totals only |")
	fmt.Println("|---|---:|---:|---:|---:|---:|")
	p1, pm := pct(times[one.name], 0.5), pct(times[many.name], 0.5)
	t1, tm := pct(totals[one.name], 0.5), pct(totals[many.name], 0.5)
	for _, g := range []lagGroup{one, many} {
		p := pct(times[g.name], 0.5)
		fmt.Printf("| %d segment(s) | %v | %d | %v | %v | %v |\n", g.segments, cold[g.name].Round(time.Microsecond),
			fdsAfter[g.name], p.Round(time.Microsecond), (p / time.Duration(g.segments)).Round(100*time.Nanosecond),
			pct(totals[g.name], 0.5).Round(time.Microsecond))
	}
	fmt.Printf("\nlater calls: %d each, taking turns, after the logs went idle again; server descriptors %d before them, %d after\n",
		calls, fdsBefore, fdsEnd)
	fmt.Printf("lag: 1,000 segments ÷ 1 segment, per group %.1f× (target within 2×), per segment %.3f×; first calls %.1f×\n",
		float64(pm)/float64(p1), float64(pm)/float64(many.segments)/float64(p1), float64(cold[many.name])/float64(cold[one.name]))
	fmt.Printf("lag totals only (?segments=false): 1,000 segments ÷ 1 segment, per group %.2f× (target within 2×)\n", float64(tm)/float64(t1))
	return nil
}

// buildLagGroup creates the streams, appends events to every segment,
// creates the group and commits a position of 1 in every other segment.
func buildLagGroup(ctx context.Context, cl *client.Client, name string, streams []string, segs, events int) (lagGroup, error) {
	type ref struct{ stream, seg string }
	var refs []ref
	for _, s := range streams {
		st, err := cl.CreateStream(ctx, tenant, client.StreamSpec{Name: s, Segments: segs})
		if err != nil {
			return lagGroup{}, err
		}
		for _, sg := range st.Segments {
			refs = append(refs, ref{s, sg.ID})
		}
	}
	evs := make([][]byte, events)
	for i := range evs {
		evs[i] = []byte("a lag event")
	}
	work := make(chan ref)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for w := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range work {
				if errs[w] == nil {
					_, errs[w] = cl.Append(ctx, tenant, r.stream, evs, client.AppendOptions{Segment: r.seg})
				}
			}
		}()
	}
	for _, r := range refs {
		work <- r
	}
	close(work)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return lagGroup{}, err
	}
	if _, err := cl.CreateGroup(ctx, tenant, client.GroupSpec{Name: name, Streams: streams}); err != nil {
		return lagGroup{}, err
	}
	a, err := cl.JoinGroup(ctx, tenant, name, "committer")
	if err != nil {
		return lagGroup{}, err
	}
	var pos []client.Position
	for i, r := range refs {
		if i%2 == 0 {
			pos = append(pos, client.Position{Stream: r.stream, Segment: r.seg, Offset: 1})
		}
	}
	if err := cl.CommitGroup(ctx, tenant, name, "committer", a.Generation, pos); err != nil {
		return lagGroup{}, err
	}
	if err := cl.LeaveGroup(ctx, tenant, name, "committer"); err != nil {
		return lagGroup{}, err
	}
	return lagGroup{name: name, segments: len(refs), behind: uint64(len(refs)*events - len(pos))}, nil
}

// checkLag asks for the group's lag and checks its events behind, so
// that a fast answer is also a right one.
func checkLag(ctx context.Context, cl *client.Client, g lagGroup) error {
	l, err := cl.GroupLag(ctx, tenant, g.name)
	if err != nil {
		return err
	}
	if len(l.Segments) != g.segments || l.EventsBehind != g.behind {
		return fmt.Errorf("lag of %s: %d segments, %d events behind; want %d and %d", g.name, len(l.Segments), l.EventsBehind, g.segments, g.behind)
	}
	return nil
}

// checkLagTotal asks for the group's lag totals only and checks them.
func checkLagTotal(ctx context.Context, cl *client.Client, g lagGroup) error {
	l, err := cl.GroupLagTotal(ctx, tenant, g.name)
	if err != nil {
		return err
	}
	if len(l.Segments) != 0 || l.EventsBehind != g.behind {
		return fmt.Errorf("lag totals of %s: %d segment rows, %d events behind; want 0 and %d", g.name, len(l.Segments), l.EventsBehind, g.behind)
	}
	return nil
}

// settleFDs waits until the server's descriptor count has not changed
// for three idle-close periods (at most two minutes) and returns it.
func settleFDs(ctx context.Context, srv *server, idleClose time.Duration) (int, error) {
	last, since := -1, time.Now()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		n, err := srv.FDs()
		if err != nil {
			return 0, err
		}
		if n != last {
			last, since = n, time.Now()
		} else if time.Since(since) > 3*idleClose || time.Now().After(deadline) {
			return n, nil
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}
