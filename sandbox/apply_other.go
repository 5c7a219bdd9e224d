//go:build !linux

package sandbox

// ApplyToThread refuses: outside Linux there is no sandbox (Check's error).
func ApplyToThread(p *Policy, k Kernel) (Enforcement, error) {
	return k.Check(p.Mode, p)
}
