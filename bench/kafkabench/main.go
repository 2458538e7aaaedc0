// Command kafkabench compares appends through the Kafka head with appends
// through the native HTTP API of the same `silt serve` child, in turns
// within one run: N synchronous producers of 1 KiB records (franz-go with
// acks=all and idempotence, one ProduceSync per record, against the SDK's
// one Append per event), reporting records/s, p99 latency and the server's
// CPU time per record (from /proc). Both sides wait for silt's fsync, so
// the ratio is the cost of the Kafka request path against the HTTP one.
// Then a backlog of -backlog bytes is read from the start by one consumer
// each way (franz-go ConsumePartitions against the SDK's Read with the
// server's largest page), in turns.
//
//	make build && go run ./bench/kafkabench [-dur 3s] [-rounds 3] [-producers 1,16] [-backlog 268435456]
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/silt-io/silt/bench/internal/benchdata"
	"github.com/silt-io/silt/client"
)

func main() {
	bin := flag.String("bin", "bin/silt", "silt binary")
	dur := flag.Duration("dur", 3*time.Second, "length of one case in one round")
	rounds := flag.Int("rounds", 3, "rounds; the cases take turns in each")
	prodList := flag.String("producers", "1,16", "producer counts, comma-separated")
	backlog := flag.Int64("backlog", 256<<20, "bytes of the backlog read from the start (0: skip)")
	flag.Parse()
	if err := run(*bin, *dur, *rounds, *prodList, *backlog); err != nil {
		fmt.Fprintln(os.Stderr, "kafkabench:", err)
		os.Exit(1)
	}
}

type result struct {
	records int64
	elapsed time.Duration
	lat     []time.Duration
	cpu     time.Duration // server user+system time
}

func (r result) rate() float64 { return float64(r.records) / r.elapsed.Seconds() }

func (r result) p99() time.Duration {
	if len(r.lat) == 0 {
		return 0
	}
	slices.Sort(r.lat)
	return r.lat[len(r.lat)*99/100]
}

func (r result) cpuPerRecord() time.Duration {
	if r.records == 0 {
		return 0
	}
	return r.cpu / time.Duration(r.records)
}

func run(bin string, dur time.Duration, rounds int, prodList string, backlog int64) error {
	dir, err := os.MkdirTemp("", "kafkabench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	api, err := benchdata.FreeAddr()
	if err != nil {
		return err
	}
	kafka, err := benchdata.FreeAddr()
	if err != nil {
		return err
	}
	data := filepath.Join(dir, "data")
	cmd := exec.Command(bin, "serve", "--core.dir", data, "--api.listen", api, "--s3.listen", "127.0.0.1:0",
		"--nfs.listen", "127.0.0.1:0", "--webhdfs.listen", "127.0.0.1:0", "--kafka.listen", kafka, "--log.level", "warn")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s (run make build first): %w", bin, err)
	}
	defer func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() }()
	url := "http://" + api
	ready := false
	for range 200 {
		if resp, err := http.Get(url + "/readyz"); err == nil {
			resp.Body.Close()
			if ready = resp.StatusCode == 200; ready {
				break
			}
		}
		time.Sleep(25 * time.Millisecond)
	}
	if !ready {
		return fmt.Errorf("silt serve did not become ready")
	}
	tok, err := os.ReadFile(filepath.Join(data, "root.token"))
	if err != nil {
		return err
	}
	token := strings.TrimSpace(string(tok))
	cl, err := client.New(url, client.WithToken(token))
	if err != nil {
		return err
	}
	ctx := context.Background()
	if _, err := cl.CreateTenant(ctx, "bench", nil); err != nil {
		return err
	}
	ev := make([]byte, 1<<10)
	for i := range ev {
		ev[i] = 'a'
	}
	fmt.Printf("kafkabench: 1 KiB records, %d rounds of %v per case, %s\n\n", rounds, dur, time.Now().UTC().Format(time.RFC3339))
	for _, f := range strings.Split(prodList, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return fmt.Errorf("-producers %q", prodList)
		}
		for _, name := range []string{fmt.Sprintf("native%d", n), fmt.Sprintf("kafka%d", n)} {
			if _, err := cl.CreateStream(ctx, "bench", client.StreamSpec{Name: name, Encoding: "framed"}); err != nil {
				return err
			}
		}
		native := func() error {
			_, err := cl.Append(ctx, "bench", fmt.Sprintf("native%d", n), [][]byte{ev}, client.AppendOptions{})
			return err
		}
		var kcls []*kgo.Client
		for range n {
			k, err := kgo.NewClient(kgo.SeedBrokers(kafka), kgo.SASL(plain.Auth{User: "root", Pass: token}.AsMechanism()),
				kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0), kgo.DefaultProduceTopic(fmt.Sprintf("bench.kafka%d", n)))
			if err != nil {
				return err
			}
			defer k.Close()
			kcls = append(kcls, k)
		}
		fmt.Printf("%d synchronous producer(s)\n%-7s %-8s %12s %10s %14s\n", n, "round", "path", "records/s", "p99", "CPU/record")
		var ratios, p99s, cpus []float64
		for r := range rounds {
			nr, err := measure(cmd.Process.Pid, n, dur, func(int) error { return native() })
			if err != nil {
				return fmt.Errorf("native: %w", err)
			}
			kr, err := measure(cmd.Process.Pid, n, dur, func(i int) error {
				return kcls[i].ProduceSync(ctx, &kgo.Record{Value: ev}).FirstErr()
			})
			if err != nil {
				return fmt.Errorf("kafka: %w", err)
			}
			for _, x := range []struct {
				name string
				r    result
			}{{"native", nr}, {"kafka", kr}} {
				fmt.Printf("%-7d %-8s %12.0f %10v %14v\n", r+1, x.name, x.r.rate(), x.r.p99().Round(time.Microsecond), x.r.cpuPerRecord().Round(100*time.Nanosecond))
			}
			ratios = append(ratios, kr.rate()/nr.rate())
			p99s = append(p99s, float64(kr.p99())/float64(nr.p99()))
			cpus = append(cpus, float64(kr.cpuPerRecord())/float64(nr.cpuPerRecord()))
		}
		fmt.Printf("kafka ÷ native, median of rounds: records/s %.2f×, p99 %.2f×, server CPU per record %.2f×\n\n", median(ratios), median(p99s), median(cpus))
	}
	if backlog > 0 {
		return readBacklog(ctx, cl, kafka, token, cmd.Process.Pid, backlog, rounds, ev)
	}
	return nil
}

// readBacklog fills one segment with n bytes of 1 KiB events (batches of
// 1,000 through the SDK) and reads them from the start each way.
func readBacklog(ctx context.Context, cl *client.Client, kafka, token string, pid int, n int64, rounds int, ev []byte) error {
	if _, err := cl.CreateStream(ctx, "bench", client.StreamSpec{Name: "backlog", Encoding: "framed"}); err != nil {
		return err
	}
	total := n / int64(len(ev))
	batch := make([][]byte, 1000)
	for i := range batch {
		batch[i] = ev
	}
	for done := int64(0); done < total; done += int64(len(batch)) {
		if _, err := cl.Append(ctx, "bench", "backlog", batch[:min(int64(len(batch)), total-done)], client.AppendOptions{}); err != nil {
			return err
		}
	}
	fmt.Printf("reading a backlog of %d MiB (%d events of 1 KiB) from the start, one consumer\n%-7s %-8s %12s %14s\n", n>>20, total, "round", "path", "MiB/s", "CPU/record")
	var ratios, cpus []float64
	for r := range rounds {
		nr, err := measureRead(pid, total, func(yield func(int) bool) error {
			cursor := ""
			for {
				b, err := cl.Read(ctx, "bench", "backlog", client.ReadOptions{Cursor: cursor, Max: 10000})
				if err != nil {
					return err
				}
				if len(b.Events) == 0 || !yield(len(b.Events)) {
					return nil
				}
				cursor = b.NextCursor
			}
		})
		if err != nil {
			return fmt.Errorf("native read: %w", err)
		}
		k, err := kgo.NewClient(kgo.SeedBrokers(kafka), kgo.SASL(plain.Auth{User: "root", Pass: token}.AsMechanism()),
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"bench.backlog": {0: kgo.NewOffset().AtStart()}}),
			kgo.FetchMaxBytes(32<<20), kgo.FetchMaxPartitionBytes(8<<20))
		if err != nil {
			return err
		}
		kr, err := measureRead(pid, total, func(yield func(int) bool) error {
			for {
				fs := k.PollFetches(ctx)
				if err := fs.Err0(); err != nil {
					return err
				}
				if !yield(fs.NumRecords()) {
					return nil
				}
			}
		})
		k.Close()
		if err != nil {
			return fmt.Errorf("kafka read: %w", err)
		}
		for _, x := range []struct {
			name string
			r    result
		}{{"native", nr}, {"kafka", kr}} {
			fmt.Printf("%-7d %-8s %12.1f %14v\n", r+1, x.name, float64(x.r.records*int64(len(ev)))/(1<<20)/x.r.elapsed.Seconds(), x.r.cpuPerRecord().Round(10*time.Nanosecond))
		}
		ratios = append(ratios, kr.rate()/nr.rate())
		cpus = append(cpus, float64(kr.cpuPerRecord())/float64(nr.cpuPerRecord()))
	}
	fmt.Printf("kafka ÷ native, median of rounds: bytes/s %.2f×, server CPU per record %.2f×\n", median(ratios), median(cpus))
	return nil
}

// measureRead runs read until it has yielded want events.
func measureRead(pid int, want int64, read func(yield func(int) bool) error) (result, error) {
	var res result
	cpu0 := cpuTime(pid)
	start := time.Now()
	err := read(func(n int) bool {
		res.records += int64(n)
		return res.records < want
	})
	res.elapsed = time.Since(start)
	res.cpu = cpuTime(pid) - cpu0
	if err == nil && res.records < want {
		err = fmt.Errorf("read %d of %d events", res.records, want)
	}
	return res, err
}

// measure runs n producers calling produce for dur.
func measure(pid, n int, dur time.Duration, produce func(i int) error) (result, error) {
	var (
		mu   sync.Mutex
		res  result
		errs []error
		wg   sync.WaitGroup
	)
	cpu0 := cpuTime(pid)
	start := time.Now()
	deadline := start.Add(dur)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var lat []time.Duration
			for time.Now().Before(deadline) {
				t := time.Now()
				if err := produce(i); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
				lat = append(lat, time.Since(t))
			}
			mu.Lock()
			res.lat = append(res.lat, lat...)
			res.records += int64(len(lat))
			mu.Unlock()
		}()
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	res.cpu = cpuTime(pid) - cpu0
	if len(errs) > 0 {
		return res, errs[0]
	}
	return res, nil
}

// cpuTime is the process's user and system time from /proc (clock ticks
// of 10 ms, Linux's USER_HZ).
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	k, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+k) * 10 * time.Millisecond
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
