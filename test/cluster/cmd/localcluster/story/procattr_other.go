//go:build !linux

package story

import "syscall"

// childProcAttr gives the operator its own process group; other systems
// than Linux have no parent-death signal.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
