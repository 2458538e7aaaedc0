// Command tierbench measures tiering to the fs backend, in one run on one
// disk:
//
//   - throughput: sealing a backlog of 1 KiB events into tier-2 chunks,
//     against a plain copy of the same tier-1 bytes into files of the same
//     size, each fsynced (what `cp` + `sync` of the log would cost);
//   - visibility lag: with events appended at a steady rate and max_lag
//     set, the time from each event's acknowledgement until tier 2 shows
//     it (its chunk committed in the catalog, which is what the heads
//     list).
//
// Results are printed as Markdown tables for BENCHMARKS.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/silt-io/silt/core"
	"github.com/silt-io/silt/tiering"
)

func main() {
	dir := flag.String("dir", ".bench-data-tier", "directory on the disk to measure (not tmpfs)")
	sizeMiB := flag.Int("size", 256, "MiB of events to tier in the throughput case")
	rate := flag.Int("rate", 1000, "events per second in the lag case")
	lagDur := flag.Duration("lag-duration", 20*time.Second, "length of the lag case (0: skip it)")
	maxLag := flag.Duration("max-lag", time.Second, "tiering.max_lag in the lag case")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the throughput case's first round of tiering to this file")
	pause := flag.Duration("pause", 5*time.Second, "pause between throughput rounds (a round writes about 1 GiB; a virtual disk with a write budget needs minutes to refill it)")
	inFlight := flag.Int("chunks-in-flight", tiering.DefaultConfig().ChunksInFlight, "tiering.chunks_in_flight in the throughput case")
	rounds := flag.Int("rounds", 3, "throughput rounds (each a fresh backlog: copied, tiered, and its chunks copied); the ratio is their median")
	flag.Parse()
	profile = *cpuProfile
	chunksInFlight = *inFlight
	os.RemoveAll(*dir)
	defer os.RemoveAll(*dir)
	if err := throughputRounds(filepath.Join(*dir, "throughput"), int64(*sizeMiB)<<20, *rounds, *pause); err != nil {
		fatal(err)
	}
	if *lagDur <= 0 || *rate <= 0 {
		return // the lag case is off: -lag-duration 0
	}
	if err := lag(filepath.Join(*dir, "lag"), *rate, *lagDur, *maxLag); err != nil {
		fatal(err)
	}
}

// profile is the -cpuprofile file, if any.
var profile string

// chunksInFlight is tiering.chunks_in_flight in the throughput case.
var chunksInFlight int

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "tierbench:", err)
	os.Exit(1)
}

func event() []byte {
	ev := make([]byte, 1023) // 1 KiB with the '\n' of a lines stream
	for i := range ev {
		ev[i] = 'a' + byte(i%26)
	}
	return ev
}

func openStore(dir string) (*core.Store, error) {
	cfg := core.DefaultConfig()
	cfg.Dir = dir
	store, err := core.Open(cfg, nil)
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	if _, err := store.CreateTenant(ctx, "bench", nil); err != nil {
		store.Close()
		return nil, err
	}
	if _, err := store.CreateStream(ctx, "bench", "s", core.StreamConfig{}); err != nil {
		store.Close()
		return nil, err
	}
	return store, nil
}

// tieredOffset is the offset after the last event of segment 0 in tier 2.
func tieredOffset(t *tiering.Tierer) uint64 {
	st, err := t.Status("bench", "s")
	if err != nil || len(st.Segments) == 0 {
		return 0
	}
	return st.Segments[0].TieredOffset
}

// roundResult is one throughput round: the copy baseline and the tiering
// of the same backlog.
type roundResult struct {
	copied        int64 // bytes of tier 1 copied before (the copy after copies the tiered bytes)
	tiered        int64
	chunks        int
	tierTime      time.Duration
	before, after time.Duration // the copy of tier 1 before tiering, of tier 2 after
	tierCPU       time.Duration // the process's user + system time while tiering
	chunkBytes    int64
}

// ratio is the tiering's throughput over the faster of the two copies':
// the higher bar, so that a copy slowed by the disk cannot flatter the
// tiering.
func (r roundResult) ratio() float64 {
	return (float64(r.tiered) / r.tierTime.Seconds()) / r.copyMBs()
}

// copyMBs is the faster copy's throughput, in bytes/s.
func (r roundResult) copyMBs() float64 {
	return max(float64(r.copied)/r.before.Seconds(), float64(r.tiered)/r.after.Seconds())
}

// throughputRounds runs rounds of the throughput case, each on a fresh
// store, and prints every round and the median ratio: single rounds on a
// shared machine swing with whatever else uses the disk.
func throughputRounds(dir string, size int64, rounds int, pause time.Duration) error {
	var res []roundResult
	for r := range max(rounds, 1) {
		rr, err := throughput(filepath.Join(dir, fmt.Sprint(r)), size, r == 0)
		if err != nil {
			return err
		}
		os.RemoveAll(filepath.Join(dir, fmt.Sprint(r)))
		// As above: the next round starts with the discards issued, and
		// after a pause, since the virtual disk goes on working them off
		// (without it, every third round ran two to three times slower)
		// and, on a VM whose disk has a write budget, refills it.
		syscall.Sync()
		if r+1 < rounds {
			time.Sleep(pause)
		}
		res = append(res, rr)
	}
	fmt.Printf("| round | bytes | copy + fsync, before and after | faster copy MB/s | tiering to fs (%d MiB chunks) | chunks | tiering MB/s | CPU while tiering (cores) | ÷ copy |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n", res[0].chunkBytes>>20)
	for i, r := range res {
		fmt.Printf("| %d | %d | %s, %s | %.0f | %s | %d | %.0f | %s (%.2f) | %.2f |\n", i+1, r.tiered, r.before.Round(time.Millisecond),
			r.after.Round(time.Millisecond), r.copyMBs()/1e6, r.tierTime.Round(time.Millisecond), r.chunks,
			float64(r.tiered)/r.tierTime.Seconds()/1e6, r.tierCPU.Round(time.Millisecond), r.tierCPU.Seconds()/r.tierTime.Seconds(), r.ratio())
	}
	sort.Slice(res, func(i, j int) bool { return res[i].ratio() < res[j].ratio() })
	fmt.Printf("\nmedian tiering ÷ copy over %d rounds: %.2f (target ≥ 0.8)\n\n", len(res), res[len(res)/2].ratio())
	return nil
}

func throughput(dir string, size int64, withProfile bool) (roundResult, error) {
	store, err := openStore(filepath.Join(dir, "data"))
	if err != nil {
		return roundResult{}, err
	}
	defer store.Close()
	ctx := context.Background()
	ev := event()
	batch := make([][]byte, 1024)
	for i := range batch {
		batch[i] = ev
	}
	fmt.Fprintf(os.Stderr, "appending %d MiB…\n", size>>20)
	var events uint64
	for n := int64(0); n < size; n += int64(len(batch)) * 1024 {
		if _, err := store.Append(ctx, core.AppendRequest{Tenant: "bench", Stream: "s", Events: batch}); err != nil {
			return roundResult{}, err
		}
		events += uint64(len(batch))
	}
	tcfg := tiering.DefaultConfig()
	tcfg.ChunksInFlight = chunksInFlight
	tcfg.FS.Dir = filepath.Join(dir, "tier2")

	// Baseline: copy the segment's tier-1 files into chunk-sized files,
	// fsyncing each and the directory, as a shell copy followed by sync
	// would.
	copyDir := filepath.Join(dir, "copy")
	isLog := func(p string) bool { return strings.HasSuffix(p, ".log") }
	copied, before, err := copyFiles(filepath.Join(dir, "data", "logs"), copyDir, tcfg.MaxChunkBytes, isLog)
	if err != nil {
		return roundResult{}, err
	}
	// The copy stays until the round ends, and the journal is flushed
	// first: freeing its blocks now would put their discards (this disk
	// is mounted with -o discard) into the tiering's fsyncs.
	defer os.RemoveAll(copyDir)
	syscall.Sync()

	be, err := tiering.OpenBackend(tcfg, filepath.Join(dir, "data"))
	if err != nil {
		return roundResult{}, err
	}
	fmt.Fprintln(os.Stderr, "tiering…")
	if profile != "" && withProfile {
		f, err := os.Create(profile)
		if err != nil {
			return roundResult{}, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return roundResult{}, err
		}
		defer pprof.StopCPUProfile()
	}
	cpu0 := cpuTime()
	start := time.Now()
	tierer, err := tiering.New(tcfg, store, be, tiering.Options{})
	if err != nil {
		return roundResult{}, err
	}
	defer tierer.Close()
	for tieredOffset(tierer) < events {
		if time.Since(start) > 10*time.Minute {
			return roundResult{}, fmt.Errorf("tiering did not finish in 10 minutes (at offset %d of %d)", tieredOffset(tierer), events)
		}
		time.Sleep(2 * time.Millisecond)
	}
	tierTime := time.Since(start)
	tierCPU := cpuTime() - cpu0
	st, _ := tierer.Status("bench", "s")
	var tiered int64
	var chunks int
	for _, s := range st.Segments {
		tiered += s.TieredBytes
		chunks += s.Chunks
	}
	// The copy is timed again after the tiering, of the chunks it wrote
	// (the same event bytes, in files of the same size), and the faster
	// of the two is the baseline: this virtual disk's throughput drifts
	// within a round (it has a write budget that runs down), so one copy
	// can land in a slow stretch the tiering did not see, or the other
	// way round.
	isChunk := func(p string) bool {
		base := filepath.Base(p)
		return !strings.HasPrefix(base, "_") && !strings.HasPrefix(base, ".")
	}
	copied2, after, err := copyFiles(tcfg.FS.Dir, filepath.Join(dir, "copy-after"), tcfg.MaxChunkBytes, isChunk)
	if err != nil {
		return roundResult{}, err
	}
	if copied2 != tiered {
		return roundResult{}, fmt.Errorf("copied %d bytes of tier-2 chunks, the tierer reports %d tiered", copied2, tiered)
	}
	return roundResult{copied: copied, tiered: tiered, chunks: chunks, before: before, after: after,
		tierTime: tierTime, tierCPU: tierCPU, chunkBytes: tcfg.MaxChunkBytes}, nil
}

// copyFiles copies every file under src that match accepts, in name
// order, into files of at most chunk bytes in dst, each fsynced, then
// fsyncs dst.
func copyFiles(src, dst string, chunk int64, match func(string) bool) (int64, time.Duration, error) {
	var files []string
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		// The tierer still runs while tier 2 is copied: a manifest's
		// temp file can be renamed away between the listing and its
		// stat. It is not a chunk; skip it.
		if errors.Is(err, fs.ErrNotExist) && p != src {
			return nil
		}
		if err == nil && !info.IsDir() && match(p) {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		return 0, 0, err
	}
	sort.Strings(files)
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return 0, 0, err
	}
	start := time.Now()
	var total int64
	var out *os.File
	var inOut int64
	closeOut := func() error {
		if out == nil {
			return nil
		}
		err := out.Sync()
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		out = nil
		return err
	}
	buf := make([]byte, 1<<20)
	for _, name := range files {
		in, err := os.Open(name)
		if err != nil {
			return 0, 0, err
		}
		for {
			n, rerr := in.Read(buf)
			for p := buf[:n]; len(p) > 0; {
				if out == nil || inOut == chunk {
					if err := closeOut(); err != nil {
						in.Close()
						return 0, 0, err
					}
					if out, err = os.Create(filepath.Join(dst, fmt.Sprintf("%06d", total/chunk))); err != nil {
						in.Close()
						return 0, 0, err
					}
					inOut = 0
				}
				k := int(min(int64(len(p)), chunk-inOut))
				if _, err := out.Write(p[:k]); err != nil {
					in.Close()
					return 0, 0, err
				}
				p, inOut, total = p[k:], inOut+int64(k), total+int64(k)
			}
			if rerr == io.EOF {
				break
			}
			if rerr != nil {
				in.Close()
				return 0, 0, rerr
			}
		}
		in.Close()
	}
	if err := closeOut(); err != nil {
		return 0, 0, err
	}
	d, err := os.Open(dst)
	if err != nil {
		return 0, 0, err
	}
	err = d.Sync()
	d.Close()
	return total, time.Since(start), err
}

func lag(dir string, rate int, dur, maxLag time.Duration) error {
	store, err := openStore(filepath.Join(dir, "data"))
	if err != nil {
		return err
	}
	defer store.Close()
	tcfg := tiering.DefaultConfig()
	tcfg.FS.Dir = filepath.Join(dir, "tier2")
	tcfg.MaxLag = maxLag
	tcfg.Interval = min(tcfg.Interval, maxLag/4)
	be, err := tiering.OpenBackend(tcfg, filepath.Join(dir, "data"))
	if err != nil {
		return err
	}
	tierer, err := tiering.New(tcfg, store, be, tiering.Options{})
	if err != nil {
		return err
	}
	defer tierer.Close()
	ctx := context.Background()
	ev := event()
	fmt.Fprintf(os.Stderr, "appending %d events/s for %s with max_lag %s…\n", rate, dur, maxLag)

	// One producer paced by a ticker; acks[i] is when offset i was
	// acknowledged. The watcher notes when the tiered offset passes each
	// acknowledged offset.
	n := int(dur.Seconds() * float64(rate))
	acks := make([]time.Time, n)
	seen := make([]time.Time, n)
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		next := 0
		for {
			off := int(min(tieredOffset(tierer), uint64(n)))
			now := time.Now()
			for ; next < off; next++ {
				seen[next] = now
			}
			if next == n {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	interval := time.Second / time.Duration(rate)
	start := time.Now()
	for i := 0; i < n; i++ {
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			time.Sleep(d)
		}
		res, err := store.Append(ctx, core.AppendRequest{Tenant: "bench", Stream: "s", Events: [][]byte{ev}})
		if err != nil {
			return err
		}
		if res.FirstOffset != uint64(i) {
			return fmt.Errorf("event %d stored at offset %d", i, res.FirstOffset)
		}
		acks[i] = time.Now()
	}
	achieved := float64(n) / time.Since(start).Seconds()
	select {
	case <-watchDone:
	case <-time.After(maxLag + 30*time.Second):
		return fmt.Errorf("tier 2 did not show every event within %s of the last append", maxLag+30*time.Second)
	}
	lags := make([]time.Duration, n)
	for i := range lags {
		lags[i] = seen[i].Sub(acks[i])
	}
	sort.Slice(lags, func(i, j int) bool { return lags[i] < lags[j] })
	p := func(q float64) time.Duration { return lags[int(float64(n-1)*q)].Round(time.Millisecond) }
	target := maxLag + 500*time.Millisecond
	fmt.Printf("| events/s (achieved) | max_lag | ack→visible p50 | p99 | max | p99 target (max_lag + 0.5 s) |\n|---:|---:|---:|---:|---:|---|\n")
	status := "met"
	if p(0.99) > target {
		status = "missed"
	}
	fmt.Printf("| %.0f | %s | %s | %s | %s | %s (%s) |\n", achieved, maxLag, p(0.5), p(0.99), lags[n-1].Round(time.Millisecond), target, status)
	return nil
}

// cpuTime is the process's user + system time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
