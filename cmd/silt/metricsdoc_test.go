package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/silt-io/silt/internal/etcdtest"
)

// TestMetricsDocumented starts the server, uses every head (appends with a
// duplicate and a refused batch, a reader group, reads through S3, NFS and
// WebHDFS), and checks that the silt_* metrics it exposes are exactly the
// ones docs/metrics.md lists, with the types it gives, and that every
// metric the Grafana dashboard queries is exposed.
func TestMetricsDocumented(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server and reads through every head; skipped with -short")
	}
	s := newScaleServer(t, 4096)
	s.extra = []string{"--metrics.storage_refresh", "1s", "--tiering.max_lag", "1s", "--tiering.interval", "100ms"}
	s.start()
	api := func(method, path, body string, header map[string]string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, "http://"+s.api+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+s.token)
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	must := func(want int, method, path, body string, header map[string]string) string {
		t.Helper()
		code, b := api(method, path, body, header)
		if code != want {
			t.Fatalf("%s %s: %d %s, want %d", method, path, code, b, want)
		}
		return b
	}
	must(201, "POST", "/v1/tenants", `{"name":"acme"}`, nil)
	must(201, "POST", "/v1/tenants/acme/streams", `{"name":"clicks","segments":1}`, nil)
	events := "/v1/tenants/acme/streams/clicks/events?segment=0"
	const ndjson = "application/x-ndjson" // one event per line
	w := func(seq string) map[string]string {
		return map[string]string{"Silt-Writer-Id": "w1", "Silt-Seq": seq, "Content-Type": ndjson}
	}
	must(200, "POST", events, "a\nb\nc\n", w("5"))
	must(200, "POST", events, "a\nb\nc\n", w("5")) // a retry: a duplicate
	must(409, "POST", events, "old\n", w("4"))     // below the writer's sequence: an error
	must(200, "POST", events, "d\n", map[string]string{"Content-Type": ndjson})
	must(201, "POST", "/v1/tenants/acme/groups", `{"name":"g","streams":["clicks"],"start":{"kind":"head"}}`, nil)
	must(200, "POST", "/v1/tenants/acme/groups/g/members", `{"member":"r1"}`, nil)
	must(204, "POST", "/v1/tenants/acme/groups/g/members/r1/commit", `{"generation":1,"positions":[{"stream":"clicks","segment":"0","offset":2}]}`, nil)

	// Read the tiered chunks through the three file heads, once they are
	// in tier 2.
	ctx := context.Background()
	s3read, err := s.s3Reader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		b, err := s3read(ctx, "acme", "clicks", "0")
		if err == nil && string(b) == "a\nb\nc\nd\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for the events in tier 2: %q, %v", b, err)
		}
	}
	nfsRead, closeNFS, err := s.nfsReader()
	if err != nil {
		t.Fatal(err)
	}
	if b, err := nfsRead(ctx, "acme", "clicks", "0"); err != nil || len(b) == 0 {
		t.Fatalf("NFS read: %q, %v", b, err)
	}
	closeNFS()
	if b, err := s.webhdfsReader()(ctx, "acme", "clicks", "0"); err != nil || len(b) == 0 {
		t.Fatalf("WebHDFS read: %q, %v", b, err)
	}

	// The storage figures are refreshed every second: wait for tier 2's.
	var exposed map[string]string
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		text := must(200, "GET", "/metrics", "", nil)
		exposed = metricTypes(text)
		if strings.Contains(text, `silt_storage_bytes{tenant="acme",tier="2"}`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for silt_storage_bytes of tier 2:\n%s", text)
		}
	}
	doc, err := os.ReadFile("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	documented, clusterOnly := documentedMetrics(t, string(doc))
	diffs := undocumented(exposed, documented)
	for name := range documented {
		_, ok := exposed[name]
		switch {
		case !ok && !clusterOnly[name]:
			diffs = append(diffs, fmt.Sprintf("%s is in docs/metrics.md but not exposed", name))
		case ok && clusterOnly[name]:
			diffs = append(diffs, fmt.Sprintf("%s is exposed by a single node, docs/metrics.md says cluster mode only", name))
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 0 {
		t.Errorf("docs/metrics.md and /metrics differ:\n%s", strings.Join(diffs, "\n"))
	}

	dash, err := os.ReadFile("../../docs/grafana/silt.json")
	if err != nil {
		t.Fatal(err)
	}
	used, err := dashboardMetrics(dash)
	if err != nil {
		t.Fatal(err)
	}
	if len(used) < 10 {
		t.Fatalf("the dashboard queries only %d metrics: %v", len(used), used)
	}
	for _, name := range used {
		if _, ok := exposed[name]; !ok {
			t.Errorf("docs/grafana/silt.json queries %s, which the server does not expose", name)
		}
	}
}

// metricTypes returns the silt_* families of a text exposition with their
// types, from the # TYPE lines.
func metricTypes(text string) map[string]string {
	out := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 4 && f[0] == "#" && f[1] == "TYPE" && strings.HasPrefix(f[2], "silt_") {
			out[f[2]] = f[3]
		}
	}
	return out
}

// undocumented lists the exposed metrics that docs/metrics.md lacks or
// gives another type.
func undocumented(exposed, documented map[string]string) []string {
	var diffs []string
	for name, typ := range exposed {
		switch d, ok := documented[name]; {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("%s (%s) is exposed but not in docs/metrics.md", name, typ))
		case d != typ:
			diffs = append(diffs, fmt.Sprintf("%s is a %s, docs/metrics.md says %s", name, typ, d))
		}
	}
	return diffs
}

// documentedMetrics reads the tables of docs/metrics.md: rows whose first
// cell is a `silt_…` name, the second its type. Those under a heading
// that says "cluster mode only" are also in clusterOnly.
func documentedMetrics(t *testing.T, doc string) (types map[string]string, clusterOnly map[string]bool) {
	t.Helper()
	row := regexp.MustCompile("^\\| `(silt_[a-z0-9_]+)` \\| ([a-z]+) \\|")
	types, clusterOnly = map[string]string{}, map[string]bool{}
	cluster := false
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "#") {
			cluster = strings.Contains(line, "cluster mode only")
		}
		if m := row.FindStringSubmatch(line); m != nil {
			if _, dup := types[m[1]]; dup {
				t.Errorf("docs/metrics.md lists %s twice", m[1])
			}
			types[m[1]] = m[2]
			if cluster {
				clusterOnly[m[1]] = true
			}
		}
	}
	if len(types) == 0 || len(clusterOnly) == 0 {
		t.Fatalf("docs/metrics.md: %d metric rows, %d of them cluster mode only", len(types), len(clusterOnly))
	}
	return types, clusterOnly
}

// A cluster node exposes the cluster series on top of the others, and
// each is in docs/metrics.md with its type. (The error counter appears
// only once a round trip to etcd fails.)
func TestClusterMetricsDocumented(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd and a server; skipped with -short")
	}
	etcd := etcdtest.Start(t)
	s := startServer(t, t.TempDir(), "--cluster.etcd.endpoints", etcd.Endpoint)
	s.must(t, "", "tenant", "create", "acme")
	resp, err := http.Get(s.api + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	text, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	exposed := metricTypes(string(text))
	doc, err := os.ReadFile("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	documented, clusterOnly := documentedMetrics(t, string(doc))
	diffs := undocumented(exposed, documented)
	for name := range clusterOnly {
		if _, ok := exposed[name]; !ok && name != "silt_etcd_request_errors_total" {
			diffs = append(diffs, fmt.Sprintf("%s is not exposed by a cluster node", name))
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 0 {
		t.Errorf("docs/metrics.md and a cluster node's /metrics differ:\n%s", strings.Join(diffs, "\n"))
	}
}

// dashboardMetrics returns the silt_* metric names the PromQL expressions
// of a Grafana dashboard use (a histogram's _bucket, _sum and _count
// series by the histogram's name), from every "expr" and templating
// "query" in it.
func dashboardMetrics(dash []byte) ([]string, error) {
	var root any
	dec := json.NewDecoder(bytes.NewReader(dash))
	if err := dec.Decode(&root); err != nil {
		return nil, fmt.Errorf("docs/grafana/silt.json: %w", err)
	}
	var exprs []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, c := range v {
				if s, ok := c.(string); ok && (k == "expr" || k == "query" || k == "definition") {
					exprs = append(exprs, s)
				}
				walk(c)
			}
		case []any:
			for _, c := range v {
				walk(c)
			}
		}
	}
	walk(root)
	name := regexp.MustCompile(`silt_[a-z0-9_]+`)
	seen := map[string]bool{}
	for _, e := range exprs {
		for _, n := range name.FindAllString(e, -1) {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if base, ok := strings.CutSuffix(n, suffix); ok && !strings.HasSuffix(base, "_total") {
					n = base
					break
				}
			}
			seen[n] = true
		}
	}
	var out []string
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}
