//go:build !unix

package tiering

import "errors"

// statDisk is not available here: backpressure falls back to
// tiering.max_backlog_bytes alone.
func statDisk(string) (avail, total uint64, err error) {
	return 0, 0, errors.New("free space is not measured on this platform")
}
