package vfs

import "golang.org/x/sys/unix"

// Sync is F_FULLFSYNC: on macOS fsync(2) hands the data to the drive but
// does not make the drive write its cache, so it is not durable.
func (f osFile) Sync() error {
	return f.syncWith("fcntl F_FULLFSYNC", func(fd int) error {
		_, err := unix.FcntlInt(uintptr(fd), unix.F_FULLFSYNC, 0)
		return err
	})
}

func (f osFile) WriteVAt(bufs [][]byte, off int64) error {
	return writeEach(f.File, bufs, off)
}
