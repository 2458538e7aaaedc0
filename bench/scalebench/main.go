// Command scalebench measures what silt costs as streams multiply, against
// a `silt serve` child over the native API (the Go SDK), and prints
// Markdown tables for BENCHMARKS.md. Every figure is a ratio between two
// measurements of the same run:
//
//   - active: 64 synchronous producers of 1 KiB events on one stream
//     (streams of the server's default segment count, one),
//     against the same producers on 64 streams (one each) and on 1,000
//     streams (each producer going round its share), the cases taking
//     turns within each round;
//   - idle: one server grown to -streams idle streams of two segments
//     (one event each, tiered), measured at -base streams and at
//     -streams: descriptors per idle segment, RSS and tier-1 disk per
//     stream, restart time (clean and after kill -9), the rate of
//     creating -window more streams and the cost of one create;
//   - metrics: /metrics with -metrics-streams streams, each appended to
//     once so that each has its producer series: scrape time and RSS
//     growth with metrics.per_stream on, against a server with it off.
//
// Targets are ratios, never timed assertions. The single-stream figures
// against a raw fsync loop are appendbench's.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/silt-io/silt/bench/internal/siltchild"
)

func main() {
	bin := flag.String("silt", "bin/silt", "silt binary (build with make build)")
	dir := flag.String("dir", ".bench-data-scale", "directory on the disk to measure (not tmpfs)")
	cases := flag.String("cases", "active,idle,metrics", "cases to run, comma separated: active, idle, metrics")
	serverFlags := flag.String("server-flags", "", "extra flags for the silt serve child, space separated")
	nofile := flag.Int("nofile", 0, "run the child under ulimit -n this (soft and hard); 0 leaves the limit as it is")
	producers := flag.Int("producers", 64, "active: synchronous producers")
	active := flag.Int("active", 1000, "active: streams in the many-streams case")
	rounds := flag.Int("rounds", 3, "active: rounds (each runs every case once)")
	dur := flag.Duration("duration", 3*time.Second, "active: length of each case in a round")
	streams := flag.Int("streams", 100000, "idle: streams at the end (10000 for a quick run)")
	base := flag.Int("base", 1000, "idle: streams at the first measurement, which the end is compared with")
	window := flag.Int("window", 1000, "idle: streams created for each creation-rate figure")
	serial := flag.Int("serial", 100, "idle: streams created one at a time after each window, for the cost of one create")
	workers := flag.Int("workers", 16, "idle: concurrent requests while creating and appending")
	settle := flag.Duration("settle", 3*time.Second, "idle: wait after a restart before descriptors and RSS are read; metrics: before the first scrape")
	metricsStreams := flag.Int("metrics-streams", 10000, "metrics: streams")
	scrapes := flag.Int("scrapes", 20, "metrics: scrapes of each kind (plain, gzip)")
	keep := flag.Bool("keep", false, "keep the data directory at the end (to look into what a start reads), instead of removing it")
	flag.Parse()
	var on, off metricsPoint
	err := run(*bin, *dir, *cases, strings.Fields(*serverFlags), *nofile, *keep, func(ctx context.Context, srv *server, c string) error {
		var err error
		switch c {
		case "active":
			return activeRuns(ctx, srv, *producers, *active, *rounds, *dur)
		case "idle":
			return idleRuns(ctx, srv, *streams, *base, *window, *serial, *workers, *settle)
		case "metrics-on":
			on, err = metricsRun(ctx, srv, true, *metricsStreams, *workers, *scrapes, *settle)
		case "metrics-off":
			off, err = metricsRun(ctx, srv, false, *metricsStreams, *workers, *scrapes, *settle)
			if err == nil {
				reportMetrics(on, off, *metricsStreams, *scrapes)
			}
		}
		return err
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "scalebench:", err)
		os.Exit(1)
	}
}

// run runs each case asked for against its own server child and data
// directory under dir, which it removes afterwards unless keep is set,
// failed or not: a grown data directory holds gigabytes.
func run(bin, dir, cases string, extra []string, nofile int, keep bool, runCase func(context.Context, *server, string) error) error {
	want := map[string]bool{}
	for _, c := range strings.Split(cases, ",") {
		switch c = strings.TrimSpace(c); c {
		case "active", "idle":
			want[c] = true
		case "metrics":
			// Two servers: per-stream series on, then off.
			want["metrics-on"], want["metrics-off"] = true, true
		case "":
		default:
			return fmt.Errorf("unknown case %q in -cases (want active, idle or metrics)", c)
		}
	}
	// A run cut short leaves its data behind; start from nothing.
	os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if !keep {
		defer os.RemoveAll(dir)
	}
	// An interrupted run stops its server child rather than leaving it
	// running on the data directory.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	for _, c := range []string{"active", "idle", "metrics-on", "metrics-off"} {
		if !want[c] {
			continue
		}
		fmt.Println()
		flags := extra
		switch c {
		case "metrics-on", "metrics-off":
			flags = append(slices.Clone(extra), "--metrics.per_stream="+strconv.FormatBool(c == "metrics-on"))
		}
		o := siltchild.Options{Bin: bin, Dir: filepath.Join(dir, c), Nofile: nofile, Extra: flags}
		err := siltchild.Run(ctx, o, func(srv *server) error {
			return runCase(ctx, srv, c)
		})
		if err != nil {
			return fmt.Errorf("%s: %w", c, err)
		}
	}
	return nil
}
