// Command appendbench measures silt's durable append path against a raw
// fdatasync loop on the same disk, in one run, and prints a Markdown table
// of absolute numbers and ratios (see BENCHMARKS.md). It measures:
//
//   - baselines, run before and after the silt cases and pooled: 1 KiB
//     records with fdatasync after each, and 64 KiB batches with
//     fdatasync after each;
//   - silt in-process (core.Store.Append) with 1, 16 and 256 concurrent
//     producers of 1 KiB events;
//   - 64 synchronous in-process producers on 64 streams against the same
//     on one stream, in alternating slices (streams.go), and 1,000 on
//     1,000 streams against 1,000 on one;
//   - silt over HTTP against a real `silt serve` child process: 1, 16 and
//     256 synchronous producers, and 256 batching SDK producers, with the
//     server's peak RSS;
//   - the same synchronous appends against a no-op server child
//     (http-floor): what the round trip costs before silt does anything;
//   - the single synchronous HTTP producer again, in slices alternating
//     with slices of the 1 KiB loop (http-paired), so that each ratio
//     compares the two on the disk as it is at that moment;
//   - 16 synchronous HTTP producers against a server with introspection
//     on, in slices alternating with a server with it off (introspect):
//     what recording an event per request costs.
//
// Targets are ratios, never timed assertions.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/silt-io/silt/core"
)

type result struct {
	name     string
	events   int64
	bytes    int64
	elapsed  time.Duration
	lat      []time.Duration
	rssBytes int64
}

func (r result) eventsPerSec() float64 { return float64(r.events) / r.elapsed.Seconds() }
func (r result) mbPerSec() float64     { return float64(r.bytes) / r.elapsed.Seconds() / 1e6 }

func (r result) pct(p float64) time.Duration {
	if len(r.lat) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), r.lat...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[int(float64(len(s)-1)*p)]
}

func main() {
	dir := flag.String("dir", ".bench-data", "directory on the disk to measure (not tmpfs)")
	dur := flag.Duration("duration", 3*time.Second, "length of each case")
	silt := flag.String("silt", "bin/silt", "silt binary for the HTTP cases (build with make build)")
	httpCases := flag.Bool("http", true, "run the HTTP cases against a silt serve child process")
	serverFlags := flag.String("server-flags", "", "extra flags for the silt serve child, space separated (e.g. --api.max_inflight_bytes=67108864)")
	cases := flag.String("cases", "inproc,streams,http-sync,http-batch,http-floor,http-paired,introspect", "cases to run besides the baselines, comma separated: inproc, streams, http-sync, http-batch, http-floor, http-paired, introspect")
	floorAddr := flag.String("serve-floor", "", "run as the http-floor case's no-op server child on this address")
	pairs := flag.Int("pairs", 10, "http-paired: pairs of slices (fsync loop, then one synchronous HTTP producer)")
	slice := flag.Duration("slice", time.Second, "http-paired: length of each slice")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the whole run (the in-process cases are what it shows) to this file")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	if *floorAddr != "" {
		serveFloor(*floorAddr)
		return
	}
	want := map[string]bool{}
	for _, c := range strings.Split(*cases, ",") {
		switch c = strings.TrimSpace(c); c {
		case "inproc", "streams", "http-sync", "http-batch", "http-floor", "http-paired", "introspect":
			want[c] = true
		case "":
		default:
			fatal(fmt.Errorf("unknown case %q in -cases (want inproc, streams, http-sync, http-batch, http-floor, http-paired or introspect)", c))
		}
	}
	// A run cut short leaves its data behind; start from nothing.
	os.RemoveAll(*dir)
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		fatal(err)
	}
	defer os.RemoveAll(*dir)

	// The loops run before and after the silt cases, and the ratios are
	// against both runs together: this disk's sync speed drifts over a
	// run, and a baseline taken at one moment moved every ratio with it.
	var rs []result
	before1k := fsyncLoop(*dir, 1<<10, *dur)
	before64k := fsyncLoop(*dir, 64<<10, *dur)
	if want["inproc"] {
		for _, n := range []int{1, 16, 256} {
			rs = append(rs, inProcess(*dir, n, *dur))
		}
	}
	if want["streams"] {
		// 64 active streams, then 1,000 (targets 0.9× and 0.8× of the same
		// producers on one stream).
		for _, n := range []int{64, 1000} {
			rs = append(rs, streamsRuns(*dir, n, 3, *dur)...)
		}
	}
	if *httpCases && (want["http-sync"] || want["http-batch"]) {
		hr, err := httpRuns(*silt, *dir, *dur, strings.Fields(*serverFlags), want["http-sync"], want["http-batch"])
		if err != nil {
			fatal(err)
		}
		rs = append(rs, hr...)
	}
	if *httpCases && want["http-floor"] {
		fr, err := floorRuns(*dur)
		if err != nil {
			fatal(err)
		}
		rs = append(rs, fr...)
	}
	after1k := fsyncLoop(*dir, 1<<10, *dur)
	after64k := fsyncLoop(*dir, 64<<10, *dur)
	base1k, base64k := merge(before1k, after1k), merge(before64k, after64k)
	loops := []result{named(before1k, " (before)"), named(after1k, " (after)"), base1k, named(before64k, " (before)"), named(after64k, " (after)"), base64k}
	report(append(loops, rs...), base1k, base64k)
	if *httpCases && want["http-paired"] && *pairs > 0 {
		if err := pairedRun(*silt, *dir, *pairs, *slice, strings.Fields(*serverFlags)); err != nil {
			fatal(err)
		}
	}
	if *httpCases && want["introspect"] && *pairs > 0 {
		if err := introspectRun(*silt, *dir, *pairs, *slice, strings.Fields(*serverFlags)); err != nil {
			fatal(err)
		}
	}
}

// merge pools two runs of the same loop into one result.
func merge(a, b result) result {
	return result{name: a.name + " (both)", events: a.events + b.events, bytes: a.bytes + b.bytes,
		elapsed: a.elapsed + b.elapsed, lat: append(append([]time.Duration(nil), a.lat...), b.lat...)}
}

func named(r result, suffix string) result { r.name += suffix; return r }

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "appendbench:", err)
	os.Exit(1)
}

// fsyncLoop is the baseline: write size bytes, fdatasync, repeat.
func fsyncLoop(dir string, size int, dur time.Duration) result {
	f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("baseline-%d", size)), os.O_CREATE|os.O_WRONLY|os.O_TRUNC|os.O_APPEND, 0o644)
	if err != nil {
		fatal(err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	buf := make([]byte, size)
	r := result{name: fmt.Sprintf("baseline: write %d KiB + fdatasync", size>>10)}
	start := time.Now()
	for time.Since(start) < dur {
		t := time.Now()
		if _, err := f.Write(buf); err != nil {
			fatal(err)
		}
		if err := datasync(f); err != nil {
			fatal(err)
		}
		r.lat = append(r.lat, time.Since(t))
		r.events++
		r.bytes += int64(size)
	}
	r.elapsed = time.Since(start)
	return r
}

// inProcess appends 1 KiB events through core.Store with n producers.
func inProcess(dir string, n int, dur time.Duration) result {
	s, ev, done := benchStore(filepath.Join(dir, fmt.Sprintf("inproc-%d", n)), "s")
	defer done()
	ctx := context.Background()
	return runProducers(fmt.Sprintf("silt in-process, %d producers", n), n, dur, func(int) error {
		_, err := s.Append(ctx, core.AppendRequest{Tenant: "bench", Stream: "s", Events: [][]byte{ev}})
		return err
	}, 1<<10)
}

// runProducers runs n goroutines calling op until dur passes, recording
// per-call latency.
func runProducers(name string, n int, dur time.Duration, op func(worker int) error, evBytes int) result {
	var (
		mu    sync.Mutex
		lat   []time.Duration
		count atomic.Int64
		wg    sync.WaitGroup
		first error
	)
	start := time.Now()
	deadline := start.Add(dur)
	for w := 0; w < n; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var local []time.Duration
			for time.Now().Before(deadline) {
				t := time.Now()
				if err := op(w); err != nil {
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
	if first != nil {
		fatal(fmt.Errorf("%s: %w", name, first))
	}
	return result{name: name, events: count.Load(), bytes: count.Load() * int64(evBytes), elapsed: time.Since(start), lat: lat}
}

func report(rs []result, base1k, base64k result) {
	fmt.Println("| case | events/s | MB/s | p50 | p99 | × 1 KiB loop events/s | × 64 KiB loop MB/s | p99 ÷ loop p99 | server RSS |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range rs {
		rss := ""
		if r.rssBytes > 0 {
			rss = fmt.Sprintf("%d MiB", r.rssBytes>>20)
		}
		fmt.Printf("| %s | %.0f | %.1f | %s | %s | %.2f | %.2f | %.2f | %s |\n",
			r.name, r.eventsPerSec(), r.mbPerSec(), r.pct(0.5).Round(time.Microsecond), r.pct(0.99).Round(time.Microsecond),
			r.eventsPerSec()/base1k.eventsPerSec(), r.mbPerSec()/base64k.mbPerSec(),
			float64(r.pct(0.99))/float64(base1k.pct(0.99)), rss)
	}
}

// benchStore opens a store in dir with tenant "bench" holding the named
// streams, and returns it with a 1 KiB event and the function that closes
// and removes it.
func benchStore(dir string, streams ...string) (*core.Store, []byte, func()) {
	cfg := core.DefaultConfig()
	cfg.Dir = dir
	s, err := core.Open(cfg, nil)
	if err != nil {
		fatal(err)
	}
	ctx := context.Background()
	if _, err := s.CreateTenant(ctx, "bench", nil); err != nil {
		fatal(err)
	}
	for _, name := range streams {
		if _, err := s.CreateStream(ctx, "bench", name, core.StreamConfig{}); err != nil {
			fatal(err)
		}
	}
	ev := make([]byte, 1<<10)
	for i := range ev {
		ev[i] = 'a'
	}
	return s, ev, func() { s.Close(); os.RemoveAll(dir) }
}
