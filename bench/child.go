package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// maxLineBytes bounds one line read from a child; the server's own limit is 1 MiB.
const maxLineBytes = 4 << 20

// Grace periods of [child.stop]: stdin EOF first, then SIGTERM, then SIGKILL.
const (
	eofGrace  = 3 * time.Second
	termGrace = 2 * time.Second
	killGrace = 5 * time.Second
)

// errTimeout is an operation on a child that ran past its deadline.
var errTimeout = errors.New("timed out")

// child is a process the bench talks to by lines on its stdin and stdout. It leads
// its own process group. The bench owns it from startChild until stop returns.
type child struct {
	name   string
	pidv   int // its process id, which is also its process group's
	stdin  *os.File
	stdout *os.File
	reader *bufio.Reader
	stderr *tailBuffer

	done    chan struct{} // closed when the process has been reaped
	waitErr error
	unwatch func() bool // stops the context watcher
}

// startChild starts program in dir with stdin and stdout as pipes to the bench and
// stderr kept in a bounded buffer. A cancelled ctx interrupts any blocked read or
// write; the caller must still call stop.
func startChild(ctx context.Context, name, dir, program string, args ...string) (*child, error) {
	cmd := exec.Command(program, args...)
	cmd.Dir = dir
	return startPiped(ctx, name, cmd)
}

// startPiped is startChild for a command already set up (its directory, its
// environment): stdin and stdout become pipes to the bench.
func startPiped(ctx context.Context, name string, cmd *exec.Cmd) (*child, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeFiles(inR, inW)
		return nil, err
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	return startCmd(ctx, name, cmd, inW, outR, inR, outW)
}

// startCmd starts cmd, whose own ends of the pipes are theirs, and returns a child
// that writes lines to in and reads lines from out.
func startCmd(ctx context.Context, name string, cmd *exec.Cmd, in, out *os.File, theirs ...*os.File) (*child, error) {
	if err := ctx.Err(); err != nil {
		closeFiles(theirs...)
		closeFiles(in, out)
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	stderr := &tailBuffer{limit: 16 << 10}
	if cmd.Stderr == nil {
		cmd.Stderr = stderr
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = time.Second
	err := cmd.Start()
	closeFiles(theirs...)
	if err != nil {
		closeFiles(in, out)
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	c := newChild(ctx, name, cmd.Process.Pid, in, out, stderr)
	go func() {
		c.waitErr = cmd.Wait()
		close(c.done)
	}()
	return c, nil
}

// newChild is a child that is running: its owner closes done once it is reaped, after
// setting waitErr. A cancelled ctx interrupts any blocked read or write.
func newChild(ctx context.Context, name string, pid int, in, out *os.File, stderr *tailBuffer) *child {
	c := &child{
		name:   name,
		pidv:   pid,
		stdin:  in,
		stdout: out,
		reader: bufio.NewReaderSize(out, 64<<10),
		stderr: stderr,
		done:   make(chan struct{}),
	}
	c.unwatch = context.AfterFunc(ctx, func() {
		past := time.Unix(1, 0)
		c.stdin.SetWriteDeadline(past)
		c.stdout.SetReadDeadline(past)
	})
	return c
}

func (c *child) pid() int { return c.pidv }

// writeLine writes line and a newline, whole, before deadline.
func (c *child) writeLine(ctx context.Context, line []byte, deadline time.Time) error {
	c.stdin.SetWriteDeadline(deadline)
	if err := ctx.Err(); err != nil {
		return err
	}
	buf := make([]byte, 0, len(line)+1)
	buf = append(append(buf, line...), '\n')
	if _, err := c.stdin.Write(buf); err != nil {
		return c.ioError(ctx, "write to", err)
	}
	return nil
}

// readLine reads one line, without its newline, before deadline.
func (c *child) readLine(ctx context.Context, deadline time.Time) ([]byte, error) {
	c.stdout.SetReadDeadline(deadline)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var line []byte
	for {
		part, err := c.reader.ReadSlice('\n')
		if err == nil {
			if line == nil {
				return part[:len(part)-1], nil
			}
			line = append(line, part...)
			return line[:len(line)-1], nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return nil, c.ioError(ctx, "read from", err)
		}
		line = append(line, part...)
		if len(line) > maxLineBytes {
			return nil, fmt.Errorf("%s wrote a line longer than %d bytes", c.name, maxLineBytes)
		}
	}
}

func (c *child) ioError(ctx context.Context, op string, err error) error {
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("%s %s: %w", op, c.name, ctx.Err())
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Errorf("%s %s: %w", op, c.name, errTimeout)
	case errors.Is(err, io.EOF):
		return fmt.Errorf("%s %s: it closed its stdout (%s)%s", op, c.name, c.exitState(), c.stderrNote())
	}
	return fmt.Errorf("%s %s: %w%s", op, c.name, err, c.stderrNote())
}

// exitState says whether the process has exited, and how, without waiting long.
func (c *child) exitState() string {
	select {
	case <-c.done:
	case <-time.After(200 * time.Millisecond):
		return "still running"
	}
	if c.waitErr != nil {
		return c.waitErr.Error()
	}
	return "exit status 0"
}

func (c *child) stderrNote() string {
	if s := c.stderr.String(); s != "" {
		return "; its stderr ends: " + lastLines(s, 5)
	}
	return ""
}

// stopReport says how a child ended.
type stopReport struct {
	onEOF   bool          // it exited by itself once stdin closed
	signal  string        // the last signal the bench had to send, if any
	took    time.Duration // from closing stdin to reaping
	waitErr error
}

// stop ends the child on every path: close stdin and wait, then SIGTERM and then
// SIGKILL to its process group, each with a grace period; its stdout is drained
// meanwhile so that it never blocks writing. It returns an error only when the
// process could not be reaped at all.
func (c *child) stop() (stopReport, error) {
	c.unwatch()
	start := time.Now()
	c.stdin.Close()
	drained := make(chan struct{})
	c.stdout.SetReadDeadline(time.Now().Add(eofGrace + termGrace + killGrace))
	go func() {
		defer close(drained)
		io.Copy(io.Discard, c.reader)
	}()
	rep := stopReport{}
	switch {
	case c.waitFor(eofGrace):
		rep.onEOF = true
	case c.signalGroup(syscall.SIGTERM) && c.waitFor(termGrace):
		rep.signal = "SIGTERM"
	default:
		rep.signal = "SIGKILL"
		c.signalGroup(syscall.SIGKILL)
		if !c.waitFor(killGrace) {
			c.stdout.Close()
			<-drained
			return rep, fmt.Errorf("%s (pid %d) was not reaped %v after SIGKILL", c.name, c.pid(), killGrace)
		}
	}
	// Anything still holding the stdout pipe (a leaked grandchild) must not keep
	// the drain running.
	select {
	case <-drained:
	case <-time.After(500 * time.Millisecond):
	}
	c.stdout.Close()
	<-drained
	rep.took = time.Since(start)
	rep.waitErr = c.waitErr
	return rep, nil
}

func (c *child) waitFor(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c.done:
		return true
	case <-t.C:
		return false
	}
}

// signalGroup signals the child's process group; true when it was sent or the group
// is already gone.
func (c *child) signalGroup(sig syscall.Signal) bool {
	err := syscall.Kill(-c.pid(), sig)
	return err == nil || errors.Is(err, syscall.ESRCH)
}

// runOnce runs program to completion with stdout to out (nil is /dev/null) and
// returns its wall time from start to reaping. A run past timeout, or a cancelled
// ctx, kills its process group.
func runOnce(ctx context.Context, dir string, timeout time.Duration, out *os.File, program string, args ...string) (time.Duration, error) {
	cmd := exec.Command(program, args...)
	cmd.Dir = dir
	if out != nil {
		cmd.Stdout = out
	}
	stderr := &tailBuffer{limit: 4 << 10}
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = time.Second
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case err := <-done:
		took := time.Since(start)
		if err != nil {
			if s := stderr.String(); s != "" {
				err = fmt.Errorf("%w; stderr ends: %s", err, lastLines(s, 3))
			}
			return 0, err
		}
		return took, nil
	case <-t.C:
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		return 0, fmt.Errorf("did not finish within %v", timeout)
	case <-ctx.Done():
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		return 0, ctx.Err()
	}
}

func closeFiles(files ...*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// tailBuffer keeps the last limit bytes written to it.
type tailBuffer struct {
	mu    sync.Mutex
	limit int
	buf   []byte
	total int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.total += len(p)
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.limit; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// Len is the number of bytes ever written.
func (t *tailBuffer) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.total
}
