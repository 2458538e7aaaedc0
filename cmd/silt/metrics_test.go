package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// Series whose labels hold a stream or segment name grow with the streams
// of the node: a million streams would be millions of series. Only the
// producer series may name streams, and only with metrics.per_stream on
// (docs/metrics.md); per-stream figures otherwise belong to the API
// (stream describe, the tiering status). Tenants and reader groups may
// label series: they are few, and operators ask per tenant.

// perStreamLabels are label names that would name a stream's parts.
var perStreamLabels = map[string]bool{
	"stream": true, "segment": true, "bucket": true,
	"key": true, "path": true, "chunk": true, "writer": true,
}

// unboundedSeries returns the series of a Prometheus text exposition that
// have a per-stream label name or a label value holding one of names.
func unboundedSeries(text string, names []string) []string {
	var bad []string
	for _, line := range strings.Split(text, "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		open := strings.IndexByte(line, '{')
		if open < 0 {
			continue
		}
		for _, l := range labelPairs(line[open+1:]) {
			hit := perStreamLabels[l[0]]
			for _, n := range names {
				hit = hit || strings.Contains(l[1], n)
			}
			if hit {
				bad = append(bad, line)
				break
			}
		}
	}
	return bad
}

// labelPairs parses `a="x",b="y\"z"} 1` up to the closing brace.
func labelPairs(s string) [][2]string {
	var out [][2]string
	for {
		s = strings.TrimLeft(s, ", ")
		eq := strings.Index(s, `="`)
		if eq < 0 || strings.HasPrefix(s, "}") {
			return out
		}
		name, rest := s[:eq], s[eq+2:]
		var val strings.Builder
		i := 0
		for ; i < len(rest) && rest[i] != '"'; i++ {
			if rest[i] == '\\' && i+1 < len(rest) {
				i++
			}
			val.WriteByte(rest[i])
		}
		out = append(out, [2]string{name, val.String()})
		if i >= len(rest) {
			return out
		}
		s = rest[i+1:]
	}
}

func TestUnboundedSeries(t *testing.T) {
	names := []string{"acme", "clicks-probe"}
	for name, tc := range map[string]struct {
		line string
		bad  bool
	}{
		"route pattern":       {`silt_head_requests_total{head="api",op="GET /v1/tenants/{tenant}/streams",status="ok"} 3`, false},
		"head and op":         {`silt_head_requests_total{head="s3",op="GetObject",status="ok"} 1`, false},
		"no labels":           {`silt_api_inflight_bytes 0`, false},
		"stream label":        {`silt_tier_lag_seconds{stream="x"} 1`, true},
		"tenant label":        {`silt_x_total{tenant="t",status="ok"} 1`, false},
		"segment label":       {`silt_x_total{tenant="t",segment="0"} 1`, true},
		"name in a value":     {`silt_x_total{path="/v1/tenants/acme"} 1`, true},
		"name in other label": {`silt_x_total{route="GET /v1/tenants/acme/streams/clicks-probe"} 1`, true},
		"escaped quote":       {`silt_x_total{help="a \"q\" clicks-probe"} 1`, true},
	} {
		t.Run(name, func(t *testing.T) {
			if got := len(unboundedSeries(tc.line+"\n", names)) > 0; got != tc.bad {
				t.Fatalf("flagged %v, want %v", got, tc.bad)
			}
		})
	}
}

// A server that has served appends, reads and listings of several streams
// names them only in producer series, and with metrics.per_stream off in
// none at all.
func TestMetricsHaveNoPerStreamSeries(t *testing.T) {
	for name, tc := range map[string]struct {
		flags     []string
		perStream bool
	}{
		"per_stream on (default)": {nil, true},
		"per_stream off":          {[]string{"--metrics.per_stream=false"}, false},
	} {
		t.Run(name, func(t *testing.T) {
			s := startServer(t, t.TempDir(), tc.flags...)
			s.must(t, "", "tenant", "create", "acme-probe")
			streams := []string{"clicks-probe", "views-probe", "logs-probe"}
			for _, st := range streams {
				s.must(t, "", "stream", "create", "acme-probe/"+st, "--segments", "2")
				s.must(t, "a\nb\n", "append", "acme-probe/"+st)
				s.must(t, "", "read", "acme-probe/"+st)
				s.must(t, "", "stream", "describe", "acme-probe/"+st)
			}
			s.must(t, "", "stream", "list", "acme-probe")
			resp, err := http.Get(s.api + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(body), `silt_head_requests_total{head="api",`) {
				t.Fatalf("no API request series in /metrics:\n%s", body)
			}
			var bad, named []string
			for _, line := range unboundedSeries(string(body), streams) {
				if strings.HasPrefix(line, "silt_producer_") {
					named = append(named, line)
				} else {
					bad = append(bad, line)
				}
			}
			if len(bad) > 0 {
				t.Fatalf("series with per-stream labels:\n%s", strings.Join(bad, "\n"))
			}
			switch {
			case tc.perStream && len(named) != 2*len(streams):
				t.Fatalf("%d producer series name a stream, want events and bytes of each of %d:\n%s", len(named), len(streams), strings.Join(named, "\n"))
			case !tc.perStream && len(named) > 0:
				t.Fatalf("producer series name streams with metrics.per_stream off:\n%s", strings.Join(named, "\n"))
			}
			if !strings.Contains(string(body), `silt_producer_events_total{`) {
				t.Fatal("no producer series")
			}
		})
	}
}
