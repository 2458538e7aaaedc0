//go:build !linux

package main

import "os"

// datasync is the baseline's sync; without fdatasync it is the same
// sync the engine makes (see core/vfs).
func datasync(f *os.File) error { return f.Sync() }
