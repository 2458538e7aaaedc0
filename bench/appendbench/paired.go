package main

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/silt-io/silt/client"
)

// pairedRun measures the single-synchronous-producer ratio in slices: a
// slice of the 1 KiB fsync loop, then a slice of one synchronous HTTP
// producer against a silt serve child, pairs times. This disk's sync
// speed drifts by a factor of two within minutes, so a loop measured
// seconds away from the case it is compared with moved the ratio more
// than silt did; a pair's two slices see the same disk. The ratio of each
// pair, their median and their spread are reported.
func pairedRun(bin, dir string, pairs int, slice time.Duration, extra []string) error {
	srv, err := startServer(bin, dir, extra)
	if err != nil {
		return err
	}
	defer srv.close()
	cl, err := client.New(srv.url, client.WithToken(srv.token))
	if err != nil {
		return err
	}
	ctx := context.Background()
	if _, err := cl.CreateTenant(ctx, "paired", nil); err != nil {
		return err
	}
	if _, err := cl.CreateStream(ctx, "paired", client.StreamSpec{Name: "sync1"}); err != nil {
		return err
	}
	ev := make([]byte, 1<<10)
	for i := range ev {
		ev[i] = 'a'
	}
	appendOne := func(int) error {
		_, err := cl.Append(ctx, "paired", "sync1", [][]byte{ev}, client.AppendOptions{})
		return err
	}
	// One untimed slice of each first: the connection, the stream's
	// first log file and the loop's file exist before the timing starts.
	fsyncLoop(dir, 1<<10, slice/4)
	runProducers("warm-up", 1, slice/4, appendOne, len(ev))

	fmt.Printf("\nOne synchronous HTTP producer against the 1 KiB fsync loop, %d pairs of %s slices:\n\n", pairs, slice)
	fmt.Println("| pair | loop events/s | loop p50 | silt HTTP events/s | silt p50 | × loop |")
	fmt.Println("|---:|---:|---:|---:|---:|---:|")
	ratios := make([]float64, 0, pairs)
	for i := range pairs {
		loop := fsyncLoop(dir, 1<<10, slice)
		silt := runProducers("silt HTTP, 1 synchronous producer", 1, slice, appendOne, len(ev))
		r := silt.eventsPerSec() / loop.eventsPerSec()
		ratios = append(ratios, r)
		fmt.Printf("| %d | %.0f | %s | %.0f | %s | %.2f |\n", i+1, loop.eventsPerSec(), loop.pct(0.5).Round(time.Microsecond),
			silt.eventsPerSec(), silt.pct(0.5).Round(time.Microsecond), r)
	}
	sort.Float64s(ratios)
	atLeast := 0
	for _, r := range ratios {
		if r >= 0.7 {
			atLeast++
		}
	}
	fmt.Printf("\nmedian of the paired ratios: %.2f (range %.2f–%.2f); pairs at or above 0.7: %d of %d\n",
		ratios[len(ratios)/2], ratios[0], ratios[len(ratios)-1], atLeast, len(ratios))
	return nil
}
