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
