package sandbox

import (
	"runtime"

	"github.com/elastic/go-seccomp-bpf"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// HostKernel is the running kernel. Its Landlock ABI is the one go-landlock would
// use: an ABI 6 or newer whose signal-scoping erratum is not fixed counts as 5.
func HostKernel() Kernel {
	k := Kernel{OS: runtime.GOOS, Seccomp: seccomp.Supported()}
	if v, err := ll.LandlockGetABIVersion(); err == nil {
		k.LandlockABI = v
	}
	if k.LandlockABI >= 6 {
		if errata, err := ll.LandlockGetErrata(); err != nil || errata&0x2 == 0 {
			k.LandlockABI = 5
		}
	}
	return k
}
