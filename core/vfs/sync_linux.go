package vfs

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// Sync is fdatasync: the data and what is needed to read it back, not the
// mtime.
func (f osFile) Sync() error { return f.syncWith("fdatasync", unix.Fdatasync) }

func (f osFile) WriteVAt(bufs [][]byte, off int64) error {
	fd := int(f.Fd())
	for len(bufs) > 0 {
		batch := bufs[:min(len(bufs), iovMax)]
		n, err := unix.Pwritev(fd, batch, off)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return &os.PathError{Op: "pwritev", Path: f.Name(), Err: err}
		}
		off += int64(n)
		// Drop what was written; a short write resumes mid-buffer.
		for n > 0 && len(bufs) > 0 {
			if n >= len(bufs[0]) {
				n -= len(bufs[0])
				bufs = bufs[1:]
				continue
			}
			bufs = append([][]byte{bufs[0][n:]}, bufs[1:]...)
			n = 0
		}
		for len(bufs) > 0 && len(bufs[0]) == 0 {
			bufs = bufs[1:]
		}
	}
	return nil
}

// SyncFS makes every file written on dir's filesystem durable with one
// syncfs(2): one journal commit for all of them, where syncing many files
// one by one costs a commit each. Since Linux 5.8 it reports a writeback
// error of any file on the filesystem.
func (OS) SyncFS(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	for {
		err := unix.Syncfs(int(d.Fd()))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return &os.PathError{Op: "syncfs", Path: dir, Err: err}
		}
		return nil
	}
}
