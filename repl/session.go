package repl

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// ExecRequest is one execution asked of a session.
type ExecRequest struct {
	Code    string
	Reset   bool
	Timeout time.Duration // zero means DefaultTimeout
	// ExpectedGeneration, when set, makes the run fail with STATE_CHANGED before any
	// source runs if Python state is not the one the caller saw.
	ExpectedGeneration *uint64
	// SourcePath, when set, runs that file instead of Code, with Argv as sys.argv[1:].
	SourcePath string
	Argv       []string
	// Fresh runs the file in a separate worker that is stopped afterwards; the
	// persistent namespace and generation are untouched.
	Fresh bool

	inventory bool // a namespace inventory: no history, no user code
}

// ErrBusy is returned when the session's slot is taken.
var ErrBusy = errors.New(msgBusy)

// ErrClosed is returned by a session that has been closed.
var ErrClosed = errors.New(msgSessionClosed)

// Session is one Python namespace: its worker, its active run and its history.
type Session struct {
	id       string
	name     string
	serverID string
	cfg      *Config
	env      sessionEnv
	logger   *slog.Logger

	// lifetime ends when the session closes; runs still going then are abandoned.
	lifetime     context.Context
	stopLifetime context.CancelFunc
	background   sync.WaitGroup

	slot chan struct{} // holds a token while a run owns the session

	bridge Bridge         // serves the mcp helper; nil when no broker serves the session
	rpcs   sync.WaitGroup // bridge calls being served

	mu         sync.Mutex
	proc       *process // nil until the first run and after a worker is lost
	generation uint64
	lastReady  *Ready
	active     *run
	history    []*Result // oldest first, at most HistoryRuns
	closed     bool
}

// sessionEnv is where a session runs and with which interpreter.
type sessionEnv struct {
	python   string
	source   string // SourceExplicit, SourceProjectVenv or SourceServerDefault
	chosenBy string // for the server default: how the server chose it
	project  string
	probe    *ProbeInfo // nil until probed (the default session is not probed)
}

func newSession(ctx context.Context, name, serverID string, cfg *Config, env sessionEnv) *Session {
	lifetime, stop := context.WithCancel(ctx)
	s := &Session{
		id:           newUUID(),
		name:         name,
		serverID:     serverID,
		cfg:          cfg,
		env:          env,
		lifetime:     lifetime,
		stopLifetime: stop,
		slot:         make(chan struct{}, 1),
	}
	s.logger = cfg.Logger.With("session", s.id)
	if cfg.Bridges != nil {
		s.bridge = cfg.Bridges.Acquire(s.id, env.project)
	}
	if cfg.Artifacts != nil {
		cfg.Artifacts.Register(s.id)
	}
	return s
}

// ID is the session's id.
func (s *Session) ID() string { return s.id }

// Execute runs one cell and returns when it has finished, failed, timed out or been
// cancelled through ctx. It never returns nil.
func (s *Session) Execute(ctx context.Context, req ExecRequest) *Result {
	r := newRun(ctx, req)
	if res := s.admit(ctx, r, true); res != nil {
		return res
	}
	defer s.release(r)
	return s.execute(ctx, r)
}

// StartInfo is python_start's answer.
type StartInfo struct {
	ServerID   string    `json:"server_id"`
	SessionID  string    `json:"session_id"`
	Generation uint64    `json:"generation"`
	RunID      string    `json:"run_id"`
	Status     RunStatus `json:"status"`
	PollTool   string    `json:"poll_tool"`
	CancelTool string    `json:"cancel_tool"`
}

// Start begins a run owned by the session and returns at once. The result is a
// failure instead when the run cannot start (bad limits, busy, closed).
func (s *Session) Start(req ExecRequest) (*StartInfo, *Result) {
	r := newRun(s.lifetime, req)
	if res := s.admit(s.lifetime, r, false); res != nil {
		return nil, res
	}
	s.background.Add(1)
	go func() {
		defer s.background.Done()
		defer s.release(r)
		s.execute(s.lifetime, r)
	}()
	s.mu.Lock()
	defer s.mu.Unlock()
	return &StartInfo{
		ServerID: s.serverID, SessionID: s.id, Generation: s.generation,
		RunID: r.id, Status: RunStarting, PollTool: "python_run", CancelTool: "python_cancel",
	}, nil
}

// admit validates the request and takes the slot for r, or returns the failure.
func (s *Session) admit(ctx context.Context, r *run, waitForStopping bool) *Result {
	if len(r.req.Code) > MaxCodeBytes || (r.req.Timeout != 0 && (r.req.Timeout < MinTimeout || r.req.Timeout > MaxTimeout)) {
		return s.early(r, msgLimits)
	}
	if r.req.Timeout == 0 {
		r.req.Timeout = DefaultTimeout
	}
	switch err := s.reserve(ctx, r, waitForStopping); {
	case err == nil:
		return nil
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return s.early(r, msgBeforeDispatch)
	default:
		return s.early(r, err.Error())
	}
}

// early is a failure of a run that never reached a worker.
func (s *Session) early(r *run, msg string) *Result {
	res := failure(r.id, msg, StatePreserved)
	s.identify(res, r)
	return res
}

func (s *Session) identify(res *Result, r *run) {
	res.RunID = r.id
	res.ServerID = s.serverID
	res.SessionID = s.id
	res.ElapsedMS = msSince(r.started)
	if res.Generation == 0 {
		s.mu.Lock()
		res.Generation = s.generation
		s.mu.Unlock()
	}
	limit := PreviewLimit
	if r.req.inventory {
		limit = inventoryLimit
	}
	res.bound(limit)
}

// reserve takes the slot. A run that is already stopping (cancelled, timed out, or
// finished but not yet released) is waited for, up to busyWait, when wait is set.
func (s *Session) reserve(ctx context.Context, r *run, wait bool) error {
	if err := s.tryReserve(r); !errors.Is(err, ErrBusy) {
		return err
	}
	if !wait || !s.activeStopping() {
		return ErrBusy
	}
	timer := time.NewTimer(busyWait)
	defer timer.Stop()
	select {
	case s.slot <- struct{}{}:
		return s.claim(r)
	case <-timer.C:
		return ErrBusy
	case <-ctx.Done():
		return ctx.Err()
	}
}

// activeStopping reports whether the active run is on its way out. A client's
// notifications/cancelled reaches the run's context asynchronously (go-sdk cancels
// the handler from a goroutine), so a call sent right after a cancel may arrive
// first: the answer is awaited for cancelPropagation before the session counts as
// busy.
func (s *Session) activeStopping() bool {
	deadline := time.Now().Add(cancelPropagation)
	for {
		s.mu.Lock()
		active := s.active
		s.mu.Unlock()
		if active == nil || active.isStopping() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (s *Session) tryReserve(r *run) error {
	select {
	case s.slot <- struct{}{}:
		return s.claim(r)
	default:
		return ErrBusy
	}
}

// claim makes r the active run once its caller holds the slot.
func (s *Session) claim(r *run) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		<-s.slot
		return ErrClosed
	}
	s.active = r
	return nil
}

func (s *Session) release(r *run) {
	s.mu.Lock()
	if s.active == r {
		s.active = nil
	}
	s.mu.Unlock()
	<-s.slot
}

// execute runs r on the worker (starting one if needed) and records its result.
func (s *Session) execute(ctx context.Context, r *run) *Result {
	res := s.dispatch(ctx, r)
	s.identify(res, r)
	r.mu.Lock()
	r.stopping = true
	r.mu.Unlock()
	if !r.req.inventory {
		s.mu.Lock()
		s.history = append(s.history, res)
		if len(s.history) > HistoryRuns {
			s.history = append(s.history[:0:0], s.history[len(s.history)-HistoryRuns:]...)
		}
		s.mu.Unlock()
	}
	r.finish(res)
	return res
}

// dispatch checks the generation guard, makes sure a worker runs, sends the cell and
// waits for its outcome.
func (s *Session) dispatch(ctx context.Context, r *run) *Result {
	if res := s.checkGeneration(r); res != nil {
		return res
	}
	if r.req.Fresh {
		return s.dispatchFresh(ctx, r)
	}
	p, fresh, res := s.ensureWorker(ctx, r)
	if res != nil {
		return res
	}
	s.mu.Lock()
	gen := s.generation
	s.mu.Unlock()
	res = s.runOn(ctx, r, p, gen)
	res.StateReset = &fresh
	res.ExecutionMode = "persistent"
	return res
}

// dispatchFresh runs a file in a worker of its own, stopped afterwards. Whatever
// happens to that worker, the persistent namespace is untouched.
func (s *Session) dispatchFresh(ctx context.Context, r *run) *Result {
	s.mu.Lock()
	gen := s.generation
	s.mu.Unlock()
	p, err := s.spawn()
	if err != nil {
		res := failure(r.id, err.Error(), StatePreserved)
		res.Generation = gen
		return res
	}
	defer p.stop()
	res := s.runOn(ctx, r, p, gen)
	res.State = StatePreserved
	res.ExecutionMode = "fresh"
	noReset := false
	res.StateReset = &noReset
	return res
}

// runOn sends r to worker p and waits for its outcome.
func (s *Session) runOn(ctx context.Context, r *run, p *process, gen uint64) *Result {
	r.mu.Lock()
	r.proc, r.status, r.generation = p, RunRunning, gen
	r.mu.Unlock()
	token := newToken()
	p.native.reset(token)
	frame := executeFrame{
		Type: "execute", ID: r.id, Code: r.req.Code, Timeout: r.req.Timeout.Seconds(), Barrier: token,
		SourcePath: r.req.SourcePath, Argv: r.req.Argv, Inventory: r.req.inventory,
	}
	r.startRPCs(ctx)
	defer r.endRPCs()
	if a := s.cfg.Artifacts; a != nil {
		a.StartRun(s.id, r.id)
		defer a.EndRun(s.id, r.id) // aborts the run's unfinished uploads
	}
	var res *Result
	if err := p.send(frame); err != nil {
		if err.Error() == msgFrameTooLarge {
			res = failure(r.id, msgFrameTooLarge, StatePreserved)
		} else {
			res = s.crashed(p, r, "")
		}
	} else {
		res = s.await(ctx, r, p)
	}
	res.Generation = gen
	return res
}

// checkGeneration enforces expected_generation before any source runs.
func (s *Session) checkGeneration(r *run) *Result {
	want := r.req.ExpectedGeneration
	if want == nil {
		return nil
	}
	s.mu.Lock()
	gen, p := s.generation, s.proc
	s.mu.Unlock()
	switch {
	case *want != gen:
		return failure(r.id, msgStaleGeneration, StatePreserved)
	case r.req.Reset, r.req.Fresh:
		return nil // a reset is the caller's own choice; a fresh run needs no old state
	case gen > 0 && (p == nil || !p.alive()):
		return failure(r.id, msgWorkerRestarted, StateCleared)
	}
	return nil
}

// ensureWorker returns a live worker for r, stopping the old one on reset and
// starting a new one when there is none. fresh reports a new worker.
func (s *Session) ensureWorker(ctx context.Context, r *run) (p *process, fresh bool, res *Result) {
	s.mu.Lock()
	p = s.proc
	s.mu.Unlock()
	if p != nil && (r.req.Reset || !p.alive()) {
		s.discard(p)
		p = nil
	}
	if p != nil {
		return p, false, nil
	}
	if ctx.Err() != nil {
		return nil, false, failure(r.id, msgBeforeDispatch, StatePreserved)
	}
	p, err := s.spawn()
	if err != nil {
		return nil, false, failure(r.id, err.Error()+"; no Python state exists", StateCleared)
	}
	s.mu.Lock()
	s.proc = p
	s.generation++
	ready := p.ready
	s.lastReady = &ready
	s.mu.Unlock()
	return p, true, nil
}

// spawn starts a worker for this session's environment.
func (s *Session) spawn() (*process, error) {
	return spawn(spawnSpec{
		python: s.env.python,
		dir:    s.env.project,
		env:    s.cfg.Env,
		exe:    s.cfg.Executable,
		cache:  s.cfg.CodeCache,
		logger: s.logger,
		events: s,
	})
}

// onOutput routes a live output frame to the run it belongs to.
func (s *Session) onOutput(runID, stream, text string) {
	s.mu.Lock()
	r := s.active
	s.mu.Unlock()
	if r != nil && r.id == runID {
		r.appendOutput(stream, text)
	}
}

// await waits for the run's outcome: its result, the worker's death, a cancel, the
// deadline, or the end of the session.
func (s *Session) await(ctx context.Context, r *run, p *process) *Result {
	deadline := time.NewTimer(r.req.Timeout)
	defer deadline.Stop()
	rss := s.rssSampler()
	defer rss.Stop()
	for {
		select {
		case <-rss.C:
			if s.overBudget(p) {
				return s.lost(p, r, msgRSS)
			}
		case rf := <-p.results:
			if rf.id != r.id {
				continue // a stale result of an earlier run; it cannot be this one's
			}
			return s.complete(p, r, rf.result)
		case <-p.dead:
			return s.crashed(p, r, "")
		case <-p.proc.Exited():
			return s.crashed(p, r, "")
		case <-r.cancelled:
			return s.interrupt(ctx, r, p, msgCancelled)
		case <-deadline.C:
			return s.interrupt(ctx, r, p, msgTimedOut)
		case <-s.lifetime.Done():
			return s.lost(p, r, msgAbandoned)
		case <-ctx.Done():
			return s.interrupt(ctx, r, p, msgCancelled)
		}
	}
}

// rssSampler ticks every rssInterval while a cell runs; with no budget it never ticks.
func (s *Session) rssSampler() *time.Ticker {
	t := time.NewTicker(rssInterval)
	if s.cfg.MaxMemoryMiB <= 0 {
		t.Stop()
	}
	return t
}

// overBudget reports a worker whose own resident memory (not its descendants')
// exceeds the budget.
func (s *Session) overBudget(p *process) bool {
	rss, err := residentBytes(p.ready.Pid)
	return err == nil && rss > int64(s.cfg.MaxMemoryMiB)<<20
}

// complete turns the worker's result into the run's result, with the native output
// the worker wrote before it.
func (s *Session) complete(p *process, r *run, wr *workerResult) *Result {
	p.native.wait(barrierWait)
	native, nativeCut := p.native.take()
	res := &Result{
		Success:                  wr.Success,
		Stdout:                   wr.Stdout,
		Stderr:                   wr.Stderr + native,
		ReturnValue:              wr.ReturnValue,
		Value:                    wr.Value,
		Error:                    wr.Error,
		Truncated:                wr.Truncated,
		State:                    wr.State,
		BackgroundTasksCancelled: wr.BackgroundTasksCancelled,
		ExitCode:                 wr.ExitCode,
		Artifact:                 wr.Artifact,
		ArtifactError:            wr.ArtifactError,
	}
	if nativeCut {
		res.Truncated.Stderr = true
	}
	if string(res.Value) == "null" {
		res.Value = nil // None has no value beyond return_value: null
	}
	if res.State == StateCleared {
		// The worker exits after such a result; do not hand it another cell.
		s.discard(p)
	}
	return res
}

// interrupt stops a run: SIGINT to the worker's group, then the grace period, then
// SIGKILL. It reports which of those ended the run.
func (s *Session) interrupt(ctx context.Context, r *run, p *process, reason string) *Result {
	r.setStopping()
	r.endRPCs() // downstream calls are cancelled before the cell is
	p.interrupt()
	grace := time.NewTimer(interruptGrace)
	defer grace.Stop()
	for {
		select {
		case rf := <-p.results:
			if rf.id != r.id {
				continue
			}
			res := s.complete(p, r, rf.result)
			if !res.Success {
				res.Error = strPtr(interruptedError(reason, res.Error))
			}
			return res
		case <-p.dead:
			return s.crashed(p, r, reason+msgExited)
		case <-p.proc.Exited():
			return s.crashed(p, r, reason+msgExited)
		case <-s.lifetime.Done():
			return s.lost(p, r, msgAbandoned)
		case <-grace.C:
			return s.lost(p, r, reason+msgDidNotStop)
		}
	}
}

// interruptedError is the error of a run the worker stopped on our interrupt: the
// reason, plus the worker's own report when it says more than "interrupted".
func interruptedError(reason string, workerErr *string) string {
	if workerErr == nil || *workerErr == "" || strings.HasPrefix(*workerErr, "Execution interrupted") {
		return reason
	}
	return reason + "\n" + *workerErr
}

// crashed reports a worker that died under a run. A result the worker managed to
// send before it exited still wins.
func (s *Session) crashed(p *process, r *run, msg string) *Result {
	select {
	case <-p.dead:
	case <-time.After(barrierWait / 2):
	}
	select {
	case rf := <-p.results:
		if rf.id == r.id {
			return s.complete(p, r, rf.result)
		}
	default:
	}
	if msg == "" {
		msg = msgCrashed + " (" + p.proc.ExitStatus().String() + ")"
		if p.deathErr != nil {
			msg = msgCrashed + " (" + p.deathErr.Error() + ")"
		}
	}
	return s.lost(p, r, msg)
}

// lost kills the worker and reports the run with whatever output it produced.
func (s *Session) lost(p *process, r *run, msg string) *Result {
	s.discard(p)
	res := failure(r.id, msg, StateCleared)
	r.mu.Lock()
	res.Stdout, res.Stderr = string(r.stdout.text), string(r.stderr.text)
	res.Truncated = Truncated{Stdout: r.stdout.truncated, Stderr: r.stderr.truncated}
	r.mu.Unlock()
	native, cut := p.native.take()
	res.Stderr += native
	res.Truncated.Stderr = res.Truncated.Stderr || cut
	return res
}

// discard kills a worker that must not run another cell and reaps it.
func (s *Session) discard(p *process) {
	s.mu.Lock()
	if s.proc == p {
		s.proc = nil
	}
	s.mu.Unlock()
	p.kill()
	p.wait()
}

// Cancel asks the active run (or the one named) to stop. It returns the run's id,
// or an error when no such run is active.
func (s *Session) Cancel(runID string) (string, error) {
	s.mu.Lock()
	r := s.active
	s.mu.Unlock()
	if r == nil || (runID != "" && r.id != runID) {
		return "", errors.New(msgNoActiveRun)
	}
	r.cancel()
	return r.id, nil
}

// Lookup finds a run: the active one as a live snapshot, or a retained result.
// An empty runID means the active run or else the newest result.
func (s *Session) Lookup(runID string) (*Snapshot, *Result, error) {
	s.mu.Lock()
	r := s.active
	s.mu.Unlock()
	if r != nil && (runID == "" || r.id == runID) {
		select {
		case <-r.done:
			return nil, r.result, nil
		default:
			snap := r.snapshot()
			snap.ServerID, snap.SessionID = s.serverID, s.id
			return &snap, nil, nil
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.history) - 1; i >= 0; i-- {
		if runID == "" || s.history[i].RunID == runID {
			return nil, s.history[i], nil
		}
	}
	return nil, nil, errors.New(msgRunNotFound)
}

// Close cancels the active run, gives it grace to stop, abandons it after that,
// and stops the worker. It is idempotent.
func (s *Session) Close(grace time.Duration) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	active := s.active
	s.mu.Unlock()
	if active != nil {
		active.cancel()
		select {
		case <-active.done:
		case <-time.After(grace):
		}
	}
	s.stopLifetime()
	if active != nil {
		<-active.done
	}
	s.background.Wait()
	s.rpcs.Wait()
	if s.cfg.Bridges != nil {
		s.cfg.Bridges.Release(s.id, s.env.project)
	}
	if s.cfg.Artifacts != nil {
		s.cfg.Artifacts.DropSession(s.id)
	}
	s.mu.Lock()
	p := s.proc
	s.proc = nil
	s.mu.Unlock()
	if p != nil {
		p.stop()
	}
}

// Inventory bounds (reference section 6.6): time, and the size of its JSON.
const (
	inventoryTimeout = 5 * time.Second
	inventoryLimit   = 65536
)

// Inspect returns the session's metadata and, when namespace is set, the bounded
// inventory of its variables (names and exact builtin types; no user code runs). The
// inventory needs an idle session and starts the worker if none runs; it is not
// recorded in history.
func (s *Session) Inspect(ctx context.Context, namespace bool) (Health, json.RawMessage, error) {
	if !namespace {
		return s.Health(), nil, nil
	}
	r := newRun(ctx, ExecRequest{inventory: true, Timeout: inventoryTimeout})
	if err := s.tryReserve(r); err != nil {
		return Health{}, nil, err
	}
	res := func() *Result {
		defer s.release(r)
		return s.execute(ctx, r)
	}()
	if !res.Success {
		msg := "namespace inventory failed"
		if res.Error != nil {
			msg = *res.Error
		}
		return Health{}, nil, errors.New(msg)
	}
	return s.Health(), res.Value, nil
}

// ProjectPath is path as the session's tools take it: a relative path is against
// the session's project.
func (s *Session) ProjectPath(path string) string {
	if filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(s.env.project, path)
}

// ExecuteFile runs a saved Python file; a relative path is taken against the
// session's project.
func (s *Session) ExecuteFile(ctx context.Context, path string, req ExecRequest) *Result {
	req.SourcePath = s.ProjectPath(path)
	req.Code = ""
	return s.Execute(ctx, req)
}
