package main

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"time"

	"github.com/silt-io/silt/client"
)

// introspectProducers is how many synchronous producers each slice runs:
// enough requests a second that the event queue and its writer work.
const introspectProducers = 16

// introspectRun measures what the introspection events cost the append
// path: two server children, one with introspect.enabled off and one
// with it on (each request then queues an event that a writer appends to
// a system stream, beside the appends measured), loaded in alternating
// slices by the same synchronous producers, pairs times. Each pair's
// ratio (on ÷ off) is reported with their median.
func introspectRun(bin, dir string, pairs int, slice time.Duration, extra []string) error {
	type side struct {
		srv    *server
		append func(int) error
	}
	ev := make([]byte, 1<<10)
	for i := range ev {
		ev[i] = 'a'
	}
	ctx := context.Background()
	open := func(name string, flags ...string) (side, error) {
		srv, err := startServerIn(bin, filepath.Join(dir, name), append(append([]string(nil), extra...), flags...))
		if err != nil {
			return side{}, err
		}
		cl, err := client.New(srv.url, client.WithToken(srv.token))
		if err != nil {
			srv.close()
			return side{}, err
		}
		if _, err := cl.CreateTenant(ctx, "intro", nil); err != nil {
			srv.close()
			return side{}, err
		}
		if _, err := cl.CreateStream(ctx, "intro", client.StreamSpec{Name: "s"}); err != nil {
			srv.close()
			return side{}, err
		}
		return side{srv: srv, append: func(int) error {
			_, err := cl.Append(ctx, "intro", "s", [][]byte{ev}, client.AppendOptions{})
			return err
		}}, nil
	}
	off, err := open("introspect-off", "--introspect.enabled=false")
	if err != nil {
		return err
	}
	defer off.srv.close()
	on, err := open("introspect-on")
	if err != nil {
		return err
	}
	defer on.srv.close()
	runProducers("warm-up", introspectProducers, slice/4, off.append, len(ev))
	runProducers("warm-up", introspectProducers, slice/4, on.append, len(ev))

	fmt.Printf("\n%d synchronous HTTP producers, introspection on against off, %d pairs of %s slices:\n\n", introspectProducers, pairs, slice)
	fmt.Println("| pair | off events/s | off p50 | on events/s | on p50 | on ÷ off |")
	fmt.Println("|---:|---:|---:|---:|---:|---:|")
	ratios := make([]float64, 0, pairs)
	for i := range pairs {
		// Alternate which goes first, so that a drift of the disk within
		// a pair does not favour one side.
		var a, b result
		if i%2 == 0 {
			a = runProducers("off", introspectProducers, slice, off.append, len(ev))
			b = runProducers("on", introspectProducers, slice, on.append, len(ev))
		} else {
			b = runProducers("on", introspectProducers, slice, on.append, len(ev))
			a = runProducers("off", introspectProducers, slice, off.append, len(ev))
		}
		r := b.eventsPerSec() / a.eventsPerSec()
		ratios = append(ratios, r)
		fmt.Printf("| %d | %.0f | %s | %.0f | %s | %.3f |\n", i+1, a.eventsPerSec(), a.pct(0.5).Round(time.Microsecond),
			b.eventsPerSec(), b.pct(0.5).Round(time.Microsecond), r)
	}
	sort.Float64s(ratios)
	fmt.Printf("\nmedian of the paired ratios (on ÷ off): %.3f (range %.3f–%.3f)\n", ratios[len(ratios)/2], ratios[0], ratios[len(ratios)-1])
	return nil
}
