// Command webhdfsbench measures the WebHDFS head in one run (see
// BENCHMARKS.md):
//
//   - sequential read of one large chunk through op=OPEN, the client
//     following the 307 to the signed data URL as Hadoop does, against a
//     plain net/http http.ServeFile of the same tier-2 file, each read by
//     Go's http client and by curl. The chunk gets there the real way:
//     appended through core, sealed by the tierer into the fs backend,
//     served over the tier-2 view.
//   - LISTSTATUS_BATCH over a segment of 100,000 chunks (catalog records
//     seeded with tiering.SeedChunks): the first page against a page near
//     the end (startAfter close to the last name), which must cost the same.
//
// Requests are anonymous (the tenant is granted to anonymous), so every
// side answers the same plain HTTP GET.
//
// A real Hadoop WebHDFS (hadoop-client-minicluster, conformance/hdfs) is the
// reference to compare with; its launcher is not part of this command. Give
// its address with -ref and the paths of a file of the same size and of a
// directory of as many entries there, and the same measurements run against
// it (see the "reference" rows).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/silt-io/silt/acl"
	"github.com/silt-io/silt/bench/internal/benchdata"
	"github.com/silt-io/silt/core"
	"github.com/silt-io/silt/gateways/webhdfs"
	"github.com/silt-io/silt/tiering"
	"github.com/silt-io/silt/tiering/tierview"
)

// ref describes the reference WebHDFS, when there is one.
type ref struct{ url, file, dir, user string }

func main() {
	dir := flag.String("dir", ".bench-data-webhdfs", "directory on the disk to measure (not tmpfs)")
	sizeMiB := flag.Int("size", 256, "chunk size in MiB")
	rounds := flag.Int("rounds", 3, "whole-chunk reads per client and server")
	list := flag.Int("list", 100000, "entries in the listed segment (0 skips the listing case)")
	var r ref
	// The reference WebHDFS: a real HDFS NameNode's HTTP address, e.g. from
	// the hadoop-client-minicluster launcher in conformance/hdfs.
	flag.StringVar(&r.url, "ref", "", "reference WebHDFS base URL (http://host:port); empty skips the reference rows")
	flag.StringVar(&r.file, "ref-file", "", "path, on the reference, of a file as large as -size")
	flag.StringVar(&r.dir, "ref-dir", "", "path, on the reference, of a directory of -list entries")
	flag.StringVar(&r.user, "ref-user", "", "user.name to send to the reference")
	flag.Parse()
	if err := run(*dir, int64(*sizeMiB)<<20, *rounds, *list, r); err != nil {
		fmt.Fprintln(os.Stderr, "webhdfsbench:", err)
		os.Exit(1)
	}
}

func run(dir string, size int64, rounds, listN int, r ref) error {
	os.RemoveAll(dir)
	defer os.RemoveAll(dir)
	cfg := core.DefaultConfig()
	cfg.Dir = filepath.Join(dir, "data")
	store, err := core.Open(cfg, nil)
	if err != nil {
		return err
	}
	defer store.Close()
	ctx := context.Background()
	if _, err := store.CreateTenant(ctx, "bench", nil); err != nil {
		return err
	}
	chunk, seg, be, closeTier, err := benchdata.SealChunk(ctx, store, cfg.Dir, size)
	if err != nil {
		return err
	}
	defer closeTier()

	acls, err := acl.Open(store.Catalog())
	if err != nil {
		return err
	}
	if _, err := acls.AddGrant(acl.Anonymous.Name, acl.Read, "bench"); err != nil {
		return err
	}
	srv, err := webhdfs.New(webhdfs.DefaultConfig(), tierview.New(store, be), acls.Authenticate, nil, acls,
		[]byte("webhdfsbench-signing-key"), nil)
	if err != nil {
		return err
	}
	hdfsURL, stopHDFS, err := benchdata.Serve(srv.Handler())
	if err != nil {
		return err
	}
	defer stopHDFS()
	fileURL, stopFile, err := benchdata.Serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, chunk) }))
	if err != nil {
		return err
	}
	defer stopFile()

	if listN > 0 {
		if err := listing(ctx, store, hdfsURL, listN, r); err != nil {
			return err
		}
	}

	openURL := hdfsURL + "/webhdfs/v1/bench/big/segment=" + seg + "/" + filepath.Base(chunk) + "?op=OPEN"
	type side struct{ name, url string }
	sides := []side{{"http.ServeFile", fileURL}, {"WebHDFS OPEN (307 followed)", openURL}}
	if r.url != "" && r.file != "" {
		sides = append(sides, side{"reference WebHDFS OPEN", refURL(r, r.file, "OPEN", nil)})
	}
	_, curlErr := exec.LookPath("curl")
	// Sides are read in alternation, round by round, so that what else the
	// machine is doing weighs on each alike; round 0 warms the page cache.
	goTime := make([]time.Duration, len(sides))
	curlTime := make([]time.Duration, len(sides))
	for round := 0; round <= rounds; round++ {
		for i, s := range sides {
			d, err := readGo(s.url, size)
			if err != nil {
				return fmt.Errorf("%s: %w", s.name, err)
			}
			var c time.Duration
			if curlErr == nil {
				if c, err = readCurl(s.url, size); err != nil {
					return fmt.Errorf("%s with curl: %w", s.name, err)
				}
			}
			if round > 0 {
				goTime[i] += d
				curlTime[i] += c
			}
		}
	}
	mbps := func(d time.Duration) float64 { return float64(size) * float64(rounds) / d.Seconds() / 1e6 }
	fmt.Printf("| server | Go client MB/s | ÷ ServeFile | curl MB/s | ÷ ServeFile |\n|---|---:|---:|---:|---:|\n")
	for i, s := range sides {
		cs, cr := "–", "–"
		if curlErr == nil {
			cs, cr = fmt.Sprintf("%.0f", mbps(curlTime[i])), fmt.Sprintf("%.2f", mbps(curlTime[i])/mbps(curlTime[0]))
		}
		fmt.Printf("| %s | %.0f | %.2f | %s | %s |\n", s.name, mbps(goTime[i]), mbps(goTime[i])/mbps(goTime[0]), cs, cr)
	}
	if r.url == "" {
		fmt.Println("| reference WebHDFS OPEN | – (no -ref) | | | |")
	}
	fmt.Println()
	return nil
}

func listing(ctx context.Context, store *core.Store, hdfsURL string, n int, r ref) error {
	st, err := store.CreateStream(ctx, "bench", "many", core.StreamConfig{Segments: 1})
	if err != nil {
		return err
	}
	seg := st.Segments[0].ID
	fmt.Fprintf(os.Stderr, "recording %d chunks in the catalog…\n", n)
	const chunkEvents = 1000
	if err := tiering.SeedChunks(store.Catalog(), st, seg, n, chunkEvents, 1<<20); err != nil {
		return err
	}
	name := func(i int) string {
		first := uint64(i) * chunkEvents
		return tiering.ChunkName(st.Config.Encoding, first, first+chunkEvents-1)
	}
	dirURL := hdfsURL + "/webhdfs/v1/bench/many/segment=" + seg + "?op=LISTSTATUS_BATCH"
	// The page near the end starts 1,500 names before the last, so it is
	// a full page with more after it.
	near := n - 1500
	if near < 0 {
		near = 0
	}
	// The two pages are timed in alternation, so that background work
	// (pebble compacting what was just seeded) weighs on both alike.
	times, err := timeBatches([]batchReq{
		{dirURL, "", name(0), 1000},
		{dirURL, name(near - 1), name(near), 1000},
	})
	if err != nil {
		return err
	}
	first, late := times[0], times[1]
	fmt.Printf("| server | entries | first page | page after entry %d | late ÷ first |\n|---|---:|---:|---:|---:|\n", near)
	fmt.Printf("| silt WebHDFS head | %d | %s | %s | %.2f |\n", n, first.Round(time.Microsecond), late.Round(time.Microsecond), float64(late)/float64(first))
	if r.url != "" && r.dir != "" {
		base := refURL(r, r.dir, "LISTSTATUS_BATCH", nil)
		t, err := timeBatches([]batchReq{{base, "", "", 0}})
		if err != nil {
			return fmt.Errorf("reference: %w", err)
		}
		fmt.Printf("| reference WebHDFS | ? | %s | – | – |\n", t[0].Round(time.Microsecond))
	} else {
		fmt.Println("| reference WebHDFS | – (no -ref) | | | |")
	}
	fmt.Println()
	return nil
}

func refURL(r ref, p, op string, extra url.Values) string {
	q := url.Values{"op": {op}}
	if r.user != "" {
		q.Set("user.name", r.user)
	}
	for k, v := range extra {
		q[k] = v
	}
	return strings.TrimSuffix(r.url, "/") + "/webhdfs/v1" + p + "?" + q.Encode()
}

// batchReq is one LISTSTATUS_BATCH page to time; wantFirst and wantLen,
// when set, check the page.
type batchReq struct {
	base, startAfter, wantFirst string
	wantLen                     int
}

// timeBatches GETs each page nine times, in turn, after one untimed round,
// and returns the median of each.
func timeBatches(reqs []batchReq) ([]time.Duration, error) {
	times := make([][]time.Duration, len(reqs))
	for round := range 10 {
		for i, rq := range reqs {
			d, err := getBatch(rq)
			if err != nil {
				return nil, err
			}
			if round > 0 {
				times[i] = append(times[i], d)
			}
		}
	}
	out := make([]time.Duration, len(reqs))
	for i, t := range times {
		slices.Sort(t)
		out[i] = t[len(t)/2]
	}
	return out, nil
}

func getBatch(rq batchReq) (time.Duration, error) {
	u := rq.base
	if rq.startAfter != "" {
		u += "&startAfter=" + url.QueryEscape(rq.startAfter)
	}
	start := time.Now()
	resp, err := http.Get(u)
	if err != nil {
		return 0, err
	}
	var page struct {
		DirectoryListing struct {
			PartialListing struct {
				FileStatuses struct {
					FileStatus []struct{ PathSuffix string }
				}
			}
			RemainingEntries int
		}
	}
	err = json.NewDecoder(resp.Body).Decode(&page)
	resp.Body.Close()
	d := time.Since(start)
	if err != nil || resp.StatusCode != 200 {
		return 0, fmt.Errorf("GET %s: %d %v", u, resp.StatusCode, err)
	}
	got := page.DirectoryListing.PartialListing.FileStatuses.FileStatus
	if rq.wantLen > 0 && (len(got) != rq.wantLen || got[0].PathSuffix != rq.wantFirst || page.DirectoryListing.RemainingEntries == 0) {
		return 0, fmt.Errorf("GET %s: %d entries, remaining %d; want %d from %s and more", u, len(got), page.DirectoryListing.RemainingEntries, rq.wantLen, rq.wantFirst)
	}
	return d, nil
}

// readGo reads url whole with Go's http client, which follows the 307 as
// Hadoop's client does, and returns how long it took.
func readGo(u string, size int64) (time.Duration, error) {
	start := time.Now()
	resp, err := http.Get(u)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 || n != size {
		return 0, fmt.Errorf("GET %s: %d, %d bytes, %v", u, resp.StatusCode, n, err)
	}
	return time.Since(start), nil
}

// readCurl is readGo with curl -L, as a user would fetch the file.
func readCurl(u string, size int64) (time.Duration, error) {
	start := time.Now()
	out, err := exec.Command("curl", "-sSfL", "-o", "/dev/null", "-w", "%{size_download}", u).Output()
	if err != nil {
		return 0, fmt.Errorf("curl %s: %w", u, err)
	}
	if n, _ := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64); n != size {
		return 0, fmt.Errorf("curl %s: %s bytes, want %d", u, out, size)
	}
	return time.Since(start), nil
}
