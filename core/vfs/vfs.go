// Package vfs is the small filesystem interface the segment engine writes
// through. The production implementation is the OS; tests use CrashFS, which
// keeps what was synced apart from what was merely written so that a test
// can "crash" at any operation and look at what a real disk would hold.
package vfs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"golang.org/x/sys/unix"

	"github.com/silt-io/silt/internal/datadir"
)

// File is an open file. Sync makes the file's data durable (fdatasync);
// making a new file's directory entry durable needs FS.SyncDir. Writes are
// positional: the segment log writes into a zero-filled region it allocated
// ahead of its data, so "append" is not "write at the end of the file".
type File interface {
	io.ReaderAt
	io.WriterAt
	// WriteVAt writes bufs one after the other from off, as one vectored
	// write where the system has it.
	WriteVAt(bufs [][]byte, off int64) error
	Sync() error
	Truncate(size int64) error
	Size() (int64, error)
	Close() error
}

// FS is what the engine needs from a filesystem.
type FS interface {
	// Create creates a new file for reading and writing; it fails if the
	// file exists.
	Create(name string) (File, error)
	// OpenRW opens an existing file for reading and writing.
	OpenRW(name string) (File, error)
	// Open opens an existing file read-only.
	Open(name string) (File, error)
	Remove(name string) error
	// Rename replaces newname with oldname atomically; making the change
	// durable needs SyncDir of the directory.
	Rename(oldname, newname string) error
	RemoveAll(name string) error
	MkdirAll(dir string) error
	// List returns the names in dir, sorted; a missing dir is empty.
	List(dir string) ([]string, error)
	// SyncDir makes dir's entries (created, removed, renamed) durable.
	SyncDir(dir string) error
}

// FSSyncer is implemented by filesystems that can make every file written
// on them durable at once (OS on Linux: syncfs). A checkpoint that must
// sync many files uses it instead of one sync per file.
type FSSyncer interface {
	SyncFS(dir string) error
}

// OS is the real filesystem.
type OS struct{}

type osFile struct{ *os.File }

// syncWith makes a sync call on the file's descriptor until it is not
// interrupted; op names the call in the error.
func (f osFile) syncWith(op string, sync func(fd int) error) error {
	for {
		err := sync(int(f.Fd()))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return &os.PathError{Op: op, Path: f.Name(), Err: err}
		}
		return nil
	}
}

// iovMax is the most buffers one pwritev takes (IOV_MAX on Linux).
const iovMax = 1024

// Mapper is implemented by files whose bytes can be mapped into memory
// (the OS's; CrashFS's files are not, so crash tests read as before).
type Mapper interface {
	// Map maps n bytes of the file from off, a multiple of the page
	// size, read-only. The bytes must stay in the file until unmap: a
	// mapped page that the file no longer holds faults when touched.
	Map(off int64, n int) (mem []byte, unmap func() error, err error)
}

// Map implements Mapper.
func (f osFile) Map(off int64, n int) ([]byte, func() error, error) {
	mem, err := unix.Mmap(int(f.Fd()), off, n, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	// Scans read front to back: the kernel reads ahead further for that.
	unix.Madvise(mem, unix.MADV_SEQUENTIAL)
	return mem, func() error { return unix.Munmap(mem) }, nil
}

func (f osFile) Size() (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// Create makes the file readable by silt's user only (datadir.FileMode):
// tier-1 logs hold tenants' events.
func (OS) Create(name string) (File, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, datadir.FileMode)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (OS) OpenRW(name string) (File, error) {
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (OS) Open(name string) (File, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (OS) Remove(name string) error    { return os.Remove(name) }
func (OS) Rename(o, n string) error    { return os.Rename(o, n) }
func (OS) RemoveAll(name string) error { return os.RemoveAll(name) }
func (OS) MkdirAll(dir string) error   { return os.MkdirAll(dir, datadir.DirMode) }

func (OS) Exists(p string) (bool, error) {
	_, err := os.Lstat(p)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

func (OS) List(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names, nil
}

func (OS) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return &os.PathError{Op: "fsync", Path: dir, Err: err}
	}
	return nil
}

// MkdirAllDurable creates dir and its missing parents and syncs each parent
// whose entries changed, so that the new directories survive a crash.
func MkdirAllDurable(fs FS, dir string) error {
	changed, err := MkdirAllUnsynced(fs, dir)
	if err != nil {
		return err
	}
	for _, d := range changed {
		if err := fs.SyncDir(d); err != nil {
			return err
		}
	}
	return nil
}

// MkdirAllUnsynced creates dir and its missing parents without syncing
// anything. It returns the directories whose entries changed (the parents
// of those it created), which must be synced before the new directories
// are relied on to survive a crash.
func MkdirAllUnsynced(fs FS, dir string) ([]string, error) {
	var missing []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		ok, err := exists(fs, d)
		if err != nil {
			return nil, err
		}
		if ok {
			break
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	if len(missing) == 0 {
		return nil, nil
	}
	if err := fs.MkdirAll(dir); err != nil {
		return nil, err
	}
	changed := make([]string, len(missing))
	for i, d := range missing {
		changed[i] = filepath.Dir(d)
	}
	return changed, nil
}

// Stater is implemented by filesystems that can tell whether a path
// exists without listing its parent, whose size a tenant's directory of
// many streams makes large.
type Stater interface {
	Exists(path string) (bool, error)
}

func exists(fs FS, p string) (bool, error) {
	if st, ok := fs.(Stater); ok {
		return st.Exists(p)
	}
	names, err := fs.List(filepath.Dir(p))
	if err != nil {
		return false, err
	}
	return contains(names, filepath.Base(p)), nil
}

func contains(names []string, n string) bool {
	i := sort.SearchStrings(names, n)
	return i < len(names) && names[i] == n
}

// WriteFileDurable replaces dir/name with data so that a crash leaves
// either the old file or the new one: it writes dir/tmp (removing a stale
// one first), syncs it, renames it over name and syncs dir.
func WriteFileDurable(fs FS, dir, tmp, name string, data []byte) error {
	tmp = filepath.Join(dir, tmp)
	if err := fs.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove stale %s: %w", tmp, err)
	}
	f, err := fs.Create(tmp)
	if err != nil {
		return err
	}
	err = f.WriteVAt([][]byte{data}, 0)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fs.Rename(tmp, filepath.Join(dir, name))
	}
	if err == nil {
		err = fs.SyncDir(dir)
	}
	return err
}
