//go:build !linux

package guardian

import "syscall"

// childAttr starts the child as the leader of a process group of its own, so that
// setsid fails in it with EPERM. There is no parent-death signal here; the guardian's
// own teardown is the guarantee.
func childAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// becomeSubreaper has no equivalent here: an orphan goes to init (docs/contract.md §5.9).
func becomeSubreaper() error { return nil }

// children is empty where orphans are never adopted: the guardian's only child is the
// one it started, which teardown kills by name.
func children() []int { return nil }
