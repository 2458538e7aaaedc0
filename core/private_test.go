package core

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/silt-io/silt/internal/datadir/datadirtest"
)

// Everything the store creates — the data dir, the catalog, tier-1 logs
// and their directories — is private to silt's user under any umask.
func TestStoreCreatesPrivate(t *testing.T) {
	datadirtest.Umask(t, 0)
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "a", "data")
	s := openStore(t, dir)
	if _, err := s.CreateTenant(ctx, "acme", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateStream(ctx, "acme", "clicks", StreamConfig{Segments: 2}); err != nil {
		t.Fatal(err)
	}
	// Segment directories are made by a segment's first use: use both.
	for _, seg := range []string{"0", "1"} {
		if _, err := s.Append(ctx, AppendRequest{Tenant: "acme", Stream: "clicks", Segment: seg, Events: [][]byte{[]byte("e")}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	files, dirs := datadirtest.AssertPrivate(t, filepath.Dir(dir))
	// a, data, catalog, logs, logs/acme, the stream's dir, two segments.
	if dirs < 8 || files < 7 {
		t.Fatalf("checked %d directories and %d files; the store should have made at least 8 and 7", dirs, files)
	}
}
