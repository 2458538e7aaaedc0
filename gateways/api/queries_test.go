package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/silt-io/silt/query"
	"github.com/silt-io/silt/query/jobs"
)

// useQueries connects a job manager over the env's store and catalog, as
// silt serve does.
func (e *env) useQueries(cfg jobs.Config) *jobs.Manager {
	e.t.Helper()
	m, err := jobs.Open(cfg, e.store, e.store.Catalog(), e.acl, zaptest.NewLogger(e.t), e.reg, "")
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { m.Close() })
	e.srv.UseQueries(m)
	return m
}

// clickEvents go to acme/clicks through the API, one ndjson body per
// segment.
func (e *env) clickEvents() {
	e.t.Helper()
	e.mkStream("acme", "clicks", "lines", 2)
	for seg, body := range map[string]string{
		"0": `{"status":200,"head":"s3","principal":"ann","latency_ms":10}
{"status":503,"head":"s3","principal":"bob","latency_ms":300}
{"status":500,"head":"nfs","principal":"ann","latency_ms":50}
`,
		"1": `{"status":502,"head":"s3","principal":"bob","latency_ms":100}
{"status":500,"head":"s3","principal":"ann","latency_ms":70}
`,
	} {
		e.must(http.StatusOK, req{method: "POST", path: eventsPath("acme", "clicks") + "?segment=" + seg,
			body: []byte(body), contentType: "application/x-ndjson"})
	}
}

func (e *env) submit(token, text string) reply {
	e.t.Helper()
	return e.do(req{method: "POST", path: "/v1/queries", token: token, body: jsonBody(e.t, map[string]any{"query": text})})
}

// waitJob polls the job until it has ended.
func (e *env) waitJob(token, handle string) jobs.Job {
	e.t.Helper()
	for {
		var j jobs.Job
		rep := e.do(req{method: "GET", path: "/v1/queries/" + handle, token: token})
		if rep.status != http.StatusOK {
			e.t.Fatalf("GET job: %d %s", rep.status, rep.body)
		}
		rep.json(e.t, &j)
		if j.State != jobs.Running {
			return j
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestQueryJobResults(t *testing.T) {
	e := newEnv(t)
	e.useQueries(jobs.DefaultConfig())
	e.clickEvents()
	ann := e.user("ann", "read:acme/clicks")

	rep := e.submit(ann, `from acme/clicks | where status >= 500 and head == "s3" | stats count(), p99(latency_ms), max(status) by principal | sort -count`)
	if rep.status != http.StatusAccepted {
		t.Fatalf("submit: %d %s", rep.status, rep.body)
	}
	var j jobs.Job
	rep.json(t, &j)
	if j.State != jobs.Running || !jobs.ValidHandle(j.Handle) || rep.header.Get("Location") != "/v1/queries/"+j.Handle {
		t.Fatalf("submitted job %+v, Location %q", j, rep.header.Get("Location"))
	}
	j = e.waitJob(ann, j.Handle)
	if j.State != jobs.Succeeded || j.Rows != 2 || strings.Join(j.Columns, ",") != "principal,count,p99_latency_ms,max_status" {
		t.Fatalf("job %+v", j)
	}
	if p := j.Progress; p.EventsScanned != 5 || p.EventsTotal != 5 || p.Percent != 100 || p.BytesScanned == 0 {
		t.Fatalf("progress %+v", p)
	}

	// s3 5xx: bob 503 (300 ms) and 502 (100 ms); ann 500 (70 ms).
	wantJSON := `{"principal":"bob","count":2,"p99_latency_ms":300,"max_status":503}
{"principal":"ann","count":1,"p99_latency_ms":70,"max_status":500}
`
	res := e.do(req{method: "GET", path: "/v1/queries/" + j.Handle + "/results", token: ann})
	if res.status != http.StatusOK || string(res.body) != wantJSON || res.header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("results: %d %q %s", res.status, res.header.Get("Content-Type"), res.body)
	}
	wantCSV := "principal,count,p99_latency_ms,max_status\nbob,2,300,503\nann,1,70,500\n"
	res = e.do(req{method: "GET", path: "/v1/queries/" + j.Handle + "/results", token: ann, header: map[string]string{"Accept": "text/csv"}})
	if res.status != http.StatusOK || string(res.body) != wantCSV {
		t.Fatalf("csv results: %d %s", res.status, res.body)
	}
	res = e.do(req{method: "GET", path: "/v1/queries/" + j.Handle + "/results?format=csv", token: ann})
	if string(res.body) != wantCSV {
		t.Fatalf("format=csv: %s", res.body)
	}

	// The result stream is an ordinary stream the submitter may read.
	raw := e.do(req{method: "GET", path: eventsPath("silt-system", "query-"+j.Handle) + "?format=raw", token: ann})
	if raw.status != http.StatusOK || string(raw.body) != wantJSON {
		t.Fatalf("result stream: %d %s", raw.status, raw.body)
	}

	// The submitter sees the job in its list; another principal does not.
	var list queryList
	e.must(http.StatusOK, req{method: "GET", path: "/v1/queries", token: ann}).json(t, &list)
	if len(list.Queries) != 1 || list.Queries[0].Handle != j.Handle {
		t.Fatalf("ann's list %+v", list)
	}
	cat := e.user("cat", "read:acme/clicks")
	e.must(http.StatusOK, req{method: "GET", path: "/v1/queries", token: cat}).json(t, &list)
	if len(list.Queries) != 0 {
		t.Fatalf("cat's list %+v", list)
	}
	// …nor the job itself, nor its results.
	for _, p := range []string{"/v1/queries/" + j.Handle, "/v1/queries/" + j.Handle + "/results"} {
		if r := e.do(req{method: "GET", path: p, token: cat}); r.status != http.StatusForbidden {
			t.Fatalf("cat GET %s: %d %s", p, r.status, r.body)
		}
	}
}

func TestQueryACL(t *testing.T) {
	e := newEnv(t)
	e.useQueries(jobs.DefaultConfig())
	e.clickEvents()
	e.mkStream("acme", "users", "lines", 1)
	e.mkStream("other", "secret", "lines", 1)
	bob := e.user("bob", "read:acme/users")

	for name, text := range map[string]string{
		"from":          `from acme/clicks | head 1`,
		"second stream": `from acme/users, acme/clicks`,
		"join":          `from acme/users | join (from other/secret) on principal`,
		"result tenant": `from silt-system/anything`,
	} {
		t.Run(name, func(t *testing.T) {
			rep := e.submit(bob, text)
			if rep.status != http.StatusForbidden || rep.errCode(t) != "forbidden" {
				t.Fatalf("%d %s", rep.status, rep.body)
			}
		})
	}
	// A stream that does not exist is 404 only for a caller who may read
	// it.
	rep := e.submit(e.root, `from acme/nothing`)
	if rep.status != http.StatusNotFound {
		t.Fatalf("missing stream: %d %s", rep.status, rep.body)
	}
	if rep := e.submit("", `from acme/users`); rep.status != http.StatusUnauthorized {
		t.Fatalf("anonymous: %d %s", rep.status, rep.body)
	}
}

func TestQueryBadText(t *testing.T) {
	e := newEnv(t)
	e.useQueries(jobs.DefaultConfig())
	rep := e.submit(e.root, "from acme/clicks\n| wher status > 1")
	if rep.status != http.StatusBadRequest {
		t.Fatalf("%d %s", rep.status, rep.body)
	}
	var b errorBody
	rep.json(t, &b)
	want := errorDetail{Code: "bad_query", Message: `2:3: unknown operator "wher"; did you mean "where"?`, RequestID: b.Error.RequestID,
		Position: &queryErrorDetail{Line: 2, Column: 3, Hint: `did you mean "where"?`, Snippet: "  | wher status > 1\n    ^"}}
	got, _ := json.Marshal(b.Error)
	wantB, _ := json.Marshal(want)
	if string(got) != string(wantB) {
		t.Fatalf("error\n%s\nwant\n%s", got, wantB)
	}
	for _, body := range []string{`{}`, `{"query":"  "}`, `{"query":"from a/b","extra":1}`} {
		if rep := e.do(req{method: "POST", path: "/v1/queries", token: e.root, body: []byte(body)}); rep.status != http.StatusBadRequest {
			t.Fatalf("%s: %d %s", body, rep.status, rep.body)
		}
	}
	if rep := e.do(req{method: "POST", path: "/v1/queries", token: e.root, body: []byte(`{"name":"top-errors"}`)}); rep.status != http.StatusNotFound {
		t.Fatalf("unknown packaged query: %d %s", rep.status, rep.body)
	}
	if rep := e.do(req{method: "GET", path: "/v1/queries/nothex", token: e.root}); rep.status != http.StatusNotFound {
		t.Fatalf("bad handle: %d %s", rep.status, rep.body)
	}
}

// stallSource is fault injection: a source whose reads block until the
// query is cancelled, so that a job is reliably still running.
type stallSource struct {
	query.Source
	reading chan struct{} // gets a value when a read starts
}

func (s stallSource) Read(ctx context.Context, tenant, stream, segment string, from uint64, maxEvents, maxBytes int) ([]query.Event, uint64, error) {
	select {
	case s.reading <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return nil, from, ctx.Err()
}

func TestQueryCancelAndBusy(t *testing.T) {
	e := newEnv(t)
	cfg := jobs.DefaultConfig()
	cfg.MaxConcurrent = 1
	e.useQueries(cfg)
	e.clickEvents()
	stall := stallSource{Source: e.srv.QuerySource(), reading: make(chan struct{}, 1)}
	e.srv.querySrc = stall

	var j jobs.Job
	rep := e.submit(e.root, `from acme/clicks | stats count()`)
	if rep.status != http.StatusAccepted {
		t.Fatalf("%d %s", rep.status, rep.body)
	}
	rep.json(t, &j)
	<-stall.reading

	busy := e.submit(e.root, `from acme/clicks | head 1`)
	if busy.status != http.StatusTooManyRequests || busy.errCode(t) != "too_many_queries" || busy.header.Get("Retry-After") == "" {
		t.Fatalf("second query: %d %s (Retry-After %q)", busy.status, busy.body, busy.header.Get("Retry-After"))
	}
	if r := e.do(req{method: "GET", path: "/v1/queries/" + j.Handle + "/results", token: e.root}); r.status != http.StatusConflict {
		t.Fatalf("results while running: %d %s", r.status, r.body)
	}

	var cancelled jobs.Job
	e.must(http.StatusOK, req{method: "DELETE", path: "/v1/queries/" + j.Handle}).json(t, &cancelled)
	if cancelled.State != jobs.Cancelled || cancelled.Error != "cancelled by request" {
		t.Fatalf("cancelled job %+v", cancelled)
	}
	// The slot is free again.
	e.srv.querySrc = nil
	rep = e.submit(e.root, `from acme/clicks | stats count()`)
	if rep.status != http.StatusAccepted {
		t.Fatalf("after cancel: %d %s", rep.status, rep.body)
	}
	rep.json(t, &j)
	if got := e.waitJob(e.root, j.Handle); got.State != jobs.Succeeded || got.Rows != 1 {
		t.Fatalf("job after cancel %+v", got)
	}
	for _, m := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"silt_query_jobs_refused_total", nil, 1},
		{"silt_query_jobs_ended_total", []string{"state", "cancelled"}, 1},
		{"silt_query_jobs_ended_total", []string{"state", "succeeded"}, 1},
		{"silt_query_jobs_ended_total", []string{"state", "failed"}, 0},
		{"silt_query_result_rows_total", nil, 1},
		{"silt_query_scanned_events_total", nil, 5},
		{"silt_query_jobs_running", nil, 0},
	} {
		if got := e.series(m.name, m.labels...); got != m.want {
			t.Errorf("%s%v = %v, want %v", m.name, m.labels, got, m.want)
		}
	}
}

func TestPackagedQueries(t *testing.T) {
	e := newEnv(t)
	e.useQueries(jobs.DefaultConfig())
	e.clickEvents()
	e.mkStream("other", "secret", "lines", 1)
	owner := e.user("owner", "admin:acme")
	ann := e.user("ann", "read:acme/clicks")
	bob := e.user("bob", "read:other")

	define := func(token, name, text string) reply {
		return e.do(req{method: "POST", path: "/v1/packaged-queries", token: token,
			body: jsonBody(t, map[string]any{"name": name, "query": text, "description": "errors by head"})})
	}
	if r := define(ann, "errs", `from acme/clicks | head 1`); r.status != http.StatusForbidden {
		t.Fatalf("define with read only: %d %s", r.status, r.body)
	}
	if r := define(owner, "errs", `from acme/clicks | wher status > $min`); r.status != http.StatusBadRequest || r.errCode(t) != "bad_query" {
		t.Fatalf("define a bad query: %d %s", r.status, r.body)
	}
	if r := define(owner, "errs", `from acme/clicks | where status >= 500 | stats count() by head`); r.status != http.StatusCreated {
		t.Fatalf("define v1: %d %s", r.status, r.body)
	}
	r := define(owner, "errs", `from acme/clicks | where status >= $min and head == $head | stats count(), max(latency_ms) by principal | sort principal`)
	var v2 jobs.Packaged
	r.json(t, &v2)
	if r.status != http.StatusCreated || v2.Version != 2 || strings.Join(v2.Params, ",") != "head,min" || v2.Owner != "owner" {
		t.Fatalf("define v2: %d %s", r.status, r.body)
	}

	// Listed for those who could run it, not for bob.
	var list packagedList
	e.must(http.StatusOK, req{method: "GET", path: "/v1/packaged-queries", token: ann}).json(t, &list)
	if len(list.Queries) != 1 || list.Queries[0].Version != 2 {
		t.Fatalf("ann's list %+v", list)
	}
	e.must(http.StatusOK, req{method: "GET", path: "/v1/packaged-queries", token: bob}).json(t, &list)
	if len(list.Queries) != 0 {
		t.Fatalf("bob's list %+v", list)
	}
	if r := e.do(req{method: "GET", path: "/v1/packaged-queries/errs", token: bob}); r.status != http.StatusNotFound {
		t.Fatalf("bob's get: %d %s", r.status, r.body)
	}
	e.must(http.StatusOK, req{method: "GET", path: "/v1/packaged-queries/errs", token: ann}).json(t, &list)
	if len(list.Queries) != 2 || list.Queries[0].Version != 1 || list.Queries[1].Version != 2 {
		t.Fatalf("versions %+v", list)
	}

	run := func(token string, body map[string]any) reply {
		return e.do(req{method: "POST", path: "/v1/queries", token: token, body: jsonBody(t, body)})
	}
	// s3 and status >= 502: bob 503 (300 ms), bob 502 (100 ms).
	r = run(ann, map[string]any{"name": "errs", "params": map[string]string{"min": "502", "head": "s3"}})
	if r.status != http.StatusAccepted {
		t.Fatalf("run v2: %d %s", r.status, r.body)
	}
	var j jobs.Job
	r.json(t, &j)
	j = e.waitJob(ann, j.Handle)
	if j.Packaged != "errs" || j.Version != 2 || j.Params["min"] != "502" ||
		j.Query != `from acme/clicks | where status >= 502 and head == "s3" | stats count(), max(latency_ms) by principal | sort principal` {
		t.Fatalf("job %+v", j)
	}
	res := e.do(req{method: "GET", path: "/v1/queries/" + j.Handle + "/results", token: ann})
	if string(res.body) != `{"principal":"bob","count":2,"max_latency_ms":300}`+"\n" {
		t.Fatalf("results %s", res.body)
	}
	// Version 1, which has no parameters.
	r = run(ann, map[string]any{"name": "errs", "version": 1})
	r.json(t, &j)
	j = e.waitJob(ann, j.Handle)
	res = e.do(req{method: "GET", path: "/v1/queries/" + j.Handle + "/results", token: ann})
	if string(res.body) != `{"head":"s3","count":3}`+"\n"+`{"head":"nfs","count":1}`+"\n" {
		t.Fatalf("v1 results %s", res.body)
	}

	for name, tc := range map[string]struct {
		token string
		body  map[string]any
		want  int
	}{
		"missing parameter":  {ann, map[string]any{"name": "errs", "params": map[string]string{"min": "1"}}, http.StatusBadRequest},
		"unknown parameter":  {ann, map[string]any{"name": "errs", "params": map[string]string{"min": "1", "head": "s3", "x": "1"}}, http.StatusBadRequest},
		"no such version":    {ann, map[string]any{"name": "errs", "version": 3}, http.StatusNotFound},
		"runs as the caller": {bob, map[string]any{"name": "errs", "params": map[string]string{"min": "1", "head": "s3"}}, http.StatusForbidden},
		"text and name":      {ann, map[string]any{"name": "errs", "query": "from acme/clicks"}, http.StatusBadRequest},
	} {
		t.Run(name, func(t *testing.T) {
			if r := run(tc.token, tc.body); r.status != tc.want {
				t.Fatalf("%d %s, want %d", r.status, r.body, tc.want)
			}
		})
	}
}

func TestContinuousQuery(t *testing.T) {
	e := newEnv(t)
	cfg := jobs.DefaultConfig()
	cfg.ContinuousGrace, cfg.ContinuousPoll = 0, 10*time.Millisecond
	e.useQueries(cfg)
	e.clickEvents()

	bad := e.do(req{method: "POST", path: "/v1/queries", token: e.root,
		body: jsonBody(t, map[string]any{"query": "from acme/clicks | stats count()", "continuous": true})})
	if bad.status != http.StatusBadRequest || bad.errCode(t) != "bad_query" {
		t.Fatalf("a query that cannot run continuously: %d %s", bad.status, bad.body)
	}
	rep := e.must(http.StatusAccepted, req{method: "POST", path: "/v1/queries",
		body: jsonBody(t, map[string]any{"query": "from acme/clicks | window tumbling 1s | stats count() by window_start", "continuous": true})})
	var j jobs.Job
	rep.json(t, &j)
	// The five events were appended within a second or two: once their
	// windows have closed, the rows count all five; more events later
	// go to later windows.
	for total := 0; total < 5; {
		res := e.must(http.StatusOK, req{method: "GET", path: "/v1/queries/" + j.Handle + "/results"})
		total = 0
		for _, line := range strings.Split(strings.TrimSpace(string(res.body)), "\n") {
			var row struct {
				Count int `json:"count"`
			}
			if line != "" {
				json.Unmarshal([]byte(line), &row)
				total += row.Count
			}
		}
		if total > 5 {
			t.Fatalf("rows count %d events, more than the 5 appended: %s", total, res.body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got, _ := e.srv.queries.Get(j.Handle); got.State != jobs.Running || !got.Continuous {
		t.Fatalf("continuous job %+v", got)
	}
	var ended jobs.Job
	e.must(http.StatusOK, req{method: "DELETE", path: "/v1/queries/" + j.Handle}).json(t, &ended)
	if ended.State != jobs.Cancelled {
		t.Fatalf("cancelled: %+v", ended)
	}
}
