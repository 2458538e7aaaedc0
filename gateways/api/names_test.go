package api

import (
	"net/http"
	"strings"
	"testing"
)

// TestInvalidPathNames checks that a tenant or stream path element that is
// not a valid name (an encoded '/', above all) is refused as such before
// any access check: a 403 for one spelling and a 404 for another would
// tell a caller without access what exists.
func TestInvalidPathNames(t *testing.T) {
	e := newEnv(t)
	e.mkStream("acme", "logs", "lines", 1)
	// A principal with a grant inside acme, and one with none: both must
	// get the same 400 as root.
	reader := e.user("reader", "read:acme/logs")
	stranger := e.user("stranger")

	routes := []struct{ method, path string }{
		{"GET", "/v1/tenants/%s"},
		{"DELETE", "/v1/tenants/%s"},
		{"GET", "/v1/tenants/%s/streams"},
		{"POST", "/v1/tenants/%s/streams"},
		{"GET", "/v1/tenants/acme/streams/%s"},
		{"DELETE", "/v1/tenants/acme/streams/%s"},
		{"POST", "/v1/tenants/acme/streams/%s/events"},
		{"GET", "/v1/tenants/acme/streams/%s/events"},
		{"GET", "/v1/tenants/%s/streams/logs"},
		{"POST", "/v1/tenants/%s/streams/logs/events"},
		{"GET", "/v1/tenants/%s/streams/logs/events"},
	}
	names := map[string]string{
		"encoded slash":           "ac%2fme",
		"encoded slash uppercase": "ac%2Fme",
		"encoded dot dot":         "%2e%2e",
		"encoded space":           "ac%20me",
		"encoded NUL":             "ac%00me",
	}
	callers := map[string]string{"root": e.root, "reader": reader, "stranger": stranger, "anonymous": ""}
	for nameCase, bad := range names {
		for _, rt := range routes {
			path := strings.Replace(rt.path, "%s", bad, 1)
			for who, token := range callers {
				t.Run(nameCase+"/"+rt.method+" "+rt.path+"/"+who, func(t *testing.T) {
					rep := e.do(req{method: rt.method, path: path, token: token, body: []byte(`{"name":"x"}`)})
					if rep.status != http.StatusBadRequest || rep.errCode(t) != "invalid_argument" {
						t.Fatalf("%s %s as %s: %d %s, want 400 invalid_argument", rt.method, path, who, rep.status, rep.body)
					}
					if !strings.Contains(string(rep.body), "invalid name") {
						t.Fatalf("%s %s: message does not say the name is invalid: %s", rt.method, path, rep.body)
					}
				})
			}
		}
	}
}

// TestInvalidBodyNames checks the names a request body brings (a new
// tenant's or stream's, a stream's group) the same way: 400 before the
// access check, for callers with and without the admin grant.
func TestInvalidBodyNames(t *testing.T) {
	e := newEnv(t)
	e.mkStream("acme", "logs", "lines", 1)
	stranger := e.user("stranger")
	cases := map[string]struct {
		path, body string
	}{
		"tenant with slash":   {"/v1/tenants", `{"name":"ac/me"}`},
		"tenant too short":    {"/v1/tenants", `{"name":"ac"}`},
		"stream with slash":   {"/v1/tenants/acme/streams", `{"name":"lo/gs"}`},
		"stream dot dot":      {"/v1/tenants/acme/streams", `{"name":".."}`},
		"stream empty":        {"/v1/tenants/acme/streams", `{"name":""}`},
		"set with slash":      {"/v1/tenants/acme/streams", `{"name":"web","set":"a/b"}`},
		"old set with slash":  {"/v1/tenants/acme/streams", `{"name":"web","group":"a/b"}`},
		"stream in no tenant": {"/v1/tenants/nosuch/streams", `{"name":"a/b"}`},
	}
	for name, c := range cases {
		for who, token := range map[string]string{"root": e.root, "stranger": stranger, "anonymous": ""} {
			t.Run(name+"/"+who, func(t *testing.T) {
				rep := e.do(req{method: "POST", path: c.path, token: token, body: []byte(c.body)})
				if rep.status != http.StatusBadRequest || rep.errCode(t) != "invalid_argument" {
					t.Fatalf("POST %s %s as %s: %d %s, want 400 invalid_argument", c.path, c.body, who, rep.status, rep.body)
				}
			})
		}
	}
}
