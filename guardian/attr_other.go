//go:build !linux

package guardian

import "syscall"

// childAttr has nothing to add where there is no parent-death signal; the guardian's
// own teardown is the guarantee.
func childAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
