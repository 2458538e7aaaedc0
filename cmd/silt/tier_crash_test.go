package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestKill9DuringUploads kills the server with SIGKILL while the tierer is
// uploading (chunks of 512 bytes sealed every few dozen events, so an upload, a
// catalog commit or a tier-1 truncation is in flight at almost every
// moment), restarts it, lets tiering catch up, and then reads tier 2
// straight from the fs backend's directory, as a tool without silt would:
// per segment the chunk files must cover offsets 0..next-1 with no gap and
// no overlap, no unfinished upload may be left, and every acknowledged
// event must be there exactly once, in order per routing key.
func TestKill9DuringUploads(t *testing.T) {
	if testing.Short() {
		t.Skip("kills real server processes for several seconds; runs in the full suite (make go-test)")
	}
	const producers = 8
	c, api, acked := killRun(t, []string{
		"--tiering.max_chunk_bytes", "512", "--tiering.max_lag", "400ms", "--tiering.interval", "100ms",
	}, producers, 5, 300*time.Millisecond, 600*time.Millisecond)

	// Wait until tier 2 holds every segment up to its next offset.
	next := waitTiered(t, api, 30*time.Second)

	root := filepath.Join(c.dir, "tier2", "crash", "s")
	got := map[string][]int{}
	chunks := 0
	for seg, n := range next {
		segDir := filepath.Join(root, "segment="+seg)
		ents, err := os.ReadDir(segDir)
		if os.IsNotExist(err) && n == 0 {
			continue // no key routed here: nothing to tier
		}
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), ".") || strings.HasPrefix(e.Name(), "_") {
				t.Errorf("segment %s: %s left in tier 2 (an unfinished upload or stray file)", seg, e.Name())
				continue
			}
			names = append(names, e.Name())
		}
		sort.Strings(names)
		want := uint64(0)
		for _, name := range names {
			first, last, ok := chunkRange(name)
			if !ok {
				t.Fatalf("segment %s: unexpected file %s", seg, name)
			}
			if first != want {
				t.Fatalf("segment %s: chunk %s starts at %d, previous chunk ended at %d (gap or overlap): %v", seg, name, first, want, names)
			}
			want = last + 1
			lines := readLines(t, filepath.Join(segDir, name))
			if uint64(len(lines)) != last-first+1 {
				t.Fatalf("segment %s: chunk %s holds %d events, its name says %d", seg, name, len(lines), last-first+1)
			}
			for _, l := range lines {
				key, seq, _ := strings.Cut(l, ":")
				v, err := strconv.Atoi(seq)
				if err != nil {
					t.Fatalf("segment %s: chunk %s holds %q", seg, name, l)
				}
				got[key] = append(got[key], v)
			}
			chunks++
		}
		if want != n {
			t.Fatalf("segment %s: tier 2 ends at offset %d, the segment at %d", seg, want, n)
		}
	}
	total := 0
	for p := 0; p < producers; p++ {
		key := fmt.Sprintf("k%d", p)
		seqs := got[key]
		if len(seqs) != acked[p] {
			t.Errorf("%s: %d events in tier 2, %d acknowledged", key, len(seqs), acked[p])
		}
		for i, s := range seqs {
			if s != i+1 {
				t.Fatalf("%s: tier-2 position %d holds sequence %d (lost, doubled or reordered): %v", key, i, s, seqs)
			}
		}
		total += acked[p]
	}
	if total < producers*10 || chunks < 20 {
		t.Fatalf("only %d events and %d chunks in the whole run; the test proved little", total, chunks)
	}
	t.Logf("%d acknowledged events in %d tier-2 chunks across 5 kill -9 restarts, all present once and in order", total, chunks)
}

// waitTiered polls the stream's description until every segment's tiered
// offset has reached its next offset, and returns the next offsets.
func waitTiered(t *testing.T, api apiClient, limit time.Duration) map[string]uint64 {
	t.Helper()
	var last string
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		resp, err := api.do("GET", "/v1/tenants/crash/streams/s", "", nil, nil)
		if err != nil {
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		last = string(b)
		var d struct {
			Segments []struct {
				ID         string `json:"id"`
				NextOffset uint64 `json:"next_offset"`
			} `json:"segments"`
			Tiering struct {
				Segments []struct {
					Segment      string `json:"segment"`
					TieredOffset uint64 `json:"tiered_offset"`
				} `json:"segments"`
			} `json:"tiering"`
		}
		if resp.StatusCode != 200 || json.Unmarshal(b, &d) != nil {
			continue
		}
		tiered := map[string]uint64{}
		for _, s := range d.Tiering.Segments {
			tiered[s.Segment] = s.TieredOffset
		}
		next := map[string]uint64{}
		done := len(d.Segments) > 0
		for _, s := range d.Segments {
			next[s.ID] = s.NextOffset
			if tiered[s.ID] != s.NextOffset {
				done = false
			}
		}
		if done {
			return next
		}
	}
	t.Fatalf("tier 2 did not catch up within %s; last description: %s", limit, last)
	return nil
}

// chunkRange parses "<first>-<last>.txt".
func chunkRange(name string) (first, last uint64, ok bool) {
	base, found := strings.CutSuffix(name, ".txt")
	a, b, cut := strings.Cut(base, "-")
	if !found || !cut {
		return 0, 0, false
	}
	f, err1 := strconv.ParseUint(a, 10, 64)
	l, err2 := strconv.ParseUint(b, 10, 64)
	return f, l, err1 == nil && err2 == nil && l >= f
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
