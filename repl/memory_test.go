package repl

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// TestDefaultMaxRSSMiB: the default budget is half the machine's memory, never less
// than 2 GiB, whatever the machine (docs/contract.md §5.8).
func TestDefaultMaxRSSMiB(t *testing.T) {
	for _, c := range []struct {
		total int64
		want  int
	}{
		{0, 2048},               // unknown
		{2 << 30, 2048},         // a small machine: the floor
		{4 << 30, 2048},         // half of it is the floor exactly
		{24 << 30, 12288},       // half
		{24683584 << 10, 12052}, // MemTotal as the kernel reports it, rounded down
		{1 << 40, 512 << 10},    // a large one
	} {
		if got := defaultMaxRSSMiB(c.total); got != c.want {
			t.Errorf("defaultMaxRSSMiB(%d) = %d, want %d", c.total, got, c.want)
		}
	}
}

// TestMachineMemoryIsMemTotal reads /proc/meminfo on its own and checks that the
// budget's machine memory is its MemTotal, or a lower cgroup limit.
func TestMachineMemoryIsMemTotal(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("only Linux has /proc/meminfo")
	}
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
			kib, _ := strconv.ParseInt(f[1], 10, 64)
			total = kib * 1024
		}
	}
	got := machineMemoryBytes()
	if got <= 0 || got > total {
		t.Fatalf("machine memory %d, want at most MemTotal %d and more than 0", got, total)
	}
	if got != total && got != cgroupLimit() {
		t.Fatalf("machine memory %d is neither MemTotal %d nor the cgroup limit %d", got, total, cgroupLimit())
	}
	if DefaultMaxRSSMiB() != defaultMaxRSSMiB(got) {
		t.Fatalf("DefaultMaxRSSMiB() = %d, want %d", DefaultMaxRSSMiB(), defaultMaxRSSMiB(got))
	}
}
