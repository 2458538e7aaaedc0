// Package viewtest holds the conformance suite every view.View
// implementation runs, and an in-memory View for tests of the heads.
package viewtest

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"io"
	"path"
	"strings"
	"testing"

	"github.com/silt-io/silt/view"
)

// Fixture is what the View under test was loaded with. The View may show
// more (generated files such as manifests); the suite checks those too.
type Fixture struct {
	// Files maps the path of every file that must exist to its content.
	Files map[string][]byte
	// Dirs lists directories that must exist besides the parents of Files
	// (e.g. empty ones).
	Dirs []string
}

// RunViewSuite checks the invariants every View must keep. newView is
// called once per subtest and must return a View holding at least one file.
func RunViewSuite(t *testing.T, newView func(t *testing.T) (view.View, Fixture)) {
	t.Run("FixtureVisible", func(t *testing.T) {
		v, fx := newView(t)
		ctx := context.Background()
		if len(fx.Files) == 0 {
			t.Fatal("fixture needs at least one file")
		}
		for p, want := range fx.Files {
			fi, err := v.Stat(ctx, p)
			if err != nil {
				t.Fatalf("Stat(%s): %v", p, err)
			}
			if fi.IsDir || fi.Size != int64(len(want)) || fi.Name != path.Base(p) {
				t.Fatalf("Stat(%s) = %+v, want a file of %d bytes", p, fi, len(want))
			}
			if got := readAll(t, v, p); !bytes.Equal(got, want) {
				t.Fatalf("%s: content differs: got %d bytes, want %d", p, len(got), len(want))
			}
			for d := path.Dir(p); ; d = path.Dir(d) {
				mustDir(t, v, d)
				if d == "/" {
					break
				}
			}
		}
		for _, d := range fx.Dirs {
			mustDir(t, v, d)
		}
	})

	t.Run("WalkPagingStatAgree", func(t *testing.T) {
		v, fx := newView(t)
		ids := map[uint64]string{}
		seen := map[string]bool{}
		root := mustDir(t, v, "/")
		ids[root.ID] = "/"
		var walk func(dir string)
		walk = func(dir string) {
			all := listAll(t, v, dir, 1000)
			for _, limit := range []int{1, 2, 3} {
				if got := listAll(t, v, dir, limit); !sameInfos(got, all) {
					t.Fatalf("ReadDir(%s) paged by %d differs from one page: %v vs %v", dir, limit, names(got), names(all))
				}
			}
			for i, fi := range all {
				if i > 0 && all[i-1].Name >= fi.Name {
					t.Fatalf("ReadDir(%s) not strictly sorted: %q then %q", dir, all[i-1].Name, fi.Name)
				}
				if fi.Name == "" || strings.Contains(fi.Name, "/") {
					t.Fatalf("ReadDir(%s): bad name %q", dir, fi.Name)
				}
				p := view.Join(dir, fi.Name)
				st, err := v.Stat(context.Background(), p)
				if err != nil {
					t.Fatalf("Stat(%s) of a listed entry: %v", p, err)
				}
				if !sameInfo(st, fi) {
					t.Fatalf("Stat(%s) = %+v, ReadDir gave %+v", p, st, fi)
				}
				if fi.ID == 0 {
					t.Fatalf("%s has ID 0", p)
				}
				if other, dup := ids[fi.ID]; dup {
					t.Fatalf("%s and %s share ID %d", p, other, fi.ID)
				}
				ids[fi.ID] = p
				if fi.IsDir {
					if fi.ETag != "" {
						t.Fatalf("directory %s has ETag %q", p, fi.ETag)
					}
					walk(p)
					continue
				}
				seen[p] = true
				data := readAll(t, v, p)
				if int64(len(data)) != fi.Size {
					t.Fatalf("%s: read %d bytes, size says %d", p, len(data), fi.Size)
				}
				sum := md5.Sum(data)
				if fi.ETag != hex.EncodeToString(sum[:]) {
					t.Fatalf("%s: ETag %q is not the MD5 of its bytes (%x)", p, fi.ETag, sum)
				}
			}
			if len(all) > 0 {
				// after need not be an existing name.
				got, err := v.ReadDir(context.Background(), dir, all[0].Name+"\x00", 1000)
				if err != nil || !sameInfos(got, all[1:]) {
					t.Fatalf("ReadDir(%s, after %q+NUL) = %v, %v; want %v", dir, all[0].Name, names(got), err, names(all[1:]))
				}
				got, err = v.ReadDir(context.Background(), dir, all[len(all)-1].Name, 10)
				if err != nil || len(got) != 0 {
					t.Fatalf("ReadDir(%s) after the last name = %v, %v", dir, names(got), err)
				}
			}
		}
		walk("/")
		for p := range fx.Files {
			if !seen[p] {
				t.Fatalf("fixture file %s not reached by walking from /", p)
			}
		}
	})

	t.Run("ReadAtBounds", func(t *testing.T) {
		v, fx := newView(t)
		ctx := context.Background()
		for p, want := range fx.Files {
			f, err := v.Open(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			size := int64(len(want))
			if f.Size() != size {
				t.Fatalf("%s: Size() = %d, want %d", p, f.Size(), size)
			}
			buf := make([]byte, size+10)
			n, err := f.ReadAt(buf, 0)
			if int64(n) != size || !errors.Is(err, io.EOF) {
				t.Fatalf("%s: ReadAt past the end = %d, %v; want %d, io.EOF", p, n, err, size)
			}
			if n, err := f.ReadAt(buf[:1], size); n != 0 || !errors.Is(err, io.EOF) {
				t.Fatalf("%s: ReadAt(size) = %d, %v; want 0, io.EOF", p, n, err)
			}
			if n, err := f.ReadAt(buf[:1], size+100); n != 0 || !errors.Is(err, io.EOF) {
				t.Fatalf("%s: ReadAt beyond size = %d, %v; want 0, io.EOF", p, n, err)
			}
			if _, err := f.ReadAt(buf[:1], -1); err == nil {
				t.Fatalf("%s: ReadAt(-1) succeeded", p)
			}
			if size >= 2 {
				mid := size / 2
				n, err := f.ReadAt(buf[:size-mid-1], mid)
				if int64(n) != size-mid-1 || err != nil || !bytes.Equal(buf[:n], want[mid:size-1]) {
					t.Fatalf("%s: ReadAt inside = %d, %v", p, n, err)
				}
				n, err = f.ReadAt(buf[:size-mid], mid)
				if int64(n) != size-mid || (err != nil && !errors.Is(err, io.EOF)) {
					t.Fatalf("%s: ReadAt up to the end = %d, %v", p, n, err)
				}
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
		}
	})

	t.Run("Errors", func(t *testing.T) {
		v, fx := newView(t)
		ctx := context.Background()
		var file string
		for p := range fx.Files {
			file = p
			break
		}
		dir := path.Dir(file)
		is := func(what string, err error, targets ...error) {
			t.Helper()
			for _, target := range targets {
				if errors.Is(err, target) {
					return
				}
			}
			t.Fatalf("%s: got %v, want one of %v", what, err, targets)
		}
		missing := view.Join(dir, "no-such-entry.zz")
		_, err := v.Stat(ctx, missing)
		is("Stat missing", err, view.ErrNotFound)
		_, err = v.Stat(ctx, "/no-such-tenant-zz")
		is("Stat missing tenant", err, view.ErrNotFound)
		_, err = v.Open(ctx, missing)
		is("Open missing", err, view.ErrNotFound)
		_, err = v.ReadDir(ctx, missing, "", 10)
		is("ReadDir missing", err, view.ErrNotFound)
		_, err = v.ReadDir(ctx, file, "", 10)
		is("ReadDir of a file", err, view.ErrNotDir)
		_, err = v.Open(ctx, dir)
		is("Open of a dir", err, view.ErrIsDir)
		_, err = v.Open(ctx, "/")
		is("Open of the root", err, view.ErrIsDir)
		_, err = v.Stat(ctx, file+"/x")
		is("Stat below a file", err, view.ErrNotFound, view.ErrNotDir)
		for _, bad := range []string{"", "x", dir + "/", dir + "/./" + path.Base(file), dir + "/../" + path.Base(dir), "//"} {
			_, err = v.Stat(ctx, bad)
			is("Stat "+bad, err, view.ErrNotFound)
		}
	})
}

func mustDir(t *testing.T, v view.View, p string) view.FileInfo {
	t.Helper()
	fi, err := v.Stat(context.Background(), p)
	if err != nil {
		t.Fatalf("Stat(%s): %v", p, err)
	}
	if !fi.IsDir {
		t.Fatalf("Stat(%s) = %+v, want a directory", p, fi)
	}
	return fi
}

func listAll(t *testing.T, v view.View, dir string, limit int) []view.FileInfo {
	t.Helper()
	var out []view.FileInfo
	after := ""
	for {
		page, err := v.ReadDir(context.Background(), dir, after, limit)
		if err != nil {
			t.Fatalf("ReadDir(%s, %q, %d): %v", dir, after, limit, err)
		}
		if len(page) > limit {
			t.Fatalf("ReadDir(%s, %q, %d) returned %d entries", dir, after, limit, len(page))
		}
		for _, fi := range page {
			if fi.Name <= after {
				t.Fatalf("ReadDir(%s, after %q) returned %q", dir, after, fi.Name)
			}
		}
		out = append(out, page...)
		if len(page) < limit {
			return out
		}
		after = page[len(page)-1].Name
	}
}

func readAll(t *testing.T, v view.View, p string) []byte {
	t.Helper()
	f, err := v.Open(context.Background(), p)
	if err != nil {
		t.Fatalf("Open(%s): %v", p, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.NewSectionReader(f, 0, f.Size()))
	if err != nil {
		t.Fatalf("read %s: %v", p, err)
	}
	return data
}

func sameInfo(a, b view.FileInfo) bool {
	return a.Name == b.Name && a.Size == b.Size && a.IsDir == b.IsDir && a.ETag == b.ETag &&
		a.ID == b.ID && a.ModTime.Equal(b.ModTime)
}

func sameInfos(a, b []view.FileInfo) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !sameInfo(a[i], b[i]) {
			return false
		}
	}
	return true
}

func names(fis []view.FileInfo) []string {
	out := make([]string, len(fis))
	for i, fi := range fis {
		out[i] = fi.Name
	}
	return out
}
