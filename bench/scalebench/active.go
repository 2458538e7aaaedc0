package main

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/silt-io/silt/client"
)

// measured is one case's appends: how many, over how long, and each one's
// latency.
type measured struct {
	events  int64
	elapsed time.Duration
	lat     []time.Duration
}

func (m measured) rate() float64 { return float64(m.events) / m.elapsed.Seconds() }

func (m measured) pct(p float64) time.Duration {
	if len(m.lat) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), m.lat...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[int(float64(len(s)-1)*p)]
}

// syncProducers runs n goroutines, each appending one 1 KiB event at a
// time and waiting for its acknowledgement, for dur; producer p appends
// to streams[p], streams[p+n], streams[p+2n], … in turn (with one stream,
// all of them to it).
func syncProducers(ctx context.Context, cl *client.Client, tenant string, streams []string, n int, dur time.Duration) (measured, error) {
	ev := make([]byte, 1<<10)
	for i := range ev {
		ev[i] = 'a' + byte(i%26)
	}
	var (
		count atomic.Int64
		mu    sync.Mutex
		lat   []time.Duration
		first error
		wg    sync.WaitGroup
	)
	start := time.Now()
	deadline := start.Add(dur)
	for p := range n {
		var mine []string
		for i := p % len(streams); i < len(streams); i += n {
			mine = append(mine, streams[i])
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			local := make([]time.Duration, 0, 1024)
			for i := 0; time.Now().Before(deadline); i++ {
				t := time.Now()
				if _, err := cl.Append(ctx, tenant, mine[i%len(mine)], [][]byte{ev}, client.AppendOptions{}); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
				local = append(local, time.Since(t))
				count.Add(1)
			}
			mu.Lock()
			lat = append(lat, local...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return measured{events: count.Load(), elapsed: time.Since(start), lat: lat}, first
}

// activeCase is one way of spreading the producers over streams.
type activeCase struct {
	name    string
	streams []string
}

// activeRuns compares producers synchronous producers on one stream with
// the same producers spread over one stream each and over active
// streams. The cases take turns within each round, so that each round's
// ratios compare them on the disk as it is at that moment; the ratios
// reported are the rounds' medians.
func activeRuns(ctx context.Context, srv *server, producers, active, rounds int, dur time.Duration) error {
	const tenant = "active"
	if _, err := srv.CL.CreateTenant(ctx, tenant, nil); err != nil {
		return err
	}
	names := func(prefix string, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("%s%05d", prefix, i)
		}
		return out
	}
	cases := []activeCase{
		{"1 stream", []string{"one"}},
		{fmt.Sprintf("%d streams", producers), names("p", producers)},
		{fmt.Sprintf("%d streams", active), names("a", active)},
	}
	for _, c := range cases {
		if err := createAll(ctx, srv.CL, func(i int) (string, string) { return tenant, c.streams[i] }, len(c.streams), 16, 0); err != nil {
			return err
		}
	}
	// One untimed second of each: every stream's files exist and every
	// connection is open before timing starts.
	for _, c := range cases {
		if _, err := syncProducers(ctx, srv.CL, tenant, c.streams, producers, time.Second); err != nil {
			return fmt.Errorf("warm-up on %s: %w", c.name, err)
		}
	}
	fmt.Printf("\n%d synchronous producers of 1 KiB events, %s per case, %d rounds:\n\n", producers, dur, rounds)
	fmt.Printf("| round | %s events/s | p50 | p99 | %s events/s | p99 | × 1 stream | %s events/s | p99 | × 1 stream |\n", cases[0].name, cases[1].name, cases[2].name)
	fmt.Println("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	ratios := [2][]float64{}
	for r := range rounds {
		var ms [3]measured
		for i, c := range cases {
			m, err := syncProducers(ctx, srv.CL, tenant, c.streams, producers, dur)
			if err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			ms[i] = m
		}
		r1, r2 := ms[1].rate()/ms[0].rate(), ms[2].rate()/ms[0].rate()
		ratios[0], ratios[1] = append(ratios[0], r1), append(ratios[1], r2)
		fmt.Printf("| %d | %.0f | %s | %s | %.0f | %s | %.2f | %.0f | %s | %.2f |\n", r+1,
			ms[0].rate(), ms[0].pct(0.5).Round(time.Microsecond), ms[0].pct(0.99).Round(time.Microsecond),
			ms[1].rate(), ms[1].pct(0.99).Round(time.Microsecond), r1,
			ms[2].rate(), ms[2].pct(0.99).Round(time.Microsecond), r2)
	}
	fmt.Printf("\nmedian ratio: %s ÷ 1 stream %.2f (target ≥ 0.9), %s ÷ 1 stream %.2f (target ≥ 0.8)\n",
		cases[1].name, median(ratios[0]), cases[2].name, median(ratios[1]))
	return nil
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}
