// Package siltchild runs `silt serve` as a child process for the benchmarks
// that measure a whole server (bench/scalebench, bench/groupbench): on a
// data directory and loopback ports that stay the same across restarts,
// optionally under `ulimit -n`, with a client holding the root token and
// the child's descriptors, RSS and CPU time read from /proc.
package siltchild

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/silt-io/silt/bench/internal/benchdata"
	"github.com/silt-io/silt/client"
)

// Options say how to run the child.
type Options struct {
	Bin string // the silt binary (make build writes bin/silt)
	Dir string // --core.dir
	// Nofile, if positive, runs the child under `ulimit -n` of it (soft
	// and hard).
	Nofile int
	Extra  []string // more flags for silt serve, after the defaults
}

// Server is a `silt serve` child. Start starts it; it may be stopped and
// started again on the same directory and ports.
type Server struct {
	ctx  context.Context // once done, no child is started again
	opts Options
	API  string         // host:port of the native API
	CL   *client.Client // the root token's client, set by the first Start

	// mu guards the current child, which an interrupt stops from
	// another goroutine.
	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	log    *tailBuffer
}

// New picks the API's port; it starts nothing.
func New(ctx context.Context, o Options) (*Server, error) {
	api, err := benchdata.FreeAddr()
	if err != nil {
		return nil, err
	}
	return &Server{ctx: ctx, opts: o, API: api}, nil
}

// Run starts a child, runs fn against it and stops the child afterwards,
// whatever fn did and also when ctx ends first (an interrupted run must
// not leave a server running on its data directory). fn's error carries
// the end of the child's log.
func Run(ctx context.Context, o Options, fn func(*Server) error) error {
	s, err := New(ctx, o)
	if err != nil {
		return err
	}
	if _, err := s.Start(); err != nil {
		return err
	}
	defer s.Stop()
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-ctx.Done():
			s.Stop()
		case <-done:
		}
	}()
	if err := fn(s); err != nil {
		return fmt.Errorf("%w\nthe end of the server's log:\n%s\n(%v)", err, s.Log(), err)
	}
	return nil
}

func (s *Server) current() (*exec.Cmd, chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd, s.exited
}

// Start starts the child and returns how long it took until /readyz
// answered 200.
func (s *Server) Start() (time.Duration, error) {
	if err := s.ctx.Err(); err != nil {
		return 0, fmt.Errorf("not starting silt serve: %w", err)
	}
	args := append([]string{"serve", "--core.dir", s.opts.Dir, "--api.listen", s.API, "--s3.listen", "127.0.0.1:0",
		"--nfs.listen", "127.0.0.1:0", "--webhdfs.listen", "127.0.0.1:0", "--kafka.listen", "127.0.0.1:0", "--log.level", "warn"}, s.opts.Extra...)
	var cmd *exec.Cmd
	if s.opts.Nofile > 0 {
		// The shell execs silt, so the child's pid is silt's.
		cmd = exec.Command("sh", append([]string{"-c", `ulimit -n "$0" && exec "$@"`, strconv.Itoa(s.opts.Nofile), s.opts.Bin}, args...)...)
	} else {
		cmd = exec.Command(s.opts.Bin, args...)
	}
	log := &tailBuffer{max: 4 << 10}
	cmd.Stdout, cmd.Stderr = log, log
	began := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("start %s (run make build first): %w", s.opts.Bin, err)
	}
	exited := make(chan struct{})
	s.mu.Lock()
	s.cmd, s.exited, s.log = cmd, exited, log
	s.mu.Unlock()
	go func() { cmd.Wait(); close(exited) }()
	hc := &http.Client{Timeout: 5 * time.Second}
	for ready := false; !ready; {
		select {
		case <-exited:
			return 0, fmt.Errorf("silt serve exited before it was ready; the end of its log:\n%s", log)
		default:
		}
		if resp, err := hc.Get("http://" + s.API + "/readyz"); err == nil {
			resp.Body.Close()
			ready = resp.StatusCode == http.StatusOK
		}
		if !ready {
			time.Sleep(10 * time.Millisecond)
		}
	}
	took := time.Since(began)
	if s.CL != nil {
		// Pooled connections were to the process before.
		s.CL.CloseIdleConnections()
		return took, nil
	}
	tok, err := os.ReadFile(filepath.Join(s.opts.Dir, "root.token"))
	if err == nil {
		s.CL, err = client.New("http://"+s.API, client.WithToken(strings.TrimSpace(string(tok))))
	}
	if err != nil {
		s.Stop()
		return 0, err
	}
	return took, nil
}

// Kill stops the child with SIGKILL, as a crash would.
func (s *Server) Kill() {
	cmd, exited := s.current()
	cmd.Process.Signal(syscall.SIGKILL)
	<-exited
}

// Stop stops the child with SIGTERM, as an operator's restart does
// (SIGKILL after two minutes). It does nothing if the child has exited.
func (s *Server) Stop() {
	cmd, exited := s.current()
	if cmd == nil {
		return
	}
	select {
	case <-exited:
		return
	default:
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(2 * time.Minute):
		cmd.Process.Signal(syscall.SIGKILL)
		<-exited
	}
}

// Dir is the child's data directory.
func (s *Server) Dir() string { return s.opts.Dir }

// Log is the end of the current child's output.
func (s *Server) Log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.log == nil {
		return ""
	}
	return s.log.String()
}

// Pid is the current child's process id.
func (s *Server) Pid() int {
	cmd, _ := s.current()
	return cmd.Process.Pid
}

// FDs counts the child's open descriptors.
func (s *Server) FDs() (int, error) {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", s.Pid()))
	return len(ents), err
}

// RSS is the child's resident set size in bytes.
func (s *Server) RSS() (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.Pid()))
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", s.Pid())
}

// CPUTime is the child's CPU time so far, user and system, from
// /proc/<pid>/stat (in clock ticks of 1/100 s, the value on Linux).
func (s *Server) CPUTime() (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.Pid()))
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces: fields start
	// after its closing parenthesis.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", s.Pid())
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("parse /proc/%d/stat: %v %v", s.Pid(), err1, err2)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil
}

// tailBuffer keeps the last max bytes of the child's output: a server
// short of descriptors logs a warning per retry, and only the end says
// why it stopped.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > b.max {
		b.buf = append([]byte(nil), b.buf[len(b.buf)-b.max:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
