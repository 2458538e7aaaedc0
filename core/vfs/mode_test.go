package vfs

import (
	"path/filepath"
	"testing"

	"github.com/silt-io/silt/internal/datadir/datadirtest"
)

// Segment logs and their directories are created through OS; they must
// be private to silt's user even under a umask that lets everything
// through.
func TestOSCreatesPrivate(t *testing.T) {
	datadirtest.Umask(t, 0)
	root := filepath.Join(t.TempDir(), "data")
	dir := filepath.Join(root, "logs", "acme", "clicks@1", "0")
	if err := MkdirAllDurable(OS{}, dir); err != nil {
		t.Fatal(err)
	}
	f, err := OS{}.Create(filepath.Join(dir, "00000000000000000000.log"))
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if files, dirs := datadirtest.AssertPrivate(t, root); files != 1 || dirs != 5 {
		t.Fatalf("checked %d files and %d directories, want 1 and 5", files, dirs)
	}
}
