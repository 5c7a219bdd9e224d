package guardian

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/iota-uz/repl-mcp/sandbox"

	"golang.org/x/sys/unix"
)

// Main is the guardian process: the hidden --internal-guardian entry of repl-mcp. Its
// stdin is the control socket, its stdout and stderr go to the child's fd 1 and 2, and
// fds 3 and up are passed on to the child. It never returns normally: it ends by
// killing its own process group.
func Main() int {
	// Pdeathsig (Linux) is tied to the thread that starts the child; keep it alive.
	runtime.LockOSThread()
	// The server signals the child's group, not the guardian's; a stray SIGINT here is
	// caught (rather than ignored) so that the child starts with the default disposition.
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	// Before the child exists, so that no SIGCHLD is missed.
	sigchld := make(chan os.Signal, 1)
	signal.Notify(sigchld, syscall.SIGCHLD)

	control := bufio.NewReaderSize(os.Stdin, 64<<10)
	g := &guardian{jobs: map[int]bool{}}
	spec, err := readSpec(control)
	if err != nil {
		g.report(report{Error: err.Error()})
		return 1
	}
	if err := becomeSubreaper(); err != nil {
		fmt.Fprintf(os.Stderr, "repl-mcp guardian: cannot adopt orphans (%v); a double fork may escape\n", err)
	}
	if spec.Sandbox != nil {
		// On this locked thread, which starts the child: the guardian's other
		// threads stay as they were.
		if err := g.sandbox(&spec); err != nil {
			g.removeTemp()
			g.report(report{Error: err.Error()})
			return 1
		}
	}
	child, err := g.start(spec)
	if err != nil {
		g.removeTemp()
		g.report(report{Error: err.Error()})
		return 1
	}
	r := newReaper(child.Process.Pid)
	go r.run(sigchld)
	g.report(report{Pid: r.child, TempDir: g.tempDir})

	done := make(chan struct{}, 3)
	go func() { g.followCommands(control); done <- struct{}{} }()
	go func() { <-r.childDone; g.reportExit(r.childStatus); done <- struct{}{} }()
	go func() {
		for s := range signals {
			if s != syscall.SIGINT {
				done <- struct{}{}
				return
			}
		}
	}()
	<-done
	g.teardown(r)
	return 1
}

type guardian struct {
	mu   sync.Mutex
	jobs map[int]bool
	// tempDir is a sandboxed child's private temp directory, removed at teardown.
	tempDir string
}

// sandbox makes the child's private temp directory (beneath the $TMPDIR of its
// environment, else /tmp), gives the child its sandboxed environment
// (sandbox.ChildEnv: that directory as TMPDIR, the proxy's variables), and puts the
// calling thread, which must be the one that starts the child, under the spec's
// policy with that directory writable. It fails when the kernel cannot enforce it.
func (g *guardian) sandbox(spec *Spec) error {
	base := "/tmp"
	for _, kv := range spec.Env {
		if v, ok := strings.CutPrefix(kv, "TMPDIR="); ok && filepath.IsAbs(v) {
			base = v
		}
	}
	dir, err := os.MkdirTemp(base, "repl-mcp-worker-")
	if err != nil {
		return fmt.Errorf("sandbox: make the worker's temp directory: %w", err)
	}
	g.tempDir = dir
	spec.Env = sandbox.ChildEnv(spec.Env, spec.Sandbox, dir)
	_, err = sandbox.ApplyToThread(spec.Sandbox.WithRoot(dir), sandbox.HostKernel())
	return err
}

// removeTemp removes the sandboxed child's temp directory and all it holds. Not on
// the calling thread: Main's goroutine is locked to the thread the child's sandbox
// was applied to, whose writable roots hold the directory but not its parent, so
// from there only its contents would go. Other goroutines run on threads the runtime
// starts outside it (LockOSThread's template thread), as they were before.
func (g *guardian) removeTemp() {
	if g.tempDir == "" {
		return
	}
	removed := make(chan struct{})
	go func() {
		defer close(removed)
		os.RemoveAll(g.tempDir)
	}()
	<-removed
}

func readSpec(control *bufio.Reader) (Spec, error) {
	line, err := readControlLine(control)
	if err != nil {
		return Spec{}, fmt.Errorf("read child command: %w", err)
	}
	var spec Spec
	if err := json.Unmarshal(line, &spec); err != nil {
		return Spec{}, fmt.Errorf("decode child command: %w", err)
	}
	if spec.Program == "" {
		return Spec{}, errors.New("child command names no program")
	}
	return spec, nil
}

// readControlLine reads one line of at most maxControlLine bytes; the spec carries
// the worker's source and environment, so it outgrows any small buffer.
func readControlLine(control *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := control.ReadSlice('\n')
		if len(line)+len(chunk) > maxControlLine {
			return nil, errors.New("line exceeds 1 MiB")
		}
		line = append(line, chunk...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, err
		}
	}
}

// start launches the child as the leader of a process group of its own (in the
// guardian's session) with fd 0 on /dev/null, fd 1 and 2 inherited, and the passed-down descriptors at their numbers.
func (g *guardian) start(spec Spec) (*exec.Cmd, error) {
	cmd := exec.Command(spec.Program, spec.Args...)
	cmd.Env = spec.Env
	cmd.Dir = spec.Dir
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	extra := make([]*os.File, spec.ExtraFiles)
	for i := range extra {
		extra[i] = os.NewFile(uintptr(3+i), fmt.Sprintf("fd%d", 3+i))
	}
	cmd.ExtraFiles = extra
	var stdin *os.File
	if spec.StdinFD > 0 {
		stdin = os.NewFile(uintptr(spec.StdinFD), "stdin")
		cmd.Stdin = stdin
	}
	cmd.SysProcAttr = childAttr()
	err := cmd.Start()
	// The child holds its own copies now; ours would keep the server's pipes open
	// after the child is gone.
	for _, f := range extra {
		f.Close()
	}
	if stdin != nil {
		stdin.Close()
	}
	return cmd, err
}

// followCommands applies job registrations until the server hangs up.
func (g *guardian) followCommands(control *bufio.Reader) {
	for {
		line, err := readControlLine(control)
		if err != nil {
			return
		}
		var c command
		if json.Unmarshal(line, &c) != nil {
			continue
		}
		g.mu.Lock()
		if c.AddJob > 1 {
			g.jobs[c.AddJob] = true
		}
		delete(g.jobs, c.RemoveJob)
		g.mu.Unlock()
	}
}

func (g *guardian) reportExit(ws syscall.WaitStatus) {
	r := report{Exited: true, Code: -1}
	if ws.Signaled() {
		r.Signal = signalName(ws.Signal())
	} else {
		r.Code = ws.ExitStatus()
	}
	g.report(r)
}

// signalName is the signal as a person looks it up ("SIGKILL"); Go's String is its
// description ("killed"), which reads as nonsense after "killed by".
func signalName(sig syscall.Signal) string {
	if name := unix.SignalName(sig); name != "" {
		return name
	}
	return fmt.Sprintf("signal %d", int(sig))
}

func (g *guardian) report(r report) {
	line, _ := json.Marshal(r)
	os.Stdin.Write(append(line, '\n'))
}

// teardownWait bounds how long teardown waits for what it killed to be reaped; only a
// process stuck in the kernel takes longer, and the server's own group kill follows.
const teardownWait = 2 * time.Second

// teardown kills the detached job groups and the child's group, reaps the child (so
// that it never lingers as init's zombie), kills and reaps every orphan the guardian
// adopted, and finally kills its own group, which takes the guardian itself.
func (g *guardian) teardown(r *reaper) {
	deadline := time.Now().Add(teardownWait)
	g.mu.Lock()
	for pgid := range g.jobs {
		syscall.Kill(-pgid, syscall.SIGKILL)
	}
	g.mu.Unlock()
	syscall.Kill(-r.child, syscall.SIGKILL)
	syscall.Kill(r.child, syscall.SIGKILL)
	select {
	case <-r.childDone:
	case <-time.After(time.Until(deadline)):
	}
	killAdopted(r, deadline)
	g.removeTemp()
	syscall.Kill(0, syscall.SIGKILL)
}

// killAdopted SIGKILLs the guardian's remaining children (orphans it adopted, each
// with its group) until none is left: the children of each one killed are adopted in
// turn as it dies, and found on the next round.
func killAdopted(r *reaper, deadline time.Time) {
	for time.Now().Before(deadline) {
		pids := children()
		if len(pids) == 0 {
			return
		}
		for _, pid := range pids {
			syscall.Kill(-pid, syscall.SIGKILL) // ESRCH unless it leads a group
			syscall.Kill(pid, syscall.SIGKILL)
		}
		select {
		case <-r.reaped:
		case <-time.After(10 * time.Millisecond): // a zombie already reaped, or a slow death
		}
	}
}

// reaper is the guardian's one waiter: it reaps every child, the one it started and
// the orphans it adopted, so that neither lingers as a zombie, and records how the
// started one ended.
type reaper struct {
	child       int
	childDone   chan struct{} // closed once the child is reaped
	childStatus syscall.WaitStatus
	reaped      chan struct{} // a nudge after each reap, for teardown
}

func newReaper(child int) *reaper {
	return &reaper{child: child, childDone: make(chan struct{}), reaped: make(chan struct{}, 1)}
}

// run reaps whatever has exited each time a SIGCHLD arrives (signals coalesce, so
// each round reaps until none is left).
func (r *reaper) run(sigchld <-chan os.Signal) {
	for {
		r.reapExited()
		<-sigchld
	}
}

func (r *reaper) reapExited() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil || pid <= 0 {
			return
		}
		if pid == r.child {
			r.childStatus = ws
			close(r.childDone)
		}
		select {
		case r.reaped <- struct{}{}:
		default:
		}
	}
}
