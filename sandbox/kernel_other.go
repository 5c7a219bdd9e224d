//go:build !linux

package sandbox

import "runtime"

// HostKernel is the running kernel: outside Linux, no Landlock and no seccomp.
func HostKernel() Kernel { return Kernel{OS: runtime.GOOS} }
