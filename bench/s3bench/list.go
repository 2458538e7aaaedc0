package main

import (
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// listPage is the part of a ListObjectsV2 answer the benchmark checks.
type listPage struct {
	KeyCount              int    `xml:"KeyCount"`
	IsTruncated           bool   `xml:"IsTruncated"`
	NextContinuationToken string `xml:"NextContinuationToken"`
	Contents              []struct {
		Key string `xml:"Key"`
	} `xml:"Contents"`
}

// listOnce GETs one ListObjectsV2 page of bucket with the given extra
// query and returns it with the time the request took.
func listOnce(base, bucket, prefix string, extra url.Values) (listPage, time.Duration, error) {
	q := url.Values{"list-type": {"2"}, "prefix": {prefix}, "max-keys": {"1000"}}
	for k, v := range extra {
		q[k] = v
	}
	u := base + "/" + bucket + "?" + q.Encode()
	start := time.Now()
	resp, err := http.Get(u)
	if err != nil {
		return listPage{}, 0, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	took := time.Since(start)
	if err != nil {
		return listPage{}, 0, err
	}
	if resp.StatusCode != 200 {
		return listPage{}, 0, fmt.Errorf("GET %s: %s: %.200s", u, resp.Status, body)
	}
	var p listPage
	if err := xml.Unmarshal(body, &p); err != nil {
		return listPage{}, 0, fmt.Errorf("GET %s: %w", u, err)
	}
	return p, took, nil
}

// median runs f rounds times and returns the median duration.
func median(rounds int, f func() (time.Duration, error)) (time.Duration, error) {
	var ds []time.Duration
	for i := 0; i < rounds; i++ {
		d, err := f()
		if err != nil {
			return 0, err
		}
		ds = append(ds, d)
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2], nil
}

// listResult is one server's listing numbers.
type listResult struct {
	name          string
	objects       int
	page1, pageK  time.Duration
	k             int
	walk          time.Duration // every page in order; 0 if not walked
	peakRSS       int64
	rssOf         string
	verifiedWalks bool
}

// measureList times page 1 and page k (k = objects/1000, found with
// start-after the last key of page k-1) of prefix, each the median of
// rounds requests. With walk set it first lists every page through continuation
// tokens, checking that each key comes once and in order, and times page k
// by its real token too.
func measureList(base, bucket, prefix string, objects, rounds int, keyAt func(i int) string, walk bool) (listResult, error) {
	r := listResult{objects: objects, k: (objects + 999) / 1000}
	var tokenK string
	if walk {
		start := time.Now()
		token, seen, prev := "", 0, ""
		for page := 1; ; page++ {
			extra := url.Values{}
			if token != "" {
				extra.Set("continuation-token", token)
			}
			if page == r.k {
				tokenK = token
			}
			p, _, err := listOnce(base, bucket, prefix, extra)
			if err != nil {
				return r, err
			}
			for _, c := range p.Contents {
				if c.Key <= prev {
					return r, fmt.Errorf("page %d: key %q after %q", page, c.Key, prev)
				}
				prev = c.Key
				seen++
			}
			if !p.IsTruncated {
				break
			}
			token = p.NextContinuationToken
		}
		if seen != objects {
			return r, fmt.Errorf("listing walked %d keys, want %d", seen, objects)
		}
		r.walk, r.verifiedWalks = time.Since(start), true
	}
	var err error
	r.page1, err = median(rounds, func() (time.Duration, error) {
		p, d, err := listOnce(base, bucket, prefix, nil)
		if err == nil && (len(p.Contents) == 0 || p.Contents[0].Key != keyAt(0)) {
			err = fmt.Errorf("page 1 starts wrong: %+v", p.Contents[:min(1, len(p.Contents))])
		}
		return d, err
	})
	if err != nil {
		return r, err
	}
	after := keyAt((r.k-1)*1000 - 1)
	r.pageK, err = median(rounds, func() (time.Duration, error) {
		extra := url.Values{"start-after": {after}}
		if tokenK != "" {
			extra = url.Values{"continuation-token": {tokenK}}
		}
		p, d, err := listOnce(base, bucket, prefix, extra)
		if err == nil && (len(p.Contents) == 0 || p.Contents[0].Key != keyAt((r.k-1)*1000)) {
			err = fmt.Errorf("page %d starts wrong: %+v", r.k, p.Contents[:min(1, len(p.Contents))])
		}
		return d, err
	})
	return r, err
}

// rssSampler records the peak VmRSS of a process while it runs.
type rssSampler struct {
	mu   sync.Mutex
	peak int64
	stop chan struct{}
	done chan struct{}
}

func sampleRSS(pid int) *rssSampler {
	s := &rssSampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			if v := rss(pid); v > 0 {
				s.mu.Lock()
				s.peak = max(s.peak, v)
				s.mu.Unlock()
			}
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *rssSampler) Stop() int64 {
	close(s.stop)
	<-s.done
	return s.peak
}

// rss is a process's resident set size in bytes, or 0.
func rss(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// makeEmptyFiles creates n empty files in dir named by name(i).
func makeEmptyFiles(dir string, n int, name func(i int) string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		f, err := os.Create(filepath.Join(dir, name(i)))
		if err != nil {
			return err
		}
		f.Close()
	}
	return nil
}
