package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestInsecureDevChecksTokens replays, against a real server process, how
// a read-only token became admin in the insecure development mode: every
// anonymous request is allowed there, but one that presents a token acts as
// that token's principal, and nothing it was refused shows up once the
// mode is off.
func TestInsecureDevChecksTokens(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server processes; not run with -short")
	}
	dir := t.TempDir()
	c := &child{t: t, dir: dir, addr: freeAddr(t), extra: []string{"--auth.insecure_dev"}}
	c.start()
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			c.stop()
		}
	})
	call := func(method, path, token, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, "http://"+c.addr+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	must := func(want int, method, path, token, body string) string {
		t.Helper()
		code, b := call(method, path, token, body)
		if code != want {
			t.Fatalf("%s %s: %d %s, want %d", method, path, code, b, want)
		}
		return b
	}

	// Anonymous requests may do anything: that is the mode.
	must(http.StatusCreated, "POST", "/v1/tenants", "", `{"name":"acme"}`)
	must(http.StatusCreated, "POST", "/v1/principals", "", `{"name":"viewer"}`)
	must(http.StatusCreated, "POST", "/v1/grants", "", `{"principal":"viewer","action":"read","resource":"acme"}`)
	var tok struct{ Token string }
	if err := json.Unmarshal([]byte(must(http.StatusCreated, "POST", "/v1/principals/viewer/tokens", "", `{}`)), &tok); err != nil || tok.Token == "" {
		t.Fatalf("token: %v %+v", err, tok)
	}

	cases := map[string]struct {
		method, path, token, body string
		want                      int
	}{
		"read-only token grants itself admin *": {"POST", "/v1/grants", tok.Token, `{"principal":"viewer","action":"admin","resource":"*"}`, http.StatusForbidden},
		"read-only token creates a tenant":      {"POST", "/v1/tenants", tok.Token, `{"name":"other"}`, http.StatusForbidden},
		"read-only token lists principals":      {"GET", "/v1/principals", tok.Token, "", http.StatusForbidden},
		"read-only token reads its tenant":      {"GET", "/v1/tenants/acme", tok.Token, "", http.StatusOK},
		"unknown token":                         {"GET", "/v1/tenants/acme", "silt_notatoken", "", http.StatusUnauthorized},
		"unknown token grants admin *":          {"POST", "/v1/grants", "silt_notatoken", `{"principal":"viewer","action":"admin","resource":"*"}`, http.StatusUnauthorized},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if code, b := call(tc.method, tc.path, tc.token, tc.body); code != tc.want {
				t.Fatalf("%s %s: %d %s, want %d", tc.method, tc.path, code, b, tc.want)
			}
		})
	}

	// With the mode off, the viewer holds what it was given and nothing
	// it tried to give itself.
	c.stop()
	stopped = true
	c.extra = nil
	c.start()
	stopped = false
	if code, b := call("POST", "/v1/tenants", tok.Token, `{"name":"later"}`); code != http.StatusForbidden {
		t.Fatalf("viewer creates a tenant after the mode: %d %s", code, b)
	}
	if code, b := call("GET", "/v1/tenants/acme", tok.Token, ""); code != http.StatusOK {
		t.Fatalf("viewer reads acme after the mode: %d %s", code, b)
	}
	if code, _ := call("GET", "/v1/tenants/acme", "", ""); code != http.StatusUnauthorized {
		t.Fatalf("anonymous read after the mode: %d, want 401", code)
	}
}
