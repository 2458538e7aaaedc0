package tiering

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback starts writing [off, off+n) of f to disk, without
// waiting for it.
func startWriteback(f *os.File, off, n int64) {
	unix.SyncFileRange(int(f.Fd()), off, n, unix.SYNC_FILE_RANGE_WRITE)
}
