package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
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

	// A packaged query, run by name with a parameter.
	d := s.must(t, "", "query", "define", "errs", `from acme/clicks | where status >= $min | stats count() by head | sort head`)
	if !strings.Contains(d.stdout, "packaged query errs version 1 (parameters: min)") {
		t.Fatalf("define: %q", d.stdout)
	}
	r = s.must(t, "", "query", "run", "--name", "errs", "--param", "min=503")
	if r.stdout != "{\"head\":\"s3\",\"count\":1}\n" {
		t.Fatalf("run --name: %q", r.stdout)
	}
	if p := s.must(t, "", "query", "packaged"); !strings.Contains(p.stdout, "errs") || !strings.Contains(p.stdout, "min") {
		t.Fatalf("packaged: %s", p.stdout)
	}
	if u := s.run(t, "", "query", "run", "--param", "min=1", "from acme/clicks"); u.code != 2 {
		t.Fatalf("--param without --name: exit %d %q", u.code, u.stderr)
	}

	bad := s.run(t, "", "query", "run", "from acme/clicks | stats cuont() by head")
	want := "silt: 400 bad_query: 1:26: unknown aggregate \"cuont\"; did you mean \"count\"?"
	caret := "  from acme/clicks | stats cuont() by head\n                           ^\n"
	if bad.code != 1 || !strings.Contains(bad.stderr, want) || !strings.HasSuffix(bad.stderr, caret) {
		t.Fatalf("bad query: exit %d, stderr %q", bad.code, bad.stderr)
	}
}

// A query's result stream is a file over S3 once tiered, readable with
// the submitter's own S3 key: the read grant the job gave it holds on
// every head.
func TestQueryResultOverS3(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for tiering of a real server; runs in the full suite (make go-test)")
	}
	s3Addr := freeAddr(t)
	s := startServer(t, t.TempDir(), "--s3.listen", s3Addr,
		"--tiering.max_lag", "200ms", "--tiering.interval", "50ms")
	s.must(t, "", "tenant", "create", "acme")
	s.must(t, "", "stream", "create", "acme/clicks", "--segments", "2")
	s.must(t, "{\"user\":\"a\"}\n{\"user\":\"b\"}\n{\"user\":\"a\"}\n", "append", "acme/clicks")
	s.must(t, "", "principal", "create", "ann")
	s.must(t, "", "grant", "ann", "read", "acme/clicks")
	annToken := strings.TrimSpace(s.must(t, "", "token", "create", "ann").stdout)
	var key struct {
		ID     string `json:"access_key_id"`
		Secret string `json:"secret_access_key"`
	}
	if err := json.Unmarshal([]byte(s.must(t, "", "s3-key", "create", "ann", "-o", "json").stdout), &key); err != nil {
		t.Fatal(err)
	}

	r := runSilt(t, invocation{args: []string{"query", "run", "from acme/clicks | stats count() by user | sort user"},
		env: []string{"SILT_SERVER=" + s.api, "SILT_TOKEN=" + annToken}})
	want := "{\"user\":\"a\",\"count\":2}\n{\"user\":\"b\",\"count\":1}\n"
	if r.code != 0 || r.stdout != want {
		t.Fatalf("query as ann: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	i := strings.Index(r.stderr, "result stream silt-system/")
	if i < 0 {
		t.Fatalf("no result stream named: %q", r.stderr)
	}
	stream := strings.TrimSpace(r.stderr[i+len("result stream silt-system/"):])

	s3c := awss3.New(awss3.Options{
		Region: "us-east-1", BaseEndpoint: aws.String("http://" + s3Addr), UsePathStyle: true,
		Credentials:      credentials.NewStaticCredentialsProvider(key.ID, key.Secret, ""),
		RetryMaxAttempts: 1,
	})
	ctx := context.Background()
	// Tiering runs every 50 ms with a lag ceiling of 200 ms: poll until
	// the chunk is listed (the test's own timeout is the hang stop).
	var got string
	for got != want {
		out, err := s3c.ListObjectsV2(ctx, &awss3.ListObjectsV2Input{Bucket: aws.String("silt-system"), Prefix: aws.String(stream + "/")})
		if err != nil {
			t.Fatalf("list the result stream as ann: %v", err)
		}
		got = ""
		for _, o := range out.Contents {
			if strings.Contains(*o.Key, "/_") { // the manifest
				continue
			}
			obj, err := s3c.GetObject(ctx, &awss3.GetObjectInput{Bucket: aws.String("silt-system"), Key: o.Key})
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(obj.Body)
			obj.Body.Close()
			got += string(b)
		}
		if got != want {
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// A server killed with -9 while a query runs marks the job failed and
// interrupted when it starts again: never left running, never lost.
func TestQueryInterruptedByKill(t *testing.T) {
	if testing.Short() {
		t.Skip("appends a million events to a real server and kills it; runs in the full suite (make go-test)")
	}
	dir := t.TempDir()
	addr := freeAddr(t)
	s := startServerAt(t, dir, addr)
	s.must(t, "", "tenant", "create", "acme")
	s.must(t, "", "stream", "create", "acme/big", "--segments", "2")
	var b strings.Builder
	for i := range 1_000_000 {
		fmt.Fprintf(&b, "{\"k\":%d}\n", i)
	}
	s.must(t, b.String(), "append", "acme/big")

	// dcount over a million events keeps the job busy for seconds on
	// any machine; it is killed as soon as it has scanned something.
	h := strings.TrimSpace(s.must(t, "", "query", "submit", "from acme/big | stats dcount(k)").stdout)
	for {
		var j struct {
			State    string `json:"state"`
			Progress struct {
				EventsScanned int64 `json:"events_scanned"`
			} `json:"progress"`
		}
		if err := json.Unmarshal([]byte(s.must(t, "", "query", "status", h, "-o", "json").stdout), &j); err != nil {
			t.Fatal(err)
		}
		if j.State != "running" {
			t.Fatalf("the job ended (%s) before the kill; it needs more events to outlast a status poll", j.State)
		}
		if j.Progress.EventsScanned > 0 {
			break
		}
	}
	s.cmd.Process.Signal(syscall.SIGKILL)
	s.cmd.Wait()

	s = startServerAt(t, dir, addr)
	var j struct {
		State string `json:"state"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal([]byte(s.must(t, "", "query", "status", h, "-o", "json").stdout), &j); err != nil {
		t.Fatal(err)
	}
	if j.State != "failed" || !strings.HasPrefix(j.Error, "interrupted: the server stopped while the query ran") {
		t.Fatalf("after kill -9 and restart: %+v", j)
	}
	if r := s.run(t, "", "query", "results", h); r.code != 1 || !strings.Contains(r.stderr, "not_done") {
		t.Fatalf("results of the interrupted job: exit %d, stderr %q", r.code, r.stderr)
	}
}
