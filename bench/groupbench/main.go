// Command groupbench measures reader groups (docs/groups.md) against a
// `silt serve` child over the native API (the Go SDK), and prints Markdown
// tables for BENCHMARKS.md. Every figure is a ratio against a baseline
// measured in the same run:
//
//   - read: 4 GroupReaders of one group, one segment each, reading a
//     backlog of a 4-segment stream to its end and committing after each
//     Next (as `silt read --group` does), against 4 plain readers
//     (client.Read of one segment each, the same batch size); the two
//     take turns for -rounds rounds and the ratio is the rounds' median.
//     Both runs check that every event was read exactly once.
//   - commit: p50/p99 of one reader's CommitGroup of one position, against
//     a pebble Set with pebble.Sync of a value of a position record's size
//     in a directory beside the server's data directory (the catalog's own
//     durable write), and against GET /healthz (the HTTP round trip,
//     which no commit can beat); the three take turns in blocks.
//   - lag: GroupLag of a group over 1 segment against a group over 1,000
//     (4 streams of 250), each segment with a few events and some
//     positions committed: time per call, per group and per segment, and
//     the server's open descriptors before and after the first call on
//     idle segments (their logs closed by --core.idle_close); after the
//     later calls, as many calls for the totals only (GroupLagTotal,
//     ?segments=false), whose cost per group is the target.
//
// Targets are ratios, never timed assertions.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/silt-io/silt/bench/internal/siltchild"
)

func main() {
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "Usage: go run ./bench/groupbench [flags]\n\n"+
			"Measures reader-group reads, commits and lag against a silt serve child\n"+
			"(build it with make build first) and prints Markdown tables.\n\nFlags:\n")
		flag.PrintDefaults()
	}
	bin := flag.String("silt", "bin/silt", "silt binary (build with make build)")
	dir := flag.String("dir", ".bench-data-groups", "directory on the disk to measure (not tmpfs); removed at the end")
	cases := flag.String("cases", "read,commit,lag", "cases to run, comma separated: read, commit, lag")
	quick := flag.Bool("quick", false, "a quick run: a 64 MiB backlog, 2 rounds, 300 commits, 20 lag calls (flags given explicitly still win)")
	backlog := flag.Int64("backlog", 1<<30, "read: bytes of events in the backlog, spread over the 4 segments")
	eventSize := flag.Int("event-size", 1024, "read: bytes per event")
	batch := flag.Int("batch", 1000, "read: events per read, for the plain readers and the GroupReaders (GroupReaderOptions.Max) alike")
	rounds := flag.Int("rounds", 3, "read: rounds, each running the plain readers and the group once")
	commits := flag.Int("commits", 2000, "commit: commits measured (and as many pebble writes and /healthz requests)")
	lagCalls := flag.Int("lag-calls", 50, "lag: calls measured per group")
	lagEvents := flag.Int("lag-events", 3, "lag: events appended to each segment")
	idleClose := flag.Duration("idle-close", 2*time.Second, "lag: --core.idle_close of the server, so that segment logs are closed before the lag calls")
	flag.Parse()
	if *quick {
		// Flags given explicitly win over the quick sizes.
		set := map[string]bool{}
		flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
		for name, v := range map[string]string{"backlog": "67108864", "rounds": "2", "commits": "300", "lag-calls": "20"} {
			if !set[name] {
				flag.Set(name, v)
			}
		}
	}
	want := map[string]bool{}
	for _, c := range strings.Split(*cases, ",") {
		switch c = strings.TrimSpace(c); c {
		case "read", "commit", "lag":
			want[c] = true
		case "":
		default:
			fmt.Fprintf(os.Stderr, "groupbench: unknown case %q in -cases (want read, commit or lag)\n", c)
			os.Exit(2)
		}
	}
	if *eventSize < 1 || *batch < 1 || *rounds < 1 || *commits < 1 || *lagCalls < 1 || *lagEvents < 2 {
		fmt.Fprintln(os.Stderr, "groupbench: -event-size, -batch, -rounds, -commits and -lag-calls must be positive, -lag-events at least 2")
		os.Exit(2)
	}
	// A run cut short leaves its data behind; start from nothing.
	os.RemoveAll(*dir)
	if err := os.MkdirAll(*dir, 0o700); err != nil {
		fmt.Fprintln(os.Stderr, "groupbench:", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, *bin, *dir, *idleClose, func(srv *server) error {
		fmt.Printf("groupbench %s, load average %s\n", time.Now().UTC().Format(time.RFC3339), loadavg())
		if want["read"] {
			n := int(*backlog / int64(*eventSize) / 4)
			if err := readCase(ctx, srv, n, *eventSize, *batch, *rounds); err != nil {
				return fmt.Errorf("read: %w", err)
			}
		}
		if want["commit"] {
			if err := commitCase(ctx, srv, filepath.Join(*dir, "pebble"), *commits); err != nil {
				return fmt.Errorf("commit: %w", err)
			}
		}
		if want["lag"] {
			if err := lagCase(ctx, srv, *lagEvents, *lagCalls, *idleClose); err != nil {
				return fmt.Errorf("lag: %w", err)
			}
		}
		fmt.Printf("\nload average at the end %s\n", loadavg())
		return nil
	})
	stop()
	os.RemoveAll(*dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "groupbench:", err)
		os.Exit(1)
	}
}

// server is the `silt serve` child the cases run against.
type server = siltchild.Server

// run starts the server child on dir/silt, runs fn and stops the child,
// also when the run is interrupted.
func run(ctx context.Context, bin, dir string, idleClose time.Duration, fn func(*server) error) error {
	o := siltchild.Options{Bin: bin, Dir: filepath.Join(dir, "silt"), Extra: []string{"--core.idle_close", idleClose.String()}}
	return siltchild.Run(ctx, o, fn)
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

// pct is the p-quantile (0..1) of ds, by the nearest rank below.
func pct(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[int(float64(len(s)-1)*p)]
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
