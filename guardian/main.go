package guardian

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Main is the guardian process: the hidden --internal-guardian entry of repl-mcp. Its
// stdin is the control socket, its stdout and stderr go to the child's fd 1 and 2, and
// fds 3 and up are passed on to the child. It never returns normally: it ends by
// killing its own process group.
func Main() int {
	// Pdeathsig (Linux) is tied to the thread that starts the child; keep it alive.
	runtime.LockOSThread()
	// Interrupts aimed at the group are for the child. Catching SIGINT (rather than
	// ignoring it) lets the child start with the default disposition.
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)

	control := bufio.NewReaderSize(os.Stdin, 64<<10)
	g := &guardian{jobs: map[int]bool{}}
	spec, err := readSpec(control)
	if err != nil {
		g.report(report{Error: err.Error()})
		return 1
	}
	child, err := g.start(spec)
	if err != nil {
		g.report(report{Error: err.Error()})
		return 1
	}
	g.report(report{Pid: child.Process.Pid})

	done := make(chan struct{}, 2)
	go func() { g.followCommands(control); done <- struct{}{} }()
	go func() { g.reportExit(child.Wait(), child.ProcessState); done <- struct{}{} }()
	go func() {
		for s := range signals {
			if s != syscall.SIGINT {
				done <- struct{}{}
				return
			}
		}
	}()
	<-done
	g.teardown(child.Process.Pid)
	return 1
}

type guardian struct {
	mu   sync.Mutex
	jobs map[int]bool
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

// start launches the child in the guardian's own process group with fd 0 on
// /dev/null, fd 1 and 2 inherited, and the passed-down descriptors at their numbers.
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

func (g *guardian) reportExit(_ error, state *os.ProcessState) {
	r := report{Exited: true, Code: -1}
	if state != nil {
		if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			r.Signal = signalName(ws.Signal())
		} else {
			r.Code = state.ExitCode()
		}
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

// teardown kills the detached job groups, the child, and finally the guardian's own
// group, which takes every ordinary descendant and the guardian itself.
func (g *guardian) teardown(child int) {
	g.mu.Lock()
	for pgid := range g.jobs {
		syscall.Kill(-pgid, syscall.SIGKILL)
	}
	g.mu.Unlock()
	syscall.Kill(child, syscall.SIGKILL)
	syscall.Kill(0, syscall.SIGKILL)
}
