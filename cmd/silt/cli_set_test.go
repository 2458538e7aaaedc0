package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestCLIStreamSet: --set puts a stream in a stream set that a
// TENANT/set:NAME grant covers; the old spellings --group and
// TENANT/group:NAME still work, --group with a one-line deprecation notice
// on stderr (stdout stays the command's output).
func TestCLIStreamSet(t *testing.T) {
	s := startServer(t, t.TempDir())
	s.must(t, "", "tenant", "create", "acme")
	if r := s.must(t, "", "stream", "create", "acme/clicks", "--set", "web"); r.stderr != "" {
		t.Fatalf("--set printed on stderr: %q", r.stderr)
	}
	old := s.must(t, "", "stream", "create", "acme/views", "--group", "web", "-o", "json")
	if lines := strings.Split(strings.TrimSpace(old.stderr), "\n"); len(lines) != 1 || !strings.Contains(lines[0], "--group is deprecated") || !strings.Contains(lines[0], "--set web") {
		t.Fatalf("--group: stderr %q, want one deprecation line naming --set web", old.stderr)
	}
	var created struct {
		Config struct{ Set string } `json:"config"`
	}
	if err := json.Unmarshal([]byte(old.stdout), &created); err != nil || created.Config.Set != "web" {
		t.Fatalf("--group web: stream created as %s (%v)", old.stdout, err)
	}
	if r := s.run(t, "", "stream", "create", "acme/logs", "--group", "ops", "--set", "web"); r.code != 2 || !strings.Contains(r.stderr, "disagree") {
		t.Fatalf("--group and --set that disagree: exit %d, stderr %q", r.code, r.stderr)
	}
	s.must(t, "", "stream", "create", "acme/other")
	if out := s.must(t, "", "stream", "describe", "acme/views").stdout; !hasSetLine(out) {
		t.Fatalf("describe: %q, want the set", out)
	}

	for _, tc := range []struct{ who, resource string }{{"newspell", "acme/set:web"}, {"oldspell", "acme/group:web"}} {
		s.must(t, "", "principal", "create", tc.who)
		g := s.must(t, "", "grant", tc.who, "read", tc.resource)
		if !strings.Contains(g.stdout, "on acme/set:web") {
			t.Fatalf("grant %s: %q, want it stored as acme/set:web", tc.resource, g.stdout)
		}
		tok := strings.TrimSpace(s.must(t, "", "token", "create", tc.who).stdout)
		for stream, want := range map[string]int{"clicks": http.StatusOK, "views": http.StatusOK, "other": http.StatusForbidden} {
			req, _ := http.NewRequest("GET", s.api+"/v1/tenants/acme/streams/"+stream, nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != want {
				t.Fatalf("%s granted %s reads acme/%s: %d, want %d", tc.who, tc.resource, stream, resp.StatusCode, want)
			}
		}
	}
}

// hasSetLine finds describe's "set  web" line.
func hasSetLine(out string) bool {
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[0] == "set" && f[1] == "web" {
			return true
		}
	}
	return false
}
