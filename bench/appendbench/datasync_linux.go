package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// datasync is the baseline's sync: fdatasync, as the engine does.
func datasync(f *os.File) error { return unix.Fdatasync(int(f.Fd())) }
