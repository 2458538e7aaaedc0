package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/creack/pty"
)

// A second silt serve on a data dir in use names the first one's pid,
// whether or not it also wants the first one's ports.
func TestServeDataDirInUse(t *testing.T) {
	dir := t.TempDir()
	first := startServer(t, dir)
	for name, apiAddr := range map[string]string{
		"same ports":  strings.TrimPrefix(first.api, "http://"),
		"other ports": freeAddr(t),
	} {
		t.Run(name, func(t *testing.T) {
			r := runSilt(t, invocation{args: serveArgs(apiAddr), dir: dir})
			want := "data directory silt-data is in use by another silt serve (pid " + strconv.Itoa(first.cmd.Process.Pid) + "); stop it first or choose another --core.dir"
			if r.code != 1 || !strings.Contains(r.stderr, want) {
				t.Fatalf("exit %d, stderr %q; want %q", r.code, r.stderr, want)
			}
			if strings.Contains(r.stderr, "resource temporarily unavailable") {
				t.Fatalf("the catalog's lock error leaks: %q", r.stderr)
			}
		})
	}
	// The first server is unharmed.
	first.must(t, "", "tenant", "list")
}

// A port in use stops silt serve before it creates the data dir, the root
// token or any key.
func TestServePortClashCreatesNothing(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for name, flag := range map[string]string{
		"api":     "--api.listen",
		"s3":      "--s3.listen",
		"nfs":     "--nfs.listen",
		"webhdfs": "--webhdfs.listen",
		"kafka":   "--kafka.listen",
		"pprof":   "--runtime.pprof_listen",
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			args := append(serveArgs(freeAddr(t)), flag, busy.Addr().String(), "--dev-tls")
			r := runSilt(t, invocation{args: args, dir: dir})
			if r.code != 1 || !strings.Contains(r.stderr, "address already in use") {
				t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
			}
			if _, err := os.Stat(filepath.Join(dir, "silt-data")); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("a data dir was created (%v); stderr %q", err, r.stderr)
			}
		})
	}
}

// --delivery-timeout covers a server that refuses connections: append
// waits for a server that comes up, and gives up on one that does not
// only after retrying for the timeout.
func TestAppendRetriesRefusedConnections(t *testing.T) {
	t.Run("server stays down", func(t *testing.T) {
		addr := freeAddr(t) // nothing listens there
		r := runSilt(t, invocation{args: []string{"append", "acme/x", "--server", "http://" + addr, "--token", "silt_x", "--delivery-timeout", "3s"}, stdin: "e\n"})
		m := regexp.MustCompile(`not acknowledged within the delivery timeout \(3s, (\d+) attempts\)`).FindStringSubmatch(r.stderr)
		if r.code != 1 || m == nil {
			t.Fatalf("exit %d, stderr %q; want a delivery timeout", r.code, r.stderr)
		}
		// Before, the first request's own retries (within half a second)
		// were all: its error ended the append.
		if n, _ := strconv.Atoi(m[1]); n < 2 {
			t.Fatalf("gave up after %d attempts: %q", n, r.stderr)
		}
		if !strings.Contains(r.stderr, "is the server running?") {
			t.Fatalf("no hint at the server: %q", r.stderr)
		}
	})
	t.Run("server comes up", func(t *testing.T) {
		// The stream exists; its server is down (restarting, say) when
		// append starts.
		dir, addr := t.TempDir(), freeAddr(t)
		token := "silt_" + strings.Repeat("k", 40)
		srv := startServerAt(t, dir, addr, "--auth.root_token", token)
		srv.rootToken = token
		srv.must(t, "", "tenant", "create", "acme")
		srv.must(t, "", "stream", "create", "acme/x")
		srv.stop()
		cmd := exec.Command(siltBinary(t), "append", "acme/x", "--server", "http://"+addr, "--token", token, "--delivery-timeout", "5m")
		cmd.Env, cmd.Dir = cleanEnv(), dir
		cmd.Stdin = strings.NewReader("one\ntwo\n")
		stderr, _ := cmd.StderrPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer cmd.Process.Kill()
		// Wait until append has been refused, then start the server.
		sc := bufio.NewScanner(stderr)
		var seen []string
		for sc.Scan() {
			seen = append(seen, sc.Text())
			if strings.Contains(sc.Text(), "connection refused") {
				break
			}
		}
		if len(seen) == 0 || !strings.Contains(seen[len(seen)-1], "connection refused") {
			t.Fatalf("append did not report a refused connection: %q", seen)
		}
		srv = startServerAt(t, dir, addr, "--auth.root_token", token)
		srv.rootToken = token
		go io.Copy(io.Discard, stderr)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("append: %v (its stderr began %q)", err, seen)
		}
		if got := srv.must(t, "", "read", "acme/x").stdout; got != "one\ntwo\n" {
			t.Fatalf("read back %q", got)
		}
	})
}

// What the CLI prints: -o text, json and raw, for lines and framed
// streams, to a pipe and to a terminal; and errors said once.
func TestCLIOutput(t *testing.T) {
	s := startServer(t, t.TempDir())
	s.must(t, "", "tenant", "create", "acme")
	s.must(t, "", "stream", "create", "acme/lines")
	s.must(t, "", "stream", "create", "acme/bin", "--encoding", "framed")
	s.must(t, "a\nb\n", "append", "acme/lines")
	var framed bytes.Buffer
	for _, ev := range []string{"x\x1b[2J", "\x00\x01"} {
		binary.Write(&framed, binary.BigEndian, uint32(len(ev)))
		framed.WriteString(ev)
	}
	s.must(t, framed.String(), "append", "acme/bin", "--input", "framed")

	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"text":                     {[]string{"read", "acme/lines"}, "a\nb\n"},
		"raw lines":                {[]string{"read", "acme/lines", "-o", "raw"}, "a\nb\n"},
		"raw framed":               {[]string{"read", "acme/bin", "-o", "raw"}, framed.String()},
		"raw framed, -o first":     {[]string{"-o", "raw", "read", "acme/bin"}, framed.String()},
		"--format, old name of -o": {[]string{"read", "acme/bin", "--format", "raw"}, framed.String()},
	} {
		t.Run(name, func(t *testing.T) {
			r := s.must(t, "", tc.args...)
			if r.stdout != tc.want {
				t.Fatalf("stdout %q, want %q", r.stdout, tc.want)
			}
		})
	}
	t.Run("json", func(t *testing.T) {
		r := s.must(t, "", "read", "acme/bin", "-o", "json")
		var got []string
		dec := json.NewDecoder(strings.NewReader(r.stdout))
		for {
			var e struct{ Data []byte }
			if err := dec.Decode(&e); err == io.EOF {
				break
			} else if err != nil {
				t.Fatalf("%q: %v", r.stdout, err)
			}
			got = append(got, string(e.Data))
		}
		if len(got) != 2 || got[0] != "x\x1b[2J" || got[1] != "\x00\x01" {
			t.Fatalf("events %q", got)
		}
	})

	for name, tc := range map[string]struct {
		args     []string
		wantCode int
		want     string // in the terminal's output
		never    string
	}{
		"raw framed is refused":          {[]string{"read", "acme/bin", "-o", "raw"}, 2, "acme/bin is a framed stream: -o raw writes binary frames, not to a terminal", "\x1b[2J"},
		"text quotes control characters": {[]string{"read", "acme/bin"}, 0, `"x\x1b[2J"`, "\x1b[2J"},
		"text leaves text alone":         {[]string{"read", "acme/lines"}, 0, "a\r\nb\r\n", `"a"`},
	} {
		t.Run("terminal/"+name, func(t *testing.T) {
			code, out := s.onTerminal(t, "", tc.args...)
			if code != tc.wantCode || !strings.Contains(out, tc.want) || strings.Contains(out, tc.never) {
				t.Fatalf("exit %d, terminal shows %q; want exit %d and %q, never %q", code, out, tc.wantCode, tc.want, tc.never)
			}
		})
	}

	big := strings.Repeat("a", 2<<20) + "\n"
	for name, tc := range map[string]struct {
		args  []string
		stdin string
		once  string
		never []string
	}{
		"missing tenant":             {args: []string{"tenant", "get", "nope"}, once: `404 not found: tenant "nope"`, never: []string{"not_found"}},
		"append to a missing stream": {args: []string{"append", "acme/nope"}, stdin: "x\n", once: `not found: stream "nope"`, never: []string{"0 of 0", "not_found"}},
		"oversize event":             {args: []string{"append", "acme/lines"}, stdin: big, once: "max_event_bytes"},
	} {
		t.Run("error/"+name, func(t *testing.T) {
			r := s.run(t, tc.stdin, tc.args...)
			if r.code != 1 || strings.Count(r.stderr, tc.once) != 1 || strings.Count(r.stderr, "silt:") != 1 {
				t.Fatalf("exit %d, stderr %q; want %q said once, in one silt: message", r.code, r.stderr, tc.once)
			}
			for _, n := range tc.never {
				if strings.Contains(r.stderr, n) {
					t.Fatalf("stderr %q says %q", r.stderr, n)
				}
			}
		})
	}
}

// onTerminal runs a client verb with stdin, stdout and stderr on a pty,
// typing input, and returns its exit status and what the terminal showed.
func (s *siltServer) onTerminal(t *testing.T, input string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(siltBinary(t), args...)
	cmd.Env = append(cleanEnv(), "SILT_SERVER="+s.api, "TERM=dumb")
	cmd.Dir = s.dir
	tty, err := pty.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	if input != "" {
		tty.Write([]byte(input))
	}
	var out bytes.Buffer
	done := make(chan struct{})
	go func() { io.Copy(&out, tty); close(done) }()
	err = cmd.Wait()
	// The copy ends with EIO once the child's side of the terminal is
	// closed and its output drained; closing ours first could drop output
	// the copy had not read yet.
	<-done
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String()
}

// stream delete and tenant delete ask on a terminal; --yes, or input that
// is not a terminal, does not ask.
func TestCLIDeleteAsks(t *testing.T) {
	s := startServer(t, t.TempDir())
	s.must(t, "", "tenant", "create", "acme")
	exists := func(what string) bool {
		if strings.Contains(what, "/") {
			return s.run(t, "", "stream", "describe", what).code == 0
		}
		return s.run(t, "", "tenant", "get", what).code == 0
	}
	for name, tc := range map[string]struct {
		args     []string
		terminal bool
		answer   string
		deleted  bool
	}{
		"stream, answered no":      {[]string{"stream", "delete", "acme/s1"}, true, "n\n", false},
		"stream, answered nothing": {[]string{"stream", "delete", "acme/s2"}, true, "\n", false},
		"stream, answered yes":     {[]string{"stream", "delete", "acme/s3"}, true, "y\n", true},
		"stream, --yes":            {[]string{"stream", "delete", "acme/s4", "--yes"}, true, "", true},
		"stream, from a script":    {[]string{"stream", "delete", "acme/s5"}, false, "", true},
		"tenant, answered no":      {[]string{"tenant", "delete", "tn1"}, true, "no\n", false},
		"tenant, answered yes":     {[]string{"tenant", "delete", "tn2"}, true, "yes\n", true},
		"tenant, -y":               {[]string{"tenant", "delete", "tn3", "-y"}, true, "", true},
	} {
		t.Run(name, func(t *testing.T) {
			target := tc.args[2]
			if strings.Contains(target, "/") {
				s.must(t, "", "stream", "create", target)
			} else {
				s.must(t, "", "tenant", "create", target)
			}
			var code int
			var out string
			if tc.terminal {
				code, out = s.onTerminal(t, tc.answer, tc.args...)
			} else {
				r := s.run(t, "", tc.args...)
				code, out = r.code, r.stdout+r.stderr
			}
			asked := strings.Contains(out, "[y/N]")
			wantAsked := tc.terminal && !strings.HasPrefix(tc.args[len(tc.args)-1], "-")
			if asked != wantAsked {
				t.Fatalf("asked %v, want %v; output %q", asked, wantAsked, out)
			}
			if exists(target) == tc.deleted {
				t.Fatalf("%s exists: %v after %q; exit %d, output %q", target, !tc.deleted, tc.answer, code, out)
			}
			if (code == 0) != tc.deleted {
				t.Fatalf("exit %d, deleted %v; output %q", code, tc.deleted, out)
			}
		})
	}
}
