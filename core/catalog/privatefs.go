package catalog

import (
	"errors"
	"io"
	"io/fs"
	"os"

	"github.com/cockroachdb/pebble/v2/vfs"
	"golang.org/x/sys/unix"

	"github.com/silt-io/silt/internal/datadir"
)

// privateFS is pebble's filesystem with silt's data-dir modes: pebble
// creates files 0666 and directories 0755 and leaves the rest to the
// umask, but the catalog holds principals, grants and S3 key records, so
// nothing in it may be readable by other OS users whatever the umask.
//
// A file is created by pebble and then narrowed to 0600, so for a moment
// it has the umask's mode; the catalog directory, created 0700 here,
// keeps other users from reaching it in that moment.
type privateFS struct{ vfs.FS }

func (p privateFS) Unwrap() vfs.FS { return p.FS }

func (p privateFS) MkdirAll(dir string, _ os.FileMode) error {
	return p.FS.MkdirAll(dir, datadir.DirMode)
}

func (p privateFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := p.FS.Create(name, c)
	if err != nil {
		return nil, err
	}
	return narrow(f, name)
}

func (p privateFS) OpenReadWrite(name string, c vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	existed := exists(name)
	f, err := p.FS.OpenReadWrite(name, c, opts...)
	if err != nil || existed {
		return f, err
	}
	return narrow(f, name)
}

func (p privateFS) ReuseForWrite(oldname, newname string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := p.FS.ReuseForWrite(oldname, newname, c)
	if err != nil {
		return nil, err
	}
	return narrow(f, newname)
}

func (p privateFS) Lock(name string) (io.Closer, error) {
	existed := exists(name)
	l, err := p.FS.Lock(name)
	if err != nil || existed {
		return l, err
	}
	if err := os.Chmod(name, datadir.FileMode); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// narrow sets a file pebble just created to 0600. Files pebble already
// had are left as they are: an existing catalog's modes are the
// operator's, and silt warns about them at start instead.
func narrow(f vfs.File, name string) (vfs.File, error) {
	var err error
	if fd := f.Fd(); fd != vfs.InvalidFd {
		err = unix.Fchmod(int(fd), uint32(datadir.FileMode))
	} else {
		err = os.Chmod(name, datadir.FileMode)
	}
	if err != nil {
		f.Close()
		return nil, &os.PathError{Op: "chmod", Path: name, Err: err}
	}
	return f, nil
}

func exists(name string) bool {
	_, err := os.Lstat(name)
	return !errors.Is(err, fs.ErrNotExist)
}
