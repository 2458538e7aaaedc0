package tlsconf

import (
	"path/filepath"
	"testing"

	"github.com/silt-io/silt/internal/datadir/datadirtest"
)

// `silt serve --dev-tls` generates into <core.dir>/tls, which is part of
// the data dir and as private as the rest of it: the keys for their own
// sake, the certificates so that the directory holds nothing that the
// start-up permission check would have to excuse.
func TestGenerateDevPrivate(t *testing.T) {
	datadirtest.Umask(t, 0)
	root := filepath.Join(t.TempDir(), "data")
	if _, _, _, err := GenerateDev(filepath.Join(root, "tls"), nil); err != nil {
		t.Fatal(err)
	}
	if files, dirs := datadirtest.AssertPrivate(t, root); files != 4 || dirs != 2 {
		t.Fatalf("checked %d files and %d directories, want 4 and 2", files, dirs)
	}
}
