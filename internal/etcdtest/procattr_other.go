//go:build !linux

package etcdtest

import "syscall"

// procAttr puts etcd in its own process group; only Linux can also tie
// its life to the test binary's.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
