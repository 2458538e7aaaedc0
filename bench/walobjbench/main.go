// Command walobjbench measures the write-ahead log's object backend
// (core/wal/objwal: one PUT and one fenced etcd transaction per write)
// against its floor, measured in the same run on the same servers:
//
//   - floor: a raw PUT of an object of the same size to the same S3
//     endpoint, then one etcd transaction of the same shape as the
//     fence's (a Compare on a value, a Put), one after the other;
//   - the object backend through wal.Log with 1 producer (each append
//     one object) and with 64 concurrent producers (the log batches what
//     arrives during a write into the next object), latency per append.
//
// The 64-producer case is compared with the floor at that case's mean
// object size: its append bytes/s against the floor's (object bytes per
// floor write). The S3 endpoint is moto_server on loopback (from the
// suites' virtualenv) and etcd is the binary `make etcd` builds, with its
// data under -dir: absolute figures say little about AWS S3, the ratios
// say what the backend adds to the two round trips it cannot avoid.
// Results are printed as Markdown for BENCHMARKS.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/silt-io/silt/cluster"
	"github.com/silt-io/silt/core/wal"
	"github.com/silt-io/silt/core/wal/objwal"
	"github.com/silt-io/silt/internal/etcdtest"
	"github.com/silt-io/silt/internal/mototest"
	"github.com/silt-io/silt/tiering"
)

func main() {
	dir := flag.String("dir", ".bench-data-walobj", "directory for etcd's data and the servers' logs (a real disk: etcd fsyncs)")
	body := flag.Int("body", 1024, "bytes of each append (one frame body)")
	samples := flag.Int("samples", 500, "floor samples of each floor, and appends of the 1-producer case, over all rounds")
	perProducer := flag.Int("per-producer", 50, "appends of each of the 64 producers, over all rounds")
	rounds := flag.Int("rounds", 5, "rounds: the cases and their floors take turns in each")
	serve := flag.Bool("serve", true, "also measure appends through a silt serve child with durability cluster (builds ./cmd/silt: run from the repository root)")
	flag.Parse()
	os.RemoveAll(*dir)
	if err := os.MkdirAll(*dir, 0o700); err != nil {
		fatal(err)
	}
	defer os.RemoveAll(*dir)
	if err := run(*dir, *body, *samples, *perProducer, max(*rounds, 1), *serve); err != nil {
		fatal(err)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "walobjbench:", err)
	os.Exit(1)
}

type servers struct {
	store objwal.Store
	cli   *clientv3.Client
}

func run(dir string, body, samples, perProducer, rounds int, serve bool) error {
	moto, err := mototest.StartProcess(dir)
	if err != nil {
		return err
	}
	defer moto.Stop()
	for _, b := range []string{"wal", "tier2"} {
		if err := moto.CreateBucket(b); err != nil {
			return err
		}
	}
	endpoint, stopEtcd, err := startEtcd(dir)
	if err != nil {
		return err
	}
	defer stopEtcd()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 10 * time.Second})
	if err != nil {
		return err
	}
	defer cli.Close()
	c := tiering.DefaultConfig().S3
	c.Endpoint, c.Bucket, c.PathStyle = moto.Endpoint, "wal", true
	c.AccessKeyID, c.SecretAccessKey, c.Region = mototest.AccessKeyID, mototest.SecretAccessKey, mototest.Region
	s3b, err := tiering.OpenS3(c)
	if err != nil {
		return err
	}
	sv := servers{store: cluster.WALObjects{B: s3b}, cli: cli}

	objBytes := body + wal.FrameHeaderSize
	// Warm both connections and moto's first-request work.
	if _, err := floor(sv, objBytes, 20); err != nil {
		return err
	}
	one, err := openLog(sv, "one")
	if err != nil {
		return err
	}
	defer one.l.Close()
	many, err := openLog(sv, "many")
	if err != nil {
		return err
	}
	defer many.l.Close()
	// The cases take turns with their floors, round after round, so that
	// each ratio compares the two on the disk and loopback of the moment
	// (etcd's fsync on this shared virtual disk swings widely).
	var fl1, r1, fl64, r64 result
	for range rounds {
		f, err := floor(sv, objBytes, samples/rounds)
		if err != nil {
			return err
		}
		fl1.add(f)
		r, err := one.appends(body, 1, samples/rounds)
		if err != nil {
			return err
		}
		r1.add(r)
		r, err = many.appends(body, 64, perProducer/rounds)
		if err != nil {
			return err
		}
		r64.add(r)
		f, err = floor(sv, int(many.meanObject()), samples/rounds)
		if err != nil {
			return err
		}
		fl64.add(f)
	}
	meanObj := many.meanObject()

	fmt.Printf("walobjbench: %d-byte appends; S3 = moto_server on loopback, etcd %s on loopback (data on %s)\n\n", body, etcdtest.Version, dir)
	fmt.Println("| case | object bytes | p50 | p99 | bytes/s | p50 ÷ floor p50 | p99 ÷ floor p99 | bytes/s ÷ floor |")
	fmt.Println("| --- | --- | --- | --- | --- | --- | --- | --- |")
	row := func(name string, obj float64, r result, f result, vsP99 bool) {
		p50, p99 := "—", "—"
		if vsP99 {
			p50 = fmt.Sprintf("%.2f×", r.pct(0.5).Seconds()/f.pct(0.5).Seconds())
			p99 = fmt.Sprintf("%.2f×", r.pct(0.99).Seconds()/f.pct(0.99).Seconds())
		}
		bps := "—"
		if f.name != r.name {
			bps = fmt.Sprintf("%.2f×", r.bytesPerSec()/f.bytesPerSec())
		}
		fmt.Printf("| %s | %.0f | %s | %s | %.2f MB/s | %s | %s | %s |\n", name, obj, ms(r.pct(0.5)), ms(r.pct(0.99)), r.bytesPerSec()/1e6, p50, p99, bps)
	}
	fl1.name, r1.name, fl64.name, r64.name = "floor", "one", "floor", "many"
	row("floor: PUT + etcd txn", float64(objBytes), fl1, fl1, false)
	row("objects, 1 producer", float64(objBytes), r1, fl1, true)
	row("floor at the 64-producer mean object size", meanObj, fl64, fl64, false)
	row("objects, 64 producers", meanObj, r64, fl64, true)
	fmt.Printf("\n%d rounds, each: %d floor writes, %d appends of 1 producer, 64 × %d appends, %d floor writes at the mean object size so far.\n",
		rounds, samples/rounds, samples/rounds, perProducer/rounds, samples/rounds)
	if !serve {
		return nil
	}

	// silt serve with durability cluster, through its HTTP API.
	sp, err := startSilt(dir, endpoint, moto.Endpoint)
	if err != nil {
		return err
	}
	defer sp.stop()
	if _, err := sp.appends(body, 1, 20); err != nil { // warm up
		return err
	}
	var sf1, s1, sf64, s64 result
	var flushes, flushBytes float64
	for range rounds {
		f, err := floor(sv, objBytes, samples/rounds)
		if err != nil {
			return err
		}
		sf1.add(f)
		r, err := sp.appends(body, 1, samples/rounds)
		if err != nil {
			return err
		}
		s1.add(r)
		n0, b0, err := sp.flushes()
		if err != nil {
			return err
		}
		r, err = sp.appends(body, 64, perProducer/rounds)
		if err != nil {
			return err
		}
		s64.add(r)
		n1, b1, err := sp.flushes()
		if err != nil {
			return err
		}
		flushes, flushBytes = flushes+n1-n0, flushBytes+b1-b0
		f, err = floor(sv, int(flushBytes/max(flushes, 1)), samples/rounds)
		if err != nil {
			return err
		}
		sf64.add(f)
	}
	serveObj := flushBytes / max(flushes, 1)
	fmt.Printf("\nsilt serve, durability cluster (HTTP appends of one %d-byte event; tier 2 on the same moto):\n\n", body)
	fmt.Println("| case | object bytes | p50 | p99 | bytes/s | p50 ÷ floor p50 | p99 ÷ floor p99 | bytes/s ÷ floor |")
	fmt.Println("| --- | --- | --- | --- | --- | --- | --- | --- |")
	sf1.name, s1.name, sf64.name, s64.name = "floor", "serve1", "floor", "serve64"
	row("floor: PUT + etcd txn", float64(objBytes), sf1, sf1, false)
	row("silt serve, 1 producer", float64(objBytes), s1, sf1, true)
	row("floor at the 64-producer mean object size", serveObj, sf64, sf64, false)
	row("silt serve, 64 producers", serveObj, s64, sf64, true)
	fmt.Printf("\n64 producers: %.0f flushes (PUTs), %.1f appends a flush; bytes/s counts event bytes (the floor: object bytes).\n",
		flushes, float64(len(s64.lat))/max(flushes, 1))
	return nil
}

type result struct {
	name    string
	lat     []time.Duration
	bytes   int64
	elapsed time.Duration
}

func (r result) pct(p float64) time.Duration {
	s := append([]time.Duration(nil), r.lat...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[int(float64(len(s)-1)*p)]
}

func (r *result) add(o result) {
	r.lat = append(r.lat, o.lat...)
	r.bytes += o.bytes
	r.elapsed += o.elapsed
}

func (r result) bytesPerSec() float64 { return float64(r.bytes) / r.elapsed.Seconds() }

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }

// floor PUTs n objects of size bytes and runs a fenced-shape transaction
// after each, sequentially.
func floor(sv servers, size, n int) (result, error) {
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i)
	}
	ctx := context.Background()
	ek, endKey := "/bench/floor/epoch", "/bench/floor/end"
	if _, err := sv.cli.Put(ctx, ek, "1"); err != nil {
		return result{}, err
	}
	r := result{name: "floor"}
	start := time.Now()
	for i := range n {
		t0 := time.Now()
		if err := sv.store.Put(ctx, fmt.Sprintf("floor/%020d", i), [][]byte{data}, int64(size)); err != nil {
			return r, err
		}
		tr, err := sv.cli.Txn(ctx).If(clientv3.Compare(clientv3.Value(ek), "=", "1")).
			Then(clientv3.OpPut(endKey, strconv.Itoa(i))).Commit()
		if err != nil || !tr.Succeeded {
			return r, fmt.Errorf("floor txn: %v", err)
		}
		r.lat = append(r.lat, time.Since(t0))
		r.bytes += int64(size)
	}
	r.elapsed = time.Since(start)
	return r, nil
}

// sizeStore records the size of every object put.
type sizeStore struct {
	objwal.Store
	puts, bytes atomic.Int64
}

func (s *sizeStore) Put(ctx context.Context, key string, bufs [][]byte, n int64) error {
	s.puts.Add(1)
	s.bytes.Add(n)
	return s.Store.Put(ctx, key, bufs, n)
}

type writer struct {
	body []byte
	err  error
	done chan struct{}
}

func (w *writer) Seal() [][]byte { return [][]byte{w.body} }
func (w *writer) Done(_ uint64, err error) {
	w.err = err
	close(w.done)
}

// logRun is a wal.Log on objects of a log of its own.
type logRun struct {
	l  *wal.Log
	st *sizeStore
}

func openLog(sv servers, node string) (*logRun, error) {
	st := &sizeStore{Store: sv.store}
	b, err := objwal.Open(objwal.Options{Store: st, Fence: cluster.NewWALFence(sv.cli, "/bench/wal/"+node+"/"), Prefix: "wal/" + node + "/"})
	if err != nil {
		return nil, err
	}
	rec, err := b.Recover(0, func(uint64, []byte) error { return nil })
	if err != nil {
		return nil, err
	}
	return &logRun{l: wal.Open(wal.Options{Backend: b}, rec.End), st: st}, nil
}

func (lr *logRun) meanObject() float64 {
	return float64(lr.st.bytes.Load()) / float64(max(lr.st.puts.Load(), 1))
}

// appends runs producers, each appending n bodies through the log, and
// returns their latencies and the object bytes put meanwhile.
func (lr *logRun) appends(body, producers, n int) (result, error) {
	var r result
	var mu sync.Mutex
	var wg sync.WaitGroup
	var firstErr atomic.Value
	data := []byte(strings.Repeat("e", body))
	before := lr.st.bytes.Load()
	start := time.Now()
	for range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat := make([]time.Duration, 0, n)
			for range n {
				w := &writer{body: data, done: make(chan struct{})}
				t0 := time.Now()
				lead, err := lr.l.Enqueue(w)
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				if lead {
					lr.l.Lead()
				}
				<-w.done
				if w.err != nil {
					firstErr.CompareAndSwap(nil, w.err)
					return
				}
				lat = append(lat, time.Since(t0))
			}
			mu.Lock()
			r.lat = append(r.lat, lat...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	r.elapsed = time.Since(start)
	if err, _ := firstErr.Load().(error); err != nil {
		return r, err
	}
	r.bytes = lr.st.bytes.Load() - before
	return r, nil
}

// startEtcd runs the etcd binary of internal/etcdtest on free loopback
// ports with its data in dir.
func startEtcd(dir string) (string, func(), error) {
	bin, err := etcdtest.Binary()
	if err != nil {
		return "", nil, err
	}
	client, err := freeAddr()
	if err != nil {
		return "", nil, err
	}
	peer, err := freeAddr()
	if err != nil {
		return "", nil, err
	}
	logf, err := os.OpenFile(filepath.Join(dir, "etcd.log"), os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return "", nil, err
	}
	endpoint := "http://" + client
	cmd := exec.Command(bin, "--name", "bench", "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", endpoint, "--advertise-client-urls", endpoint,
		"--listen-peer-urls", "http://"+peer, "--initial-advertise-peer-urls", "http://"+peer,
		"--initial-cluster", "bench=http://"+peer, "--log-level", "warn")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return "", nil, err
	}
	stop := func() {
		cmd.Process.Kill()
		cmd.Wait()
		logf.Close()
	}
	for deadline := time.Now().Add(time.Minute); ; {
		resp, err := http.Get(endpoint + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return endpoint, stop, nil
			}
		}
		if time.Now().After(deadline) {
			stop()
			return "", nil, fmt.Errorf("etcd not healthy after a minute (log in %s)", logf.Name())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
