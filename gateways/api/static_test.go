package api

import (
	"net/http"
	"testing"
)

// TestMountStatic checks that files mounted beside the API (the web
// console) are served without credentials, keep the API's JSON errors for
// other methods, and cannot take a path under /v1/.
func TestMountStatic(t *testing.T) {
	e := newEnv(t)
	files := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("file " + r.URL.Path))
	})
	for _, bad := range []string{"/v1/console/", "console/", "/console", ""} {
		if err := e.srv.MountStatic(bad, files); err == nil {
			t.Errorf("MountStatic(%q) accepted", bad)
		}
	}
	if err := e.srv.MountStatic("/console/", files); err != nil {
		t.Fatal(err)
	}
	r := e.do(req{method: "GET", path: "/console/app.js"})
	if r.status != 200 || string(r.body) != "file /console/app.js" {
		t.Fatalf("GET /console/app.js: %d %q", r.status, r.body)
	}
	if r := e.do(req{method: "POST", path: "/console/app.js", token: e.root}); r.status != 405 || r.errCode(t) != "method_not_allowed" {
		t.Errorf("POST /console/app.js: %d %s", r.status, r.body)
	}
	// The API's own routes keep their checks.
	if r := e.do(req{method: "GET", path: "/v1/tenants/acme"}); r.status != 401 {
		t.Errorf("GET /v1/tenants/acme without a token: %d, want 401", r.status)
	}
}
