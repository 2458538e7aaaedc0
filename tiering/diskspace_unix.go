//go:build unix

package tiering

import "golang.org/x/sys/unix"

// statDisk measures the filesystem holding dir: bytes an unprivileged
// writer may still use, and its size.
func statDisk(dir string) (avail, total uint64, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, 0, err
	}
	return st.Bavail * uint64(st.Bsize), st.Blocks * uint64(st.Bsize), nil
}
