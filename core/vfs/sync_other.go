//go:build !linux && !darwin && !windows

package vfs

import "golang.org/x/sys/unix"

// Sync is fsync: the systems this builds for have no portable fdatasync.
func (f osFile) Sync() error { return f.syncWith("fsync", unix.Fsync) }

func (f osFile) WriteVAt(bufs [][]byte, off int64) error {
	return writeEach(f.File, bufs, off)
}
