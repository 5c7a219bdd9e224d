package interop

import (
	"bytes"
	"context"
	"github.com/iota-uz/repl-mcp/internal/testproc"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// The process helpers shared with packaging's tests (internal/testproc).
var (
	inGroup   = testproc.InGroup
	killGroup = testproc.KillGroup
	newTail   = testproc.NewTail
)

// runGroup runs a command to completion in its own process group (testproc.Run).
// env, when not nil, is added to this process's environment.
func runGroup(ctx context.Context, dir string, env []string, name string, args ...string) (stdout, stderr string, err error) {
	if env != nil {
		env = append(os.Environ(), env...)
	}
	return testproc.Run(ctx, dir, env, name, args...)
}

// markedProcesses lists the live processes whose environment holds the entry
// INTEROP_MARKER=marker; the tests put it into the downstream servers they register.
func markedProcesses(marker string) []int {
	entry := []byte("INTEROP_MARKER=" + marker + "\x00")
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var pids []int
	for _, d := range dirs {
		env, err := os.ReadFile(filepath.Join(d, "environ"))
		if err != nil || !bytes.Contains(env, entry) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(d)); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// waitFor polls cond every 50 ms until it holds; it fails the test after d, or
// earlier when the test's own deadline is near.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(d)
	if dl, ok := t.Deadline(); ok && dl.Add(-5*time.Second).Before(end) {
		end = dl.Add(-5 * time.Second)
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		select {
		case <-t.Context().Done():
			t.Fatalf("test ended while waiting for %s", what)
		case <-tick.C:
		}
	}
}
