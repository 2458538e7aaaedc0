// Command s3bench measures GET throughput of one large chunk through the S3
// head against a plain net/http http.ServeFile of the same bytes from the
// same disk, in one run, with 1 and 16 concurrent readers, and prints the
// ratios (see BENCHMARKS.md). The chunk gets there the real way: appended
// through core, sealed by the tierer into the fs backend, served by the S3
// head over the tier-2 view. Requests are anonymous (the tenant is granted
// to anonymous) so both sides are the same plain HTTP GET.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/silt-io/silt/acl"
	"github.com/silt-io/silt/core"
	"github.com/silt-io/silt/gateways/s3"
	"github.com/silt-io/silt/tiering"
	"github.com/silt-io/silt/tiering/tierview"
)

func main() {
	dir := flag.String("dir", ".bench-data-s3", "directory on the disk to measure (not tmpfs)")
	sizeMiB := flag.Int("size", 256, "chunk size in MiB")
	rounds := flag.Int("rounds", 3, "GETs of the whole chunk per reader")
	flag.Parse()
	if err := run(*dir, int64(*sizeMiB)<<20, *rounds); err != nil {
		fmt.Fprintln(os.Stderr, "s3bench:", err)
		os.Exit(1)
	}
}

func run(dir string, size int64, rounds int) error {
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
	if _, err := store.CreateStream(ctx, "bench", "big", core.StreamConfig{}); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "appending %d MiB…\n", size>>20)
	ev := make([]byte, 1023)
	for i := range ev {
		ev[i] = 'a' + byte(i%26)
	}
	batch := make([][]byte, 4096) // 4 MiB of encoded lines per append
	for i := range batch {
		batch[i] = ev
	}
	for n := int64(0); n < size; n += int64(len(batch)) * 1024 {
		if _, err := store.Append(ctx, core.AppendRequest{Tenant: "bench", Stream: "big", Events: batch}); err != nil {
			return err
		}
	}
	tcfg := tiering.DefaultConfig()
	// Seal by size only, so the whole run becomes one chunk.
	tcfg.MaxChunkBytes = size
	tcfg.MaxLag = time.Hour
	tcfg.Interval = 100 * time.Millisecond
	be, err := tiering.OpenBackend(tcfg, cfg.Dir)
	if err != nil {
		return err
	}
	tierer, err := tiering.New(tcfg, store, be, tiering.Options{})
	if err != nil {
		return err
	}
	defer tierer.Close()
	fmt.Fprintln(os.Stderr, "sealing into tier 2…")
	var chunk string
	for deadline := time.Now().Add(5 * time.Minute); chunk == ""; {
		if time.Now().After(deadline) {
			st, _ := tierer.Status("bench", "big")
			return fmt.Errorf("chunk not sealed in time; tiering state: %+v", st)
		}
		time.Sleep(200 * time.Millisecond)
		filepath.Walk(filepath.Join(cfg.Dir, "tier2"), func(p string, info os.FileInfo, err error) error {
			// Skip unfinished uploads (dot-prefixed temp files).
			if err == nil && !info.IsDir() && filepath.Ext(p) == ".txt" && !strings.HasPrefix(info.Name(), ".") && info.Size() >= size {
				chunk = p
			}
			return nil
		})
	}
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
	s3URL, stopS3, err := serve(s3srv.Handler())
	if err != nil {
		return err
	}
	defer stopS3()
	fileURL, stopFile, err := serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, chunk) }))
	if err != nil {
		return err
	}
	defer stopFile()

	fmt.Printf("| readers | http.ServeFile MB/s | S3 head MB/s | S3 ÷ ServeFile |\n|---:|---:|---:|---:|\n")
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
		fmt.Printf("| %d | %.0f | %.0f | %.2f |\n", readers, base, head, head/base)
	}
	return nil
}

func serve(h http.Handler) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	return "http://" + ln.Addr().String(), func() { srv.Close() }, nil
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
