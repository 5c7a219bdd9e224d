package repl

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/iota-uz/repl-mcp/guardian"
	"github.com/iota-uz/repl-mcp/internal/utf8cut"
	"github.com/iota-uz/repl-mcp/sandbox"
)

// Ready is the worker's handshake, as health reports it.
type Ready struct {
	Type             string `json:"type"`
	Protocol         int    `json:"protocol"`
	PythonVersion    string `json:"python_version"`
	PythonExecutable string `json:"python_executable"`
	Pid              int    `json:"pid"`
	// PathHead is the directory first on the worker's PATH, the interpreter's own bin
	// directory, and VirtualEnv the venv it runs in, as its activate script sets them
	// (docs/contract.md §1.4); "" for none.
	PathHead   string `json:"path_head,omitempty"`
	VirtualEnv string `json:"virtual_env,omitempty"`
	// siteDirs are the directories on the worker's sys.path at its start, siteAbsent
	// the paths that were not there and would be read if they were (process.stale).
	siteDirs, siteAbsent []string
}

// launch is everything that makes a worker's environment: two workers started from
// equal launches are interchangeable until one of them has run a cell. The spare
// pool keys on it (spare.go).
type launch struct {
	python string
	dir    string
	env    []string // the server's environment, before workerEnv adds the worker's own
	exe    string   // the repl-mcp binary, for the guardian
	cache  string   // the code cache directory; "" for none
	// limits is the worker's limits entry (WorkerLimitsEnv); "" when the Config
	// brought no OpLimits, and no worker starts.
	limits string
	// policy is the sandbox the workers run under, nil for none (sandbox.go).
	policy *sandbox.Policy
}

// key is the launch as one comparable string: every field, NUL-separated (no field
// can hold a NUL, so no two launches share a key).
func (l launch) key() string {
	parts := append([]string{l.python, l.dir, l.exe, l.cache, l.limits, l.policy.ID()}, l.env...)
	return strings.Join(parts, "\x00")
}

// spawnSpec is what spawn starts a worker from, as startWorker (lifecycle.go) makes
// it out of a launch: the guardian's binary and the child's spec, and who hears the
// worker first.
type spawnSpec struct {
	exe    string        // the repl-mcp binary, for the guardian
	child  guardian.Spec // the interpreter, resolved; its environment; the project; its sandbox
	python string        // the interpreter as the launch names it, for errors
	logger *slog.Logger
	events workerEvents
	// abort, when it closes, gives up a start still waiting for the handshake (a
	// spare's, when the pool closes); nil never does.
	abort <-chan struct{}
}

// workerEvents receives what a worker says outside results: live output and bridge
// requests.
type workerEvents interface {
	onOutput(runID, stream, text string)
	onRPC(p *process, f inFrame)
	onRPCCancel(f inFrame)
}

// process is one live Python worker: its guardian, its pipes and the goroutines that
// read them. All fields but the channels and owner are fixed after spawn.
type process struct {
	proc  *guardian.Process
	ready Ready
	// policy is the sandbox the worker runs under (its code cache a writable root),
	// nil for none; its temp directory is proc.TempDir().
	policy  *sandbox.Policy
	started time.Time   // when spawn began
	dir     string      // its working directory, the project
	dirInfo os.FileInfo // that directory when spawn began: one made anew is another
	// spoke is set by a frame the worker sent while no session had claimed it (a
	// spare's): a cell of another worker reached its pipes, and it is not handed out.
	spoke   atomic.Bool
	toWork  *os.File
	fromR   *os.File // frames from the worker
	nativeR *os.File // the worker's fd 1 and 2, as it started
	// nativeSock takes the read ends of the pipes the worker puts at fd 1 and 2 later
	// (worker/PROTOCOL.md, Native pipes); nativeMore are those ends, for reap to close.
	nativeSock *os.File
	nativeMu   sync.Mutex
	nativeMore []*os.File
	native     *nativeOutput
	results    chan resultFrame
	// snapshots are the worker's answers to snapshot requests (snapshot.go).
	snapshots chan snapshotReport
	// owner is who hears the worker's frames and logs its failures: the session
	// that started it, or, for a spare, the pool until a session claims it (bind).
	owner atomic.Pointer[owner]

	writeMu sync.Mutex

	// childrenMu guards what the worker reported of the children it started: jobs,
	// the detached process groups (by leader pid), and origins, every reported child
	// (jobs too), each with the run it was started for ("" for none).
	childrenMu sync.Mutex
	jobs       map[int]string
	origins    map[int]string

	deadOnce sync.Once
	dead     chan struct{} // closed when the protocol channel is gone
	deathErr error         // why, when it was not a plain EOF
	readerWG sync.WaitGroup

	haltOnce sync.Once
	reapOnce sync.Once
	stopping chan struct{} // closed when halt begins
	stopped  chan struct{} // closed when reap has reaped everything
}

// owner is a worker's listener and logger, swapped whole when a spare is claimed.
type owner struct {
	events workerEvents
	logger *slog.Logger
}

// bind makes events and logger hear the worker from its next frame on.
func (p *process) bind(events workerEvents, logger *slog.Logger) {
	p.owner.Store(&owner{events: events, logger: logger})
}

func (p *process) logger() *slog.Logger { return p.owner.Load().logger }

type resultFrame struct {
	id     string
	result *Result // the worker's, its image bytes in; no identity fields yet
}

// spawn starts a worker through a guardian and waits for its ready frame: the
// mechanics of a start, which only startWorker calls. The worker's fd 3 is the
// protocol pipe from the server, fd 4 the one to it, and fd 1 and 2 share the
// native-output pipe. A start that fails leaves nothing running.
func spawn(spec spawnSpec) (*process, error) {
	started := time.Now()
	dirInfo, err := os.Stat(spec.child.Dir)
	if err != nil {
		return nil, fmt.Errorf(msgCouldNotStart, spec.python, err)
	}
	gp, err := guardian.StartPiped(spec.exe, spec.child,
		guardian.Pipes{Output: true, Extra: []guardian.Direction{guardian.ToChild, guardian.FromChild, guardian.Socket}})
	if err != nil {
		return nil, fmt.Errorf(msgCouldNotStart, spec.python, err)
	}
	p := &process{
		proc:       gp.Process,
		policy:     spec.child.Sandbox,
		started:    started,
		dir:        spec.child.Dir,
		dirInfo:    dirInfo,
		toWork:     gp.Extra[0],
		fromR:      gp.Extra[1],
		nativeR:    gp.Output,
		nativeSock: gp.Extra[2],
		native:     newNativeOutput(),
		results:    make(chan resultFrame, 4),
		snapshots:  make(chan snapshotReport, 4),
		jobs:       map[int]string{},
		origins:    map[int]string{},
		dead:       make(chan struct{}),
		stopping:   make(chan struct{}),
		stopped:    make(chan struct{}),
	}
	p.bind(spec.events, spec.logger)
	p.native.reset(newToken()) // collect startup complaints until the first run
	p.readerWG.Add(2)
	go func() { defer p.readerWG.Done(); p.native.drain(p.nativeR, p.native.first()) }()
	sent := make(chan error, 1)
	go func() {
		p.writeMu.Lock()
		defer p.writeMu.Unlock()
		sent <- sendSource(p.toWork)
	}()
	frames := newFrameReader(p.fromR)
	ready, err := p.handshake(frames, spec.abort)
	if err != nil {
		p.proc.Kill()
	}
	if sendErr := <-sent; err == nil && sendErr != nil {
		// Only an impostor says ready without having read the source.
		err = fmt.Errorf(msgHandshake+": the worker did not read its source: %w", sendErr)
	}
	if err != nil {
		p.readerWG.Done() // the frame reader never started
		p.halt()
		p.reap()
		return nil, err
	}
	p.ready = ready
	go func() { defer p.readerWG.Done(); p.readFrames(frames) }()
	return p, nil
}

// workerEnv is the server's environment plus the worker's own variables, limits its
// limits entry (WorkerLimitsEnv).
func workerEnv(base []string, cache, limits string) []string {
	env := make([]string, 0, len(base)+4)
	for _, kv := range base {
		if strings.HasPrefix(kv, "REPL_MCP_NO_BRIDGE=") || strings.HasPrefix(kv, "REPL_MCP_WORKER_FDS=") ||
			strings.HasPrefix(kv, "REPL_MCP_WORKER_NATIVE=") ||
			strings.HasPrefix(kv, "REPL_MCP_WORKER_CACHE=") || strings.HasPrefix(kv, workerLimitsVar+"=") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "REPL_MCP_NO_BRIDGE=1", "REPL_MCP_WORKER_FDS=3,4", "REPL_MCP_WORKER_NATIVE=5", limits)
	if cache != "" {
		env = append(env, "REPL_MCP_WORKER_CACHE="+cache)
	}
	return env
}

// errSpawnAborted is a start given up through spawnSpec.abort.
var errSpawnAborted = errors.New("worker start given up")

// handshake waits for the ready frame, at most handshakeTimeout, and not once abort
// has closed.
func (p *process) handshake(frames *frameReader, abort <-chan struct{}) (Ready, error) {
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
		p.proc.Kill()
		<-got
		return Ready{}, errors.New(msgStartupTimeout + p.startupOutput())
	case <-abort:
		p.proc.Kill()
		<-got
		return Ready{}, errSpawnAborted
	case g := <-got:
		if g.err != nil {
			// Let the guardian report how the child ended before it is torn down.
			select {
			case <-p.proc.Exited():
			case <-time.After(barrierWait):
			}
			p.proc.Kill()
			p.native.wait(barrierWait)
			if errors.Is(g.err, errFrameTooLarge) || errors.Is(g.err, errNotJSON) {
				return Ready{}, errors.New(msgHandshake + ": " + g.err.Error() + p.startupOutput())
			}
			return Ready{}, fmt.Errorf(msgStartupExit+" (%s)%s", p.proc.ExitStatus(), p.startupOutput())
		}
		f := g.f
		switch {
		case f.Type != "ready":
			return Ready{}, fmt.Errorf(msgHandshake+": first frame was %q, not ready", f.Type)
		case f.Protocol != protocolVersion:
			return Ready{}, fmt.Errorf(msgHandshake+": protocol %d, server speaks %d", f.Protocol, protocolVersion)
		case f.Pid <= 0:
			return Ready{}, errors.New(msgNoPid)
		}
		return Ready{
			Type: "ready", Protocol: f.Protocol, PythonVersion: f.PythonVersion, PythonExecutable: f.PythonExecutable, Pid: f.Pid,
			PathHead: f.PathHead, VirtualEnv: f.VirtualEnv, siteDirs: f.SiteDirs, siteAbsent: f.SiteAbsent,
		}, nil
	}
}

// startupOutput is what the interpreter printed before failing, for the error.
func (p *process) startupOutput() string {
	out, _ := p.native.take()
	out = strings.TrimSpace(out)
	if out == "" {
		return ""
	}
	return ": " + utf8cut.Prefix(out, 2000)
}

// readFrames dispatches frames, to the worker's owner at the time, until the channel
// closes or breaks the protocol. A run's images are collected here and handed to its
// result; a run that never sends one drops them.
func (p *process) readFrames(frames *frameReader) {
	var images imageCollector
	for {
		f, err := frames.next()
		if err != nil {
			p.die(err)
			return
		}
		if _, unowned := p.owner.Load().events.(unclaimed); unowned {
			p.spoke.Store(true)
		}
		switch f.Type {
		case "output":
			p.owner.Load().events.onOutput(f.ID, f.Stream, f.Text)
		case "rpc":
			p.owner.Load().events.onRPC(p, f)
		case "rpc_cancel":
			p.owner.Load().events.onRPCCancel(f)
		case "job":
			p.trackJob(f)
		case "process":
			p.trackProcess(f)
		case "snapshot":
			select {
			case p.snapshots <- snapshotReport{id: f.ID, status: f.Status, summary: f.Summary, err: f.Error}:
			default: // nobody asked for this many: a stale answer
			}
		case "image":
			if err := images.add(f); err != nil {
				p.die(err)
				return
			}
		case "result":
			if f.Result == nil {
				p.die(errors.New("worker sent a result frame without a result"))
				return
			}
			res := f.Result.result()
			taken, err := images.take(f.ID, res.Images)
			if err != nil {
				p.die(err)
				return
			}
			res.Images = taken
			res.noBarrier = f.Barrier != nil && !*f.Barrier
			if f.NativePipe {
				if err := p.takeNativePipe(); err != nil {
					p.die(err)
					return
				}
			}
			p.results <- resultFrame{id: f.ID, result: res}
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
	p.childrenMu.Lock()
	defer p.childrenMu.Unlock()
	switch f.Action {
	case "started":
		p.jobs[f.Pid] = f.ID
		p.originLocked(f.Pid, f.ID)
		_ = p.proc.AddJob(f.Pid)
	case "finished":
		delete(p.jobs, f.Pid)
		_ = p.proc.RemoveJob(f.Pid)
	}
}

// trackProcess keeps which run a child the worker started works for (a `process`
// frame): an interrupt signals the children of the interrupted run only (scope.go).
func (p *process) trackProcess(f inFrame) {
	if f.Pid <= 1 || f.Action != "started" {
		return
	}
	p.childrenMu.Lock()
	defer p.childrenMu.Unlock()
	p.originLocked(f.Pid, f.ID)
}

// originLocked records a child's run. Past maxOrigins entries those of processes that
// are gone are dropped first, so the table stays bounded however many children the
// worker starts; the caller holds childrenMu.
func (p *process) originLocked(pid int, runID string) {
	if len(p.origins) >= maxOrigins {
		for known := range p.origins {
			if syscall.Kill(known, 0) == syscall.ESRCH {
				delete(p.origins, known)
			}
		}
		if len(p.origins) >= maxOrigins {
			clear(p.origins) // every one alive: the oldest go by start time instead (scope.go)
		}
	}
	p.origins[pid] = runID
}

// killJobs SIGKILLs the detached groups of the worker (those started for runID only,
// unless it is ""), as an interrupt does first, and returns their leaders.
func (p *process) killJobs(runID string) []int {
	p.childrenMu.Lock()
	defer p.childrenMu.Unlock()
	var killed []int
	for pgid, run := range p.jobs {
		if runID != "" && run != runID {
			continue
		}
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		delete(p.jobs, pgid)
		_ = p.proc.RemoveJob(pgid)
		killed = append(killed, pgid)
	}
	return killed
}

// die marks the protocol channel gone. A broken protocol (as opposed to EOF) kills the
// worker: nothing it says can be trusted any more.
func (p *process) die(err error) {
	p.deadOnce.Do(func() {
		if err != nil && !errors.Is(err, os.ErrClosed) && err.Error() != "EOF" {
			p.deathErr = err
			p.logger().Warn("worker protocol failure", "pid", p.ready.Pid, "err", err)
			p.proc.Kill() // the supervisor stops and reaps it when it sees the death
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
	return p.sendLine(line)
}

// sendLine writes one encoded frame (without its newline), as send does.
func (p *process) sendLine(line []byte) error {
	if len(line)+1 > MaxFrameBytes {
		return errCommandTooLarge
	}
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	p.toWork.SetWriteDeadline(time.Now().Add(frameWriteTimeout))
	if _, err := p.toWork.Write(append(line, '\n')); err != nil {
		p.proc.Kill() // a partial frame poisons the channel; the supervisor reaps
		return fmt.Errorf(msgWriteDeadline+": %w", err)
	}
	return nil
}

// A worker stops the one way there is, halt then reap, through a reaper
// (lifecycle.go): stop returns once it is reaped, drop once it is halted, with the
// reap on a goroutine the reaper waits for. Both halves are idempotent and safe from
// any goroutine but the worker's own readers.

// halt ends the worker at once, the first half of a stop: it SIGKILLs the worker's
// detached job groups and its own group, and hangs up the protocol channel and the
// guardian's control socket (the guardian then kills the group too, and exits). Once
// it returns no code of the worker's runs any more; what is left is the kernel
// tearing the processes down, which reap waits for. Idempotent.
func (p *process) halt() {
	p.haltOnce.Do(func() {
		close(p.stopping)
		p.killJobs("")
		_ = p.proc.Signal(syscall.SIGKILL)
		p.proc.Close()
		// Not under writeMu: a write blocked on a worker that no longer reads ends
		// with the close (the frame no longer matters).
		p.toWork.Close()
	})
}

// reap is a stop's second half, after halt: it reaps the guardian (SIGKILLing both
// groups if the guardian has not gone within workerStopGrace), lets the readers drain
// the pipes (cut off after barrierWait when a descendant that escaped the group keeps
// them open), and closes the server's ends.
func (p *process) reap() {
	p.reapOnce.Do(func() {
		p.proc.Stop(workerStopGrace)
		done := make(chan struct{})
		go func() { p.readerWG.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(barrierWait):
			p.closeReaders()
			<-done
		}
		p.closeReaders()
		close(p.stopped)
	})
	<-p.stopped
}

// closeReaders closes the server's ends of the worker's outputs: its frames, its native
// pipes and the socket that brings them.
func (p *process) closeReaders() {
	p.native.close()
	closeAll(p.fromR, p.nativeR, p.nativeSock)
	p.nativeMu.Lock()
	defer p.nativeMu.Unlock()
	closeAll(p.nativeMore...)
}

// takeNativePipe receives the read end of the pipe the worker has just put at its fd 1
// and 2 (it sent it before the result that says so, so it is there) and drains it: it
// becomes the current native pipe once that result is taken (nativeOutput.promote).
// Called by the frame reader, which holds a count of readerWG, so adding one is safe.
func (p *process) takeNativePipe() error {
	f, err := receiveFile(p.nativeSock, barrierWait)
	if err != nil {
		return fmt.Errorf("worker announced a native pipe it did not send: %w", err)
	}
	p.nativeMu.Lock()
	p.nativeMore = append(p.nativeMore, f)
	p.nativeMu.Unlock()
	src := p.native.expect()
	p.readerWG.Add(1)
	go func() { defer p.readerWG.Done(); p.native.drain(f, src) }()
	return nil
}

// stale says why a worker that has waited (a spare) must not be handed out, or "":
// a worker started now would differ from it, or it is not fit to run a cell. A
// directory on its sys.path at its start (site-packages, the standard library) has
// changed or is gone; a .pth file in a site-packages directory, or a sitecustomize
// or usercustomize module on the path, was edited in place (which leaves the
// directory's time as it was); a path the start would have read had it existed (the
// user site-packages, a missing sys.path entry) now exists (pip install --user); its
// project directory was removed or made anew (its cwd is gone); it is stopped
// (SIGSTOP: its first cell would time out); it sent a frame before a session claimed
// it. Times are compared with a second's margin, as a file system may keep them
// coarsely.
func (p *process) stale() string {
	if p.spoke.Load() {
		return "it sent frames before a session claimed it"
	}
	if stopped(p.ready.Pid) {
		return "it is stopped"
	}
	if info, err := os.Stat(p.dir); err != nil || !os.SameFile(info, p.dirInfo) {
		return "its project directory was removed or made anew"
	}
	changed := func(path string) bool {
		info, err := os.Stat(path)
		return err == nil && info.ModTime().After(p.started.Add(-time.Second))
	}
	for _, dir := range p.ready.siteDirs {
		if info, err := os.Stat(dir); err != nil || info.ModTime().After(p.started.Add(-time.Second)) {
			return "a directory on its sys.path changed: " + dir
		}
		for _, name := range []string{"sitecustomize.py", "usercustomize.py"} {
			if changed(filepath.Join(dir, name)) {
				return "a file its start ran changed: " + filepath.Join(dir, name)
			}
		}
		if base := filepath.Base(dir); base != "site-packages" && base != "dist-packages" {
			continue
		}
		pths, _ := filepath.Glob(filepath.Join(dir, "*.pth"))
		for _, pth := range pths {
			if changed(pth) {
				return "a file its start read changed: " + pth
			}
		}
	}
	for _, path := range p.ready.siteAbsent {
		if _, err := os.Stat(path); err == nil {
			return "a path its start would have read now exists: " + path
		}
	}
	return ""
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
