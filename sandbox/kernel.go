package sandbox

import (
	"errors"
	"fmt"
)

// Kernel is what the running kernel offers the sandbox: its OS, its Landlock ABI
// version (0 for none) and whether it has seccomp filters. HostKernel finds it; tests
// make their own to reach the refusals this kernel never gives.
type Kernel struct {
	OS          string
	LandlockABI int
	Seccomp     bool
}

// Enforcement is what a kernel enforces of a policy beyond its rules: what it leaves
// unenforced (a weaker rule) and what it enforces more strictly than asked (a limit),
// each a sentence, as health, doctor and the start line report them.
type Enforcement struct {
	LandlockABI int      `json:"landlock_abi"`
	NotEnforced []string `json:"not_enforced,omitempty"`
	Limits      []string `json:"limits,omitempty"`
}

// Check says whether k can enforce p, asked for by --sandbox mode: an error of one
// line that names what is missing when it cannot, else what it leaves unenforced or
// enforces more strictly. It never returns a weaker sandbox silently.
func (k Kernel) Check(mode Mode, p *Policy) (Enforcement, error) {
	e := Enforcement{LandlockABI: k.LandlockABI}
	switch {
	case k.OS != "linux":
		return e, fmt.Errorf(msgNotLinux, mode, k.OS)
	case k.LandlockABI < 1:
		return e, fmt.Errorf(msgNoLandlock, mode)
	case !k.Seccomp:
		return e, fmt.Errorf(msgNoSeccomp, mode)
	case p == nil:
		return e, errors.New("no sandbox policy to check")
	case !p.Network && p.ProxyPort != 0 && k.LandlockABI < 4:
		return e, fmt.Errorf(msgProxyNeedsABI4, k.LandlockABI)
	}
	if k.LandlockABI < 6 {
		e.NotEnforced = append(e.NotEnforced, notEnforcedSignals)
		if p.Network {
			// With the network off, seccomp refuses every new Unix socket anyway.
			e.NotEnforced = append(e.NotEnforced, notEnforcedAbstract)
		}
	}
	if k.LandlockABI < 2 {
		e.Limits = append(e.Limits, limitRefer)
	}
	if k.LandlockABI < 3 {
		e.Limits = append(e.Limits, limitTruncate)
	}
	return e, nil
}
