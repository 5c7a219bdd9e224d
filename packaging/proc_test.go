package packaging

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// inGroup starts cmd in a process group of its own; killGroup ends the whole group.
func inGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup sends SIGKILL to cmd's process group, when a process overran its bound and
// after it exited, to end anything it left behind; a group already gone is done.
func killGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// runGroup runs a command to completion in its own process group, bounded by ctx. env,
// when not nil, is the command's whole environment.
func runGroup(ctx context.Context, dir string, env []string, name string, args ...string) (stdout, stderr string, err error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = env
	inGroup(cmd)
	cmd.Cancel = func() error { return killGroup(cmd) }
	cmd.WaitDelay = 5 * time.Second
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	killGroup(cmd)
	if ctx.Err() != nil {
		err = errors.Join(err, context.Cause(ctx))
	}
	return out.String(), errOut.String(), err
}

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

// tail keeps the last max bytes written to it, for logs shown when a test fails.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func newTail(max int) *tail { return &tail{max: max} }

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
