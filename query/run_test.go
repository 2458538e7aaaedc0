package query

import (
	"errors"
	"strings"
	"testing"
)

// clicks: two segments, times interleaved so that the merge order shows.
var clicks = memSource{
	"acme/clicks": {
		"0": seg([]int{0, 20, 70, 130},
			`{"status":200,"head":"s3","principal":"ann","latency_ms":10}`,
			`{"status":503,"head":"s3","principal":"bob","latency_ms":300}`,
			`{"status":500,"head":"nfs","principal":"ann","latency_ms":50}`,
			`{"status":500,"head":"s3","principal":"ann","latency_ms":70}`),
		"1": seg([]int{10, 30, 65},
			`{"status":404,"head":"s3","principal":"cat","latency_ms":5}`,
			`{"status":502,"head":"s3","principal":"bob","latency_ms":100}`,
			`not json at all`),
	},
	"acme/users": {
		"0": seg([]int{0, 1, 2},
			`{"principal":"ann","plan":"pro"}`,
			`{"principal":"bob","plan":"free"}`,
			`{"principal":"dan","plan":"pro"}`),
	},
}

func TestRun(t *testing.T) {
	cases := []struct {
		name, q string
		want    string
		cols    string
	}{
		{
			name: "merge in time order across segments",
			q:    `from acme/clicks | project _offset, _segment, status`,
			want: `{"_offset":0,"_segment":"0","status":200}
{"_offset":0,"_segment":"1","status":404}
{"_offset":1,"_segment":"0","status":503}
{"_offset":1,"_segment":"1","status":502}
{"_offset":2,"_segment":"1","status":null}
{"_offset":2,"_segment":"0","status":500}
{"_offset":3,"_segment":"0","status":500}`,
			cols: "_offset,_segment,status",
		},
		{
			// 5xx on s3: bob 503 (300ms), bob 502 (100ms), ann 500 (70ms).
			name: "the issue's example",
			q:    `from acme/clicks since -1h | where status >= 500 and head == "s3" | stats count(), p99(latency_ms) by principal | sort -count | head 10`,
			want: `{"principal":"bob","count":2,"p99_latency_ms":300}
{"principal":"ann","count":1,"p99_latency_ms":70}`,
			cols: "principal,count,p99_latency_ms",
		},
		{
			// latencies 10,300,50,70,5,100 (the raw line has none):
			// sum 535, avg 89.1666…, min 5, max 300; sorted 5 10 50 70 100 300:
			// p50 = rank ceil(3) = 50; p90 = rank ceil(5.4)=6 → 300.
			name: "every aggregate without keys",
			q:    `from acme/clicks | stats count(), count(latency_ms) as n, sum(latency_ms), avg(latency_ms), min(latency_ms), max(latency_ms), p50(latency_ms), percentile(latency_ms, 90) as p90, dcount(principal)`,
			want: `{"count":7,"n":6,"sum_latency_ms":535,"avg_latency_ms":89.16666666666667,"min_latency_ms":5,"max_latency_ms":300,"p50_latency_ms":50,"p90":300,"dcount_principal":3}`,
		},
		{
			name: "stats over no rows gives one row",
			q:    `from acme/clicks | where status == 999 | stats count(), avg(latency_ms)`,
			want: `{"count":0,"avg_latency_ms":null}`,
		},
		{
			name: "eval and where on computed fields",
			q:    `from acme/clicks | eval slow = latency_ms > 60, sec = latency_ms / 1000 | where slow | project principal, sec`,
			want: `{"principal":"bob","sec":0.3}
{"principal":"bob","sec":0.1}
{"principal":"ann","sec":0.07}`,
		},
		{
			name: "since and until over event time",
			// now = t0+1h; events at 20s..65s after t0 are inside.
			q: `from acme/clicks since -59m40s until "2026-01-02T10:01:06Z" | project _offset, _segment`,
			want: `{"_offset":1,"_segment":"0"}
{"_offset":1,"_segment":"1"}
{"_offset":2,"_segment":"1"}`,
		},
		{
			name: "stream cut and upto",
			q:    `from acme/clicks cut "0:2,1:1" upto "1:2" | project _offset, _segment`,
			want: `{"_offset":1,"_segment":"1"}
{"_offset":2,"_segment":"0"}
{"_offset":3,"_segment":"0"}`,
		},
		{
			// times 0,10,20,30,65,70,130 s: windows of a minute hold 4, 2, 1.
			name: "tumbling window",
			q:    `from acme/clicks | window tumbling 1m | stats count() by window_start`,
			want: `{"window_start":"2026-01-02T10:00:00Z","count":4}
{"window_start":"2026-01-02T10:01:00Z","count":2}
{"window_start":"2026-01-02T10:02:00Z","count":1}`,
		},
		{
			// 2m windows every 1m: [9:59,10:01) holds 0..30 (4);
			// [10:00,10:02) holds 0..70 (6); [10:01,10:03) holds 65,70,130 (3);
			// [10:02,10:04) holds 130 (1).
			name: "sliding window",
			q:    `from acme/clicks | window sliding 2m every 1m | stats count() by window_start | sort window_start`,
			want: `{"window_start":"2026-01-02T09:59:00Z","count":4}
{"window_start":"2026-01-02T10:00:00Z","count":6}
{"window_start":"2026-01-02T10:01:00Z","count":3}
{"window_start":"2026-01-02T10:02:00Z","count":1}`,
		},
		{
			name: "bin a number",
			q:    `from acme/clicks | where latency_ms != nil | bin latency_ms 100 | stats count() by latency_ms | sort latency_ms`,
			want: `{"latency_ms":0,"count":4}
{"latency_ms":100,"count":1}
{"latency_ms":300,"count":1}`,
		},
		{
			name: "sort descending with ties kept in order, then head",
			q:    `from acme/clicks | where status != nil | sort -status, principal | head 3 | project status, principal`,
			want: `{"status":503,"principal":"bob"}
{"status":502,"principal":"bob"}
{"status":500,"principal":"ann"}`,
		},
		{
			name: "top",
			q:    `from acme/clicks | top 2 by -latency_ms | project latency_ms`,
			want: `{"latency_ms":300}
{"latency_ms":100}`,
		},
		{
			name: "head stops the scan",
			q:    `from acme/clicks | head 2 | project _offset, _segment`,
			want: `{"_offset":0,"_segment":"0"}
{"_offset":0,"_segment":"1"}`,
		},
		{
			name: "inner join on a small side",
			q:    `from acme/clicks | where status >= 500 | join (from acme/users | project principal, plan) on principal | project principal, status, plan`,
			want: `{"principal":"bob","status":503,"plan":"free"}
{"principal":"bob","status":502,"plan":"free"}
{"principal":"ann","status":500,"plan":"pro"}
{"principal":"ann","status":500,"plan":"pro"}`,
		},
		{
			name: "left join keeps unmatched rows",
			q:    `from acme/clicks | where status == 404 | join kind=left (from acme/users) on principal | project principal, plan`,
			want: `{"principal":"cat","plan":null}`,
		},
		{
			name: "parse regex on the raw line",
			q:    `from acme/clicks | where _raw != nil | parse regex ` + "`^(?P<first>\\w+) (?P<second>\\w+)`" + ` | project first, second`,
			want: `{"first":"not","second":"json"}`,
		},
		{
			name: "parse json from a string field",
			q:    `from acme/clicks | head 1 | eval inner = "{\"a\":1,\"b\":\"x\"}" | parse json inner | project a, b`,
			want: `{"a":1,"b":"x"}`,
		},
		{
			name: "two streams merged",
			q:    `from acme/users, acme/clicks | where _offset == 0 | project _stream, _segment`,
			// Ties in time go by the order the streams are listed.
			want: `{"_stream":"acme/users","_segment":"0"}
{"_stream":"acme/clicks","_segment":"0"}
{"_stream":"acme/clicks","_segment":"1"}`,
		},
		{
			name: "open rows list their fields sorted after the event fields",
			q:    `from acme/users | head 1`,
			want: `{"_time":"2026-01-02T10:00:00Z","_stream":"acme/users","_segment":"0","_offset":0,"plan":"pro","principal":"ann"}`,
			cols: "_time,_stream,_segment,_offset,plan,principal",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, res, err := runText(t, clicks, tc.q, Limits{})
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			if g := joinLines(got); g != tc.want {
				t.Errorf("rows:\n%s\nwant:\n%s", g, tc.want)
			}
			if tc.cols != "" && strings.Join(res.Columns, ",") != tc.cols {
				t.Errorf("columns %v, want %s", res.Columns, tc.cols)
			}
		})
	}
}

func TestLimits(t *testing.T) {
	cases := []struct {
		name, q string
		lim     Limits
		want    string
	}{
		{"groups", `from acme/clicks | stats count() by principal`, Limits{MaxGroups: 2}, "stats has more than 2 groups (query.limits.max_groups)"},
		{"values", `from acme/clicks | stats p50(latency_ms)`, Limits{MaxValues: 3}, "more than 3 values"},
		{"dcount values", `from acme/clicks | stats dcount(_offset)`, Limits{MaxValues: 2}, "more than 2 values"},
		{"sort", `from acme/clicks | sort status`, Limits{MaxSortRows: 5}, "sort holds more than 5 rows"},
		{"join", `from acme/clicks | join (from acme/users) on principal`, Limits{MaxJoinRows: 2}, "the right side of the join has more than 2 rows"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := runText(t, clicks, tc.q, tc.lim)
			if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrLimit with %q", err, tc.want)
			}
		})
	}
}

func TestWarnings(t *testing.T) {
	_, res, err := runText(t, clicks, `from acme/clicks | where latency_m > 10`, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`where: "latency_m > 10" could not be evaluated: invalid operation: <nil> > int (7 times)`,
		`1:26: field "latency_m" was in no scanned event; did you mean "latency_ms"?`,
	}
	if strings.Join(res.Warnings, "\n") != strings.Join(want, "\n") {
		t.Fatalf("warnings:\n%s\nwant:\n%s", strings.Join(res.Warnings, "\n"), strings.Join(want, "\n"))
	}
}

func TestStreams(t *testing.T) {
	q, err := Parse(`from a1b/x, a1b/y | join (from c2d/z, a1b/x) on k`, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range q.Streams() {
		got = append(got, s.String())
	}
	if strings.Join(got, " ") != "a1b/x a1b/y c2d/z" {
		t.Fatalf("streams %v", got)
	}
}
