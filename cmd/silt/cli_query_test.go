package main

import (
	"strings"
	"testing"
)

// silt query against a real silt serve: run prints the rows, submit,
// status and results work on a handle, and a query with a mistake shows
// where it is.
func TestCLIQuery(t *testing.T) {
	s := startServer(t, t.TempDir())
	s.must(t, "", "tenant", "create", "acme")
	s.must(t, "", "stream", "create", "acme/clicks", "--segments", "1")
	s.must(t, `{"status":200,"head":"s3"}
{"status":503,"head":"s3"}
{"status":500,"head":"nfs"}
{"status":502,"head":"s3"}
`, "append", "acme/clicks")

	q := `from acme/clicks | where status >= 500 | stats count() by head | sort -count`
	r := s.must(t, "", "query", "run", q)
	if want := "{\"head\":\"s3\",\"count\":2}\n{\"head\":\"nfs\",\"count\":1}\n"; r.stdout != want {
		t.Fatalf("run: stdout %q, want %q", r.stdout, want)
	}
	if !strings.Contains(r.stderr, "2 rows, 4 events scanned; result stream silt-system/query-") {
		t.Fatalf("run: stderr %q", r.stderr)
	}
	r = s.must(t, "", "query", "run", "--format", "csv", q)
	if want := "head,count\ns3,2\nnfs,1\n"; r.stdout != want {
		t.Fatalf("run csv: %q", r.stdout)
	}

	r = s.must(t, q, "query", "submit", "-f", "-")
	h := strings.TrimSpace(r.stdout)
	if len(h) != 32 {
		t.Fatalf("submit printed %q", r.stdout)
	}
	// The job is short; results waits for nothing, so poll status first.
	for state := ""; state != "succeeded"; {
		st := s.must(t, "", "query", "status", h)
		for _, line := range strings.Split(st.stdout, "\n") {
			if f := strings.Fields(line); len(f) == 2 && f[0] == "state" {
				state = f[1]
			}
		}
		if state != "running" && state != "succeeded" {
			t.Fatalf("status: %s", st.stdout)
		}
	}
	r = s.must(t, "", "query", "results", h, "--format", "csv")
	if r.stdout != "head,count\ns3,2\nnfs,1\n" {
		t.Fatalf("results: %q", r.stdout)
	}
	if l := s.must(t, "", "query", "list"); !strings.Contains(l.stdout, h) {
		t.Fatalf("list: %s", l.stdout)
	}

	bad := s.run(t, "", "query", "run", "from acme/clicks | stats cuont() by head")
	want := "silt: 400 bad_query: 1:26: unknown aggregate \"cuont\"; did you mean \"count\"?"
	caret := "  from acme/clicks | stats cuont() by head\n                           ^\n"
	if bad.code != 1 || !strings.Contains(bad.stderr, want) || !strings.HasSuffix(bad.stderr, caret) {
		t.Fatalf("bad query: exit %d, stderr %q", bad.code, bad.stderr)
	}
}
