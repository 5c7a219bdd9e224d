package interop

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// inGroup starts cmd in a process group of its own; killGroup ends the whole group.
func inGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup sends SIGKILL to cmd's process group. The tests use it when a process
// overran its bound and, after a process exited, to end anything it left behind in
// its group; a group already gone (ESRCH) is done.
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

// runGroup runs a command to completion in its own process group: when ctx ends the
// group is killed, and once the command has exited whatever is left in its group is
// killed too. env, when not nil, is added to this process's environment.
func runGroup(ctx context.Context, dir string, env []string, name string, args ...string) (stdout, stderr string, err error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
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
