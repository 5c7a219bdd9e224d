package guardian

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/iota-uz/repl-mcp/sandbox"
)

// Flag is the hidden command-line flag that makes the repl-mcp binary run [Main].
const Flag = "--internal-guardian"

// maxControlLine bounds one line on the control socket in either direction; the spec
// carries the child's environment, so it is the largest.
const maxControlLine = 1 << 20

// specWriteTimeout bounds the server's write of the spec to a fresh guardian.
const specWriteTimeout = 5 * time.Second

// Spec is the child a guardian starts. Env is the child's whole environment.
type Spec struct {
	Program string   `json:"program"`
	Args    []string `json:"args"`
	Env     []string `json:"env"`
	Dir     string   `json:"dir"`
	// ExtraFiles is the number of descriptors, from fd 3 up, that the guardian was
	// given and passes on to the child at the same numbers.
	ExtraFiles int `json:"extra_files"`
	// StdinFD, when non-zero, is the guardian's descriptor that becomes the child's
	// stdin.
	StdinFD int `json:"stdin_fd,omitempty"`
	// Sandbox, when set, is the policy the child and everything it starts run under
	// (package sandbox). The guardian makes the child a private temp directory
	// ($TMPDIR, writable), applies the policy to the thread that starts the child, and
	// starts nothing when the kernel cannot enforce it.
	Sandbox *sandbox.Policy `json:"sandbox,omitempty"`
}

// Config says how to start a guardian.
type Config struct {
	// Executable is the repl-mcp binary to re-run; empty means os.Executable().
	Executable string
	Spec       Spec
	// Output receives the child's fd 1 and fd 2 (and the guardian's own complaints);
	// nil means /dev/null. Stdout, when set, takes fd 1 alone (a downstream MCP
	// server's protocol channel), leaving Output as fd 2.
	Output *os.File
	Stdout *os.File
	// Stdin becomes the child's fd 0; nil means /dev/null.
	Stdin *os.File
	// ExtraFiles become fd 3, 4, ... of the child.
	ExtraFiles []*os.File
}

// Exit describes how the child ended, as the guardian saw it.
type Exit struct {
	Code   int    // exit status, or -1 when killed by a signal
	Signal string // signal name when killed by a signal
}

func (e Exit) String() string {
	if e.Signal != "" {
		return "killed by " + e.Signal
	}
	return fmt.Sprintf("exit status %d", e.Code)
}

// report is one line from the guardian to the server.
type report struct {
	Pid    int    `json:"pid,omitempty"`
	Error  string `json:"error,omitempty"`
	Exited bool   `json:"exited,omitempty"`
	Code   int    `json:"code,omitempty"`
	Signal string `json:"signal,omitempty"`
	// TempDir is a sandboxed child's private temp directory.
	TempDir string `json:"temp_dir,omitempty"`
}

// command is one line from the server to the guardian after the spec.
type command struct {
	AddJob    int `json:"add_job,omitempty"`
	RemoveJob int `json:"remove_job,omitempty"`
}

// Process is a running guardian and, once started, its child.
type Process struct {
	cmd     *exec.Cmd
	control *os.File
	pid     int // the child's pid
	// tempDir is a sandboxed child's private temp directory, which the guardian
	// removes at teardown (and the server after it, should the guardian be killed).
	// handshook is closed once Start has stored it or failed: a guardian whose child
	// ends at once can be reaped before that, and reap must still find it.
	tempDir   atomic.Pointer[string]
	handshook chan struct{}

	writeMu sync.Mutex

	exitOnce sync.Once
	exited   chan struct{} // closed when the child's exit is known or the guardian died
	exit     Exit
	// watched is closed when the control socket has been read to its end, so that
	// the guardian's last report (how the child ended) is never lost to its death.
	watched chan struct{}

	waited  chan struct{} // closed when the guardian has been reaped
	waitErr error
}

// Start starts a guardian and its child and returns once the child runs. The caller
// owns the Process: it must call Close (or Kill) and then Wait.
func Start(cfg Config) (*Process, error) {
	exe := cfg.Executable
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("locate repl-mcp executable for the guardian: %w", err)
		}
	}
	ours, theirs, err := socketPair()
	if err != nil {
		return nil, err
	}
	defer theirs.Close()
	extra := cfg.ExtraFiles
	cfg.Spec.ExtraFiles = len(extra)
	if cfg.Stdin != nil {
		// The guardian's own stdin is the control socket: the child's stdin travels
		// as the descriptor after the extra files.
		extra = append(append([]*os.File(nil), extra...), cfg.Stdin)
		cfg.Spec.StdinFD = 3 + len(cfg.ExtraFiles)
	}
	cmd := exec.Command(exe, Flag)
	cmd.Stdin = theirs
	if cfg.Output != nil {
		cmd.Stdout, cmd.Stderr = cfg.Output, cfg.Output
	}
	if cfg.Stdout != nil {
		cmd.Stdout = cfg.Stdout
	}
	cmd.ExtraFiles = extra
	cmd.Env = []string{} // the guardian needs nothing; the child's env travels in the spec
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		ours.Close()
		return nil, fmt.Errorf("start process guardian: %w", err)
	}
	p := &Process{cmd: cmd, control: ours, exited: make(chan struct{}), watched: make(chan struct{}),
		handshook: make(chan struct{}), waited: make(chan struct{})}
	go p.reap()
	r, err := p.handshake(cfg.Spec)
	if r.TempDir != "" {
		p.tempDir.Store(&r.TempDir)
	}
	close(p.handshook)
	if err != nil {
		close(p.watched)
		p.Kill()
		<-p.waited
		p.control.Close() // nothing else will: the caller gets no Process
		return nil, err
	}
	p.pid = r.Pid
	go p.watch()
	return p, nil
}

// handshake sends the spec and waits for the child's pid (and a sandboxed child's
// temp directory) or the reason it failed.
func (p *Process) handshake(spec Spec) (report, error) {
	line, err := json.Marshal(spec)
	if err != nil {
		return report{}, err
	}
	if len(line) >= maxControlLine {
		return report{}, errors.New("child command exceeds 1 MiB")
	}
	p.control.SetWriteDeadline(time.Now().Add(specWriteTimeout))
	if _, err := p.control.Write(append(line, '\n')); err != nil {
		return report{}, fmt.Errorf("send command to process guardian: %w", err)
	}
	p.control.SetWriteDeadline(time.Time{})
	p.control.SetReadDeadline(time.Now().Add(specWriteTimeout))
	r, err := readReport(p.control)
	p.control.SetReadDeadline(time.Time{})
	switch {
	case err != nil:
		return r, fmt.Errorf("process guardian did not start the child: %w", err)
	case r.Error != "":
		return r, errors.New(r.Error)
	case r.Pid <= 0:
		return r, errors.New("process guardian reported no child pid")
	}
	return r, nil
}

// readReport reads one report line byte by byte, so that nothing after it is
// consumed before watch takes over the socket.
func readReport(f *os.File) (report, error) {
	var line []byte
	b := make([]byte, 1)
	for len(line) < maxControlLine {
		if _, err := f.Read(b); err != nil {
			return report{}, err
		}
		if b[0] == '\n' {
			var r report
			err := json.Unmarshal(line, &r)
			return r, err
		}
		line = append(line, b[0])
	}
	return report{}, errors.New("guardian report too long")
}

// watch reads the guardian's reports until it hangs up; the only one expected after
// the handshake is the child's exit.
func (p *Process) watch() {
	defer close(p.watched)
	sc := bufio.NewScanner(p.control)
	sc.Buffer(make([]byte, 4096), maxControlLine)
	for sc.Scan() {
		var r report
		if json.Unmarshal(sc.Bytes(), &r) == nil && r.Exited {
			p.markExited(Exit{Code: r.Code, Signal: r.Signal})
		}
	}
	p.markExited(Exit{Code: -1, Signal: "guardian exit"})
}

func (p *Process) markExited(e Exit) {
	p.exitOnce.Do(func() {
		p.exit = e
		close(p.exited)
	})
}

func (p *Process) reap() {
	p.waitErr = p.cmd.Wait()
	<-p.handshook // bounded: the handshake reads with a deadline, and fails on the guardian's exit
	if dir := p.TempDir(); dir != "" {
		os.RemoveAll(dir) // the guardian's teardown did, unless it was killed first
	}
	// The guardian's end of the socket is closed now; read what it said last.
	select {
	case <-p.watched:
	case <-time.After(time.Second):
	}
	p.markExited(Exit{Code: -1, Signal: "guardian exit"})
	close(p.waited)
}

// Pid is the child's pid.
func (p *Process) Pid() int { return p.pid }

// TempDir is a sandboxed child's private temp directory ($TMPDIR), "" for a child
// without a sandbox.
func (p *Process) TempDir() string {
	if dir := p.tempDir.Load(); dir != nil {
		return *dir
	}
	return ""
}

// Group is the guardian's process group (and session).
func (p *Process) Group() int { return p.cmd.Process.Pid }

// ChildGroup is the child's process group: the child leads a group of its own, which
// holds it and every ordinary descendant. Before the child runs it is the guardian's.
func (p *Process) ChildGroup() int {
	if p.pid > 0 {
		return p.pid
	}
	return p.Group()
}

// Exited is closed once the child has exited (or the guardian is gone).
func (p *Process) Exited() <-chan struct{} { return p.exited }

// ExitStatus is how the child ended; valid once Exited is closed.
func (p *Process) ExitStatus() Exit {
	<-p.exited
	return p.exit
}

// Signal sends sig to the child's whole process group. A group that is already gone
// is not an error, and once the guardian has been reaped nothing is signalled: the
// group is gone and its number may be another's.
func (p *Process) Signal(sig syscall.Signal) error {
	return p.signalGroup(p.ChildGroup(), sig)
}

func (p *Process) signalGroup(pgid int, sig syscall.Signal) error {
	select {
	case <-p.waited:
		return nil
	default:
	}
	err := syscall.Kill(-pgid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// Kill SIGKILLs the child's whole group at once; the guardian then sees the child
// exit and tears down the rest (detached jobs, adopted orphans, itself).
func (p *Process) Kill() { _ = p.Signal(syscall.SIGKILL) }

// killAll SIGKILLs the child's group and the guardian's, for a guardian that did not
// tear down by itself.
func (p *Process) killAll() {
	_ = p.signalGroup(p.ChildGroup(), syscall.SIGKILL)
	_ = p.signalGroup(p.Group(), syscall.SIGKILL)
}

// AddJob tells the guardian about a detached process group (a child that made its
// own session) that must die with this one.
func (p *Process) AddJob(pgid int) error { return p.send(command{AddJob: pgid}) }

// RemoveJob forgets a detached group that has finished.
func (p *Process) RemoveJob(pgid int) error { return p.send(command{RemoveJob: pgid}) }

func (p *Process) send(c command) error {
	line, _ := json.Marshal(c)
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	p.control.SetWriteDeadline(time.Now().Add(specWriteTimeout))
	_, err := p.control.Write(append(line, '\n'))
	return err
}

// Close hangs up the control socket: the guardian kills the whole group at once.
func (p *Process) Close() { p.control.Close() }

// Wait waits until the guardian has been reaped.
func (p *Process) Wait() error {
	<-p.waited
	return p.waitErr
}

// Done is closed once the guardian has been reaped.
func (p *Process) Done() <-chan struct{} { return p.waited }

// Stop hangs up, waits up to grace for the guardian to tear down, SIGKILLs the child's
// group and the guardian's if it has not, and reaps the guardian.
func (p *Process) Stop(grace time.Duration) {
	p.Close()
	select {
	case <-p.waited:
		return
	case <-time.After(grace):
	}
	p.killAll()
	<-p.waited
}

func socketPair() (ours, theirs *os.File, err error) {
	// SOCK_CLOEXEC is Linux-only; the fork lock keeps a concurrent exec from
	// inheriting the descriptors before they are marked close-on-exec.
	syscall.ForkLock.RLock()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err == nil {
		syscall.CloseOnExec(fds[0])
		syscall.CloseOnExec(fds[1])
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, nil, fmt.Errorf("create guardian control socket: %w", err)
	}
	// Our end must be non-blocking so that os.File registers it with the poller:
	// only then can Close interrupt the watcher's pending Read and hang up at once.
	if err := syscall.SetNonblock(fds[0], true); err != nil {
		syscall.Close(fds[0])
		syscall.Close(fds[1])
		return nil, nil, fmt.Errorf("create guardian control socket: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "guardian-control"), os.NewFile(uintptr(fds[1]), "guardian-control-child"), nil
}
