package main

// The serve-level case: a `silt serve` child with durability cluster on
// the same moto and etcd, appending through its native HTTP API, against
// the same floor (a raw PUT plus one etcd transaction). It adds what the
// write-ahead log does not have: HTTP, authentication, the segment's
// record encoding and file write, and the tiering of what was appended.

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/silt-io/silt/internal/mototest"
)

const benchToken = "walobjbench-root-token-0123456789abcdef0123456789"

type siltProc struct {
	cmd  *exec.Cmd
	api  string
	logf *os.File
}

// startSilt builds silt and starts it with durability cluster: tier 2 in
// bucket tier2 of moto, its metadata and write-ahead fence on etcd.
func startSilt(dir, etcdEndpoint, motoEndpoint string) (*siltProc, error) {
	bin := filepath.Join(dir, "silt")
	build := exec.Command("go", "build", "-o", bin, "./cmd/silt")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build ./cmd/silt (run from the repository root): %v\n%s", err, out)
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	logf, err := os.OpenFile(filepath.Join(dir, "silt.log"), os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "serve", "--core.dir", filepath.Join(dir, "silt-data"),
		"--api.listen", addr, "--s3.listen", "127.0.0.1:0", "--nfs.listen", "127.0.0.1:0", "--webhdfs.listen", "127.0.0.1:0", "--kafka.listen", "127.0.0.1:0",
		"--cluster.etcd.endpoints", etcdEndpoint, "--cluster.etcd.prefix", "/bench-silt/",
		"--tiering.backend", "s3", "--tiering.s3.endpoint", motoEndpoint, "--tiering.s3.bucket", "tier2",
		"--tiering.s3.path_style", "--tiering.s3.region", mototest.Region,
		"--tiering.s3.access_key_id", mototest.AccessKeyID, "--tiering.s3.secret_access_key", mototest.SecretAccessKey,
		"--auth.root_token", benchToken, "--auth.secrets_key_file", filepath.Join(dir, "secrets.key"),
		"--log.level", "warn")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	p := &siltProc{cmd: cmd, api: "http://" + addr, logf: logf}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Get(p.api + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			p.stop()
			return nil, fmt.Errorf("silt serve not ready after a minute (log in %s)", logf.Name())
		}
	}
	for _, c := range []struct{ path, body string }{
		{"/v1/tenants", `{"name":"bench"}`},
		{"/v1/tenants/bench/streams", `{"name":"s","segments":1,"encoding":"framed"}`},
	} {
		if code, body, err := p.post(c.path, "application/json", []byte(c.body)); err != nil || code != http.StatusCreated {
			p.stop()
			return nil, fmt.Errorf("POST %s: %d %s %v", c.path, code, body, err)
		}
	}
	return p, nil
}

func (p *siltProc) stop() {
	p.cmd.Process.Signal(os.Interrupt)
	p.cmd.Wait()
	p.logf.Close()
}

func (p *siltProc) post(path, ctype string, body []byte) (int, string, error) {
	req, _ := http.NewRequest("POST", p.api+path, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+benchToken)
	req.Header.Set("Content-Type", ctype)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

// appends runs producers, each appending n events of body bytes (one
// event an append), and returns their latencies and the event bytes.
func (p *siltProc) appends(body, producers, n int) (result, error) {
	var r result
	var mu sync.Mutex
	var wg sync.WaitGroup
	var firstErr atomic.Value
	data := bytes.Repeat([]byte("e"), body)
	start := time.Now()
	for range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat := make([]time.Duration, 0, n)
			for range n {
				t0 := time.Now()
				code, msg, err := p.post("/v1/tenants/bench/streams/s/events", "application/octet-stream", data)
				if err != nil || code != http.StatusOK {
					firstErr.CompareAndSwap(nil, fmt.Errorf("append: %d %s %v", code, msg, err))
					return
				}
				lat = append(lat, time.Since(t0))
			}
			mu.Lock()
			r.lat = append(r.lat, lat...)
			r.bytes += int64(n * body)
			mu.Unlock()
		}()
	}
	wg.Wait()
	r.elapsed = time.Since(start)
	if err, _ := firstErr.Load().(error); err != nil {
		return r, err
	}
	return r, nil
}

// flushes reads the node's write-ahead flush count and bytes from its
// /metrics (silt_wal_flush_duration_seconds_count, _bytes_total).
func (p *siltProc) flushes() (n, bytes float64, err error) {
	resp, err := http.Get(p.api + "/metrics")
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		name, v, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		switch name {
		case "silt_wal_flush_duration_seconds_count":
			n, _ = strconv.ParseFloat(v, 64)
		case "silt_wal_flush_bytes_total":
			bytes, _ = strconv.ParseFloat(v, 64)
		}
	}
	return n, bytes, sc.Err()
}
