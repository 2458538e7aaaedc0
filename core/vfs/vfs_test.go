package vfs

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// WriteVAt on the OS takes more buffers than one pwritev accepts and
// writes them in order at the offset, leaving bytes before it alone.
func TestOSWriteVAtManyBuffers(t *testing.T) {
	name := filepath.Join(t.TempDir(), "f")
	f, err := OS{}.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte("head:"), 0); err != nil {
		t.Fatal(err)
	}
	var bufs [][]byte
	var want bytes.Buffer
	want.WriteString("head:")
	for i := 0; i < 3*iovMax+7; i++ {
		b := []byte(fmt.Sprintf("%d,", i))
		if i%100 == 0 {
			b = nil // empty buffers are legal and write nothing
		}
		bufs = append(bufs, b)
		want.Write(b)
	}
	if err := f.WriteVAt(bufs, 5); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("file holds %d bytes, want %d; first difference near %q", len(got), want.Len(), got[:min(len(got), 40)])
	}
}

// A CrashFS vectored write is torn like any unsynced write: after a crash
// the file holds the synced bytes and at most a prefix of the rest.
func TestCrashFSWriteVAtIsUnsyncedUntilSync(t *testing.T) {
	fs := NewCrashFS()
	f, err := fs.Create("/f")
	if err != nil {
		t.Fatal(err)
	}
	if err := fs.SyncDir("/"); err != nil {
		t.Fatal(err)
	}
	if err := f.WriteVAt([][]byte{[]byte("ab"), []byte("cd")}, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.WriteVAt([][]byte{[]byte("ef"), []byte("gh")}, 4); err != nil {
		t.Fatal(err)
	}
	after := fs.Crash(nil)
	g, err := after.Open("/f")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	n, _ := g.ReadAt(buf, 0)
	if string(buf[:n]) != "abcd" {
		t.Fatalf("after a crash the file holds %q, want the synced %q", buf[:n], "abcd")
	}
}

// TestMkdirAllUnsynced: it reports the parents of the directories it
// made (those whose entries must be synced), nothing for a directory that
// exists, on the real filesystem (Exists) and on one without Stater (a
// listing of the parent).
func TestMkdirAllUnsynced(t *testing.T) {
	for name, fs := range map[string]FS{"os": OS{}, "listing": struct{ FS }{OS{}}} {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			got, err := MkdirAllUnsynced(fs, filepath.Join(root, "a", "b", "c"))
			if err != nil {
				t.Fatal(err)
			}
			want := []string{filepath.Join(root, "a", "b"), filepath.Join(root, "a"), root}
			if !slices.Equal(got, want) {
				t.Fatalf("changed %q, want %q", got, want)
			}
			if _, err := os.Stat(filepath.Join(root, "a", "b", "c")); err != nil {
				t.Fatal(err)
			}
			got, err = MkdirAllUnsynced(fs, filepath.Join(root, "a", "b", "d"))
			if err != nil || !slices.Equal(got, []string{filepath.Join(root, "a", "b")}) {
				t.Fatalf("sibling: changed %q, %v", got, err)
			}
			if got, err = MkdirAllUnsynced(fs, filepath.Join(root, "a")); err != nil || len(got) != 0 {
				t.Fatalf("existing: changed %q, %v", got, err)
			}
		})
	}
}
