package main

import (
	"fmt"
	"io"
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

// scaleServer is a `silt serve` child (this test binary, as in the crash
// tests) run under `ulimit -n nofile`, soft and hard, so that it cannot
// raise the limit. It keeps its data directory and ports across restarts.
type scaleServer struct {
	t                  *testing.T
	dir                string
	nofile             int
	api, s3, nfs, hdfs string
	token              string
	extra              []string // more serve flags

	cmd    *exec.Cmd
	exited chan struct{}
	log    *boundedLog
	fds    *fdSampler
}

func newScaleServer(t *testing.T, nofile int) *scaleServer {
	s := &scaleServer{t: t, dir: t.TempDir(), nofile: nofile, log: &boundedLog{max: 64 << 10}}
	s.api, s.s3, s.nfs, s.hdfs = freeAddr(t), freeAddr(t), freeAddr(t), freeAddr(t)
	t.Cleanup(func() {
		if s.cmd != nil {
			s.stop()
		}
	})
	return s
}

// start starts the child and waits until /readyz answers 200; it returns
// how long that took.
func (s *scaleServer) start() time.Duration {
	s.t.Helper()
	args := []string{"-c", `ulimit -n "$0" && exec "$@"`, strconv.Itoa(s.nofile), os.Args[0], "-test.run=^$", "--",
		"serve", "--core.dir", s.dir, "--api.listen", s.api, "--s3.listen", s.s3, "--nfs.listen", s.nfs,
		"--webhdfs.listen", s.hdfs, "--kafka.listen", "127.0.0.1:0", "--log.level", "warn",
		// The default export acts as anonymous, which may read nothing.
		"--nfs.exports", "path=/;principal=root;allow=127.0.0.1/32"}
	args = append(args, s.extra...)
	began := time.Now()
	cmd := exec.Command("sh", args...)
	cmd.Env = append(os.Environ(), "SILT_TEST_CHILD=1")
	cmd.Stdout, cmd.Stderr = s.log, s.log
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	s.cmd, s.exited = cmd, make(chan struct{})
	exited := s.exited
	go func() { cmd.Wait(); close(exited) }()
	// The shell execs the server, so the child's pid is the server's.
	s.fds = startFDSampler(cmd.Process.Pid, s.nofile)
	for {
		select {
		case <-exited:
			s.t.Fatalf("server exited before serving; its log:\n%s", s.log)
		default:
		}
		if resp, err := http.Get("http://" + s.api + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	took := time.Since(began)
	if s.token == "" {
		tok, err := os.ReadFile(filepath.Join(s.dir, "root.token"))
		if err != nil {
			s.t.Fatal(err)
		}
		s.token = strings.TrimSpace(string(tok))
	}
	return took
}

// kill ends the child with SIGKILL and returns its descriptor samples.
func (s *scaleServer) kill() fdPeak {
	s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.exited
	return s.fds.stop()
}

func (s *scaleServer) stop() fdPeak {
	select {
	case <-s.exited:
	default:
		s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(time.Minute):
			s.cmd.Process.Signal(syscall.SIGKILL)
			<-s.exited
		}
	}
	return s.fds.stop()
}

// alive fails the test if the server has exited.
func (s *scaleServer) alive() {
	s.t.Helper()
	select {
	case <-s.exited:
		s.t.Fatalf("the server exited; its log:\n%s", s.log)
	default:
	}
}

// boundedLog keeps the first max bytes of the server's output (a server
// out of descriptors may log a warning per retry, tens of thousands of
// them) and counts lines that say descriptors ran out.
type boundedLog struct {
	mu     sync.Mutex
	max    int
	buf    strings.Builder
	emfile int
	rest   string // a line cut between two writes
}

func (b *boundedLog) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	text := b.rest + string(p)
	lines := strings.Split(text, "\n")
	b.rest = lines[len(lines)-1]
	for _, l := range lines[:len(lines)-1] {
		if strings.Contains(l, "too many open files") {
			b.emfile++
		}
	}
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (b *boundedLog) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *boundedLog) emfileLines() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.emfile
}

// fdPeak is the most descriptors the server held at any sample: all of
// them, and those that are not sockets (segment files, the catalog,
// tier-2 files, pipes, epoll).
type fdPeak struct {
	samples  int
	total    int
	nonSock  int
	atSample string // what the non-socket peak was made of, by kind
}

func (p fdPeak) merge(q fdPeak) fdPeak {
	out := fdPeak{samples: p.samples + q.samples, total: max(p.total, q.total), nonSock: p.nonSock, atSample: p.atSample}
	if q.nonSock > p.nonSock {
		out.nonSock, out.atSample = q.nonSock, q.atSample
	}
	return out
}

func (p fdPeak) String() string {
	return fmt.Sprintf("%d descriptors at most (%d not sockets: %s) over %d samples", p.total, p.nonSock, p.atSample, p.samples)
}

// fdSampler reads /proc/<pid>/fd every 100 ms until stopped.
type fdSampler struct {
	done chan struct{}
	out  chan fdPeak
	mu   sync.Mutex
	peak fdPeak
	last int
}

func startFDSampler(pid, nofile int) *fdSampler {
	f := &fdSampler{done: make(chan struct{}), out: make(chan fdPeak, 1)}
	go func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			f.sample(pid)
			select {
			case <-f.done:
				f.mu.Lock()
				f.out <- f.peak
				f.mu.Unlock()
				return
			case <-t.C:
			}
		}
	}()
	return f
}

func (f *fdSampler) sample(pid int) {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return // exited
	}
	kinds := map[string]int{}
	nonSock := 0
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err != nil {
			continue // closed since the listing
		}
		k := fdKind(target)
		kinds[k]++
		if k != "socket" {
			nonSock++
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.peak.samples++
	f.last = len(ents)
	f.peak.total = max(f.peak.total, len(ents))
	if nonSock > f.peak.nonSock || f.peak.atSample == "" {
		f.peak.nonSock = nonSock
		f.peak.atSample = fmt.Sprint(kinds)
	}
}

// fdKind names what a /proc/<pid>/fd link points at.
func fdKind(target string) string {
	switch {
	case strings.HasPrefix(target, "socket:"):
		return "socket"
	case strings.HasPrefix(target, "pipe:"):
		return "pipe"
	case strings.HasPrefix(target, "anon_inode:"):
		return "anon"
	case strings.Contains(target, "/tier2/"):
		return "tier2"
	case strings.Contains(target, "/logs/"):
		return "segment"
	case strings.Contains(target, "/catalog/"):
		return "catalog"
	case strings.Contains(target, "/wal/"):
		return "wal"
	default:
		return "other"
	}
}

// current is the count at the latest sample.
func (f *fdSampler) current() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last
}

func (f *fdSampler) stop() fdPeak {
	select {
	case <-f.done:
	default:
		close(f.done)
	}
	p, ok := <-f.out
	if ok {
		close(f.out)
	}
	return p
}

// scaleReserve is the part of the descriptor limit that docs/connections.md
// keeps for everything that is not a client connection (segment files, the
// catalog, tier 2): a quarter of the limit or 1,024, whichever is more, but
// at most half of it. The connection caps take the rest, so this is the
// budget the server's files must stay inside.
func scaleReserve(nofile int) int {
	return min(max(nofile/4, 1024), nofile/2)
}

// discard drains and closes a response body.
func discard(resp *http.Response) {
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}
