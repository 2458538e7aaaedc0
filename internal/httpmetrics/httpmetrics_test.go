package httpmetrics

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestWrapCountsRequestsCodesAndBytes(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := New(reg)
	if err != nil {
		t.Fatal(err)
	}
	h := m.Wrap("s3", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		io.WriteString(w, "hello")
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	for i := 0; i < 2; i++ {
		resp, err := http.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	req, _ := http.NewRequest(http.MethodPut, srv.URL, strings.NewReader("x"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := testutil.ToFloat64(m.requests.WithLabelValues("s3", "GET", "200")); got != 2 {
		t.Fatalf("GET 200 count = %v, want 2", got)
	}
	if got := testutil.ToFloat64(m.requests.WithLabelValues("s3", "PUT", "403")); got != 1 {
		t.Fatalf("PUT 403 count = %v, want 1", got)
	}
	if got := testutil.ToFloat64(m.bytes.WithLabelValues("s3")); got != 10 {
		t.Fatalf("response bytes = %v, want 10", got)
	}
	// A body sent through io.Copy (as http.ServeContent does) is counted
	// too, through ReadFrom.
	h2 := m.Wrap("webhdfs", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := w.(io.ReaderFrom); !ok {
			t.Error("wrapped writer lost io.ReaderFrom (sendfile)")
		}
		io.Copy(w, strings.NewReader(strings.Repeat("z", 1000)))
	}))
	rr := httptest.NewRecorder()
	h2.ServeHTTP(rr, httptest.NewRequest(http.MethodGet, "/", nil))
	if got := testutil.ToFloat64(m.bytes.WithLabelValues("webhdfs")); got != 1000 || rr.Body.Len() != 1000 {
		t.Fatalf("copied body: counted %v, sent %d; want 1000", got, rr.Body.Len())
	}
	if n, err := testutil.GatherAndCount(reg, "silt_head_request_duration_seconds"); err != nil || n != 3 {
		t.Fatalf("duration series = %d, %v; want 3 (s3 GET, s3 PUT, webhdfs GET)", n, err)
	}
}
