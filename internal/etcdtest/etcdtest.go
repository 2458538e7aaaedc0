// Package etcdtest runs a real etcd server as its own process for tests:
// on 127.0.0.1, on free ports, with its data in the test's temporary
// directory, stopped at the test's cleanup.
//
// The binary is etcd's own server (go.etcd.io/etcd/server/v3, built by
// `make etcd` from ./etcdbin into the cache directory), or an etcd on PATH
// (Debian's etcd-server). Without one, tests skip naming the make target;
// under CI=true they fail instead, so that CI never passes by skipping.
package etcdtest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/silt-io/silt/internal/tlsconf"
)

// Version is the etcd release `make etcd` builds (see etcdbin/go.mod).
const Version = "v3.6.16"

// Binary returns the etcd server to run: $SILT_ETCD_BIN, else the one
// `make etcd` built into $SILT_CACHE/etcd (~/.cache/silt by default), else
// etcd on PATH.
func Binary() (string, error) {
	if p := os.Getenv("SILT_ETCD_BIN"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("SILT_ETCD_BIN: %w", err)
		}
		return p, nil
	}
	cache := os.Getenv("SILT_CACHE")
	if cache == "" {
		base := os.Getenv("XDG_CACHE_HOME")
		if base == "" {
			home, _ := os.UserHomeDir()
			base = filepath.Join(home, ".cache")
		}
		cache = filepath.Join(base, "silt")
	}
	p := filepath.Join(cache, "etcd", "etcd-"+Version)
	if _, err := os.Stat(p); err == nil {
		return p, nil
	}
	if p, err := exec.LookPath("etcd"); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("no etcd server: run `make etcd` (builds %s into %s), or install Debian's etcd-server", Version, filepath.Dir(p))
}

// Options change how Start runs etcd.
type Options struct {
	// TLS serves clients over https with a certificate for 127.0.0.1
	// signed by the CA in Server.CAFile.
	TLS bool
}

// Server is a running etcd.
type Server struct {
	// Endpoint is the client URL, http(s)://127.0.0.1:<port>.
	Endpoint string
	// CAFile is the PEM CA that signs the server's certificate (TLS).
	CAFile string
	tls    *tls.Config
	bin    string
	dir    string
	args   []string
	cmd    *exec.Cmd
	exited chan struct{}
	logf   *os.File
}

// Start starts an etcd server for t and stops it at t's cleanup. It skips
// t when no etcd binary is installed (fails under CI=true).
func Start(t testing.TB) *Server {
	t.Helper()
	return StartWith(t, Options{})
}

// StartWith is Start with options.
func StartWith(t testing.TB, opts Options) *Server {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("etcdtest: %v", err)
		}
		t.Skipf("etcdtest: %v", err)
	}
	dir := t.TempDir()
	scheme, certFlags, caFile, tlsCfg := "http", []string(nil), "", (*tls.Config)(nil)
	if opts.TLS {
		dev, ca, _, err := tlsconf.GenerateDev(filepath.Join(dir, "tls"), []string{"127.0.0.1"})
		if err != nil {
			t.Fatalf("etcdtest: certificates: %v", err)
		}
		pem, err := os.ReadFile(ca)
		if err != nil {
			t.Fatalf("etcdtest: %v", err)
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(pem)
		scheme, caFile = "https", ca
		certFlags = []string{"--cert-file", dev.CertFile, "--key-file", dev.KeyFile}
		tlsCfg = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	var lastErr error
	// A free port found here can be taken by another process before etcd
	// binds it; a second try with new ports covers that.
	for range 3 {
		s := &Server{bin: bin, dir: dir, CAFile: caFile, tls: tlsCfg}
		client, peer := freePort(t), freePort(t)
		s.Endpoint = scheme + "://" + client
		s.args = []string{
			"--name", "etcdtest",
			"--data-dir", filepath.Join(dir, "data"),
			"--listen-client-urls", s.Endpoint,
			"--advertise-client-urls", s.Endpoint,
			"--listen-peer-urls", "http://" + peer,
			"--initial-advertise-peer-urls", "http://" + peer,
			"--initial-cluster", "etcdtest=http://" + peer,
			"--log-level", "warn",
		}
		s.args = append(s.args, certFlags...)
		if lastErr = s.start(); lastErr == nil {
			t.Cleanup(func() { s.Stop() })
			return s
		}
		s.Stop()
		os.RemoveAll(filepath.Join(dir, "data"))
	}
	t.Fatalf("etcdtest: start %s: %v", bin, lastErr)
	return nil
}

func freePort(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("etcdtest: %v", err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// start runs the process and waits until it answers /health.
func (s *Server) start() error {
	logf, err := os.OpenFile(filepath.Join(s.dir, "etcd.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	s.logf = logf
	s.cmd = exec.Command(s.bin, s.args...)
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	s.cmd.SysProcAttr = procAttr()
	if err := s.cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	s.exited = make(chan struct{})
	go func(cmd *exec.Cmd, exited chan struct{}) {
		_ = cmd.Wait()
		close(exited)
	}(s.cmd, s.exited)
	// A healthy etcd answers within a second or two; a minute is for a
	// loaded machine, and an exit ends the wait at once.
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			return fmt.Errorf("etcd exited at start; its log: %s", s.tail())
		default:
		}
		if s.healthy() {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("etcd not healthy after a minute; its log: %s", s.tail())
}

func (s *Server) healthy() bool {
	c := http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: s.tls, DisableKeepAlives: true}}
	resp, err := c.Get(s.Endpoint + "/health")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func (s *Server) tail() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "etcd.log"))
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return strings.TrimSpace(string(b))
}

// Stop kills the server (SIGKILL: etcd syncs what it acknowledged) and
// waits for it to exit. Its data stays, for Restart.
func (s *Server) Stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	select {
	case <-s.exited:
	default:
		_ = s.cmd.Process.Signal(syscall.SIGCONT)
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	s.cmd = nil
	if s.logf != nil {
		s.logf.Close()
		s.logf = nil
	}
}

// Pause stops the server with SIGSTOP: it holds its connections and
// answers nothing, as a hung or partitioned etcd does (a killed one
// refuses connections at once). Resume undoes it; Stop resumes first.
// It returns once the process is stopped (on Linux, where /proc says so):
// a signal is delivered asynchronously, and a request sent just after it
// could otherwise still be answered.
func (s *Server) Pause() error {
	if s.cmd == nil || s.cmd.Process == nil {
		return errors.New("etcdtest: pause of a stopped server")
	}
	if err := s.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return err
	}
	stat := fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		b, err := os.ReadFile(stat)
		if err != nil {
			return nil // no /proc: the signal is all there is
		}
		// The state follows the command name in parentheses.
		if i := strings.LastIndexByte(string(b), ')'); i >= 0 && len(b) > i+2 && (b[i+2] == 'T' || b[i+2] == 't') {
			return nil
		}
	}
	return errors.New("etcdtest: the server did not stop within 10 s of SIGSTOP")
}

// Resume continues a paused server (SIGCONT).
func (s *Server) Resume() error {
	if s.cmd == nil || s.cmd.Process == nil {
		return errors.New("etcdtest: resume of a stopped server")
	}
	return s.cmd.Process.Signal(syscall.SIGCONT)
}

// Restart starts a stopped server again on the same ports and data.
func (s *Server) Restart() error {
	if s.cmd != nil {
		return errors.New("etcdtest: restart of a running server")
	}
	return s.start()
}

// Client returns a client of s, closed at t's cleanup.
func (s *Server) Client(t testing.TB) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{s.Endpoint}, DialTimeout: 5 * time.Second, TLS: s.tls})
	if err != nil {
		t.Fatalf("etcdtest: client: %v", err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// Compact compacts etcd's history up to its current revision, as
// --auto-compaction would, ending watches that were behind.
func (s *Server) Compact(t testing.TB) {
	t.Helper()
	cli := s.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, "etcdtest-compact")
	if err != nil {
		t.Fatalf("etcdtest: compact: %v", err)
	}
	if _, err := cli.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		t.Fatalf("etcdtest: compact: %v", err)
	}
}
