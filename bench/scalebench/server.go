package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io/fs"
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

// server is a `silt serve` child that keeps its data directory and ports
// across restarts, optionally under `ulimit -n` (soft and hard).
type server struct {
	ctx      context.Context // once done, no child is started again
	bin, dir string
	nofile   int
	extra    []string
	api      string
	token    string
	cl       *client.Client

	// mu guards the current child, which an interrupt stops from
	// another goroutine.
	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	log    *tailBuffer
}

func (s *server) current() (*exec.Cmd, chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd, s.exited
}

func newServer(ctx context.Context, bin, dir string, nofile int, extra []string) (*server, error) {
	api, err := benchdata.FreeAddr()
	if err != nil {
		return nil, err
	}
	return &server{ctx: ctx, bin: bin, dir: dir, nofile: nofile, extra: extra, api: api}, nil
}

// start starts the child and returns how long it took until /readyz
// answered 200.
func (s *server) start() (time.Duration, error) {
	if err := s.ctx.Err(); err != nil {
		return 0, fmt.Errorf("not starting silt serve: %w", err)
	}
	args := append([]string{"serve", "--core.dir", s.dir, "--api.listen", s.api, "--s3.listen", "127.0.0.1:0",
		"--nfs.listen", "127.0.0.1:0", "--webhdfs.listen", "127.0.0.1:0", "--kafka.listen", "127.0.0.1:0", "--log.level", "warn"}, s.extra...)
	var cmd *exec.Cmd
	if s.nofile > 0 {
		// The shell execs silt, so the child's pid is silt's.
		cmd = exec.Command("sh", append([]string{"-c", `ulimit -n "$0" && exec "$@"`, strconv.Itoa(s.nofile), s.bin}, args...)...)
	} else {
		cmd = exec.Command(s.bin, args...)
	}
	log := &tailBuffer{max: 4 << 10}
	cmd.Stdout, cmd.Stderr = log, log
	began := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("start %s (run make build first): %w", s.bin, err)
	}
	exited := make(chan struct{})
	s.mu.Lock()
	s.cmd, s.exited, s.log = cmd, exited, log
	s.mu.Unlock()
	go func() { cmd.Wait(); close(exited) }()
	hc := &http.Client{Timeout: 5 * time.Second}
	for {
		select {
		case <-exited:
			return 0, fmt.Errorf("silt serve exited before it was ready; the end of its log:\n%s", log)
		default:
		}
		if resp, err := hc.Get("http://" + s.api + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	took := time.Since(began)
	if s.cl != nil {
		// Pooled connections were to the process before.
		s.cl.CloseIdleConnections()
	}
	if s.token == "" {
		tok, err := os.ReadFile(filepath.Join(s.dir, "root.token"))
		if err != nil {
			return 0, err
		}
		s.token = strings.TrimSpace(string(tok))
		if s.cl, err = client.New("http://"+s.api, client.WithToken(s.token)); err != nil {
			return 0, err
		}
	}
	return took, nil
}

func (s *server) kill() {
	cmd, exited := s.current()
	cmd.Process.Signal(syscall.SIGKILL)
	<-exited
}

// stop stops the child with SIGTERM, as an operator's restart does.
func (s *server) stop() {
	cmd, exited := s.current()
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

func (s *server) pid() int {
	cmd, _ := s.current()
	return cmd.Process.Pid
}

// fds counts the child's open descriptors.
func (s *server) fds() (int, error) {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", s.pid()))
	return len(ents), err
}

// rss is the child's resident set size in bytes.
func (s *server) rss() (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.pid()))
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
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", s.pid())
}

// cpuTime is the child's CPU time so far, user and system, from
// /proc/<pid>/stat (in clock ticks of 1/100 s, the value on Linux).
func (s *server) cpuTime() (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.pid()))
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces: fields start
	// after its closing parenthesis.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", s.pid())
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("parse /proc/%d/stat: %v %v", s.pid(), err1, err2)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil
}

// tier1Bytes is the disk the data directory takes outside tier 2 (the
// fs backend's default directory): allocated blocks, so that preallocated
// and sparse files count as what they hold on disk.
func (s *server) tier1Bytes() (int64, error) {
	var n int64
	err := filepath.WalkDir(s.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil // removed while walking (a tiered segment file)
			}
			return err
		}
		if d.IsDir() && p == filepath.Join(s.dir, "tier2") {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			var st syscall.Stat_t
			if err := syscall.Stat(p, &st); err == nil {
				n += st.Blocks * 512
			}
		}
		return nil
	})
	return n, err
}

// metric returns the value of an unlabelled series from /metrics, and
// whether the server exports it.
func (s *server) metric(ctx context.Context, name string) (float64, bool, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", "http://"+s.api+"/metrics", nil)
	if err != nil {
		return 0, false, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, false, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f, err == nil, err
		}
	}
	return 0, false, sc.Err()
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
