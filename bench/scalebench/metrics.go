package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/silt-io/silt/client"
)

// metricsPoint is what scraping /metrics costs one server.
type metricsPoint struct {
	perStream          bool
	series             int   // sample lines of one scrape
	plainBytes         int64 // body of one uncompressed scrape
	gzipBytes          int64
	plain, gzip        []time.Duration
	rssBefore, rssPost int64 // before the first scrape, after the last
	// cpu is the server's CPU time (user and system) per scrape: what a
	// scrape costs on an idle core, whatever else the machine runs.
	cpu time.Duration
}

func pct(d []time.Duration, p float64) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[int(float64(len(s)-1)*p)]
}

// scrape fetches /metrics once, compressed as Prometheus asks for it or
// not, and returns how long it took to the last byte and the body size.
func scrape(ctx context.Context, hc *http.Client, api string, gz bool) (time.Duration, int64, string, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", "http://"+api+"/metrics", nil)
	if err != nil {
		return 0, 0, "", err
	}
	// Set by hand, the transport leaves the body compressed, as a
	// Prometheus server receives it.
	if gz {
		req.Header.Set("Accept-Encoding", "gzip")
	} else {
		req.Header.Set("Accept-Encoding", "identity")
	}
	t := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		return 0, 0, "", err
	}
	defer resp.Body.Close()
	var body strings.Builder
	n, err := io.Copy(&body, resp.Body)
	took := time.Since(t)
	if err != nil {
		return 0, 0, "", err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, 0, "", fmt.Errorf("GET /metrics: %d", resp.StatusCode)
	}
	return took, n, body.String(), nil
}

// metricsRun fills a server with n streams, each appended to once (so
// each has its producer series), and scrapes it: scrapes plain and
// scrapes gzip-compressed fetches, taking turns, after one warm-up.
func metricsRun(ctx context.Context, srv *server, perStream bool, n, workers, scrapes int, settle time.Duration) (metricsPoint, error) {
	p := metricsPoint{perStream: perStream}
	for i := range idleTenants {
		if _, err := srv.CL.CreateTenant(ctx, fmt.Sprintf("idle-%02d", i), nil); err != nil {
			return p, err
		}
	}
	t := time.Now()
	if err := createRange(ctx, srv.CL, idleName, 0, n, workers, 1); err != nil {
		return p, err
	}
	fmt.Printf("per_stream=%v: created %d streams at %.0f/s\n", perStream, n, float64(n)/time.Since(t).Seconds())
	t = time.Now()
	err := forEach(ctx, 0, n, workers, func(i int) error {
		tenant, stream := idleName(i)
		_, err := srv.CL.Append(ctx, tenant, stream, [][]byte{fmt.Appendf(nil, "%s/%s", tenant, stream)},
			client.AppendOptions{Segment: "0", WriterID: "bench", Seq: 1})
		return err
	})
	if err != nil {
		return p, err
	}
	fmt.Printf("per_stream=%v: appended to each at %.0f streams/s\n", perStream, float64(n)/time.Since(t).Seconds())
	// Scrapes alone from here: tiering done, and the storage series
	// there (metrics.storage_refresh, 30 s by default, adds them up in
	// the background).
	if err := waitTiered(ctx, srv, nil); err != nil {
		return p, err
	}
	hc := &http.Client{Timeout: time.Minute}
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(time.Second) {
		_, _, text, err := scrape(ctx, hc, srv.API, false)
		if err != nil {
			return p, err
		}
		if strings.Contains(text, "\nsilt_storage_bytes{") {
			break
		}
		if time.Now().After(deadline) {
			return p, fmt.Errorf("no silt_storage_bytes after 2 minutes")
		}
	}
	time.Sleep(settle) // past the appends' garbage
	if p.rssBefore, err = srv.RSS(); err != nil {
		return p, err
	}
	_, n0, text, err := scrape(ctx, hc, srv.API, false)
	if err != nil {
		return p, err
	}
	p.plainBytes = n0
	for _, line := range strings.Split(text, "\n") {
		if line != "" && line[0] != '#' {
			p.series++
		}
	}
	cpu0, err := srv.CPUTime()
	if err != nil {
		return p, err
	}
	for i := 0; i < scrapes; i++ {
		for _, gz := range []bool{false, true} {
			d, size, _, err := scrape(ctx, hc, srv.API, gz)
			if err != nil {
				return p, err
			}
			if gz {
				p.gzip, p.gzipBytes = append(p.gzip, d), size
			} else {
				p.plain = append(p.plain, d)
			}
		}
	}
	cpu1, err := srv.CPUTime()
	if err != nil {
		return p, err
	}
	p.cpu = (cpu1 - cpu0) / time.Duration(2*scrapes)
	if p.rssPost, err = srv.RSS(); err != nil {
		return p, err
	}
	fmt.Printf("per_stream=%v: %d series, %d KiB (%d KiB gzip); CPU %s per scrape; scrape p50 %s, max %s (gzip p50 %s, max %s); RSS %d → %d MiB\n",
		perStream, p.series, p.plainBytes>>10, p.gzipBytes>>10, p.cpu.Round(time.Microsecond),
		pct(p.plain, 0.5).Round(time.Microsecond), pct(p.plain, 1).Round(time.Microsecond),
		pct(p.gzip, 0.5).Round(time.Microsecond), pct(p.gzip, 1).Round(time.Microsecond), p.rssBefore>>20, p.rssPost>>20)
	return p, nil
}

func reportMetrics(on, off metricsPoint, n, scrapes int) {
	mib := func(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/1e6) }
	fmt.Printf("\nScraping /metrics with %d streams (each appended to once), %d scrapes of each kind:\n\n", n, scrapes)
	fmt.Println("| measure | metrics.per_stream on (default) | off | target |")
	fmt.Println("|---|---:|---:|---|")
	fmt.Printf("| series | %d | %d | |\n", on.series, off.series)
	fmt.Printf("| body, plain (gzip) | %d KiB (%d KiB) | %d KiB (%d KiB) | |\n", on.plainBytes>>10, on.gzipBytes>>10, off.plainBytes>>10, off.gzipBytes>>10)
	fmt.Printf("| server CPU per scrape (plain and gzip alike) | %s | %s | < 100 ms |\n", ms(on.cpu), ms(off.cpu))
	fmt.Printf("| scrape, plain: p50 / max | %s / %s | %s / %s | < 100 ms |\n", ms(pct(on.plain, 0.5)), ms(pct(on.plain, 1)), ms(pct(off.plain, 0.5)), ms(pct(off.plain, 1)))
	fmt.Printf("| scrape, gzip (as Prometheus asks): p50 / max | %s / %s | %s / %s | < 100 ms |\n", ms(pct(on.gzip, 0.5)), ms(pct(on.gzip, 1)), ms(pct(off.gzip, 0.5)), ms(pct(off.gzip, 1)))
	fmt.Printf("| RSS growth over the scrapes | %s (%s → %s) | %s | < 50 MiB |\n", mib(on.rssPost-on.rssBefore), mib(on.rssBefore), mib(on.rssPost), mib(off.rssPost-off.rssBefore))
	fmt.Printf("| RSS after the scrapes, on − off (the per-stream series) | %s | | < 50 MiB |\n", mib(on.rssPost-off.rssPost))
	fmt.Printf("| scrape max, on ÷ off | %.2f× | | |\n", pct(on.gzip, 1).Seconds()/pct(off.gzip, 1).Seconds())
}
