package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestKill9ManyStreams kills a real server child with SIGKILL 10 times
// while one idempotent producer per stream appends to 1,000 streams at
// once, all through the node's one write-ahead log. Afterwards every
// acknowledged event is stored exactly once and in order, and each
// producer's retries across the restarts were answered as duplicates
// rather than stored again.
func TestKill9ManyStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("kills real server processes for about a minute; runs in the full suite (make go-test)")
	}
	const streams, rounds = 1000, 10
	dir := t.TempDir()
	c := &child{t: t, dir: dir, addr: freeAddr(t)}
	c.start()
	t.Cleanup(func() { c.stop() })
	tok, err := os.ReadFile(filepath.Join(dir, "root.token"))
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{MaxConnsPerHost: 128, MaxIdleConnsPerHost: 128}
	defer tr.CloseIdleConnections()
	api := apiClient{base: "http://" + c.addr, token: strings.TrimSpace(string(tok)), http: &http.Client{Timeout: 10 * time.Second, Transport: tr}}
	api.mustOK(t, "POST", "/v1/tenants", `{"name":"crash"}`)
	for i := 0; i < streams; i++ {
		api.mustOK(t, "POST", "/v1/tenants/crash/streams", fmt.Sprintf(`{"name":"s%d"}`, i))
	}

	ctx, cancel := context.WithCancel(context.Background())
	acked := make([]int, streams)
	var dups, appends atomic.Int64
	var wg sync.WaitGroup
	for p := 0; p < streams; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			path := fmt.Sprintf("/v1/tenants/crash/streams/s%d/events", p)
			for seq := 1; ctx.Err() == nil; seq++ {
				// Retry this sequence number until it is acknowledged, so
				// that at the end every stored event is an acknowledged one.
				for tries := 0; ; tries++ {
					resp, err := api.do("POST", path, "text/plain", strings.NewReader(fmt.Sprintf("p%d:%d", p, seq)),
						map[string]string{"Silt-Writer-Id": fmt.Sprintf("w%d", p), "Silt-Seq": strconv.Itoa(seq)})
					if err == nil {
						body, _ := io.ReadAll(resp.Body)
						resp.Body.Close()
						if resp.StatusCode == 200 {
							if tries > 0 && strings.Contains(string(body), `"duplicate":true`) {
								dups.Add(1)
							}
							appends.Add(1)
							acked[p] = seq
							break
						}
					}
					time.Sleep(50 * time.Millisecond)
				}
			}
		}()
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 14))
	for round := 0; round < rounds; round++ {
		time.Sleep(500*time.Millisecond + time.Duration(rng.Int64N(int64(time.Second))))
		c.kill()
		c.start()
	}
	time.Sleep(500 * time.Millisecond)
	cancel()
	wg.Wait()

	total := 0
	for p := 0; p < streams; p++ {
		resp, err := api.do("GET", fmt.Sprintf("/v1/tenants/crash/streams/s%d/events?format=raw&max=10000", p), "", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 {
			b, _ := io.ReadAll(resp.Body)
			t.Fatalf("read s%d: %d %s", p, resp.StatusCode, b)
		}
		var seqs []int
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			_, seq, _ := strings.Cut(sc.Text(), ":")
			v, _ := strconv.Atoi(seq)
			seqs = append(seqs, v)
		}
		resp.Body.Close()
		if len(seqs) != acked[p] {
			t.Errorf("s%d: %d events stored, %d acknowledged", p, len(seqs), acked[p])
		}
		for i, s := range seqs {
			if s != i+1 {
				t.Fatalf("s%d: position %d holds sequence %d (lost, doubled or reordered): %v", p, i, s, seqs)
			}
		}
		total += acked[p]
	}
	if total < streams*2 {
		t.Fatalf("only %d events acknowledged across %d streams; the test proved little", total, streams)
	}
	t.Logf("%d events acknowledged on %d streams across %d kill -9 restarts, all present once and in order; %d retries answered as duplicates",
		total, streams, rounds, dups.Load())
}
