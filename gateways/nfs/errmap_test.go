package nfs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"

	gonfs "github.com/silt-io/silt/gateways/nfs/internal/gonfs"

	"github.com/silt-io/silt/acl"
	"github.com/silt-io/silt/view"
)

func TestErrMap(t *testing.T) {
	for name, tc := range map[string]struct {
		err   error
		errno syscall.Errno
		mnt   gonfs.MountStatus
	}{
		"not found":  {fmt.Errorf("x: %w", view.ErrNotFound), syscall.ENOENT, gonfs.MountStatusErrNoEnt},
		"permission": {fmt.Errorf("%w: %w", view.ErrPermission, acl.ErrDenied), syscall.EACCES, gonfs.MountStatusErrAcces},
		"denied":     {acl.ErrDenied, syscall.EACCES, gonfs.MountStatusErrAcces},
		"not dir":    {view.ErrNotDir, syscall.ENOTDIR, gonfs.MountStatusErrNotDir},
		"is dir":     {view.ErrIsDir, syscall.EISDIR, gonfs.MountStatusErrServerFault},
		"read-only":  {errReadOnly, syscall.EROFS, gonfs.MountStatusErrServerFault},
		"too long":   {errNameTooLong, syscall.ENAMETOOLONG, gonfs.MountStatusErrNameTooLong},
		"cancelled":  {context.Canceled, syscall.EINTR, gonfs.MountStatusErrServerFault},
		"other":      {errors.New("disk on fire"), syscall.EIO, gonfs.MountStatusErrServerFault},
	} {
		t.Run(name, func(t *testing.T) {
			if got := errnoOf(tc.err); got != tc.errno {
				t.Fatalf("errnoOf = %v, want %v", got, tc.errno)
			}
			if got := mountStatus(tc.err); got != tc.mnt {
				t.Fatalf("mountStatus = %d, want %d", got, tc.mnt)
			}
			pe := pathErr("op", "/p", tc.err)
			if !errors.Is(pe, tc.errno) {
				t.Fatal("path error does not carry the errno")
			}
			// go-nfs relies on these two predicates.
			if os.IsNotExist(pe) != (tc.errno == syscall.ENOENT) || os.IsPermission(pe) != (tc.errno == syscall.EACCES) {
				t.Fatalf("os.IsNotExist/IsPermission disagree with %v", tc.errno)
			}
		})
	}
}
