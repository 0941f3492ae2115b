package story

import "syscall"

// childProcAttr gives the operator its own process group, so that a
// terminal's Ctrl-C reaches only the demo, which then stops the operator
// before the control plane; and it asks the kernel to kill the operator if
// the demo dies without stopping it.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
