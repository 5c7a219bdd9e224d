//go:build !linux

package proctable

// Read has no table to read here.
func Read() ([]Proc, error) { return nil, ErrUnsupported }

// Stat has no table to read here.
func Stat(pid int) (Proc, bool) { return Proc{}, false }

// BootTicks has no origin to count from here.
func BootTicks() (uint64, error) { return 0, ErrUnsupported }
