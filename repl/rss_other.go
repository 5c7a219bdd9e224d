//go:build !linux

package repl

import (
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

// residentBytes asks ps for a process's resident set size: macOS has no /proc, and
// proc_pidinfo needs cgo, which the static build does not have.
func residentBytes(pid int) (int64, error) {
	out, err := exec.Command("ps", "-o", "rss=", "-p", strconv.Itoa(pid)).Output()
	if err != nil {
		return 0, err
	}
	kib, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		return 0, err
	}
	return kib * 1024, nil
}

// stopped asks ps whether a process is stopped by a signal or a tracer.
func stopped(pid int) bool {
	out, err := exec.Command("ps", "-o", "stat=", "-p", strconv.Itoa(pid)).Output()
	return err == nil && strings.HasPrefix(strings.TrimSpace(string(out)), "T")
}

// exited reports a process that is gone; a zombie is not told apart here.
func exited(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
