package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
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

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	nfsc "github.com/willscott/go-nfs-client/nfs"
	"github.com/willscott/go-nfs-client/nfs/rpc"
)

// TestOneClientCannotStopTheServer runs the real server as a child with a
// low descriptor limit, floods every head at once with idle connections
// from several loopback addresses, and checks that the server stays up,
// that a normal request on each head succeeds meanwhile (or, where the
// caps were set beyond the descriptor limit, once the flood ends), and
// that its descriptors are released when the flooding clients go.
//
// Before connection admission, running out of descriptors made the NFS
// head's accept loop fail and silt serve exit.
func TestOneClientCannotStopTheServer(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: floods a child server with thousands of connections")
	}
	for name, tc := range map[string]struct {
		nofile int
		flags  []string
		// perSource connections are opened to each head from each of
		// the flooding addresses.
		perSource int
		// overLimit: the caps allow more connections than descriptors,
		// so the server runs out and accept backs off; normal requests
		// are then checked once the flood is gone.
		overLimit bool
	}{
		"configured caps": {
			nofile:    1024,
			flags:     capFlags(40, 10),
			perSource: 15,
		},
		// 512 descriptors: a reserve of 256, 51 per head (five heads), 12 per client.
		"caps derived from the descriptor limit": {
			nofile:    512,
			perSource: 30,
		},
		"caps beyond the descriptor limit": {
			nofile:    200,
			flags:     capFlags(1000, 1000),
			perSource: 40,
			overLimit: true,
		},
	} {
		t.Run(name, func(t *testing.T) {
			srv := startLimited(t, tc.nofile, tc.flags)
			before := srv.fds(t)
			flood := floodHeads(t, srv.heads(), tc.perSource)
			t.Logf("flood: %d connections opened of %d tried; server holds %d descriptors of %d (%d before)",
				flood.opened, flood.tried, srv.fds(t), tc.nofile, before)
			srv.alive(t)
			if !tc.overLimit {
				srv.normalRequests(t, "during the flood")
			}
			flood.close()
			srv.alive(t)
			srv.normalRequests(t, "after the flood")
			// The server holds a few more descriptors than at the start
			// (the normal requests' keep-alive connections, files the
			// requests opened); the flood's are gone.
			slack := 24
			for {
				n := srv.fds(t)
				if n <= before+slack {
					t.Logf("descriptors: %d before, %d after the clients closed", before, n)
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			m := srv.metrics(t)
			switch {
			case tc.overLimit:
				if n := m.sum("silt_connections_accept_errors_total"); n == 0 {
					t.Error("the server never ran out of descriptors: the case does not test what it says")
				}
			default:
				for _, head := range []string{"api", "s3", "nfs", "webhdfs"} {
					refused := m.get(`silt_connections_refused_total{head="` + head + `",reason="per_client"}`)
					evicted := m.get(`silt_connections_evicted_total{head="` + head + `",reason="max_connections"}`)
					if refused == 0 || evicted == 0 {
						t.Errorf("%s: %v refused per client, %v evicted at the cap; want both caps to have acted", head, refused, evicted)
					}
				}
			}
		})
	}
}

func capFlags(max, perClient int) []string {
	var out []string
	for _, h := range []string{"api", "s3", "nfs", "webhdfs"} {
		out = append(out, fmt.Sprintf("--%s.max_connections=%d", h, max), fmt.Sprintf("--%s.max_connections_per_client=%d", h, perClient))
	}
	return out
}

type limitedServer struct {
	cmd                  *exec.Cmd
	exited               chan struct{} // closed when the child has exited
	exitErr              error         // its exit, once exited is closed
	dir                  string
	api, s3, nfs, hdfs   string
	token, keyID, secret string
}

// startLimited starts the server child under `ulimit -n nofile` (soft and
// hard, so that the server cannot raise it) and waits until it serves.
// The free ports it picks can be taken by another test process before the
// child binds them; the start is then tried again on other ports.
func startLimited(t *testing.T, nofile int, flags []string) *limitedServer {
	t.Helper()
	for attempt := 1; ; attempt++ {
		s, stderr, err := tryStartLimited(t, nofile, flags)
		if err == nil {
			return s
		}
		if attempt < 3 && strings.Contains(stderr, "address already in use") {
			t.Logf("start %d: %v (%s); trying other ports", attempt, err, strings.TrimSpace(stderr))
			continue
		}
		t.Fatalf("server child exited before serving: %v; stderr: %s", err, stderr)
	}
}

// tryStartLimited returns the child's stderr and its exit when it stops
// before serving.
func tryStartLimited(t *testing.T, nofile int, flags []string) (*limitedServer, string, error) {
	t.Helper()
	s := &limitedServer{dir: t.TempDir(), api: freeAddr(t), s3: freeAddr(t), nfs: freeAddr(t), hdfs: freeAddr(t)}
	args := []string{"-c", `ulimit -n "$0" && exec "$@"`, strconv.Itoa(nofile), os.Args[0], "-test.run=^$", "--",
		"serve", "--core.dir", s.dir, "--api.listen", s.api, "--s3.listen", s.s3, "--nfs.listen", s.nfs,
		"--webhdfs.listen", s.hdfs, "--kafka.listen", "127.0.0.1:0", "--log.level", "warn",
		// The flood comes from 127.0.0.2 and up, which the default
		// export's allow list would refuse before the caps count them.
		"--nfs.exports", "path=/;principal=root;allow=127.0.0.0/8"}
	s.cmd = exec.Command("sh", append(args, flags...)...)
	s.cmd.Env = append(os.Environ(), "SILT_TEST_CHILD=1")
	var stderr syncBuffer
	s.cmd.Stderr = io.MultiWriter(os.Stderr, &stderr)
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.exited = make(chan struct{})
	go func() { s.exitErr = s.cmd.Wait(); close(s.exited) }()
	t.Cleanup(func() {
		s.cmd.Process.Signal(syscall.SIGTERM)
		<-s.exited
	})
	for {
		select {
		case <-s.exited:
			return nil, stderr.String(), s.exitErr
		default:
		}
		if resp, err := http.Get("http://" + s.api + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	tok, err := os.ReadFile(filepath.Join(s.dir, "root.token"))
	if err != nil {
		t.Fatal(err)
	}
	s.token = strings.TrimSpace(string(tok))
	req, _ := http.NewRequest("POST", "http://"+s.api+"/v1/principals/root/s3-keys", nil)
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var key struct {
		ID     string `json:"access_key_id"`
		Secret string `json:"secret_access_key"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&key); err != nil || key.ID == "" {
		t.Fatalf("issue an S3 key: %d, %v", resp.StatusCode, err)
	}
	s.keyID, s.secret = key.ID, key.Secret
	return s, "", nil
}

// syncBuffer is a bytes.Buffer the child's output copier and the test can
// share.
type syncBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (s *limitedServer) heads() []string { return []string{s.api, s.s3, s.nfs, s.hdfs} }

func (s *limitedServer) fds(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", s.cmd.Process.Pid))
	if err != nil {
		t.Fatalf("the server's descriptors: %v", err)
	}
	return len(ents)
}

func (s *limitedServer) alive(t *testing.T) {
	t.Helper()
	select {
	case <-s.exited:
		t.Fatalf("the server exited: %v", s.exitErr)
	default:
	}
}

// normalRequests makes one ordinary request on each head from 127.0.0.1
// (the flood comes from other addresses), each with a generous timeout,
// and logs how long each took.
func (s *limitedServer) normalRequests(t *testing.T, when string) {
	t.Helper()
	const timeout = 30 * time.Second
	httpc := &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: true}}
	get := func(url string) error {
		req, _ := http.NewRequest("GET", url, nil)
		req.Header.Set("Authorization", "Bearer "+s.token)
		resp, err := httpc.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			return fmt.Errorf("%d %s", resp.StatusCode, b)
		}
		return nil
	}
	for _, tc := range []struct {
		head string
		do   func() error
	}{
		{"api GET /readyz", func() error { return get("http://" + s.api + "/readyz") }},
		{"api GET /v1/tenants", func() error { return get("http://" + s.api + "/v1/tenants") }},
		{"s3 ListBuckets", func() error {
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			c := awss3.New(awss3.Options{
				Region: "us-east-1", BaseEndpoint: aws.String("http://" + s.s3), UsePathStyle: true,
				Credentials:      credentials.NewStaticCredentialsProvider(s.keyID, s.secret, ""),
				RetryMaxAttempts: 1, HTTPClient: httpc,
			})
			_, err := c.ListBuckets(ctx, &awss3.ListBucketsInput{})
			return err
		}},
		{"webhdfs GETFILESTATUS /", func() error { return get("http://" + s.hdfs + "/webhdfs/v1/?op=GETFILESTATUS") }},
		{"nfs MOUNT / and GETATTR", func() error {
			// The client binds a random local port of its own choosing,
			// which now and then is in use; retry those.
			var c *rpc.Client
			var err error
			for range 10 {
				if c, err = rpc.DialTCP("tcp", s.nfs, false); err == nil || !strings.Contains(err.Error(), "address already in use") {
					break
				}
			}
			if err != nil {
				return err
			}
			defer c.Close()
			m := &nfsc.Mount{Client: c}
			v, err := m.Mount("/", rpc.NewAuthUnix("silt-test", 0, 0).Auth())
			if err != nil {
				return err
			}
			_, _, err = v.Lookup("/")
			return err
		}},
	} {
		start := time.Now()
		err := tc.do()
		took := time.Since(start)
		if err != nil {
			t.Errorf("%s %s: %v (after %v)", tc.head, when, err, took)
			continue
		}
		t.Logf("%s %s: ok in %v", tc.head, when, took.Round(time.Microsecond))
	}
}

// serverMetrics are /metrics' samples by series.
type serverMetrics map[string]float64

func (s *limitedServer) metrics(t *testing.T) serverMetrics {
	t.Helper()
	resp, err := http.Get("http://" + s.api + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	m := serverMetrics{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if v, err := strconv.ParseFloat(line[i+1:], 64); i > 0 && err == nil {
			m[line[:i]] = v
		}
	}
	return m
}

func (m serverMetrics) get(series string) float64 { return m[series] }

func (m serverMetrics) sum(name string) float64 {
	var n float64
	for k, v := range m {
		if k == name || strings.HasPrefix(k, name+"{") {
			n += v
		}
	}
	return n
}

// flood holds idle connections to the heads.
type flood struct {
	mu     sync.Mutex
	conns  []net.Conn
	opened int
	tried  int
}

// floodHeads opens perSource connections to each head from each of
// 127.0.0.2 … 127.0.0.9, all heads at once, and keeps them open. Each
// head's flood goes one address after the other, so that an address
// reaches its per-client cap before the head's cap evicts its
// connections, and both caps act.
func floodHeads(t *testing.T, heads []string, perSource int) *flood {
	t.Helper()
	f := &flood{}
	var wg sync.WaitGroup
	for _, head := range heads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for src := 2; src <= 9; src++ {
				d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(src))}, Timeout: 5 * time.Second}
				for range perSource {
					c, err := d.Dial("tcp", head)
					f.mu.Lock()
					f.tried++
					if err == nil {
						f.conns = append(f.conns, c)
						f.opened++
					}
					f.mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	t.Cleanup(f.close)
	return f
}

func (f *flood) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.conns {
		c.Close()
	}
	f.conns = nil
}

// Every head's connection keys are validated: silt serve refuses bad
// values (--print-config exits 2) with a message naming the key.
func TestConnectionKeysValidated(t *testing.T) {
	for name, tc := range map[string]struct {
		args []string
		want string // "" = accepted
	}{
		"derived":                    {nil, ""},
		"api set":                    {[]string{"--api.max_connections=100", "--api.max_connections_per_client=10"}, ""},
		"api negative":               {[]string{"--api.max_connections=-1"}, "api: max_connections -1"},
		"s3 per client over max":     {[]string{"--s3.max_connections=10", "--s3.max_connections_per_client=11"}, "s3: max_connections_per_client 11 exceeds max_connections 10"},
		"webhdfs too many":           {[]string{"--webhdfs.max_connections=2000000"}, "webhdfs: max_connections 2000000"},
		"nfs per client negative":    {[]string{"--nfs.max_connections_per_client=-3"}, "nfs: max_connections_per_client -3"},
		"nfs idle timeout too short": {[]string{"--nfs.idle_timeout=10ms"}, "nfs: idle_timeout 10ms: want at least 1s"},
		"nfs idle timeout by env":    {[]string{"env:SILT_NFS_IDLE_TIMEOUT=0s"}, "nfs: idle_timeout 0s"},
	} {
		t.Run(name, func(t *testing.T) {
			args := []string{"serve", "--print-config"}
			for _, a := range tc.args {
				if kv, ok := strings.CutPrefix(a, "env:"); ok {
					k, v, _ := strings.Cut(kv, "=")
					t.Setenv(k, v)
					continue
				}
				args = append(args, a)
			}
			var out, errb strings.Builder
			code := run(args, nil, &out, &errb)
			switch {
			case tc.want == "" && code != 0:
				t.Fatalf("exit %d: %s", code, errb.String())
			case tc.want != "" && (code != 2 || !strings.Contains(errb.String(), tc.want)):
				t.Fatalf("exit %d, stderr %q; want 2 and %q", code, errb.String(), tc.want)
			}
			if tc.want == "" && !strings.Contains(out.String(), "max_connections_per_client:") {
				t.Fatalf("--print-config does not show the connection keys:\n%s", out.String())
			}
		})
	}
}
