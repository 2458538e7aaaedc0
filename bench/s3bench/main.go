// Command s3bench measures the S3 head in one run (see BENCHMARKS.md):
//
//   - GET throughput of one large chunk against a plain net/http
//     http.ServeFile of the same bytes from the same disk, with 1 and 16
//     concurrent readers, and against `rclone serve s3` of a directory
//     holding the same file. The chunk gets there the real way: appended
//     through core, sealed by the tierer into the fs backend, served by the
//     S3 head over the tier-2 view.
//   - ListObjectsV2 over a segment of a million chunks (catalog records
//     seeded with tiering.SeedChunks): page 1 against page 1,000, the
//     process's RSS meanwhile, and the same against `rclone serve s3` of a
//     directory of as many (empty) files with the same names.
//
// Requests are anonymous (the tenant is granted to anonymous) so every side
// answers the same plain HTTP GET. rclone is optional: without -rclone (and
// none in the user cache dir, where the NFS benchmark's instructions put
// it) its columns are left out.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/silt-io/silt/acl"
	"github.com/silt-io/silt/bench/internal/benchdata"
	"github.com/silt-io/silt/core"
	"github.com/silt-io/silt/gateways/s3"
	"github.com/silt-io/silt/tiering"
	"github.com/silt-io/silt/tiering/tierview"
)

func main() {
	dir := flag.String("dir", ".bench-data-s3", "directory on the disk to measure (not tmpfs)")
	sizeMiB := flag.Int("size", 256, "chunk size in MiB")
	rounds := flag.Int("rounds", 3, "GETs of the whole chunk per reader")
	list := flag.Int("list", 1000000, "objects in the listed segment (0 skips the listing case)")
	flag.StringVar(&rclone, "rclone", defaultRclone(), "rclone binary (1.65 or later) to compare with `rclone serve s3`; empty skips it")
	serveData := flag.String("serve", "", "internal: serve the S3 head over this core data dir on -addr (the listing case's server child)")
	addr := flag.String("addr", "", "internal: address for -serve")
	flag.Parse()
	if *serveData != "" {
		if err := serveChild(*serveData, *addr); err != nil {
			fmt.Fprintln(os.Stderr, "s3bench server:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*dir, int64(*sizeMiB)<<20, *rounds, *list); err != nil {
		fmt.Fprintln(os.Stderr, "s3bench:", err)
		os.Exit(1)
	}
}

func run(dir string, size int64, rounds, listN int) error {
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
	chunk, _, be, closeTier, err := benchdata.SealChunk(ctx, store, cfg.Dir, size)
	if err != nil {
		return err
	}
	defer closeTier()
	rel, _ := filepath.Rel(filepath.Join(cfg.Dir, "tier2", "bench"), chunk)

	acls, err := acl.Open(store.Catalog())
	if err != nil {
		return err
	}
	if _, err := acls.AddGrant(acl.Anonymous.Name, acl.Read, "bench"); err != nil {
		return err
	}
	s3srv, err := s3.New(s3.DefaultConfig(), tierview.New(store, be), acls, acls, nil)
	if err != nil {
		return err
	}
	s3URL, stopS3, err := benchdata.Serve(s3srv.Handler())
	if err != nil {
		return err
	}
	defer stopS3()
	fileURL, stopFile, err := benchdata.Serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, chunk) }))
	if err != nil {
		return err
	}
	defer stopFile()

	// rclone serves a directory of buckets: bench/<rel> is a hard link to
	// the very tier-2 file, bench/many/... the listing's empty files.
	ref := filepath.Join(dir, "ref")
	if rclone != "" {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(ref, "bench", rel)), 0o755); err != nil {
			return err
		}
		if err := os.Link(chunk, filepath.Join(ref, "bench", rel)); err != nil {
			return err
		}
	}

	if listN > 0 {
		if err := listing(filepath.Join(dir, "list-data"), ref, listN); err != nil {
			return err
		}
	}

	var rc *rcloneServer
	if rclone != "" {
		if rc, err = startRclone(ref); err != nil {
			return err
		}
		defer rc.stop()
	}
	fmt.Printf("| readers | http.ServeFile MB/s | S3 head MB/s | S3 ÷ ServeFile | rclone serve s3 MB/s | S3 ÷ rclone |\n|---:|---:|---:|---:|---:|---:|\n")
	for _, readers := range []int{1, 16} {
		n := rounds
		if readers > 1 {
			n = 1
		}
		// Warm the page cache for both equally, then alternate.
		base, err := measure(fileURL, readers, n, size)
		if err != nil {
			return err
		}
		head, err := measure(s3URL+"/bench/"+filepath.ToSlash(rel), readers, n, size)
		if err != nil {
			return err
		}
		rcCols := "– | –"
		if rc != nil {
			r, err := measure(rc.url+"/bench/"+filepath.ToSlash(rel), readers, n, size)
			if err != nil {
				return err
			}
			rcCols = fmt.Sprintf("%.0f | %.2f", r, head/r)
		}
		fmt.Printf("| %d | %.0f | %.0f | %.2f | %s |\n", readers, base, head, head/base, rcCols)
	}
	return nil
}

// listing seeds a one-segment stream of a store of its own with n chunk
// records, serves it through the S3 head in a child process (so that the
// RSS measured is the server's alone) and compares ListObjectsV2 paging
// with rclone's over n empty files of the same names.
func listing(dataDir, ref string, n int) error {
	ctx := context.Background()
	cfg := core.DefaultConfig()
	cfg.Dir = dataDir
	store, err := core.Open(cfg, nil)
	if err != nil {
		return err
	}
	if _, err := store.CreateTenant(ctx, "bench", nil); err != nil {
		store.Close()
		return err
	}
	st, err := store.CreateStream(ctx, "bench", "many", core.StreamConfig{Segments: 1})
	if err != nil {
		store.Close()
		return err
	}
	seg := st.Segments[0].ID
	fmt.Fprintf(os.Stderr, "recording %d chunks in the catalog…\n", n)
	const chunkEvents = 1000
	err = tiering.SeedChunks(store.Catalog(), st, seg, n, chunkEvents, 1<<20)
	if err == nil {
		var acls *acl.Store
		if acls, err = acl.Open(store.Catalog()); err == nil {
			_, err = acls.AddGrant(acl.Anonymous.Name, acl.Read, "bench")
		}
	}
	if cerr := store.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	name := func(i int) string {
		first := uint64(i) * chunkEvents
		return tiering.ChunkName(st.Config.Encoding, first, first+chunkEvents-1)
	}
	srv, err := startChild(dataDir)
	if err != nil {
		return err
	}
	prefix := "many/segment=" + seg + "/"
	keyAt := func(i int) string { return prefix + name(i) }

	sampler := sampleRSS(srv.pid)
	fmt.Fprintln(os.Stderr, "listing through the S3 head…")
	res, err := measureList(srv.url, "bench", prefix, n, 5, keyAt, true)
	peak := sampler.Stop()
	srv.stop()
	if err != nil {
		return fmt.Errorf("S3 head: %w", err)
	}
	res.name, res.peakRSS, res.rssOf = "silt S3 head", peak, "server process"
	results := []listResult{res}

	if rclone != "" {
		fmt.Fprintf(os.Stderr, "creating %d empty files for rclone…\n", n)
		if err := makeEmptyFiles(filepath.Join(ref, "bench", "many", "segment="+seg), n, name); err != nil {
			return err
		}
		rc, err := startRclone(ref)
		if err != nil {
			return err
		}
		sampler := sampleRSS(rc.pid)
		// rclone reads the whole directory for every page, so one
		// request per page is all a million entries allow.
		fmt.Fprintln(os.Stderr, "listing through rclone serve s3…")
		r, err := measureList(rc.url, "bench", prefix, n, 1, keyAt, false)
		peak := sampler.Stop()
		rc.stop()
		if err != nil {
			return fmt.Errorf("rclone serve s3: %w", err)
		}
		r.name, r.peakRSS, r.rssOf = "rclone serve s3", peak, "rclone process"
		results = append(results, r)
		os.RemoveAll(filepath.Join(ref, "bench", "many"))
	}
	fmt.Printf("| server | objects | page 1 | page %d | page %d ÷ page 1 | every page in order | peak RSS (of) |\n|---|---:|---:|---:|---:|---:|---|\n", res.k, res.k)
	for _, r := range results {
		walk := "–"
		if r.verifiedWalks {
			walk = r.walk.Round(time.Millisecond).String()
		}
		fmt.Printf("| %s | %d | %s | %s | %.2f | %s | %d MiB (%s) |\n", r.name, r.objects, r.page1.Round(time.Microsecond), r.pageK.Round(time.Microsecond), float64(r.pageK)/float64(r.page1), walk, r.peakRSS>>20, r.rssOf)
	}
	if len(results) == 2 {
		fmt.Printf("\nrclone ÷ silt, page %d time: %.1f\n", res.k, float64(results[1].pageK)/float64(res.pageK))
	}
	fmt.Println()
	return nil
}

// measure GETs url rounds times from each of readers goroutines and returns
// the aggregate MB/s.
func measure(url string, readers, rounds int, size int64) (float64, error) {
	var wg sync.WaitGroup
	errs := make(chan error, readers)
	start := time.Now()
	for r := 0; r < readers; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < rounds; i++ {
				resp, err := http.Get(url)
				if err != nil {
					errs <- err
					return
				}
				n, err := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != 200 || n < size {
					errs <- fmt.Errorf("GET %s: %d, %d bytes, %v", url, resp.StatusCode, n, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return 0, err
	}
	return float64(size) * float64(readers*rounds) / time.Since(start).Seconds() / 1e6, nil
}
