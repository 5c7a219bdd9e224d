package repl

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// DefaultMaxRSSMiB is the worker RSS budget when none is given (docs/contract.md
// §5.8): half the memory this machine (or the cgroup the server runs in) has, so
// that a session can hold real data and still leave the machine room, and never
// less than MinDefaultMaxRSSMiB.
func DefaultMaxRSSMiB() int { return defaultMaxRSSMiB(machineMemoryBytes()) }

func defaultMaxRSSMiB(total int64) int {
	return int(max(total/2>>20, MinDefaultMaxRSSMiB))
}

// machineMemoryBytes is the memory the server's processes may use: the machine's
// (Linux's MemTotal) or its cgroup's limit when lower; 0 when unknown.
func machineMemoryBytes() int64 {
	total := meminfoTotal()
	if limit := cgroupLimit(); limit > 0 && (total == 0 || limit < total) {
		total = limit
	}
	return total
}

// meminfoTotal is /proc/meminfo's MemTotal in bytes, 0 where there is none.
func meminfoTotal() int64 {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			return kibField(rest)
		}
	}
	return 0
}

// cgroupLimit is the memory limit of the server's own cgroup in bytes (v2's
// memory.max, else v1's memory.limit_in_bytes); 0 when there is none or it is "max".
func cgroupLimit() int64 {
	paths := []string{"/sys/fs/cgroup/memory/memory.limit_in_bytes"}
	if own, err := os.ReadFile("/proc/self/cgroup"); err == nil {
		for line := range strings.Lines(string(own)) {
			if dir, ok := strings.CutPrefix(strings.TrimSpace(line), "0::"); ok {
				paths = append([]string{filepath.Join("/sys/fs/cgroup", dir, "memory.max")}, paths...)
			}
		}
	}
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		if n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64); err == nil && n > 0 {
			return n
		}
		return 0 // "max": no limit
	}
	return 0
}

// peakResidentBytes is the process's resident high-water mark (VmHWM of
// /proc/<pid>/status), 0 where the kernel keeps none.
func peakResidentBytes(pid int) int64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			return kibField(rest)
		}
	}
	return 0
}

// kibField reads " 12345 kB" as bytes.
func kibField(s string) int64 {
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return 0
	}
	kib, err := strconv.ParseInt(fields[0], 10, 64)
	if err != nil {
		return 0
	}
	return kib << 10
}
