package catalog

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/silt-io/silt/internal/datadir/datadirtest"
)

// pebble creates its files 0666 and directories 0755 and leaves the rest
// to the umask; the catalog holds principals, grants and S3 key records,
// so it must be private whatever the umask.
func TestCatalogFilesPrivate(t *testing.T) {
	datadirtest.Umask(t, 0)
	dir := filepath.Join(t.TempDir(), "data", "catalog")
	c, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	// Enough data, a flush and a compaction: WAL, tables, manifest,
	// options, markers and the lock file all exist by then.
	val := bytes.Repeat([]byte("v"), 1<<10)
	for i := range 2000 {
		if err := c.Set(fmt.Sprintf("k/%06d", i), val); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.CompactPrefix("k/"); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	// Reopening replays, rotates and deletes files again.
	if c, err = Open(dir); err != nil {
		t.Fatal(err)
	}
	if err := c.Set("k/last", val); err != nil {
		t.Fatal(err)
	}
	files, _ := datadirtest.AssertPrivate(t, filepath.Dir(dir))
	c.Close()
	if files < 5 {
		t.Fatalf("checked only %d files; the catalog should hold a WAL, tables, a manifest, options and a lock", files)
	}
}

// CompactPrefix leaves no earlier value of a key under the prefix in any
// file, as it was written by an earlier process: what the acl package
// relies on when it replaces clear S3 secrets with sealed ones.
func TestCompactPrefixDropsOverwrittenValues(t *testing.T) {
	dir := t.TempDir()
	old := []byte("old-value-7bd9e1c2f0a84d3b")
	c, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"acl/s3/A", "acl/s3/B"} {
		if err := c.Set(k, old); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Set("other/x", []byte("kept")); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if n := filesContaining(t, dir, old); n == 0 {
		t.Fatal("the old value is in no file even before compaction: the check below would prove nothing")
	}
	if c, err = Open(dir); err != nil {
		t.Fatal(err)
	}
	if err := c.Commit(map[string][]byte{"acl/s3/A": []byte("new")}, []string{"acl/s3/B"}); err != nil {
		t.Fatal(err)
	}
	if err := c.CompactPrefix("acl/s3/"); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if n := filesContaining(t, dir, old); n != 0 {
		t.Fatalf("%d catalog files still hold the overwritten value", n)
	}
	if c, err = Open(dir); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if v, ok, _ := c.Get([]byte("acl/s3/A")); !ok || string(v) != "new" {
		t.Fatalf("acl/s3/A = %q %v after compaction, want new", v, ok)
	}
	if _, ok, _ := c.Get([]byte("acl/s3/B")); ok {
		t.Fatal("deleted key back after compaction")
	}
	if v, ok, _ := c.Get([]byte("other/x")); !ok || string(v) != "kept" {
		t.Fatalf("other/x = %q %v, want kept", v, ok)
	}
}

func filesContaining(t *testing.T, dir string, needle []byte) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(b, needle) {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
