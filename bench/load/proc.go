package main

import (
	"errors"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// snapshot is what /proc says of a server and its workers at one moment.
type snapshot struct {
	rss       int64 // the server's VmRSS
	fds       int   // its open descriptors
	threads   int
	workers   int   // Python processes under it (sessions' workers and spares)
	workerRSS int64 // their VmRSS together
	err       error
}

var errNoProc = errors.New("not measured: no /proc on " + runtime.GOOS)

// measure reads the server pid's snapshot.
func measure(pid int) snapshot {
	var s snapshot
	if runtime.GOOS != "linux" {
		s.err = errNoProc
		return s
	}
	status, err := readStatus(pid)
	if err != nil {
		s.err = err
		return s
	}
	s.rss, s.threads = status["VmRSS"], int(status["Threads"])
	entries, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	if err != nil {
		s.err = err
		return s
	}
	s.fds = len(entries)
	for _, p := range descendants(pid) {
		comm, _ := os.ReadFile("/proc/" + strconv.Itoa(p) + "/comm")
		if !strings.HasPrefix(string(comm), "python") {
			continue
		}
		if st, err := readStatus(p); err == nil {
			s.workers++
			s.workerRSS += st["VmRSS"]
		}
	}
	return s
}

// max is the larger of each figure of s and t (a peak over samples).
func (s snapshot) max(t snapshot) snapshot {
	if s.err != nil {
		return t
	}
	if t.err != nil {
		return s
	}
	return snapshot{rss: max(s.rss, t.rss), fds: max(s.fds, t.fds), threads: max(s.threads, t.threads),
		workers: max(s.workers, t.workers), workerRSS: max(s.workerRSS, t.workerRSS)}
}

// readStatus is /proc/<pid>/status's numeric fields, sizes in bytes.
func readStatus(pid int) (map[string]int64, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for line := range strings.SplitSeq(string(data), "\n") {
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		fields := strings.Fields(value)
		if len(fields) == 0 {
			continue
		}
		n, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			continue
		}
		if len(fields) > 1 && fields[1] == "kB" {
			n *= 1024
		}
		out[name] = n
	}
	return out, nil
}

// descendants are the processes under pid, from /proc's parent links.
func descendants(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(data)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) < 2 {
			continue
		}
		if ppid, err := strconv.Atoi(fields[1]); err == nil {
			children[ppid] = append(children[ppid], p)
		}
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}
