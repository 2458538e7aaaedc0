package datadir

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	"golang.org/x/sys/unix"
)

// withUmask sets the process umask until the test ends (no t.Parallel in
// this package: the umask is per process).
func withUmask(t *testing.T, mask int) {
	old := unix.Umask(mask)
	t.Cleanup(func() { unix.Umask(old) })
}

func TestRestrictUmask(t *testing.T) {
	withUmask(t, 0)
	if old := RestrictUmask(); old != 0 {
		t.Fatalf("RestrictUmask returned %04o, want the 0 set before", old)
	}
	dir := t.TempDir()
	// os.Create and os.MkdirAll ask for 0666 and 0777, as libraries do.
	f, err := os.Create(filepath.Join(dir, "lib-file"))
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.MkdirAll(filepath.Join(dir, "lib-dir"), 0o777); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]os.FileMode{"lib-file": 0o600, "lib-dir": 0o700} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s created with mode %04o under RestrictUmask, want %04o", name, fi.Mode().Perm(), want)
		}
	}
}

func TestExposed(t *testing.T) {
	withUmask(t, 0)
	type node struct {
		path string // relative to the root; "" is the root itself
		dir  bool
		mode os.FileMode
	}
	tests := []struct {
		name  string
		nodes []node
		want  []string // exposed paths, relative
	}{
		{
			name:  "all private",
			nodes: []node{{"", true, 0o700}, {"catalog", true, 0o700}, {"catalog/000001.log", false, 0o600}, {"root.token", false, 0o600}},
		},
		{
			name:  "root searchable by others",
			nodes: []node{{"", true, 0o711}, {"root.token", false, 0o600}},
			want:  []string{""},
		},
		{
			name:  "created under umask 022",
			nodes: []node{{"", true, 0o755}, {"logs", true, 0o755}, {"logs/0.log", false, 0o644}, {"keys", true, 0o700}, {"keys/nfs-handle.key", false, 0o600}},
			want:  []string{"", "logs", "logs/0.log"},
		},
		{
			name:  "group readable file in a private dir",
			nodes: []node{{"", true, 0o700}, {"tier2", true, 0o700}, {"tier2/a.txt", false, 0o640}},
			want:  []string{"tier2/a.txt"},
		},
		{
			name:  "writable by others only",
			nodes: []node{{"", true, 0o700}, {"x", false, 0o602}},
			want:  []string{"x"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "data")
			for _, n := range tc.nodes {
				p := filepath.Join(root, n.path)
				var err error
				if n.dir {
					err = os.Mkdir(p, n.mode)
				} else {
					err = os.WriteFile(p, []byte("x"), n.mode)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			got, err := Exposed(context.Background(), root)
			if err != nil {
				t.Fatal(err)
			}
			var rel []string
			for _, e := range got {
				r, _ := filepath.Rel(root, e.Path)
				if r == "." {
					r = ""
				}
				rel = append(rel, r)
			}
			if !slices.Equal(rel, tc.want) {
				t.Fatalf("Exposed = %q, want %q", rel, tc.want)
			}
		})
	}
}

func TestExposedMissingDirAndSymlink(t *testing.T) {
	got, err := Exposed(context.Background(), filepath.Join(t.TempDir(), "nosuch"))
	if err != nil || len(got) != 0 {
		t.Fatalf("missing dir: %v, %v; want nothing", got, err)
	}
	root := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(root, 0o700); err != nil {
		t.Fatal(err)
	}
	// A link's own mode is always 0777 and means nothing; what it points
	// to, outside the data dir, is the operator's business.
	if err := os.Symlink("/etc/hostname", filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	got, err = Exposed(context.Background(), root)
	if err != nil || len(got) != 0 {
		t.Fatalf("dir with a symlink: %v, %v; want nothing", got, err)
	}
}

func TestWarn(t *testing.T) {
	withUmask(t, 0)
	root := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(root, 0o700); err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zap.WarnLevel)
	if err := Warn(context.Background(), zap.New(core), "data directory", root); err != nil {
		t.Fatal(err)
	}
	if logs.Len() != 0 {
		t.Fatalf("private dir: %d warnings, want none", logs.Len())
	}
	for i := range 8 {
		if err := os.WriteFile(filepath.Join(root, "f"+string(rune('a'+i))), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := Warn(context.Background(), zap.New(core), "data directory", root); err != nil {
		t.Fatal(err)
	}
	if logs.Len() != 1 {
		t.Fatalf("%d warnings for one exposed dir, want 1", logs.Len())
	}
	e := logs.All()[0]
	f := e.ContextMap()
	if f["path"] != root || f["mode"] != "0644" || f["exposed_entries"] != int64(8) || f["fix"] != "chmod -R go-rwx "+root {
		t.Fatalf("warning fields = %v", f)
	}
	if ex, _ := f["examples"].([]any); len(ex) != maxExamples || !strings.HasSuffix(ex[0].(string), "fa (0644)") {
		t.Fatalf("examples = %v, want %d paths with modes", f["examples"], maxExamples)
	}
	if !strings.Contains(e.Message, "readable by other OS users") {
		t.Fatalf("message %q does not say what is wrong", e.Message)
	}
	// Warn only reports: the operator's files keep their modes.
	fi, err := os.Stat(filepath.Join(root, "fa"))
	if err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("Warn changed a mode: %v %v", fi.Mode(), err)
	}
}

func TestLoadOrCreateKey(t *testing.T) {
	withUmask(t, 0)
	dir := t.TempDir()
	path := filepath.Join(dir, "keys", "secrets.key")
	key, created, err := LoadOrCreateKey(path)
	if err != nil || !created || len(key) != KeySize {
		t.Fatalf("first call: %d bytes, created %v, %v", len(key), created, err)
	}
	for p, want := range map[string]os.FileMode{path: FileMode, filepath.Dir(path): DirMode} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s mode %04o under umask 0, want %04o", p, fi.Mode().Perm(), want)
		}
	}
	again, created, err := LoadOrCreateKey(path)
	if err != nil || created || !bytes.Equal(again, key) {
		t.Fatalf("second call: created %v, same key %v, %v", created, bytes.Equal(again, key), err)
	}
	if err := os.WriteFile(path, []byte("short"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadOrCreateKey(path); err == nil || !strings.Contains(err.Error(), "holds 5 bytes") {
		t.Fatalf("truncated key file: %v, want an error naming its size", err)
	}
}

// A temp file left by a crash, with whatever mode an older version gave
// it, must not lend that mode to the new file.
func TestWriteFileAtomicReplacesLeftoverTemp(t *testing.T) {
	withUmask(t, 0)
	path := filepath.Join(t.TempDir(), "root.token")
	if err := os.WriteFile(path+".tmp", []byte("old content, longer than the new"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(path, []byte("new")); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != FileMode {
		t.Fatalf("mode %04o, want %04o", fi.Mode().Perm(), FileMode)
	}
	if b, _ := os.ReadFile(path); string(b) != "new" {
		t.Fatalf("content %q, want %q", b, "new")
	}
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Fatalf("temp file left behind: %v", err)
	}
}

func TestExposedStopsWithContext(t *testing.T) {
	root := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(filepath.Join(root, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Exposed(ctx, root); !errors.Is(err, context.Canceled) {
		t.Fatalf("Exposed with an ended context = %v, want context.Canceled", err)
	}
}
