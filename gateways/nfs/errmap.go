package nfs

import (
	"context"
	"errors"
	"os"
	"syscall"

	gonfs "github.com/silt-io/silt/gateways/nfs/internal/gonfs"

	"github.com/silt-io/silt/acl"
	"github.com/silt-io/silt/view"
)

// go-nfs decides NFS status codes from billy errors with os.IsNotExist
// and os.IsPermission, which only recognise an *os.PathError whose Err is
// the bare syscall.Errno; wrapping the view error inside would hide it.
// So the cause is dropped here, and viewFS logs the ones a client cannot
// explain (EIO).

// errnoOf maps an error from the view, the acl or this package to the
// errno go-nfs understands.
func errnoOf(err error) syscall.Errno {
	switch {
	case errors.Is(err, view.ErrPermission), errors.Is(err, acl.ErrDenied):
		return syscall.EACCES
	case errors.Is(err, view.ErrNotFound):
		return syscall.ENOENT
	case errors.Is(err, view.ErrNotDir):
		return syscall.ENOTDIR
	case errors.Is(err, view.ErrIsDir):
		return syscall.EISDIR
	case errors.Is(err, errNameTooLong):
		return syscall.ENAMETOOLONG
	case errors.Is(err, errReadOnly):
		return syscall.EROFS
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return syscall.EINTR
	}
	return syscall.EIO
}

var (
	errReadOnly    = errors.New("nfs: silt serves NFS read-only; write through the native API")
	errNameTooLong = errors.New("nfs: path too long for a stateless file handle")
)

func pathErr(op, p string, err error) error {
	return &os.PathError{Op: op, Path: p, Err: errnoOf(err)}
}

func roErr(op, p string) error { return pathErr(op, p, errReadOnly) }

// mountStatus maps the error of resolving a MNT path to its mountstat3.
func mountStatus(err error) gonfs.MountStatus {
	switch errnoOf(err) {
	case syscall.EACCES:
		return gonfs.MountStatusErrAcces
	case syscall.ENOENT:
		return gonfs.MountStatusErrNoEnt
	case syscall.ENOTDIR:
		return gonfs.MountStatusErrNotDir
	case syscall.ENAMETOOLONG:
		return gonfs.MountStatusErrNameTooLong
	}
	return gonfs.MountStatusErrServerFault
}
