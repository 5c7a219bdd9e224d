package repl

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/iota-uz/repl-mcp/guardian"
)

// Ready is the worker's handshake, as health reports it.
type Ready struct {
	Type             string `json:"type"`
	Protocol         int    `json:"protocol"`
	PythonVersion    string `json:"python_version"`
	PythonExecutable string `json:"python_executable"`
	Pid              int    `json:"pid"`
}

// spawnSpec is what a worker is started from.
type spawnSpec struct {
	python string
	dir    string
	env    []string
	exe    string // the repl-mcp binary, for the guardian
	cache  string // the code cache directory; "" for none
	logger *slog.Logger
	events workerEvents
}

// workerEvents receives what a worker says outside results: live output and bridge
// requests.
type workerEvents interface {
	onOutput(runID, stream, text string)
	onRPC(p *process, f inFrame)
	onRPCCancel(f inFrame)
}

// process is one live Python worker: its guardian, its pipes and the goroutines that
// read them. All fields but the channels are fixed after spawn.
type process struct {
	proc    *guardian.Process
	ready   Ready
	toWork  *os.File
	fromR   *os.File // frames from the worker
	nativeR *os.File // the worker's fd 1 and 2
	native  *nativeOutput
	results chan resultFrame
	logger  *slog.Logger

	writeMu sync.Mutex

	jobsMu sync.Mutex
	jobs   map[int]bool // detached process groups, by leader pid

	deadOnce sync.Once
	dead     chan struct{} // closed when the protocol channel is gone
	deathErr error         // why, when it was not a plain EOF
	readerWG sync.WaitGroup
}

type resultFrame struct {
	id     string
	result *workerResult
}

// spawn starts a worker through a guardian and waits for its ready frame.
func spawn(spec spawnSpec) (*process, error) {
	python, err := exec.LookPath(spec.python)
	if err != nil {
		return nil, fmt.Errorf("Python interpreter %q cannot be run: %w", spec.python, err)
	}
	toR, toW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	fromR, fromW, err := os.Pipe()
	if err != nil {
		closeAll(toR, toW)
		return nil, err
	}
	nativeR, nativeW, err := os.Pipe()
	if err != nil {
		closeAll(toR, toW, fromR, fromW)
		return nil, err
	}
	gp, err := guardian.Start(guardian.Config{
		Executable: spec.exe,
		Spec: guardian.Spec{
			Program: python,
			Args:    workerArgs(),
			Env:     workerEnv(spec.env, spec.cache),
			Dir:     spec.dir,
		},
		Output:     nativeW,
		ExtraFiles: []*os.File{toR, fromW},
	})
	// The child has its copies; ours would hide the worker's death from the readers.
	closeAll(toR, fromW, nativeW)
	if err != nil {
		closeAll(toW, fromR, nativeR)
		return nil, fmt.Errorf("Python worker could not start (%s): %w", spec.python, err)
	}
	p := &process{
		proc:    gp,
		toWork:  toW,
		fromR:   fromR,
		nativeR: nativeR,
		native:  newNativeOutput(),
		results: make(chan resultFrame, 4),
		jobs:    map[int]bool{},
		logger:  spec.logger,
		dead:    make(chan struct{}),
	}
	p.native.reset(newToken()) // collect startup complaints until the first run
	p.readerWG.Add(2)
	go func() { defer p.readerWG.Done(); p.native.drain(nativeR) }()
	sent := make(chan error, 1)
	go func() {
		p.writeMu.Lock()
		defer p.writeMu.Unlock()
		sent <- sendSource(toW)
	}()
	frames := newFrameReader(fromR)
	ready, err := p.handshake(frames)
	if err != nil {
		p.kill()
	}
	if sendErr := <-sent; err == nil && sendErr != nil {
		// Only an impostor says ready without having read the source.
		p.kill()
		err = fmt.Errorf("Invalid Python worker handshake: the worker did not read its source: %w", sendErr)
	}
	if err != nil {
		p.kill()
		p.readerWG.Done() // the frame reader never started
		p.wait()
		return nil, err
	}
	p.ready = ready
	go func() { defer p.readerWG.Done(); p.readFrames(frames, spec.events) }()
	return p, nil
}

// workerEnv is the server's environment plus the worker's own variables.
func workerEnv(base []string, cache string) []string {
	env := make([]string, 0, len(base)+3)
	for _, kv := range base {
		if strings.HasPrefix(kv, "REPL_MCP_NO_BRIDGE=") || strings.HasPrefix(kv, "REPL_MCP_WORKER_FDS=") ||
			strings.HasPrefix(kv, "REPL_MCP_WORKER_CACHE=") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "REPL_MCP_NO_BRIDGE=1", "REPL_MCP_WORKER_FDS=3,4")
	if cache != "" {
		env = append(env, "REPL_MCP_WORKER_CACHE="+cache)
	}
	return env
}

// handshake waits for the ready frame, at most handshakeTimeout.
func (p *process) handshake(frames *frameReader) (Ready, error) {
	type first struct {
		f   inFrame
		err error
	}
	got := make(chan first, 1)
	go func() {
		f, err := frames.next()
		got <- first{f, err}
	}()
	timer := time.NewTimer(handshakeTimeout)
	defer timer.Stop()
	select {
	case <-timer.C:
		p.kill()
		<-got
		return Ready{}, errors.New("Python worker startup timed out" + p.startupOutput())
	case g := <-got:
		if g.err != nil {
			// Let the guardian report how the child ended before it is torn down.
			select {
			case <-p.proc.Exited():
			case <-time.After(barrierWait):
			}
			p.kill()
			p.native.wait(barrierWait)
			if errors.Is(g.err, errFrameTooLarge) || strings.Contains(g.err.Error(), "not JSON") {
				return Ready{}, errors.New("Invalid Python worker handshake: " + g.err.Error() + p.startupOutput())
			}
			return Ready{}, fmt.Errorf("Python worker exited during startup (%s)%s", p.proc.ExitStatus(), p.startupOutput())
		}
		f := g.f
		switch {
		case f.Type != "ready":
			p.kill()
			return Ready{}, fmt.Errorf("Invalid Python worker handshake: first frame was %q, not ready", f.Type)
		case f.Protocol != protocolVersion:
			p.kill()
			return Ready{}, fmt.Errorf("Invalid Python worker handshake: protocol %d, server speaks %d", f.Protocol, protocolVersion)
		case f.Pid <= 0:
			p.kill()
			return Ready{}, errors.New("Worker handshake omitted real PID")
		}
		return Ready{Type: "ready", Protocol: f.Protocol, PythonVersion: f.PythonVersion, PythonExecutable: f.PythonExecutable, Pid: f.Pid}, nil
	}
}

// startupOutput is what the interpreter printed before failing, for the error.
func (p *process) startupOutput() string {
	out, _ := p.native.take()
	out = strings.TrimSpace(out)
	if out == "" {
		return ""
	}
	return ": " + cutUTF8(out, 2000)
}

// readFrames dispatches frames until the channel closes or breaks the protocol.
func (p *process) readFrames(frames *frameReader, events workerEvents) {
	for {
		f, err := frames.next()
		if err != nil {
			p.die(err)
			return
		}
		switch f.Type {
		case "output":
			events.onOutput(f.ID, f.Stream, f.Text)
		case "rpc":
			events.onRPC(p, f)
		case "rpc_cancel":
			events.onRPCCancel(f)
		case "job":
			p.trackJob(f)
		case "result":
			if f.Result == nil {
				p.die(errors.New("worker sent a result frame without a result"))
				return
			}
			p.results <- resultFrame{id: f.ID, result: f.Result}
		default:
			p.die(fmt.Errorf("worker sent an unknown frame type %q", f.Type))
			return
		}
	}
}

// trackJob follows a detached process group the worker started (a child in a new
// session escapes the worker's group). The guardian kills registered groups when the
// worker goes, even if the server died first.
func (p *process) trackJob(f inFrame) {
	if f.Pid <= 1 {
		return
	}
	p.jobsMu.Lock()
	defer p.jobsMu.Unlock()
	switch f.Action {
	case "started":
		p.jobs[f.Pid] = true
		_ = p.proc.AddJob(f.Pid)
	case "finished":
		delete(p.jobs, f.Pid)
		_ = p.proc.RemoveJob(f.Pid)
	}
}

// killJobs SIGKILLs the detached groups of the worker, as an interrupt does first.
func (p *process) killJobs() {
	p.jobsMu.Lock()
	defer p.jobsMu.Unlock()
	for pgid := range p.jobs {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		delete(p.jobs, pgid)
		_ = p.proc.RemoveJob(pgid)
	}
}

// die marks the protocol channel gone. A broken protocol (as opposed to EOF) kills the
// worker: nothing it says can be trusted any more.
func (p *process) die(err error) {
	p.deadOnce.Do(func() {
		if err != nil && !errors.Is(err, os.ErrClosed) && err.Error() != "EOF" {
			p.deathErr = err
			p.logger.Warn("worker protocol failure", "pid", p.ready.Pid, "err", err)
			p.kill()
		}
		close(p.dead)
	})
}

// send writes one frame whole, within frameWriteTimeout; a failed write kills the
// worker, since a partial frame would poison the channel.
func (p *process) send(frame any) error {
	line, err := json.Marshal(frame)
	if err != nil {
		return err
	}
	if len(line)+1 > MaxFrameBytes {
		return errors.New(msgFrameTooLarge)
	}
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	p.toWork.SetWriteDeadline(time.Now().Add(frameWriteTimeout))
	if _, err := p.toWork.Write(append(line, '\n')); err != nil {
		p.kill()
		return fmt.Errorf("Worker frame queue/write deadline exceeded: %w", err)
	}
	return nil
}

// interrupt kills the worker's detached jobs and sends SIGINT to its whole
// process group.
func (p *process) interrupt() {
	p.killJobs()
	_ = p.proc.Signal(syscall.SIGINT)
}

// kill ends the worker's group and its detached jobs at once.
func (p *process) kill() {
	p.killJobs()
	p.proc.Close()
	p.proc.Kill()
}

// stop hangs up on the worker (EOF on its protocol channel and the guardian's control
// socket), then reaps everything. The guardian kills the group on hang-up; the
// escalation is for a guardian that does not answer.
func (p *process) stop() {
	p.writeMu.Lock()
	p.toWork.Close()
	p.writeMu.Unlock()
	p.proc.Stop(workerStopGrace)
	p.wait()
}

// wait reaps the guardian and the reader goroutines. A descendant that escaped the
// group (a new session, a fork) may still hold the worker's pipes open; after a short
// wait the readers are cut off rather than left waiting for it.
func (p *process) wait() {
	p.proc.Wait()
	done := make(chan struct{})
	go func() { p.readerWG.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(barrierWait):
		closeAll(p.fromR, p.nativeR)
		<-done
	}
	closeAll(p.fromR, p.nativeR, p.toWork)
}

// alive reports whether the protocol channel is still open.
func (p *process) alive() bool {
	select {
	case <-p.dead:
		return false
	case <-p.proc.Exited():
		return false
	default:
		return true
	}
}

func closeAll(files ...*os.File) {
	for _, f := range files {
		f.Close()
	}
}
