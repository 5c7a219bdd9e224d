package guardian

import "syscall"

// childAttr makes the kernel kill the child if the guardian itself dies.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
