package main

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The CLI tests run the binary as a user does: built once per test run
// the way make builds it (with the version stamped in), or taken from
// SILT_TEST_BIN, so that a test can be pointed at another build.
var siltBin struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// The version the test binary is stamped with.
const (
	testVersion = "v9.8.7-test"
	testCommit  = "0123456789abcdef0123456789abcdef01234567"
	testDate    = "2026-01-02T03:04:05Z"
)

func siltBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("SILT_TEST_BIN"); p != "" {
		return p
	}
	siltBin.once.Do(func() {
		siltBin.dir, siltBin.err = os.MkdirTemp("", "silt-bin-")
		if siltBin.err != nil {
			return
		}
		siltBin.path = filepath.Join(siltBin.dir, "silt")
		ldflags := fmt.Sprintf("-X main.version=%s -X main.commit=%s -X main.date=%s", testVersion, testCommit, testDate)
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags", ldflags, "-o", siltBin.path, ".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			siltBin.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if siltBin.err != nil {
		t.Fatal(siltBin.err)
	}
	return siltBin.path
}

// cleanupBinary removes the built binary; TestMain calls it.
func cleanupBinary() {
	if siltBin.dir != "" {
		os.RemoveAll(siltBin.dir)
	}
}

type result struct {
	code           int
	stdout, stderr string
}

// invocation is one run of the binary.
type invocation struct {
	args  []string
	env   []string // added to a clean environment (no SILT_* variables)
	stdin string
	dir   string // working directory; a fresh one if empty
}

// cleanEnv is the test's environment without SILT_* variables, so that
// neither the developer's settings nor the conformance suite's leak in.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SILT_") {
			env = append(env, kv)
		}
	}
	return env
}

func runSilt(t *testing.T, inv invocation) result {
	t.Helper()
	cmd := exec.Command(siltBinary(t), inv.args...)
	cmd.Env = append(cleanEnv(), inv.env...)
	cmd.Dir = inv.dir
	if cmd.Dir == "" {
		cmd.Dir = t.TempDir()
	}
	cmd.Stdin = strings.NewReader(inv.stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	code := 0
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("run silt %q: %v", inv.args, err)
	}
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// siltServer is a `silt serve` started from the binary on loopback.
type siltServer struct {
	dir   string // its working directory, holding the data dir silt-data
	api   string // http://127.0.0.1:port
	token string // the root token, from the data dir
	// rootToken is the root token given with --auth.root_token, which
	// leaves no token file.
	rootToken string
	cmd       *exec.Cmd
	log       *bytes.Buffer
}

// serveArgs are serve's flags for a server on free loopback ports.
func serveArgs(apiAddr string, extra ...string) []string {
	return append([]string{"serve", "--api.listen", apiAddr, "--s3.listen", "127.0.0.1:0", "--nfs.listen", "127.0.0.1:0",
		"--webhdfs.listen", "127.0.0.1:0", "--kafka.listen", "127.0.0.1:0", "--log.level", "warn"}, extra...)
}

func startServer(t *testing.T, dir string, extra ...string) *siltServer {
	t.Helper()
	return startServerAt(t, dir, freeAddr(t), extra...)
}

// startServerAt starts silt serve in dir with the API on addr.
func startServerAt(t *testing.T, dir, addr string, extra ...string) *siltServer {
	t.Helper()
	s := &siltServer{dir: dir, api: "http://" + addr, log: &bytes.Buffer{}}
	s.cmd = exec.Command(siltBinary(t), serveArgs(addr, extra...)...)
	s.cmd.Env = cleanEnv()
	s.cmd.Dir = dir
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.stop)
	// A hang stop: a server that is not up within a minute is broken.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if resp, err := http.Get(s.api + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("silt serve did not become ready; its output:\n%s", s.log)
		}
	}
	// With --auth.root_token there is no token file; the caller knows
	// the token.
	if tok, err := os.ReadFile(filepath.Join(dir, "silt-data", "root.token")); err == nil {
		s.token = strings.TrimSpace(string(tok))
	}
	return s
}

func (s *siltServer) stop() {
	if s.cmd.ProcessState == nil {
		s.cmd.Process.Signal(os.Interrupt)
		s.cmd.Wait()
	}
}

// run runs a client verb against s as root, from s's directory, where
// the CLI finds the root token by itself.
func (s *siltServer) run(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	env := []string{"SILT_SERVER=" + s.api}
	if s.token == "" {
		env = append(env, "SILT_TOKEN="+s.rootToken)
	}
	return runSilt(t, invocation{args: args, stdin: stdin, dir: s.dir, env: env})
}

// must runs a client verb and fails the test unless it succeeds.
func (s *siltServer) must(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	r := s.run(t, stdin, args...)
	if r.code != 0 {
		t.Fatalf("silt %q: exit %d\nstdout: %s\nstderr: %s", args, r.code, r.stdout, r.stderr)
	}
	return r
}
