package testproc

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// InGroup makes cmd start in a process group of its own; KillGroup ends the group.
func InGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// KillGroup sends SIGKILL to cmd's process group: when a process overran its bound,
// and after it exited, to end anything it left behind. A group already gone is done.
func KillGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// Run runs a command to completion in its own process group: when ctx ends the group
// is killed, and once the command has exited whatever is left in its group is killed
// too. env, when not nil, is the command's whole environment.
func Run(ctx context.Context, dir string, env []string, name string, args ...string) (stdout, stderr string, err error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = env
	InGroup(cmd)
	cmd.Cancel = func() error { return KillGroup(cmd) }
	cmd.WaitDelay = 5 * time.Second
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	KillGroup(cmd)
	if ctx.Err() != nil {
		err = errors.Join(err, context.Cause(ctx))
	}
	return out.String(), errOut.String(), err
}

// Tail keeps the last max bytes written to it, for logs shown when a test fails.
type Tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

// NewTail keeps at most max bytes.
func NewTail(max int) *Tail { return &Tail{max: max} }

func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *Tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
