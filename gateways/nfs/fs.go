package nfs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"syscall"
	"time"

	billy "github.com/go-git/go-billy/v5"
	"github.com/willscott/go-nfs/file"
	"go.uber.org/zap"

	"github.com/silt-io/silt/view"
)

// viewFS is the billy.Filesystem go-nfs serves for one export: a
// read-only window on the export's principal's view, rooted at the
// export path. It implements billy.Capable without WriteCapability, which
// is what makes go-nfs answer mutating procedures with NFS3ERR_ROFS; the
// mutators below exist only to satisfy the interface.
type viewFS struct {
	ctx context.Context
	v   view.View // already acl.Wrap'ed for principal
	exp int       // index into Server.exports
	// principal is whom this file system serves: one of the export's
	// principals (Export.principals).
	principal string
	root      string // view path of the export root
	// base is the mounted subtree below root. go-nfs asks only for the
	// root handle of a mount's filesystem; handles are always encoded
	// relative to the export root, so base is prepended there.
	base []string
	// encode makes the handle of a path below root; Stat uses it to
	// refuse entries whose handle would not fit.
	encode func(full []string) ([]byte, error)
	// files keeps recently read files open (see openfiles.go); shared by
	// all viewFS of a Server.
	files *openFiles
	log   *zap.Logger
}

// fail turns a view error into what go-nfs expects, logging the causes
// that the NFS status alone would hide.
func (f *viewFS) fail(op, p string, err error) error {
	pe := pathErr(op, p, err)
	if errors.Is(pe, syscall.EIO) && f.log != nil {
		f.log.Warn("nfs: view error", zap.String("op", op), zap.String("path", p), zap.Error(err))
	}
	return pe
}

var (
	_ billy.Filesystem = (*viewFS)(nil)
	_ billy.Capable    = (*viewFS)(nil)
)

// Capabilities reports a read-only filesystem.
func (f *viewFS) Capabilities() billy.Capability {
	return billy.ReadCapability | billy.SeekCapability
}

// viewPath turns a go-nfs path (elements joined by Join, relative to the
// filesystem) into a clean view path.
func (f *viewFS) viewPath(name string) string {
	rel := f.relPath(name)
	if f.root == "/" {
		return rel
	}
	if rel == "/" {
		return f.root
	}
	return f.root + rel
}

// relPath is name below the export root, as a clean absolute path.
func (f *viewFS) relPath(name string) string {
	return path.Clean("/" + strings.Join(f.base, "/") + "/" + name)
}

// Join joins path elements; go-nfs calls it with no elements for the root.
func (f *viewFS) Join(elem ...string) string { return path.Join(elem...) }

// Stat describes name.
func (f *viewFS) Stat(name string) (os.FileInfo, error) {
	p := f.viewPath(name)
	if rel := f.relPath(name); rel != "/" && f.encode != nil {
		if _, err := f.encode(strings.Split(rel[1:], "/")); err != nil {
			return nil, f.fail("stat", p, fmt.Errorf("%w: %w", errNameTooLong, err))
		}
	}
	fi, err := f.v.Stat(f.ctx, p)
	if err != nil {
		return nil, f.fail("stat", p, err)
	}
	return fileInfo{fi}, nil
}

// Lstat is Stat: the view has no symbolic links.
func (f *viewFS) Lstat(name string) (os.FileInfo, error) { return f.Stat(name) }

// ReadDir lists a whole directory, page by page. go-nfs needs the full
// listing to resolve its index-based cookies.
func (f *viewFS) ReadDir(name string) ([]os.FileInfo, error) {
	p := f.viewPath(name)
	var out []os.FileInfo
	after := ""
	for {
		page, err := f.v.ReadDir(f.ctx, p, after, view.DefaultPageSize)
		if err != nil {
			return nil, f.fail("readdir", p, err)
		}
		for _, fi := range page {
			out = append(out, fileInfo{fi})
		}
		if len(page) < view.DefaultPageSize {
			return out, nil
		}
		after = page[len(page)-1].Name
	}
}

// Open opens name for reading, from the open-file cache if it is there.
// The file's attributes come with it (roFile.Stat), so that READ needs
// no view call at all while the file stays cached.
func (f *viewFS) Open(name string) (billy.File, error) {
	p := f.viewPath(name)
	k := openKey{f.exp, f.principal, p}
	if f.files != nil {
		if of := f.files.get(k); of != nil {
			return &roFile{name: name, f: of.f, shared: of, files: f.files}, nil
		}
	}
	fi, err := f.v.Stat(f.ctx, p)
	if err != nil {
		return nil, f.fail("open", p, err)
	}
	vf, err := f.v.Open(f.ctx, p)
	if err != nil {
		return nil, f.fail("open", p, err)
	}
	// The size is the open file's: a generated file may have changed
	// between Stat and Open.
	fi.Size = vf.Size()
	if f.files == nil {
		return &roFile{name: name, f: vf, shared: &openFile{f: vf, info: fi, refs: 1, dead: true}}, nil
	}
	of := f.files.put(k, vf, fi)
	return &roFile{name: name, f: vf, shared: of, files: f.files}, nil
}

// OpenFile opens name if flag asks for reading only.
func (f *viewFS) OpenFile(name string, flag int, _ os.FileMode) (billy.File, error) {
	if flag&(os.O_WRONLY|os.O_RDWR|os.O_CREATE|os.O_TRUNC|os.O_APPEND) != 0 {
		return nil, roErr("open", f.viewPath(name))
	}
	return f.Open(name)
}

// Chroot is refused: exports, not clients, decide the roots.
func (f *viewFS) Chroot(p string) (billy.Filesystem, error) {
	return nil, &os.PathError{Op: "chroot", Path: p, Err: errors.ErrUnsupported}
}

// Root returns the view path of the filesystem root.
func (f *viewFS) Root() string { return f.viewPath("") }

// Readlink fails: there are no links.
func (f *viewFS) Readlink(link string) (string, error) {
	return "", &os.PathError{Op: "readlink", Path: link, Err: os.ErrInvalid}
}

func (f *viewFS) Create(name string) (billy.File, error) { return nil, roErr("create", name) }
func (f *viewFS) Rename(from, _ string) error            { return roErr("rename", from) }
func (f *viewFS) Remove(name string) error               { return roErr("remove", name) }
func (f *viewFS) MkdirAll(name string, _ os.FileMode) error {
	return roErr("mkdir", name)
}
func (f *viewFS) Symlink(_, link string) error { return roErr("symlink", link) }
func (f *viewFS) TempFile(dir, _ string) (billy.File, error) {
	return nil, roErr("tempfile", dir)
}

// fileInfo adapts a view entry to what go-nfs turns into fattr3.
type fileInfo struct{ fi view.FileInfo }

func (i fileInfo) Name() string       { return i.fi.Name }
func (i fileInfo) Size() int64        { return i.fi.Size }
func (i fileInfo) ModTime() time.Time { return i.fi.ModTime }
func (i fileInfo) IsDir() bool        { return i.fi.IsDir }

// Mode is the permission bits only, even for directories: go-nfs copies
// Mode() into the NFS mode word verbatim, and Go's ModeDir bit (1<<31)
// there makes clients show garbage permissions. go-nfs takes the file
// type from IsDir instead.
func (i fileInfo) Mode() os.FileMode {
	if i.fi.IsDir {
		return 0o555
	}
	return 0o444
}

// Sys gives go-nfs the fileid, link count and owner; without it go-nfs
// would hash the path itself and use the server process's notion of nlink.
func (i fileInfo) Sys() any {
	n := uint32(1)
	if i.fi.IsDir {
		n = 2
	}
	return file.FileInfo{Nlink: n, Fileid: i.fi.ID}
}

// roFile is an open view file.
type roFile struct {
	name   string
	f      view.File
	off    int64
	shared *openFile  // f and its attributes, possibly shared
	files  *openFiles // nil: shared is this roFile's own
}

// Stat returns the attributes the file was opened with (go-nfs's READ
// uses them instead of a Stat of the path).
func (r *roFile) Stat() (os.FileInfo, error) { return fileInfo{r.shared.info}, nil }

func (r *roFile) Name() string { return r.name }

func (r *roFile) ReadAt(p []byte, off int64) (int, error) { return r.f.ReadAt(p, off) }

func (r *roFile) Read(p []byte) (int, error) {
	n, err := r.f.ReadAt(p, r.off)
	r.off += int64(n)
	if err == io.EOF && n > 0 {
		err = nil
	}
	return n, err
}

func (r *roFile) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		off += r.off
	case io.SeekEnd:
		off += r.f.Size()
	default:
		return 0, os.ErrInvalid
	}
	if off < 0 {
		return 0, os.ErrInvalid
	}
	r.off = off
	return off, nil
}

// Mapped gives gonfs's READ the file's bytes in memory, or nil (see
// openFile.mapped). Only cached files are mapped: an uncached one is
// closed, and would be unmapped, before the reply is written.
func (r *roFile) Mapped() []byte {
	if r.files == nil {
		return nil
	}
	return r.shared.mapped()
}

func (r *roFile) Close() error {
	if r.files == nil {
		return r.f.Close()
	}
	return r.files.release(r.shared)
}
func (r *roFile) Write([]byte) (int, error) { return 0, roErr("write", r.name) }
func (r *roFile) Truncate(int64) error      { return roErr("truncate", r.name) }
func (r *roFile) Lock() error               { return nil }
func (r *roFile) Unlock() error             { return nil }
