package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The crash test re-runs this test binary as the server (the child sees
// SILT_TEST_CHILD and runs main's run with the arguments that follow "--"),
// so that kill -9 hits a real process with real files.
func TestMain(m *testing.M) {
	if os.Getenv("SILT_TEST_CHILD") == "1" {
		args := os.Args
		for i, a := range args {
			if a == "--" {
				args = args[i+1:]
				break
			}
		}
		os.Exit(run(args, os.Stdin, os.Stdout, os.Stderr))
	}
	if os.Getenv(groupReaderEnv) == "1" {
		os.Exit(groupReaderChild()) // a reader of TestGroupKillReader
	}
	code := m.Run()
	cleanupBinary()
	os.Exit(code)
}

type child struct {
	t     *testing.T
	dir   string
	addr  string
	extra []string // more serve flags
	cmd   *exec.Cmd
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func (c *child) start() {
	c.t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$", "--", "serve", "--core.dir", c.dir, "--api.listen", c.addr, "--s3.listen", "127.0.0.1:0", "--nfs.listen", "127.0.0.1:0", "--webhdfs.listen", "127.0.0.1:0", "--kafka.listen", "127.0.0.1:0", "--log.level", "warn")
	cmd.Args = append(cmd.Args, c.extra...)
	cmd.Env = append(os.Environ(), "SILT_TEST_CHILD=1")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	c.cmd = cmd
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + c.addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.t.Fatal("server child did not become ready")
}

func (c *child) kill() {
	c.cmd.Process.Signal(syscall.SIGKILL)
	c.cmd.Wait()
}

func (c *child) stop() {
	c.cmd.Process.Signal(syscall.SIGTERM)
	c.cmd.Wait()
}

type apiClient struct {
	base, token string
	http        *http.Client
}

func (a apiClient) do(method, path, ctype string, body io.Reader, hdr map[string]string) (*http.Response, error) {
	req, err := http.NewRequest(method, a.base+path, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+a.token)
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	return a.http.Do(req)
}

func (a apiClient) mustOK(t *testing.T, method, path, body string) {
	t.Helper()
	resp, err := a.do(method, path, "application/json", strings.NewReader(body), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
}

// producers append "k<p>:<seq>" events to crash/s with idempotent writer
// ids, retrying each sequence number until it is acknowledged, as the SDK
// does.
type producers struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	acked  []int
}

func startProducers(api apiClient, n int) *producers {
	ctx, cancel := context.WithCancel(context.Background())
	ps := &producers{cancel: cancel, acked: make([]int, n)}
	for p := 0; p < n; p++ {
		ps.wg.Add(1)
		go func() {
			defer ps.wg.Done()
			key := fmt.Sprintf("k%d", p)
			for seq := 1; ctx.Err() == nil; seq++ {
				// Retry this sequence number until it is acknowledged, so
				// that at the end every stored event is an acknowledged one.
				for {
					resp, err := api.do("POST", "/v1/tenants/crash/streams/s/events?key="+key, "text/plain",
						strings.NewReader(fmt.Sprintf("%s:%d", key, seq)),
						map[string]string{"Silt-Writer-Id": "writer-" + key, "Silt-Seq": strconv.Itoa(seq)})
					if err == nil {
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						if resp.StatusCode == 200 {
							ps.acked[p] = seq
							break
						}
					}
					time.Sleep(5 * time.Millisecond)
				}
			}
		}()
	}
	return ps
}

// stop ends the producers once their current event is acknowledged and
// returns each one's last acknowledged sequence number.
func (ps *producers) stop() []int {
	ps.cancel()
	ps.wg.Wait()
	return ps.acked
}

// killRun starts a server child with the extra serve flags, creates the
// stream crash/s (4 segments), runs producers against it while killing and
// restarting the server rounds times (each after pause plus up to spread),
// and returns the running child, a client and each producer's last
// acknowledged sequence number. The child is stopped when the test ends.
func killRun(t *testing.T, extra []string, producers, rounds int, pause, spread time.Duration) (*child, apiClient, []int) {
	t.Helper()
	dir := t.TempDir()
	c := &child{t: t, dir: dir, addr: freeAddr(t), extra: extra}
	c.start()
	t.Cleanup(func() { c.stop() })
	tok, err := os.ReadFile(filepath.Join(dir, "root.token"))
	if err != nil {
		t.Fatal(err)
	}
	api := apiClient{base: "http://" + c.addr, token: strings.TrimSpace(string(tok)), http: &http.Client{Timeout: 5 * time.Second}}
	api.mustOK(t, "POST", "/v1/tenants", `{"name":"crash"}`)
	api.mustOK(t, "POST", "/v1/tenants/crash/streams", `{"name":"s","segments":4}`)
	run := startProducers(api, producers)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(rounds)))
	for round := 0; round < rounds; round++ {
		time.Sleep(pause + time.Duration(rng.Int64N(int64(spread))))
		c.kill()
		c.start()
	}
	time.Sleep(300 * time.Millisecond)
	return c, api, run.stop()
}

// TestKill9 runs idempotent producers against a real server process, kills
// it with SIGKILL at random moments, restarts it, and checks that every
// acknowledged event is stored exactly once and in order per routing key.
// Producers retry an unacknowledged event with the same writer id and
// sequence number until it is acknowledged, as the SDK does.
func TestKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("kills real server processes for several seconds; runs in the full suite (make go-test)")
	}
	const producers = 8
	_, api, acked := killRun(t, nil, producers, 4, 200*time.Millisecond, 500*time.Millisecond)

	got := map[string][]int{}
	cursor := ""
	for {
		resp, err := api.do("GET", "/v1/tenants/crash/streams/s/events?format=raw&max=10000&cursor="+cursor, "", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 {
			b, _ := io.ReadAll(resp.Body)
			t.Fatalf("read: %d %s", resp.StatusCode, b)
		}
		n := 0
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			key, seq, _ := strings.Cut(sc.Text(), ":")
			v, _ := strconv.Atoi(seq)
			got[key] = append(got[key], v)
			n++
		}
		resp.Body.Close()
		cursor = resp.Header.Get("Silt-Next-Cursor")
		if n == 0 {
			break
		}
	}
	total := 0
	for p := 0; p < producers; p++ {
		key := fmt.Sprintf("k%d", p)
		seqs := got[key]
		if len(seqs) != acked[p] {
			t.Errorf("%s: %d events stored, %d acknowledged", key, len(seqs), acked[p])
		}
		for i, s := range seqs {
			if s != i+1 {
				t.Fatalf("%s: position %d holds sequence %d (lost, doubled or reordered): %v", key, i, s, seqs)
			}
		}
		total += acked[p]
	}
	if total < producers*10 {
		t.Fatalf("only %d events acknowledged in the whole run; the test proved little", total)
	}
	t.Logf("%d events acknowledged across 4 kill -9 restarts, all present once and in order", total)
}
