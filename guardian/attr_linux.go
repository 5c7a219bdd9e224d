package guardian

import (
	"os"
	"strconv"
	"strings"
	"syscall"
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
// parent pid in /proc/PID/stat, which needs no kernel option.
func children() []int {
	self := os.Getpid()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		// The command name in parentheses may hold anything; the fields after its
		// last ')' are the state and then the parent pid.
		s := string(stat)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) >= 2 && fields[1] == strconv.Itoa(self) {
			pids = append(pids, pid)
		}
	}
	return pids
}
