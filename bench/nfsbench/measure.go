package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	nfsc "github.com/willscott/go-nfs-client/nfs"
)

type result struct {
	name          string
	seq, par, cat float64 // MB/s; cat 0 if nfs-cat did not work
	// each round's figures, in round order (cat 0 where nfs-cat failed)
	roundSeq, roundPar, roundCat []float64
	catErr                       string
	list                         time.Duration // 0 if it did not finish
	listN                        int
	listErr                      string
	rssRead, rssHW               int64         // peak RSS after the reads, and at the end
	cpuPerGiB                    time.Duration // server CPU time per GiB read (timed reads)
}

// readAll reads p to the end in 1 MiB requests and returns the byte count.
func readAll(t *nfsc.Target, p string) (int64, error) {
	f, err := t.Open(p)
	if err != nil {
		return 0, err
	}
	buf := make([]byte, 1<<20)
	var n int64
	for {
		m, err := f.Read(buf)
		n += int64(m)
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		if m == 0 {
			return n, fmt.Errorf("read returned nothing at %d", n)
		}
	}
}

func rel(p string) string { return strings.TrimPrefix(p, "/") }

// measureAll measures every server, round by round in turn, so that
// the load of a shared machine falls on all of them alike; each figure is
// the median of its rounds.
func measureAll(o options, d data, servers []server) ([]result, error) {
	rs := make([]result, len(servers))
	targets := make([]*nfsc.Target, len(servers))
	for i, s := range servers {
		rs[i].name = s.name
		t, closeFn, err := s.mount()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.name, err)
		}
		defer closeFn()
		targets[i] = t
	}
	check := func(n int64, err error) error {
		if err == nil && n != d.size {
			err = fmt.Errorf("read %d bytes of %d", n, d.size)
		}
		return err
	}
	// Warm the page cache and the servers' caches, untimed.
	for i, t := range targets {
		if err := check(readAll(t, rel(d.chunk))); err != nil {
			return nil, fmt.Errorf("%s: %w", servers[i].name, err)
		}
	}
	seq := make([][]float64, len(servers))
	par := make([][]float64, len(servers))
	cat := make([][]float64, len(servers))
	cpu := make([]time.Duration, len(servers))
	for round := range o.rounds {
		fmt.Fprintf(os.Stderr, "reads, round %d of %d…\n", round+1, o.rounds)
		// Each round starts with the next server, so that none always
		// follows the same one (whose aftermath, such as rclone's
		// background work, would fall on it alone).
		for j := range targets {
			i := (j + round) % len(targets)
			t := targets[i]
			c0 := cpuTime(servers[i].pid)
			start := time.Now()
			if err := check(readAll(t, rel(d.chunk))); err != nil {
				return nil, fmt.Errorf("%s: %w", servers[i].name, err)
			}
			seq[i] = append(seq[i], mbs(d.size, time.Since(start)))

			// Concurrent readers share the one connection, as processes
			// share a kernel client's connection to a server.
			var wg sync.WaitGroup
			errs := make(chan error, o.readers)
			start = time.Now()
			for range o.readers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := check(readAll(t, rel(d.chunk))); err != nil {
						errs <- err
					}
				}()
			}
			wg.Wait()
			par[i] = append(par[i], mbs(d.size*int64(o.readers), time.Since(start)))
			cpu[i] += cpuTime(servers[i].pid) - c0
			close(errs)
			if err := <-errs; err != nil {
				return nil, fmt.Errorf("%s: %w", servers[i].name, err)
			}
			v, msg := nfsCat(servers[i], d)
			if msg != "" {
				rs[i].catErr = msg
			} else {
				cat[i] = append(cat[i], v)
			}
			rs[i].roundCat = append(rs[i].roundCat, v)
			fmt.Fprintf(os.Stderr, "  %s: 1 reader %.0f MB/s, %d readers %.0f MB/s, nfs-cat %s\n", servers[i].name,
				seq[i][len(seq[i])-1], o.readers, par[i][len(par[i])-1], roundMBs(rs[i].roundCat[round]))
		}
	}
	for i, s := range servers {
		rs[i].seq, rs[i].par, rs[i].cat = median(seq[i]), median(par[i]), median(cat[i])
		rs[i].roundSeq, rs[i].roundPar = seq[i], par[i]
		gib := float64(d.size*int64(o.rounds*(1+o.readers))) / (1 << 30)
		rs[i].cpuPerGiB = time.Duration(float64(cpu[i]) / gib)
		_, rs[i].rssRead = rss(s.pid)
	}
	for i, s := range servers {
		fmt.Fprintf(os.Stderr, "listing through %s…\n", s.name)
		listOne(o, d, s, &rs[i])
		_, rs[i].rssHW = rss(s.pid)
	}
	return rs, nil
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// listOne lists the 100,000-entry directory with the Go client's
// ReadDirPlus over a fresh mount, so that no client cache helps.
func listOne(o options, d data, s server, r *result) {
	lt, lclose, err := s.mount()
	if err != nil {
		r.listErr = err.Error()
		return
	}
	type listed struct {
		n   int
		err error
	}
	done := make(chan listed, 1)
	start := time.Now()
	go func() {
		ents, err := lt.ReadDirPlus(rel(d.list))
		done <- listed{len(ents), err}
	}()
	select {
	case l := <-done:
		lclose()
		r.list, r.listN = time.Since(start), l.n
		if l.err != nil {
			r.list, r.listErr = 0, l.err.Error()
		} else if l.n != o.files {
			r.listErr = fmt.Sprintf("listed %d entries, want %d", l.n, o.files)
		}
	case <-time.After(o.listCap):
		// Stopping the server ends the client's calls; the connection
		// is closed then.
		r.listErr = fmt.Sprintf("not done after %v", o.listCap)
	}
}

// nfsCat times libnfs's nfs-cat of the chunk.
func nfsCat(s server, d data) (float64, string) {
	if _, err := exec.LookPath("nfs-cat"); err != nil {
		return 0, "nfs-cat not installed"
	}
	_, np, _ := strings.Cut(s.nfsAddr, ":")
	_, mp, _ := strings.Cut(s.mountAddr, ":")
	root := strings.TrimSuffix(s.root, "/")
	url := fmt.Sprintf("nfs://127.0.0.1%s%s?version=3&nfsport=%s&mountport=%s%s", root, d.chunk, np, mp, s.catQuery)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "nfs-cat", url)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err.Error()
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, err.Error()
	}
	n, _ := io.Copy(io.Discard, out)
	err = cmd.Wait()
	took := time.Since(start)
	if err != nil || n != d.size {
		return 0, fmt.Sprintf("%d bytes, %v: %s", n, err, lastLines(stderr.String(), 2))
	}
	return mbs(n, took), ""
}

// roundMBs formats one round's figure; 0 is a failure.
func roundMBs(v float64) string {
	if v == 0 {
		return "failed"
	}
	return fmt.Sprintf("%.0f MB/s", v)
}

func mbs(n int64, d time.Duration) float64 { return float64(n) / d.Seconds() / 1e6 }

func report(o options, rs []result) {
	fmt.Printf("| server | 1 reader MB/s | %d readers, one connection, MB/s | server CPU per GiB read | nfs-cat MB/s | list %d entries | peak RSS after reads | peak RSS after listing |\n", o.readers, o.files)
	fmt.Printf("|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rs {
		cat := fmt.Sprintf("%.0f", r.cat)
		if r.cat == 0 && r.catErr != "" {
			cat = "failed: " + r.catErr
		}
		list := fmt.Sprintf("%.2f s", r.list.Seconds())
		if r.listErr != "" {
			list = r.listErr
		}
		fmt.Printf("| %s | %.0f | %.0f | %.2f s | %s | %s | %d MiB | %d MiB |\n", r.name, r.seq, r.par, r.cpuPerGiB.Seconds(), cat, list, r.rssRead>>20, r.rssHW>>20)
	}
	if len(rs) < 2 || rs[0].name != "silt" {
		return
	}
	silt := rs[0]
	fmt.Printf("\n| silt ÷ | 1 reader | %d readers | nfs-cat | listing speed |\n|---|---:|---:|---:|---:|\n", o.readers)
	for _, r := range rs[1:] {
		ratio := func(a, b float64) string {
			if a == 0 || b == 0 {
				return "–"
			}
			return fmt.Sprintf("%.2f×", a/b)
		}
		list := "–"
		if silt.list > 0 && r.listErr == "" && r.list > 0 {
			list = fmt.Sprintf("%.2f×", r.list.Seconds()/silt.list.Seconds())
		} else if silt.list > 0 && r.listErr != "" {
			list = fmt.Sprintf("> %.0f×", o.listCap.Seconds()/silt.list.Seconds())
		}
		fmt.Printf("| %s | %s | %s | %s | %s |\n", r.name, ratio(silt.seq, r.seq), ratio(silt.par, r.par), ratio(silt.cat, r.cat), list)
	}
	// The same ratios taken round by round (the servers of a round ran
	// within seconds of each other, so a drift of the machine falls on
	// both) and their median.
	fmt.Printf("\n| silt ÷, median of the rounds' ratios | 1 reader | %d readers | nfs-cat |\n|---|---:|---:|---:|\n", o.readers)
	for _, r := range rs[1:] {
		fmt.Printf("| %s | %s | %s | %s |\n", r.name, pairedRatio(silt.roundSeq, r.roundSeq),
			pairedRatio(silt.roundPar, r.roundPar), pairedRatio(silt.roundCat, r.roundCat))
	}
}

// pairedRatio is the median over rounds of a[i] ÷ b[i], skipping rounds
// where either failed.
func pairedRatio(a, b []float64) string {
	var rs []float64
	for i := range min(len(a), len(b)) {
		if a[i] > 0 && b[i] > 0 {
			rs = append(rs, a[i]/b[i])
		}
	}
	if len(rs) == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", median(rs))
}
