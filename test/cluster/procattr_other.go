//go:build !linux

package cluster

import "syscall"

// childProcAttr puts a child in its own process group. Without Linux's
// Pdeathsig, children outlive a test binary that is killed with SIGKILL.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
