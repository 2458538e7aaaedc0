package main

import (
	"bufio"
	"context"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/silt-io/silt/bench/internal/siltchild"
)

// server is a `silt serve` child (bench/internal/siltchild) that keeps
// its data directory and ports across restarts.
type server = siltchild.Server

// tier1Bytes is the disk the data directory takes outside tier 2 (the
// fs backend's default directory): allocated blocks, so that preallocated
// and sparse files count as what they hold on disk.
func tier1Bytes(s *siltchild.Server) (int64, error) {
	var n int64
	err := filepath.WalkDir(s.Dir(), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil // removed while walking (a tiered segment file)
			}
			return err
		}
		if d.IsDir() && p == filepath.Join(s.Dir(), "tier2") {
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
func metric(ctx context.Context, s *siltchild.Server, name string) (float64, bool, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", "http://"+s.API+"/metrics", nil)
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
