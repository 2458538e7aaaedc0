package s3

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestServeStopsOnCancel(t *testing.T) {
	e := newTestEnv(t)
	// The catalog and httptest goroutines of the fixture are not Serve's.
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- e.srv.Serve(ctx, ln, nil) }()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get("http://" + ln.Addr().String() + "/pub/open/segment=1/000001.chunk")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(string(b), "content of") {
		t.Fatalf("GET: %d %s", resp.StatusCode, b)
	}
	cancel()
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("Serve = %v, want nil after cancel", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after cancel")
	}
}

func FuzzAuthHeader(f *testing.F) {
	f.Add("AWS4-HMAC-SHA256 Credential=AKID/20300102/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-date, Signature=00", "20300102T030405Z")
	f.Add("AWS4-HMAC-SHA256 ,,,=", "")
	f.Fuzz(func(t *testing.T, auth, date string) {
		r, err := http.NewRequest("GET", "http://h/b/k?x=1&y", nil)
		if err != nil {
			t.Skip()
		}
		r.Header.Set("X-Amz-Date", date)
		r.Header.Set("X-Amz-Content-Sha256", unsignedBody)
		sr, err := parseAuthHeader(auth, r)
		if err == nil {
			_ = sr.sign("secret", canonicalRequest(r, sr))
		}
	})
}

func FuzzCanonicalQuery(f *testing.F) {
	f.Add("list-type=2&prefix=a%2Fb&X-Amz-Signature=00")
	f.Add("a=%zz&&=&b")
	f.Fuzz(func(t *testing.T, raw string) {
		q := canonicalQuery(raw)
		for _, pair := range strings.Split(q, "&") {
			if strings.HasPrefix(pair, "X-Amz-Signature=") {
				t.Fatalf("signature kept in %q", q)
			}
		}
	})
}
