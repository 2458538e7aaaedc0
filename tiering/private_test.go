package tiering

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/silt-io/silt/internal/datadir/datadirtest"
)

// The fs backend's directories, chunk objects, manifests and unfinished
// uploads are private to silt's user under any umask, and a temp file an
// older version left behind with a wider mode does not pass that mode on.
func TestFSBackendCreatesPrivate(t *testing.T) {
	datadirtest.Umask(t, 0)
	root := filepath.Join(t.TempDir(), "data")
	b, err := OpenFS(filepath.Join(root, "tier2"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	put := func(key string) {
		t.Helper()
		w, err := b.Create(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
		if err := w.Finish(); err != nil {
			t.Fatal(err)
		}
	}
	put("t/s/segment=0/a")
	put("t/s/" + ManifestName)
	leftover := filepath.Join(root, "tier2", "t", "s", "segment=0", tempPrefix+"b")
	if err := os.WriteFile(leftover, []byte("from a crashed upload"), 0o644); err != nil {
		t.Fatal(err)
	}
	put("t/s/segment=0/b")
	unfinished, err := b.Create(ctx, "t/s2/segment=0/c")
	if err != nil {
		t.Fatal(err)
	}
	defer unfinished.Abort()
	// data, tier2, t, t/s, its segment, t/s2, its segment; three objects
	// and the unfinished upload.
	if files, dirs := datadirtest.AssertPrivate(t, root); files != 4 || dirs != 7 {
		t.Fatalf("checked %d files and %d directories, want 4 and 7", files, dirs)
	}
}

// The s3 backend buffers parts in <core.dir>/s3-upload: the tenants'
// events again, so the directory and its part files are private too.
func TestS3UploadBuffersPrivate(t *testing.T) {
	datadirtest.Umask(t, 0)
	root := filepath.Join(t.TempDir(), "data")
	c := DefaultConfig().S3
	// Never contacted: creating an upload and aborting it before its
	// first part do no network I/O.
	c.Endpoint, c.Bucket, c.PathStyle = "http://127.0.0.1:1", "b", true
	c.AccessKeyID, c.SecretAccessKey = "test", "test"
	b, err := OpenS3(c, filepath.Join(root, "s3-upload"))
	if err != nil {
		t.Fatal(err)
	}
	w, err := b.Create(context.Background(), "t/s/segment=0/a")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	if _, err := w.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if files, dirs := datadirtest.AssertPrivate(t, root); files != 1 || dirs != 2 {
		t.Fatalf("checked %d files and %d directories, want 1 and 2", files, dirs)
	}
}
