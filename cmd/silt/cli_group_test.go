package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestCLIGroup drives silt group and silt read --group against silt serve.
func TestCLIGroup(t *testing.T) {
	s := startServer(t, t.TempDir())
	s.must(t, "", "tenant", "create", "acme")
	s.must(t, "", "stream", "create", "acme/orders", "--segments", "2")
	s.must(t, "a1\na2\na3\na4\na5\n", "append", "acme/orders")
	s.must(t, "b1\nb2\nb3\n", "append", "acme/orders")
	s.must(t, "", "group", "create", "acme/billing", "--stream", "orders")

	lag := func() uint64 {
		t.Helper()
		var l struct {
			EventsBehind uint64 `json:"events_behind"`
		}
		r := s.must(t, "", "group", "lag", "acme/billing", "-o", "json")
		if err := json.Unmarshal([]byte(r.stdout), &l); err != nil {
			t.Fatalf("%q: %v", r.stdout, err)
		}
		return l.EventsBehind
	}
	if n := lag(); n != 8 {
		t.Fatalf("lag of a new group at head: %d events, want 8", n)
	}
	first := s.must(t, "", "read", "acme", "--group", "billing", "--max", "3").stdout
	if n := strings.Count(first, "\n"); n != 3 {
		t.Fatalf("read --max 3 printed %q", first)
	}
	if n := lag(); n != 5 {
		t.Fatalf("lag after 3 events were read and committed: %d, want 5", n)
	}
	rest := s.must(t, "", "read", "acme", "--group", "billing").stdout
	got := strings.Fields(first + rest)
	slices.Sort(got)
	if want := []string{"a1", "a2", "a3", "a4", "a5", "b1", "b2", "b3"}; !slices.Equal(got, want) {
		t.Fatalf("the two group reads printed %q, want each event once: %q", got, want)
	}
	if n := lag(); n != 0 {
		t.Fatalf("lag after everything was read: %d", n)
	}
	if out := s.must(t, "", "read", "acme", "--group", "billing").stdout; out != "" {
		t.Fatalf("a caught-up group read printed %q", out)
	}

	s.must(t, "", "group", "reset", "acme/billing", "--to", "head")
	if n := lag(); n != 8 {
		t.Fatalf("lag after reset to head: %d, want 8", n)
	}
	s.must(t, "", "group", "reset", "acme/billing", "--position", "orders/0=4")
	if n := lag(); n != 4 { // 1 left in orders/0, 3 in orders/1 from head
		t.Fatalf("lag after reset to positions: %d", n)
	}
	desc := s.must(t, "", "group", "describe", "acme/billing").stdout
	if !strings.Contains(desc, "acme/billing") || !strings.Contains(desc, "POSITION") {
		t.Fatalf("describe: %q", desc)
	}
	if out := s.must(t, "", "group", "list", "acme").stdout; !strings.Contains(out, "billing") {
		t.Fatalf("list: %q", out)
	}

	for name, tc := range map[string]struct {
		args []string
		code int
		want string
	}{
		"unknown group":          {[]string{"group", "describe", "acme/nope"}, 1, `not found: group "nope"`},
		"read of unknown group":  {[]string{"read", "acme", "--group", "nope"}, 1, `not found: group "nope"`},
		"create without streams": {[]string{"group", "create", "acme/g2"}, 2, "--stream"},
		"bad start":              {[]string{"group", "create", "acme/g2", "--stream", "orders", "--start", "yesterday"}, 2, "want head, tail or a time"},
		"bad position":           {[]string{"group", "reset", "acme/billing", "--position", "orders/0=x"}, 2, "STREAM/SEGMENT=OFFSET"},
		"position past the end":  {[]string{"group", "reset", "acme/billing", "--position", "orders/0=99"}, 1, "past its end"},
		"group with a cursor":    {[]string{"read", "acme", "--group", "billing", "--cursor", "end"}, 2, "does not go with --group"},
		"group with a stream":    {[]string{"read", "acme/orders", "--group", "billing"}, 2, "TENANT only"},
	} {
		t.Run(name, func(t *testing.T) {
			r := s.run(t, "", tc.args...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q; want exit %d and %q", r.code, r.stderr, tc.code, tc.want)
			}
		})
	}

	for _, verb := range []string{"create", "list", "describe", "lag", "reset", "delete"} {
		r := s.must(t, "", "group", verb, "--help")
		if !strings.Contains(r.stdout, "silt group "+verb) || len(r.stdout) < 200 {
			t.Errorf("silt group %s --help says too little: %q", verb, r.stdout)
		}
	}
	s.must(t, "", "group", "delete", "acme/billing", "--yes")
	if r := s.run(t, "", "group", "describe", "acme/billing"); r.code != 1 {
		t.Fatalf("describe after delete: exit %d", r.code)
	}
}
