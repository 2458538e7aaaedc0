package main

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/silt-io/silt/bench/internal/benchdata"
	"github.com/silt-io/silt/client"
)

// server is a `silt serve` child on a fresh data directory and free
// loopback ports (as in bench/scalebench), with a client holding the
// root token.
type server struct {
	api, dir string
	cl       *client.Client
	cmd      *exec.Cmd
	exited   chan struct{}
	log      *tailBuffer
	stopOnce sync.Once
}

func startServer(bin, dir string, extra ...string) (*server, error) {
	api, err := benchdata.FreeAddr()
	if err != nil {
		return nil, err
	}
	args := append([]string{"serve", "--core.dir", dir, "--api.listen", api, "--s3.listen", "127.0.0.1:0",
		"--nfs.listen", "127.0.0.1:0", "--webhdfs.listen", "127.0.0.1:0", "--kafka.listen", "127.0.0.1:0", "--log.level", "warn"}, extra...)
	s := &server{api: api, dir: dir, cmd: exec.Command(bin, args...), exited: make(chan struct{}), log: &tailBuffer{max: 4 << 10}}
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s (run make build first): %w", bin, err)
	}
	go func() { s.cmd.Wait(); close(s.exited) }()
	hc := &http.Client{Timeout: 5 * time.Second}
	for ready := false; !ready; {
		select {
		case <-s.exited:
			return nil, fmt.Errorf("silt serve exited before it was ready; the end of its log:\n%s", s.log)
		case <-time.After(10 * time.Millisecond):
		}
		if resp, err := hc.Get("http://" + api + "/readyz"); err == nil {
			resp.Body.Close()
			ready = resp.StatusCode == http.StatusOK
		}
	}
	tok, err := os.ReadFile(filepath.Join(dir, "root.token"))
	if err == nil {
		s.cl, err = client.New("http://"+api, client.WithToken(strings.TrimSpace(string(tok))))
	}
	if err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

// stop stops the child with SIGTERM (SIGKILL after a minute).
func (s *server) stop() {
	s.stopOnce.Do(func() {
		s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(time.Minute):
			s.cmd.Process.Signal(syscall.SIGKILL)
			<-s.exited
		}
	})
}

// fds counts the child's open descriptors.
func (s *server) fds() (int, error) {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", s.cmd.Process.Pid))
	return len(ents), err
}

// tailBuffer keeps the last max bytes of the child's output.
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
