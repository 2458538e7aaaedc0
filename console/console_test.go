package console

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func TestServe(t *testing.T) {
	h, err := New()
	if err != nil {
		t.Fatal(err)
	}
	index, _ := static.ReadFile("static/index.html")
	for _, tc := range []struct {
		name, method, path string
		header             map[string]string
		status             int
		ctype              string
		body               string // a prefix of the body, when set
	}{
		{name: "index", method: "GET", path: "/console/", status: 200, ctype: "text/html; charset=utf-8", body: string(index)},
		{name: "index by name", method: "GET", path: "/console/index.html", status: 200, ctype: "text/html; charset=utf-8"},
		{name: "module", method: "GET", path: "/console/app.js", status: 200, ctype: "text/javascript; charset=utf-8", body: "// The console's router"},
		{name: "style", method: "GET", path: "/console/console.css", status: 200, ctype: "text/css; charset=utf-8"},
		{name: "head", method: "HEAD", path: "/console/app.js", status: 200, ctype: "text/javascript; charset=utf-8"},
		{name: "unknown file", method: "GET", path: "/console/nope.js", status: 404},
		{name: "no directory walk", method: "GET", path: "/console/../console.go", status: 404},
		{name: "post", method: "POST", path: "/console/", status: 405},
		{name: "revalidated", method: "GET", path: "/console/app.js", header: map[string]string{"If-None-Match": etagOf(t, h, "app.js")}, status: 304},
		{name: "stale etag", method: "GET", path: "/console/app.js", header: map[string]string{"If-None-Match": `"0000"`}, status: 200, ctype: "text/javascript; charset=utf-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(tc.method, tc.path, nil)
			for k, v := range tc.header {
				r.Header.Set(k, v)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tc.status {
				t.Fatalf("status %d, want %d", w.Code, tc.status)
			}
			// Every answer, errors included, carries the policy.
			for k, want := range map[string]string{
				"Content-Security-Policy": CSP,
				"X-Content-Type-Options":  "nosniff",
				"X-Frame-Options":         "DENY",
				"Referrer-Policy":         "no-referrer",
			} {
				if got := w.Header().Get(k); got != want {
					t.Errorf("%s: %q, want %q", k, got, want)
				}
			}
			if tc.status != 200 {
				return
			}
			if got := w.Header().Get("Content-Type"); got != tc.ctype {
				t.Errorf("Content-Type %q, want %q", got, tc.ctype)
			}
			if got := w.Header().Get("Cache-Control"); got != "no-cache" {
				t.Errorf("Cache-Control %q, want no-cache", got)
			}
			if w.Header().Get("ETag") == "" {
				t.Error("no ETag")
			}
			if tc.method == "HEAD" && w.Body.Len() != 0 {
				t.Errorf("HEAD has a body of %d bytes", w.Body.Len())
			}
			if tc.body != "" && !strings.HasPrefix(w.Body.String(), tc.body) {
				t.Errorf("body starts %q, want %q", w.Body.String()[:min(60, w.Body.Len())], tc.body)
			}
		})
	}
}

func etagOf(t *testing.T, h *Handler, name string) string {
	t.Helper()
	f, ok := h.files[name]
	if !ok {
		t.Fatalf("no file %s", name)
	}
	return f.etag
}

// TestCSPHolds checks the files against what the policy forbids, so that a
// change breaks here rather than silently in a browser: no inline script
// or style in the HTML, no inline handlers, no eval, no HTML built from
// strings (server text goes in as text nodes), no token in localStorage.
func TestCSPHolds(t *testing.T) {
	rules := []struct {
		re   *regexp.Regexp
		what string
	}{
		{regexp.MustCompile(`<script(?:\s[^>]*)?>\s*[^<\s]`), "inline script"},
		{regexp.MustCompile(`<style`), "inline style element"},
		{regexp.MustCompile(`\sstyle=`), "style attribute"},
		{regexp.MustCompile(`\son[a-z]+=`), "inline event handler"},
		{regexp.MustCompile(`\beval\(|new Function\(`), "eval"},
		{regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write`), "HTML from strings"},
		{regexp.MustCompile(`localStorage`), "localStorage"},
		{regexp.MustCompile(`https?://`), "another origin"},
	}
	n := 0
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		n++
		b, err := static.ReadFile(p)
		if err != nil {
			return err
		}
		src := string(b)
		for _, tag := range regexp.MustCompile(`<script[^>]*>`).FindAllString(src, -1) {
			if !strings.Contains(tag, ` src="`) {
				t.Errorf("%s: script without src: %s", p, tag)
			}
		}
		for _, r := range rules {
			if strings.HasSuffix(p, ".js") && r.what == "another origin" {
				// The SVG namespace is a name, not a fetch.
				src = strings.ReplaceAll(src, "http://www.w3.org/2000/svg", "")
			}
			if loc := r.re.FindStringIndex(src); loc != nil {
				t.Errorf("%s: %s at byte %d: %q", p, r.what, loc[0], src[loc[0]:min(loc[1]+20, len(src))])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 5 {
		t.Fatalf("checked %d files; the embedded set is missing files", n)
	}
}

// TestMountedHandler checks the prefix the handler expects is the one
// exported for mounting.
func TestMountedHandler(t *testing.T) {
	h, err := New()
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET "+Prefix, h)
	w := httptest.NewRecorder()
	mux.ServeHTTP(w, httptest.NewRequest("GET", "/console/chart.js", nil))
	if w.Code != 200 || !strings.Contains(w.Body.String(), "export function lineChart") {
		t.Fatalf("mounted at %s: %d %q", Prefix, w.Code, w.Body.String()[:min(80, w.Body.Len())])
	}
}
