package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// memStat is a process's resident set, now and at its peak.
type memStat struct {
	rss, hwm uint64 // bytes
}

// readMem reads VmRSS and VmHWM from /proc/<pid>/status.
func readMem(pid int) (memStat, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memStat{}, err
	}
	defer f.Close()
	var m memStat
	found := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), ":")
		if !ok || (key != "VmRSS" && key != "VmHWM") {
			continue
		}
		fields := strings.Fields(value)
		if len(fields) != 2 || fields[1] != "kB" {
			return memStat{}, fmt.Errorf("unexpected %s line in /proc/%d/status: %q", key, pid, value)
		}
		kb, err := strconv.ParseUint(fields[0], 10, 64)
		if err != nil {
			return memStat{}, err
		}
		if key == "VmRSS" {
			m.rss = kb << 10
		} else {
			m.hwm = kb << 10
		}
		found++
	}
	if err := sc.Err(); err != nil {
		return memStat{}, err
	}
	if found != 2 {
		return memStat{}, fmt.Errorf("no VmRSS/VmHWM in /proc/%d/status", pid)
	}
	return m, nil
}

// procID names one process instance: a pid and its start time, so that a reused
// pid is never mistaken for it.
type procID struct {
	pid   int
	pgid  int
	start uint64
	comm  string
}

// procStat is the part of /proc/<pid>/stat the bench needs.
type procStat struct {
	procID
	state byte
	ppid  int
}

func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	open, close := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || close < open {
		return procStat{}, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	// Fields after the command, from field 3 (state): state ppid pgrp session tty
	// tpgid flags minflt cminflt majflt cmajflt utime stime cutime cstime priority
	// nice threads itrealvalue starttime.
	f := strings.Fields(string(b[close+1:]))
	if len(f) < 20 {
		return procStat{}, fmt.Errorf("short /proc/%d/stat", pid)
	}
	ppid, _ := strconv.Atoi(f[1])
	pgid, _ := strconv.Atoi(f[2])
	start, _ := strconv.ParseUint(f[19], 10, 64)
	return procStat{
		procID: procID{pid: pid, pgid: pgid, start: start, comm: string(b[open+1 : close])},
		state:  f[0][0],
		ppid:   ppid,
	}, nil
}

// descendants lists every live process below root.
func descendants(root int) ([]procID, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	children := map[int][]procStat{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := readStat(pid)
		if err != nil {
			continue // exited meanwhile
		}
		children[st.ppid] = append(children[st.ppid], st)
	}
	var out []procID
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, st := range children[pid] {
			if st.state == 'Z' || st.state == 'X' {
				continue
			}
			out = append(out, st.procID)
			queue = append(queue, st.pid)
		}
	}
	return out, nil
}

// alive says whether that very process still runs (a zombie does not).
func (p procID) alive() bool {
	st, err := readStat(p.pid)
	return err == nil && st.start == p.start && st.state != 'Z' && st.state != 'X'
}

// kill SIGKILLs the process, and its group when it leads one, if it is still that
// process.
func (p procID) kill() {
	if !p.alive() {
		return
	}
	if p.pgid == p.pid {
		syscall.Kill(-p.pid, syscall.SIGKILL)
	}
	syscall.Kill(p.pid, syscall.SIGKILL)
}

// loadAverage is the 1, 5 and 15 minute load averages from /proc/loadavg.
func loadAverage() (string, error) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "", err
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "", fmt.Errorf("malformed /proc/loadavg: %q", b)
	}
	return strings.Join(f[:3], " "), nil
}
