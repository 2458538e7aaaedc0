package main

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// untar unpacks a .tar.gz into dir.
func untar(t *testing.T, archive, dir string) {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.Clean("/"+h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o700); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// A data directory written by the release before lazy segments opens
// under the current code: every event reads back (the tiered ones from
// tier 2, the rest from tier 1), idempotent writers' retries are answered
// as duplicates with their original offsets, and appends go on after them.
func TestOpenDataDirOf779a5f4(t *testing.T) {
	root := t.TempDir()
	untar(t, filepath.Join("testdata", "datadir-779a5f4.tar.gz"), root)
	c := &child{t: t, dir: filepath.Join(root, "data"), addr: freeAddr(t),
		extra: []string{"--tiering.fs.dir", filepath.Join(root, "tier2")}}
	c.start()
	defer c.stop()
	tok, err := os.ReadFile(filepath.Join(c.dir, "root.token"))
	if err != nil {
		t.Fatal(err)
	}
	api := apiClient{base: "http://" + c.addr, token: strings.TrimSpace(string(tok)), http: &http.Client{Timeout: time.Minute}}

	clicks := func(seg int) []string {
		var out []string
		for i := 1; i <= 40; i++ {
			for e := 1; e <= 5; e++ {
				out = append(out, fmt.Sprintf(`{"e":"clicks-%d-%03d-%d-%0100d"}`, seg, i, e, 0))
			}
		}
		for i := 41; i <= 45; i++ {
			out = append(out, fmt.Sprintf(`{"e":"clicks-%d-%d-tail"}`, seg, i))
		}
		return out
	}
	logs := func(seg int) []string {
		var out []string
		for i := 1; i <= 10; i++ {
			out = append(out, fmt.Sprintf(`{"e":"logs-%d-%d-a"}`, seg, i), fmt.Sprintf(`{"e":"logs-%d-%d-b"}`, seg, i))
		}
		if seg == 2 {
			out = append(out, `{"e":"logs-2-11-tail"}`)
		}
		return out
	}
	want := map[string][]string{
		"clicks/0": clicks(0), "clicks/1": clicks(1),
		"logs/0": logs(0), "logs/1": logs(1), "logs/2": logs(2),
		"empty/0": nil, "empty/1": nil, "blobs/0": nil,
	}
	for key, events := range want {
		stream, seg, _ := strings.Cut(key, "/")
		got := readAll(t, api, stream, seg, len(events))
		if len(got) != len(events) {
			t.Fatalf("%s: read %d events, want %d", key, len(got), len(events))
		}
		for i := range events {
			if got[i] != events[i] {
				t.Fatalf("%s: event %d is %q, want %q", key, i, got[i], events[i])
			}
		}
	}

	type ack struct {
		FirstOffset uint64 `json:"first_offset"`
		Count       int    `json:"count"`
		Duplicate   bool   `json:"duplicate"`
	}
	post := func(t *testing.T, stream, seg, writer string, seq int, event string) (int, ack) {
		t.Helper()
		resp, err := api.do("POST", fmt.Sprintf("/v1/tenants/acme/streams/%s/events?segment=%s", stream, seg), "application/x-ndjson",
			strings.NewReader(event+"\n"), map[string]string{"Silt-Writer-Id": writer, "Silt-Seq": fmt.Sprint(seq)})
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var a ack
		if resp.StatusCode == 200 {
			if err := json.Unmarshal(b, &a); err != nil {
				t.Fatal(err)
			}
		}
		return resp.StatusCode, a
	}
	cases := map[string]struct {
		stream, seg, writer string
		seq                 int
		status              int
		want                ack
	}{
		"last batch in tier 1":  {"clicks", "1", "w-clicks-1", 45, 200, ack{FirstOffset: 204, Count: 1, Duplicate: true}},
		"one writer, segment 2": {"logs", "2", "w-logs", 11, 200, ack{FirstOffset: 20, Count: 1, Duplicate: true}},
		"last batch, tiered":    {"logs", "0", "w-logs", 10, 200, ack{FirstOffset: 18, Count: 2, Duplicate: true}},
		// Below the last stored sequence: a conflict, as before.
		"older sequence": {"clicks", "0", "w-clicks-0", 3, 409, ack{}},
		"next sequence":  {"clicks", "0", "w-clicks-0", 46, 200, ack{FirstOffset: 205, Count: 1}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			status, got := post(t, tc.stream, tc.seg, tc.writer, tc.seq, `{"e":"retry"}`)
			if status != tc.status || got != tc.want {
				t.Fatalf("got %d %+v, want %d %+v", status, got, tc.status, tc.want)
			}
		})
	}
}

// readAll reads a segment's events from offset 0 in the raw encoding (the
// stream's lines), following tier 2 into tier 1.
func readAll(t *testing.T, api apiClient, stream, seg string, want int) []string {
	t.Helper()
	var out []string
	for {
		path := fmt.Sprintf("/v1/tenants/acme/streams/%s/events?segment=%s&from=%d&format=raw&max=1000", stream, seg, len(out))
		resp, err := api.do("GET", path, "", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
		}
		sc := bufio.NewScanner(resp.Body)
		n := 0
		for sc.Scan() {
			out = append(out, sc.Text())
			n++
		}
		resp.Body.Close()
		if n == 0 || len(out) >= want {
			return out
		}
	}
}
