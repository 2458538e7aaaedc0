package wal_test

import (
	"testing"

	"github.com/silt-io/silt/core/vfs"
	"github.com/silt-io/silt/core/wal"
	"github.com/silt-io/silt/core/wal/waltest"
)

// TestFilesContract runs the backend contract against local files, rolled
// every 1,000 bytes so that truncation removes some.
func TestFilesContract(t *testing.T) {
	waltest.RunBackendSuite(t, func(t *testing.T) waltest.Open {
		dir := t.TempDir()
		return func(t *testing.T) wal.Backend {
			b, err := wal.OpenFiles(wal.FilesOptions{FS: vfs.OS{}, Dir: dir, FileBytes: 1000})
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
	})
}
