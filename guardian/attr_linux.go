package guardian

import (
	"os"
	"syscall"

	"github.com/iota-uz/repl-mcp/internal/proctable"
)

// childAttr starts the child as the leader of a process group of its own (so that
// setsid fails in it with EPERM and it cannot leave the group the guardian kills) and
// makes the kernel kill it if the guardian itself dies.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// prSetChildSubreaper is PR_SET_CHILD_SUBREAPER from <linux/prctl.h>.
const prSetChildSubreaper = 36

// becomeSubreaper makes every process orphaned below the guardian (a daemon's double
// fork, a grandchild whose parent died) its child rather than init's, so that
// teardown can find and kill it.
func becomeSubreaper() error {
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		return errno
	}
	return nil
}

// children lists the guardian's live children (adopted orphans included) by their
// parent pid in the process table (/proc/PID/stat, which needs no kernel option).
func children() []int {
	self := os.Getpid()
	procs, err := proctable.Read()
	if err != nil {
		return nil
	}
	var pids []int
	for _, p := range procs {
		if p.Ppid == self {
			pids = append(pids, p.Pid)
		}
	}
	return pids
}
