package main

import (
	"bufio"
	"encoding/json"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestCLITopOnce: silt top --once -o json samples twice and prints one
// frame: a stream appended to all along has a rate above zero, an idle one
// zero and its exact event count, and a group's lag is exact.
func TestCLITopOnce(t *testing.T) {
	s := startServer(t, t.TempDir())
	s.must(t, "", "tenant", "create", "acme")
	s.must(t, "", "stream", "create", "acme/busy", "--segments", "2")
	s.must(t, "", "stream", "create", "acme/idle")
	s.must(t, "a\nb\nc\nd\ne\n", "append", "acme/idle")
	s.must(t, "", "group", "create", "acme/billing", "--stream", "idle")
	s.must(t, "", "read", "acme", "--group", "billing", "--max", "2")

	// Appends to acme/busy go on for as long as top runs.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			s.must(t, "x\ny\n", "append", "acme/busy")
		}
	}()
	r := s.must(t, "", "top", "acme", "--once", "--interval", "500ms", "-o", "json")
	close(stop)
	wg.Wait()

	var f topFrame
	if err := json.Unmarshal([]byte(r.stdout), &f); err != nil || strings.Count(strings.TrimSpace(r.stdout), "\n") != 0 {
		t.Fatalf("top --once -o json printed %q (%v), want one JSON object", r.stdout, err)
	}
	if len(f.Streams) != 2 || f.Streams[0].Stream != "busy" || f.Streams[0].EventsPerSec <= 0 {
		t.Fatalf("streams %+v, want busy first with a rate above 0", f.Streams)
	}
	if idle := f.Streams[1]; idle.Stream != "idle" || idle.Events != 5 || idle.EventsPerSec != 0 {
		t.Fatalf("idle stream %+v, want 5 events at 0/s", idle)
	}
	if len(f.Groups) != 1 || f.Groups[0].Group != "billing" || f.Groups[0].EventsBehind != 3 || f.Groups[0].EventsPerSec != 0 {
		t.Fatalf("groups %+v, want billing 3 events behind, committing nothing", f.Groups)
	}
	if f.Interval <= 0 {
		t.Fatalf("interval %v", f.Interval)
	}

	// Text, not on a terminal: -n 2 appends two tables, each after its time.
	txt := s.must(t, "", "top", "acme", "-n", "2", "--interval", "100ms").stdout
	if n := strings.Count(txt, "busiest streams"); n != 2 || strings.Contains(txt, "\x1b[") {
		t.Fatalf("top -n 2 printed %d tables (want 2, appended, no escape codes):\n%s", n, txt)
	}
	for _, bad := range [][]string{{"top", "--interval", "0s"}, {"top", "-n", "-1"}, {"top", "--once", "-n", "3"}, {"top", "--limit", "0"}} {
		if r := s.run(t, "", bad...); r.code != 2 {
			t.Errorf("silt %q: exit %d, want 2 (usage)\n%s", bad, r.code, r.stderr)
		}
	}
}

// TestCLIGroupLagWatch: --watch refreshes the lag table, appending when
// stdout is not a terminal, and Ctrl-C ends it with exit status 0.
func TestCLIGroupLagWatch(t *testing.T) {
	s := startServer(t, t.TempDir())
	s.must(t, "", "tenant", "create", "acme")
	s.must(t, "", "stream", "create", "acme/orders")
	s.must(t, "1\n2\n3\n", "append", "acme/orders")
	s.must(t, "", "group", "create", "acme/billing", "--stream", "orders")
	out := s.must(t, "", "group", "lag", "acme/billing", "--watch", "--interval", "50ms", "-n", "3").stdout
	if n := strings.Count(out, "EVENTS BEHIND"); n != 3 {
		t.Fatalf("--watch -n 3 printed %d tables:\n%s", n, out)
	}
	js := s.must(t, "", "group", "lag", "acme/billing", "--watch", "--interval", "50ms", "-n", "2", "-o", "json").stdout
	lines := strings.Split(strings.TrimSpace(js), "\n")
	for _, l := range lines {
		var v struct {
			EventsBehind uint64 `json:"events_behind"`
		}
		if err := json.Unmarshal([]byte(l), &v); err != nil || v.EventsBehind != 3 {
			t.Fatalf("line %q: %+v, %v", l, v, err)
		}
	}
	if len(lines) != 2 {
		t.Fatalf("-o json --watch -n 2 printed %d lines", len(lines))
	}
	if r := s.run(t, "", "group", "lag", "acme/billing", "--interval", "1s"); r.code != 2 {
		t.Fatalf("--interval without --watch: exit %d", r.code)
	}

	// Until Ctrl-C: SIGINT after the first table, exit 0.
	cmd := exec.Command(siltBinary(t), "group", "lag", "acme/billing", "--watch", "--interval", "50ms")
	cmd.Env = append(cleanEnv(), "SILT_SERVER="+s.api, "SILT_TOKEN="+s.token)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() && !strings.HasPrefix(sc.Text(), "total") {
	}
	cmd.Process.Signal(syscall.SIGINT)
	go func() {
		for sc.Scan() {
		}
	}()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("--watch after Ctrl-C: %v, want exit 0", err)
		}
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		t.Fatal("timed out waiting for --watch to end after SIGINT")
	}
}
