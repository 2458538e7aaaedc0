//go:build !linux && !darwin && !windows

package vfs

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// Sync is fsync: the systems this builds for have no portable fdatasync.
func (f osFile) Sync() error {
	for {
		err := unix.Fsync(int(f.Fd()))
		if !errors.Is(err, unix.EINTR) {
			if err != nil {
				return &os.PathError{Op: "fsync", Path: f.Name(), Err: err}
			}
			return nil
		}
	}
}

func (f osFile) WriteVAt(bufs [][]byte, off int64) error {
	return writeEach(f.File, bufs, off)
}
