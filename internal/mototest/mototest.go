// Package mototest runs a real S3 server, moto_server (from PyPI), as its
// own process on a free loopback port, for tests and benchmarks. moto
// comes from the conformance suites' private virtualenv
// (conformance/venv.sh installs it there once, never into the user's
// Python).
package mototest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Credentials moto accepts (any are; these are the ones silt's tests use).
const (
	AccessKeyID     = "test"
	SecretAccessKey = "test"
	Region          = "us-east-1"
)

// Server is a running moto_server and an SDK client to it, independent of
// silt's own S3 code.
type Server struct {
	Endpoint string
	Client   *s3.Client
	cmd      *exec.Cmd
	logf     *os.File
}

// ErrNoMoto means moto_server is not installed and could not be.
var ErrNoMoto = errors.New("mototest: moto_server is not in the suites' virtualenv and could not be installed there")

// Start starts moto_server for t and stops it at t's cleanup. Without
// moto (and no way to install it) t is skipped, saying so.
func Start(t testing.TB) *Server {
	t.Helper()
	s, err := StartProcess(t.TempDir())
	if errors.Is(err, ErrNoMoto) {
		t.Skipf("%v; the S3 code is not tested here", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// StartProcess starts moto_server with its log in dir; Stop stops it.
func StartProcess(dir string) (*Server, error) {
	script, err := venvScript()
	if err != nil {
		return nil, err
	}
	out, err := exec.Command("bash", script, "moto_server", "moto[server]").Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		return nil, fmt.Errorf("%w (%v: %s)", ErrNoMoto, err, bytes.TrimSpace(stderr))
	}
	bin := string(bytes.TrimSpace(out))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	logf, err := os.OpenFile(filepath.Join(dir, "moto.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "-H", "127.0.0.1", "-p", port)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group, so that stopping it also stops anything a
	// wrapper (pyenv shim) started.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start moto_server: %w", err)
	}
	s := &Server{Endpoint: "http://127.0.0.1:" + port, cmd: cmd, logf: logf}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(s.Endpoint + "/")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			s.Stop()
			log, _ := os.ReadFile(logf.Name())
			return nil, fmt.Errorf("moto_server did not start on %s: %v\n%s", s.Endpoint, err, log)
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.Client = s3.New(s3.Options{
		Region: Region, BaseEndpoint: aws.String(s.Endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(AccessKeyID, SecretAccessKey, ""),
	})
	return s, nil
}

// Pause stops the server's processes with SIGSTOP, as a hung object
// store: requests are taken by the kernel and never answered. Resume
// undoes it; Stop resumes first.
func (s *Server) Pause() error {
	if s.cmd == nil {
		return errors.New("mototest: pause of a stopped server")
	}
	return syscall.Kill(-s.cmd.Process.Pid, syscall.SIGSTOP)
}

// Resume continues a paused server.
func (s *Server) Resume() error {
	if s.cmd == nil {
		return errors.New("mototest: resume of a stopped server")
	}
	return syscall.Kill(-s.cmd.Process.Pid, syscall.SIGCONT)
}

// Stop stops the server and waits for it.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	syscall.Kill(-s.cmd.Process.Pid, syscall.SIGCONT)
	syscall.Kill(-s.cmd.Process.Pid, syscall.SIGTERM)
	s.cmd.Wait()
	s.cmd = nil
	s.logf.Close()
}

// CreateBucket creates a bucket with the independent client.
func (s *Server) CreateBucket(name string) error {
	_, err := s.Client.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: &name})
	if err != nil {
		return fmt.Errorf("create bucket %s: %w", name, err)
	}
	return nil
}

// venvScript finds conformance/venv.sh above the working directory (a
// test runs in its package's directory, a benchmark from the module's).
func venvScript() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, "conformance", "venv.sh")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("%w: conformance/venv.sh not found above the working directory", ErrNoMoto)
		}
		dir = parent
	}
}
