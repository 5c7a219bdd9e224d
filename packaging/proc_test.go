package packaging

import (
	"context"
	"github.com/iota-uz/repl-mcp/internal/testproc"
	"os"
	"strings"
	"testing"
	"time"
)

// The process helpers shared with interop's tests (internal/testproc).
var (
	inGroup   = testproc.InGroup
	killGroup = testproc.KillGroup
	runGroup  = testproc.Run
	newTail   = testproc.NewTail
)

// run runs a command bounded by d (and by the test's deadline) and returns its stdout;
// any failure fails the test with the command's output. env as in runGroup.
func run(t *testing.T, d time.Duration, dir string, env []string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := boundedContext(t, d)
	defer cancel()
	start := time.Now()
	stdout, stderr, err := runGroup(ctx, dir, env, name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v (after %v)\nstdout:\n%s\nstderr:\n%s", name, strings.Join(args, " "), err, time.Since(start).Round(time.Millisecond), stdout, stderr)
	}
	return stdout
}

// boundedContext ends after d or shortly before the test's own deadline, whichever
// comes first, so an overrun fails with the command's output rather than a panic.
func boundedContext(t *testing.T, d time.Duration) (context.Context, context.CancelFunc) {
	if dl, ok := t.Deadline(); ok {
		if left := time.Until(dl) - 10*time.Second; left < d {
			d = left
		}
	}
	return context.WithTimeout(t.Context(), d)
}

// environ is this process's environment without the named variables, plus extra
// (NAME=value entries, which replace any of the same name).
func environ(drop []string, extra ...string) []string {
	skip := map[string]bool{}
	for _, k := range drop {
		skip[k] = true
	}
	for _, kv := range extra {
		k, _, _ := strings.Cut(kv, "=")
		skip[k] = true
	}
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !skip[k] {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}
