package main

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/silt-io/silt/bench/internal/benchdata"
)

// rclone is the -rclone binary; empty skips the rclone comparisons.
var rclone string

// defaultRclone is where bench/nfsbench's instructions install rclone from
// the Go module proxy (Debian's 1.60 has no `serve s3`), if it is there.
func defaultRclone() string {
	if c, err := os.UserCacheDir(); err == nil {
		p := filepath.Join(c, "silt-bench", "rclone")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

type rcloneServer struct {
	url  string
	pid  int
	cmd  *exec.Cmd
	stop func()
}

// startRclone runs `rclone serve s3` of dir on a free loopback port,
// anonymous and read-only, and waits until it answers.
func startRclone(dir string) (*rcloneServer, error) {
	addr, err := benchdata.FreeAddr()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(rclone, "serve", "s3", dir, "--addr", addr, "--read-only", "--config", "/dev/null")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", rclone, err)
	}
	s := &rcloneServer{url: "http://" + addr, pid: cmd.Process.Pid, cmd: cmd}
	s.stop = func() {
		cmd.Process.Kill()
		cmd.Wait()
	}
	for i := 0; i < 200; i++ {
		if resp, err := http.Get(s.url + "/"); err == nil {
			resp.Body.Close()
			return s, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.stop()
	return nil, fmt.Errorf("rclone serve s3 on %s did not answer", addr)
}

// startChild runs this program as the listing case's S3 server over
// dataDir and waits until it answers.
func startChild(dataDir string) (*rcloneServer, error) {
	addr, err := benchdata.FreeAddr()
	if err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "-serve", dataDir, "-addr", addr)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &rcloneServer{url: "http://" + addr, pid: cmd.Process.Pid, cmd: cmd}
	s.stop = func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	}
	for i := 0; i < 400; i++ {
		if resp, err := http.Get(s.url + "/"); err == nil {
			resp.Body.Close()
			return s, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.stop()
	return nil, fmt.Errorf("S3 server child on %s did not answer", addr)
}
