package tiering

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

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

// The s3 backend stages nothing on tier 1's disk (tiering must drain a
// full one): an upload in progress, multipart part included, leaves no
// file under the data dir, and the staging directory of an older release
// is removed at open.
func TestS3UploadStagesNothingOnTier1(t *testing.T) {
	m := startMoto(t)
	if _, err := m.client.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String("staging")}); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	old := filepath.Join(root, "s3-upload")
	if err := os.MkdirAll(old, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(old, "upload-123"), make([]byte, 4096), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Backend, cfg.S3 = "s3", m.config("staging", "")
	be, err := OpenBackend(cfg, root)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(old); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("an older release's staging directory survived the open: %v", err)
	}
	w, err := be.Create(context.Background(), "t/s/segment=0/a")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	// A part and a half: one part is sent, the rest is buffered.
	if _, err := w.Write(randomBytes(minS3PartSize + minS3PartSize/2)); err != nil {
		t.Fatal(err)
	}
	if u := m.uploads(t, "staging"); u != 1 {
		t.Fatalf("%d multipart uploads in progress, want the one whose first part was sent", u)
	}
	var files []string
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if p != root {
			files = append(files, p)
		}
		return err
	})
	if len(files) != 0 {
		t.Fatalf("an upload in progress left files on tier 1: %v", files)
	}
	if err := w.Finish(); err != nil {
		t.Fatal(err)
	}
}
