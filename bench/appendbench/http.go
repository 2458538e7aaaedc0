package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/silt-io/silt/bench/internal/benchdata"
	"github.com/silt-io/silt/client"
)

// server is a `silt serve` child process whose RSS is sampled.
type server struct {
	cmd   *exec.Cmd
	url   string
	token string

	mu      sync.Mutex
	peakRSS int64
	stop    chan struct{}
}

func startServer(bin, dir string, extra []string) (*server, error) {
	return startServerIn(bin, filepath.Join(dir, "http-server"), extra)
}

// startServerIn starts a server child on the data directory data.
func startServerIn(bin, data string, extra []string) (*server, error) {
	addr, err := benchdata.FreeAddr()
	if err != nil {
		return nil, err
	}
	args := append([]string{"serve", "--core.dir", data, "--api.listen", addr, "--s3.listen", "127.0.0.1:0", "--nfs.listen", "127.0.0.1:0", "--webhdfs.listen", "127.0.0.1:0", "--kafka.listen", "127.0.0.1:0", "--log.level", "warn"}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s (run make build first): %w", bin, err)
	}
	s := &server{cmd: cmd, url: "http://" + addr, stop: make(chan struct{})}
	for i := 0; i < 200; i++ {
		if resp, err := http.Get(s.url + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				tok, err := os.ReadFile(filepath.Join(data, "root.token"))
				if err != nil {
					return nil, err
				}
				s.token = strings.TrimSpace(string(tok))
				go s.sample()
				return s, nil
			}
		}
		time.Sleep(25 * time.Millisecond)
	}
	cmd.Process.Kill()
	return nil, fmt.Errorf("silt serve did not become ready")
}

// sample records the child's peak resident set size from /proc.
func (s *server) sample() {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
				kb, _ := strconv.ParseInt(f[1], 10, 64)
				s.mu.Lock()
				s.peakRSS = max(s.peakRSS, kb<<10)
				s.mu.Unlock()
			}
		}
	}
}

func (s *server) resetPeak() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.peakRSS
	s.peakRSS = 0
	return p
}

func (s *server) close() {
	close(s.stop)
	s.cmd.Process.Signal(os.Interrupt)
	s.cmd.Wait()
}

// httpRuns measures appends over HTTP: synchronous single-event appends
// with 1, 16 and 256 producers, then 256 batching SDK producers.
func httpRuns(bin, dir string, dur time.Duration, extra []string, syncCases, batchCase bool) ([]result, error) {
	srv, err := startServer(bin, dir, extra)
	if err != nil {
		return nil, err
	}
	defer srv.close()
	// The SDK as shipped, with its own transport.
	cl, err := client.New(srv.url, client.WithToken(srv.token))
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	if _, err := cl.CreateTenant(ctx, "bench", nil); err != nil {
		return nil, err
	}
	ev := make([]byte, 1<<10)
	for i := range ev {
		ev[i] = 'a'
	}
	var rs []result
	for _, n := range []int{1, 16, 256} {
		if !syncCases {
			break
		}
		name := fmt.Sprintf("sync%d", n)
		if _, err := cl.CreateStream(ctx, "bench", client.StreamSpec{Name: name}); err != nil {
			return nil, err
		}
		srv.resetPeak()
		r := runProducers(fmt.Sprintf("silt HTTP, %d synchronous producers", n), n, dur, func(int) error {
			_, err := cl.Append(ctx, "bench", name, [][]byte{ev}, client.AppendOptions{})
			return err
		}, len(ev))
		r.rssBytes = srv.resetPeak()
		rs = append(rs, r)
	}

	if !batchCase {
		return rs, nil
	}
	// 256 batching producers: each Send is one event, up to 256 of them
	// unacknowledged per producer, as an application using the SDK would
	// run. A watcher per producer takes each event's acknowledgement as it
	// comes, so the latency recorded is Send to ack, linger included.
	if _, err := cl.CreateStream(ctx, "bench", client.StreamSpec{Name: "batched", Segments: 4}); err != nil {
		return nil, err
	}
	const producers, window = 256, 256
	var count atomic.Int64
	var wg sync.WaitGroup
	var firstErr atomic.Value
	var latMu sync.Mutex
	var lat []time.Duration
	srv.resetPeak()
	start := time.Now()
	deadline := start.Add(dur)
	type sent struct {
		f  *client.Future
		at time.Time
	}
	for p := 0; p < producers; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			prod, err := cl.NewProducer("bench", "batched", client.ProducerOptions{MaxInflight: window})
			if err != nil {
				firstErr.Store(err)
				return
			}
			pending := make(chan sent, window)
			watched := make(chan struct{})
			go func() {
				defer close(watched)
				var local []time.Duration
				for s := range pending {
					<-s.f.Done()
					if _, err := s.f.Wait(ctx); err != nil {
						firstErr.Store(err)
						continue
					}
					local = append(local, time.Since(s.at))
					count.Add(1)
				}
				latMu.Lock()
				lat = append(lat, local...)
				latMu.Unlock()
			}()
			key := strconv.Itoa(p)
			for time.Now().Before(deadline) {
				at := time.Now()
				f, err := prod.Send(ctx, key, ev)
				if err != nil {
					firstErr.Store(err)
					break
				}
				pending <- sent{f, at}
			}
			close(pending)
			<-watched
			prod.Close(ctx)
		}()
	}
	wg.Wait()
	if err, ok := firstErr.Load().(error); ok && err != nil {
		return nil, fmt.Errorf("batched producers: %w", err)
	}
	el := time.Since(start)
	rs = append(rs, result{name: "silt HTTP, 256 batching SDK producers", events: count.Load(), bytes: count.Load() * int64(len(ev)), elapsed: el, lat: lat, rssBytes: srv.resetPeak()})
	return rs, nil
}
