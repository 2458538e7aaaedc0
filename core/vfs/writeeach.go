//go:build !linux

package vfs

import "os"

// writeEach writes bufs one after the other from off with one pwrite
// each, where the system has no pwritev.
func writeEach(f *os.File, bufs [][]byte, off int64) error {
	for _, b := range bufs {
		if _, err := f.WriteAt(b, off); err != nil {
			return err
		}
		off += int64(len(b))
	}
	return nil
}
