package vfs

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// Sync is F_FULLFSYNC: on macOS fsync(2) hands the data to the drive but
// does not make the drive write its cache, so it is not durable.
func (f osFile) Sync() error {
	for {
		_, err := unix.FcntlInt(f.Fd(), unix.F_FULLFSYNC, 0)
		if !errors.Is(err, unix.EINTR) {
			if err != nil {
				return &os.PathError{Op: "fcntl F_FULLFSYNC", Path: f.Name(), Err: err}
			}
			return nil
		}
	}
}

func (f osFile) WriteVAt(bufs [][]byte, off int64) error {
	return writeEach(f.File, bufs, off)
}
