package httpmetrics

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/silt-io/silt/internal/metrics"
)

func TestWrapCountsRequestsStatusClassesAndBytes(t *testing.T) {
	reg := prometheus.NewRegistry()
	set, err := metrics.New(metrics.DefaultConfig(), reg)
	if err != nil {
		t.Fatal(err)
	}
	byMethod := func(r *http.Request) string { return "Op" + r.Method }
	h := Wrap(set.Heads.Head("s3"), byMethod, nil, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodPut:
			w.WriteHeader(http.StatusForbidden)
		case http.MethodDelete:
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			io.WriteString(w, "hello")
		}
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	do := func(method string) {
		req, _ := http.NewRequest(method, srv.URL, strings.NewReader("x"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	do(http.MethodGet)
	do(http.MethodGet)
	do(http.MethodPut)
	do(http.MethodDelete)
	// A body sent through io.Copy (as http.ServeContent does) is counted
	// too, through ReadFrom.
	h2 := Wrap(set.Heads.Head("webhdfs"), byMethod, nil, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := w.(io.ReaderFrom); !ok {
			t.Error("wrapped writer lost io.ReaderFrom (sendfile)")
		}
		io.Copy(w, strings.NewReader(strings.Repeat("z", 1000)))
	}))
	rr := httptest.NewRecorder()
	h2.ServeHTTP(rr, httptest.NewRequest(http.MethodGet, "/", nil))
	want := `
# HELP silt_head_requests_total Requests answered by a head, by operation and status class (ok, client_error, server_error).
# TYPE silt_head_requests_total counter
silt_head_requests_total{head="s3",op="OpDELETE",status="server_error"} 1
silt_head_requests_total{head="s3",op="OpGET",status="ok"} 2
silt_head_requests_total{head="s3",op="OpPUT",status="client_error"} 1
silt_head_requests_total{head="webhdfs",op="OpGET",status="ok"} 1
# HELP silt_head_response_bytes_total Bytes a head sent in answers (bodies for HTTP heads, whole replies for NFS).
# TYPE silt_head_response_bytes_total counter
silt_head_response_bytes_total{head="s3"} 10
silt_head_response_bytes_total{head="webhdfs"} 1000
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "silt_head_requests_total", "silt_head_response_bytes_total"); err != nil {
		t.Fatal(err)
	}
	if rr.Body.Len() != 1000 {
		t.Fatalf("sent %d bytes, want 1000", rr.Body.Len())
	}
	if n, err := testutil.GatherAndCount(reg, "silt_head_request_duration_seconds"); err != nil || n != 4 {
		t.Fatalf("duration series = %d, %v; want 4 (s3 GET, PUT, DELETE, webhdfs GET)", n, err)
	}
}

// TestObserverGetsWhatTheHeadNoted checks that an observer is told of each
// request with what the handler noted (Note), and that Note without an
// observer does nothing.
func TestObserverGetsWhatTheHeadNoted(t *testing.T) {
	set := metrics.NewUnregistered(metrics.DefaultConfig())
	var got []Request
	h := Wrap(set.Heads.Head("s3"), func(*http.Request) string { return "GetObject" }, func(q Request) { got = append(got, q) },
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			Note(r, "", "acme", "clicks")
			Note(r, "alice", "", "")
			w.WriteHeader(http.StatusPartialContent)
			io.WriteString(w, "12345")
		}))
	req := httptest.NewRequest(http.MethodGet, "/acme/clicks/x", nil)
	req.RemoteAddr = "10.1.2.3:4567"
	h.ServeHTTP(httptest.NewRecorder(), req)
	if len(got) != 1 {
		t.Fatalf("observer called %d times, want 1", len(got))
	}
	q := got[0]
	if q.Head != "s3" || q.Op != "GetObject" || q.Code != 206 || q.Bytes != 5 || q.Client != "10.1.2.3:4567" ||
		q.Principal != "alice" || q.Tenant != "acme" || q.Stream != "clicks" || q.Took <= 0 {
		t.Fatalf("observed %+v", q)
	}
	// No observer: Note finds nothing to write to, and nothing breaks.
	plain := Wrap(set.Heads.Head("s3"), func(*http.Request) string { return "GetObject" }, nil,
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { Note(r, "alice", "acme", "clicks") }))
	plain.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
}
