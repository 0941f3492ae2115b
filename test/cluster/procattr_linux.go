package cluster

import "syscall"

// childProcAttr puts a child in its own process group, so that Stop can
// signal exactly the processes this package started, and asks the kernel to
// kill it when its parent dies.
//
// Pdeathsig fires when the OS thread that forked the child exits, not only
// when the whole process does. The Go runtime keeps its threads alive, except
// the thread of a goroutine that exits while locked with
// runtime.LockOSThread; Start never runs in such a goroutine itself, but a
// caller that calls it from one would see the children killed early.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
