// Package datadirtest helps tests check that what a package creates in a
// data directory is private to silt's user whatever the process umask.
package datadirtest

import (
	"io/fs"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/silt-io/silt/internal/datadir"
)

// Umask sets the process umask to mask until the test ends. The umask is
// process-wide, so a test that sets it must not run in parallel with
// others. Tests set 0 so that only explicit modes protect the files.
func Umask(t testing.TB, mask int) {
	t.Helper()
	old := unix.Umask(mask)
	t.Cleanup(func() { unix.Umask(old) })
}

// AssertPrivate fails t for every directory under root (root included)
// whose permissions are not 0700 and every regular file whose permissions
// are not 0600. It returns how many of each it checked, so that a caller
// can make sure the files it meant to check were there.
func AssertPrivate(t testing.TB, root string) (files, dirs int) {
	t.Helper()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			dirs++
			if info.Mode().Perm() != datadir.DirMode {
				t.Errorf("directory %s has mode %04o, want %04o", p, info.Mode().Perm(), datadir.DirMode)
			}
		case info.Mode().IsRegular():
			files++
			if info.Mode().Perm() != datadir.FileMode {
				t.Errorf("file %s has mode %04o, want %04o", p, info.Mode().Perm(), datadir.FileMode)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", root, err)
	}
	return files, dirs
}
