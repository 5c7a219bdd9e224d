package proctable

import (
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Read returns every process of the machine that could be read; one that is gone
// between the listing and its read is left out.
func Read() ([]Proc, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	procs := make([]Proc, 0, len(entries))
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := Stat(pid); ok {
			procs = append(procs, p)
		}
	}
	return procs, nil
}

// Stat reads one process; false when it is gone (or cannot be read).
func Stat(pid int) (Proc, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Proc{}, false
	}
	return parseStat(pid, string(data))
}

// parseStat reads /proc/PID/stat: "pid (comm) state ppid pgrp ...". The command name
// may hold anything, parentheses and spaces too, so the fields are those after its
// last ')': the state (3), the parent (4), the group (5), the start time (22), and,
// since Linux 3.5, the exit code (52).
func parseStat(pid int, s string) (Proc, bool) {
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return Proc{}, false
	}
	fields := strings.Fields(s[end+1:])
	if len(fields) < 20 {
		return Proc{}, false
	}
	field := func(n int) int { // n counts as proc(5) does, from 1 at the pid
		v, _ := strconv.Atoi(fields[n-3])
		return v
	}
	start, err := strconv.ParseUint(fields[22-3], 10, 64)
	if err != nil {
		return Proc{}, false
	}
	p := Proc{Pid: pid, Ppid: field(4), Pgid: field(5), Name: s[open+1 : end], Start: start, Zombie: fields[0] == "Z"}
	if p.Zombie && len(fields) >= 52-2 {
		p.Status, p.HasStatus = syscall.WaitStatus(field(52)), true
	}
	return p, true
}

// BootTicks is now, in the unit and from the origin of Proc.Start.
func BootTicks() (uint64, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return 0, err
	}
	return uint64(ts.Sec)*TicksPerSecond + uint64(ts.Nsec)/(1e9/TicksPerSecond), nil
}
