package pidlock

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The helper process: takes the lock named by PIDLOCK_HELPER, says so on
// stdout and holds it until killed or its stdin closes.
func TestMain(m *testing.M) {
	if path := os.Getenv("PIDLOCK_HELPER"); path != "" {
		l, err := Acquire(path)
		if err != nil {
			os.Stdout.WriteString("error " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Stdout.WriteString("locked\n")
		var b [1]byte
		os.Stdin.Read(b[:])
		l.Close()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// holder is another process holding the lock.
type holder struct {
	cmd   *exec.Cmd
	stdin interface{ Close() error }
}

func startHolder(t *testing.T, path string) *holder {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "PIDLOCK_HELPER="+path)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "locked\n" {
		t.Fatalf("helper: %q, %v", line, err)
	}
	return &holder{cmd: cmd, stdin: in}
}

func TestAcquire(t *testing.T) {
	for name, tc := range map[string]func(t *testing.T, path string){
		"free file is taken and names this process": func(t *testing.T, path string) {
			l, err := Acquire(path)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			b, err := os.ReadFile(path)
			if err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(os.Getpid()) {
				t.Fatalf("lock file holds %q (%v), want this pid %d", b, err, os.Getpid())
			}
		},
		"second lock in this process names the holder": func(t *testing.T, path string) {
			l, err := Acquire(path)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			_, err = Acquire(path)
			var le *LockedError
			if !errors.As(err, &le) || !errors.Is(err, ErrLocked) || le.PID != os.Getpid() || le.Path != path {
				t.Fatalf("second Acquire: %v (%#v), want LockedError with pid %d", err, le, os.Getpid())
			}
		},
		"released lock is free again and emptied": func(t *testing.T, path string) {
			l, err := Acquire(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(path); len(b) != 0 {
				t.Fatalf("released lock file still holds %q", b)
			}
			l, err = Acquire(path)
			if err != nil {
				t.Fatalf("Acquire after Close: %v", err)
			}
			l.Close()
		},
		"another process holds it": func(t *testing.T, path string) {
			h := startHolder(t, path)
			_, err := Acquire(path)
			var le *LockedError
			if !errors.As(err, &le) || le.PID != h.cmd.Process.Pid {
				t.Fatalf("Acquire while pid %d holds the lock: %v", h.cmd.Process.Pid, err)
			}
			if !strings.Contains(err.Error(), strconv.Itoa(h.cmd.Process.Pid)) {
				t.Fatalf("error %q does not name the holder's pid", err)
			}
		},
		"a killed holder leaves it free": func(t *testing.T, path string) {
			h := startHolder(t, path)
			h.cmd.Process.Kill()
			h.cmd.Wait()
			// The dead holder's pid is still in the file; the lock is
			// what counts.
			l, err := Acquire(path)
			if err != nil {
				t.Fatalf("Acquire after the holder was killed: %v", err)
			}
			l.Close()
		},
		"stale pid of a longer number is overwritten": func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte("123456789012\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			l, err := Acquire(path)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			b, _ := os.ReadFile(path)
			if string(b) != strconv.Itoa(os.Getpid())+"\n" {
				t.Fatalf("lock file holds %q", b)
			}
		},
		"held lock with no pid written yet": func(t *testing.T, path string) {
			l, err := Acquire(path)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if err := os.Truncate(path, 0); err != nil {
				t.Fatal(err)
			}
			_, err = Acquire(path)
			var le *LockedError
			if !errors.As(err, &le) || le.PID != 0 || strings.Contains(err.Error(), "pid 0") {
				t.Fatalf("Acquire with an empty lock file: %v", err)
			}
		},
		"a symlink is not followed": func(t *testing.T, path string) {
			victim := filepath.Join(filepath.Dir(path), "victim")
			if err := os.WriteFile(victim, []byte("precious"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(victim, path); err != nil {
				t.Fatal(err)
			}
			if l, err := Acquire(path); err == nil {
				l.Close()
				t.Fatal("Acquire took a lock through a symlink")
			}
			if b, _ := os.ReadFile(victim); string(b) != "precious" {
				t.Fatalf("the symlink's target was changed to %q", b)
			}
		},
		"missing directory": func(t *testing.T, path string) {
			_, err := Acquire(filepath.Join(path, "nodir", "lock"))
			if !errors.Is(err, os.ErrNotExist) || errors.Is(err, ErrLocked) {
				t.Fatalf("Acquire in a missing directory: %v", err)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			tc(t, filepath.Join(t.TempDir(), "silt.pid"))
		})
	}
}
