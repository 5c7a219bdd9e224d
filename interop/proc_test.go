package interop

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"

	"github.com/iota-uz/repl-mcp/internal/testproc"
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
