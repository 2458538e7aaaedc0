package vfs

import (
	"os"
	"sync/atomic"
	"syscall"
)

// NoSpaceOnCreateFS is a fault-injection FS for full-disk tests: while Full
// is set, creating a file fails with ENOSPC, as on a filesystem out of
// blocks or inodes, and everything else passes through to the wrapped FS.
// A segment log creates files when it rolls over, so this is where a full
// disk meets an append that needs a new file.
type NoSpaceOnCreateFS struct {
	FS
	full atomic.Bool
}

// NewNoSpaceOnCreateFS wraps fs, with space available.
func NewNoSpaceOnCreateFS(fs FS) *NoSpaceOnCreateFS { return &NoSpaceOnCreateFS{FS: fs} }

// SetFull makes later Creates fail (true) or pass through again (false).
func (f *NoSpaceOnCreateFS) SetFull(full bool) { f.full.Store(full) }

// Create fails with ENOSPC while the FS is full.
func (f *NoSpaceOnCreateFS) Create(name string) (File, error) {
	if f.full.Load() {
		return nil, &os.PathError{Op: "open", Path: name, Err: syscall.ENOSPC}
	}
	return f.FS.Create(name)
}
