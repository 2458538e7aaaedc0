package webhdfs

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/silt-io/silt/view"
)

func TestServeStopsOnCancel(t *testing.T) {
	e := newTestEnv(t, DefaultConfig())
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
	resp, err := client.Get("http://" + ln.Addr().String() + "/webhdfs/v1/pub/open/segment=1/000001.chunk?op=OPEN")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(string(b), "content of") {
		t.Fatalf("OPEN: %d %s", resp.StatusCode, b)
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

// countingBody records whether a handler read the request body.
type countingBody struct{ reads int }

func (c *countingBody) Read([]byte) (int, error) { c.reads++; return 0, io.EOF }
func (c *countingBody) Close() error             { return nil }

func TestWriteBodyNotRead(t *testing.T) {
	e := newTestEnv(t, DefaultConfig())
	body := &countingBody{}
	r := httptest.NewRequest("PUT", "/webhdfs/v1/acme/x?op=CREATE", nil)
	r.Body, r.ContentLength = body, 1<<30
	rec := httptest.NewRecorder()
	e.srv.Handler().ServeHTTP(rec, r)
	if rec.Code != 403 || body.reads != 0 || rec.Header().Get("Connection") != "close" {
		t.Fatalf("%d, %d reads, Connection %q", rec.Code, body.reads, rec.Header().Get("Connection"))
	}
}

func TestConfig(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	for name, mut := range map[string]func(*Config){
		"listen":     func(c *Config) { c.Listen = "nope" },
		"block size": func(c *Config) { c.BlockSize = 1000 },
		"ttl":        func(c *Config) { c.RedirectTTL = 0 },
	} {
		c := DefaultConfig()
		mut(&c)
		if c.Validate() == nil {
			t.Errorf("%s: invalid config accepted", name)
		}
	}
}

func FuzzParseQuery(f *testing.F) {
	f.Add("op=OPEN&offset=10&length=5&buffersize=4096")
	f.Add("OP=liststatus_batch&startAfter=a%2Fb&noredirect=TRUE")
	f.Add("op=open&offset=1&offset=-1&silt.sig=1~a~b")
	f.Add("a=%zz&&=&b")
	f.Fuzz(func(t *testing.T, raw string) {
		p, err := parseQuery(raw)
		if err != nil {
			if _, ok := err.(*remoteError); !ok {
				t.Fatalf("error %v is not a RemoteException", err)
			}
			return
		}
		if p.op == "" || p.op != strings.ToUpper(p.op) || p.offset < 0 || p.length < -1 {
			t.Fatalf("parseQuery(%q) = %+v", raw, p)
		}
	})
}

func FuzzRequestPath(f *testing.F) {
	f.Add("/webhdfs/v1/a/../../b/")
	f.Add("/webhdfs/v1//a//b/./c")
	f.Add("/webhdfs/v1x")
	f.Fuzz(func(t *testing.T, u string) {
		raw, p, ok := requestPath(u)
		if !ok {
			return
		}
		if !strings.HasPrefix(raw, "/") || strings.Contains(p, "//") {
			t.Fatalf("requestPath(%q) = %q, %q", u, raw, p)
		}
		// Only a path with "." or ".." elements may be unclean, and
		// literalView keeps those from the view.
		if _, err := view.Split(p); err != nil && !dotted(p) {
			t.Fatalf("requestPath(%q) = %q, not a clean view path: %v", u, p, err)
		}
		if validName(raw) && dotted(p) {
			t.Fatalf("validName(%q) with a dotted path", raw)
		}
	})
}
