package repl

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// residentBytes reads a process's resident set size from /proc/<pid>/statm (the
// second field, in pages).
func residentBytes(pid int) (int64, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/statm")
	if err != nil {
		return 0, err
	}
	fields := strings.Fields(string(data))
	if len(fields) < 2 {
		return 0, fmt.Errorf("unexpected statm %q", data)
	}
	pages, err := strconv.ParseInt(fields[1], 10, 64)
	if err != nil {
		return 0, err
	}
	return pages * int64(os.Getpagesize()), nil
}

// exited reports a process that has ended, reaped or not: a zombie's channel to us
// may still look open for a moment after it died.
func exited(pid int) bool {
	state, ok := procState(pid)
	return !ok || state == "Z" || state == "X"
}

// stopped reports a process stopped by a signal (SIGSTOP, SIGTSTP) or a tracer.
func stopped(pid int) bool {
	state, ok := procState(pid)
	return ok && (state == "T" || state == "t")
}

// procState is the state letter of /proc/<pid>/stat; false when it cannot be read.
func procState(pid int) (string, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", false
	}
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) == 0 {
		return "", false
	}
	return fields[0], true
}
