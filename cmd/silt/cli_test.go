package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTokenFile checks where the CLI takes its token from: a token file
// someone named must be readable, while the default one (under a data dir
// in the working directory) may be missing, for anonymous use.
func TestTokenFile(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"tenants":[]}`))
	}))
	defer srv.Close()
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("SILT_TOKEN", "")
	t.Setenv("SILT_TOKEN_FILE", "")
	t.Setenv("SILT_SERVER", "")

	cli := func(args ...string) (int, string) {
		var out, errb bytes.Buffer
		code := run(append([]string{"tenant", "list", "--server", srv.URL}, args...), strings.NewReader(""), &out, &errb)
		return code, errb.String()
	}
	missing := filepath.Join(dir, "nosuch.token")
	if code, msg := cli("--token-file", missing); code != 1 || !strings.Contains(msg, "read the token file") || !strings.Contains(msg, "nosuch.token") {
		t.Fatalf("named token file missing: exit %d, %q", code, msg)
	}
	t.Setenv("SILT_TOKEN_FILE", missing)
	if code, msg := cli(); code != 1 || !strings.Contains(msg, "SILT_TOKEN_FILE") {
		t.Fatalf("SILT_TOKEN_FILE missing: exit %d, %q", code, msg)
	}
	if len(got) != 0 {
		t.Fatalf("requests were sent without the named token: %q", got)
	}
	t.Setenv("SILT_TOKEN_FILE", "")
	if code, msg := cli(); code != 0 {
		t.Fatalf("default token file missing: exit %d, %q (want an anonymous request)", code, msg)
	}
	if err := os.MkdirAll("silt-data", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("silt-data", "root.token"), []byte("silt_abc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, msg := cli(); code != 0 {
		t.Fatalf("default token file: exit %d, %q", code, msg)
	}
	if len(got) != 2 || got[0] != "" || got[1] != "Bearer silt_abc" {
		t.Fatalf("Authorization headers sent: %q, want none, then the default file's token", got)
	}
}
