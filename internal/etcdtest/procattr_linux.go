package etcdtest

import "syscall"

// procAttr puts etcd in its own process group and kills it with the test
// binary, so that a test that panics or times out leaves no etcd behind.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
