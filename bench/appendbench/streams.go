package main

import (
	"context"
	"fmt"
	"path/filepath"

	"time"

	"github.com/silt-io/silt/core"
)

// streamsRuns measures group commit across segments: n synchronous
// producers of 1 KiB events each on a stream of its own, against the same
// producers all on one stream, in alternating slices so that both see the
// disk as it is at that moment. With one write-ahead log per node the two
// should be close (target: many streams ≥ 0.9× one stream).
func streamsRuns(dir string, n, pairs int, slice time.Duration) []result {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("s%d", i)
	}
	s, ev, done := benchStore(filepath.Join(dir, fmt.Sprintf("streams-%d", n)), names...)
	defer done()
	ctx := context.Background()
	many := fmt.Sprintf("silt in-process, %d producers on %d streams", n, n)
	one := fmt.Sprintf("silt in-process, %d producers on 1 stream", n)
	var rMany, rOne result
	for p := 0; p < pairs; p++ {
		a := runProducers(many, n, slice, func(w int) error {
			_, err := s.Append(ctx, core.AppendRequest{Tenant: "bench", Stream: names[w], Events: [][]byte{ev}})
			return err
		}, 1<<10)
		b := runProducers(one, n, slice, func(int) error {
			_, err := s.Append(ctx, core.AppendRequest{Tenant: "bench", Stream: names[0], Events: [][]byte{ev}})
			return err
		}, 1<<10)
		if p == 0 {
			rMany, rOne = a, b
		} else {
			rMany, rOne = pool(rMany, a), pool(rOne, b)
		}
	}
	fmt.Printf("%d streams ÷ 1 stream, %d producers: %.2f× events/s (%.0f vs %.0f)\n\n",
		n, n, rMany.eventsPerSec()/rOne.eventsPerSec(), rMany.eventsPerSec(), rOne.eventsPerSec())
	return []result{rMany, rOne}
}

// pool adds run b to a, keeping a's name.
func pool(a, b result) result {
	return result{name: a.name, events: a.events + b.events, bytes: a.bytes + b.bytes,
		elapsed: a.elapsed + b.elapsed, lat: append(append([]time.Duration(nil), a.lat...), b.lat...)}
}
