package repl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/iota-uz/repl-mcp/internal/utf8cut"
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
	// Watch, when set, follows the run's output while Execute blocks.
	Watch *OutputWatch
	// YieldAfter, when positive, makes ExecuteOrYield leave a cell still running
	// then to the session (yield.go); Execute ignores it.
	YieldAfter time.Duration

	// Sandbox is the policy the call brought under --sandbox inherit-codex; a run
	// without one is refused there.
	Sandbox *CallPolicy

	inventory bool // a namespace inventory: no history, no user code
	// restore loads a snapshot instead of running code (restore.go): no history either.
	restore *restoreSpec
}

// quiet reports a run that is no cell (an inventory, a restore): it is kept neither in
// the history nor in the notebook.
func (req *ExecRequest) quiet() bool { return req.inventory || req.restore != nil }

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
	// worker is the session's worker over its lives: it starts, stops and
	// supervises the state of every worker the session has (lifecycle.go).
	worker *lifecycle

	// lifetime ends when the session closes; runs still going then are abandoned.
	lifetime     context.Context
	stopLifetime context.CancelFunc
	background   sync.WaitGroup

	slot chan struct{} // holds a token while a run owns the session

	rpcs sync.WaitGroup // rpcs of cell code being served

	// What outlives the session's workers (durable.go, snapshot.go): its project's
	// state (nil without a state directory), the Manager that holds this lifetime's
	// record, and its snapshots (nil when off). discard: python_session_close removes
	// its snapshots; a server's shutdown keeps them.
	proj    *projectState
	manager *Manager
	snaps   *sessionSnapshots
	discard bool

	mu      sync.Mutex
	active  *run
	history []*Result // oldest first, at most HistoryRuns
	closed  bool
	// refusalNoted: a result has said the sandbox may have refused it (noteSandbox).
	refusalNoted bool
}

// sessionEnv is where a session runs and with which interpreter.
type sessionEnv struct {
	python   string
	source   string // SourceExplicit, SourceProjectVenv or SourceServerDefault
	chosenBy string // which interpreter and why, in the user's words (choiceWords)
	venvFix  string // for a project .venv: how else to choose an interpreter
	project  string
	probe    *ProbeInfo // nil until probed (the default session is not probed)
}

func newSession(ctx context.Context, name, serverID string, cfg *Config, env sessionEnv, pool *spares) *Session {
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
	s.worker = newLifecycle(cfg.launch(env), env, pool, s, s.logger)
	s.worker.onGone = func(p *process) { s.snaps.workerGone(p) }
	if cfg.Services != nil {
		cfg.Services.SessionOpened(s.id, env.project)
	}
	return s
}

// ID is the session's id.
func (s *Session) ID() string { return s.id }

// Execute runs one cell and returns when it has finished, failed, timed out or been
// cancelled through ctx. It never returns nil.
func (s *Session) Execute(ctx context.Context, req ExecRequest) *Result {
	req.YieldAfter = 0
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

// Start begins a run owned by the session and returns once its generation guard
// has passed. The result is a failure instead when the run cannot start (bad
// limits, busy, closed, a stale expected_generation); such a run is not recorded.
func (s *Session) Start(req ExecRequest) (*StartInfo, *Result) {
	r := newRun(s.lifetime, req)
	r.background = true
	if res := s.admit(s.lifetime, r, false); res != nil {
		return nil, res
	}
	if res := s.guard(r); res != nil {
		s.identify(res, r)
		s.release(r)
		return nil, res
	}
	// The generation the run executes in, not the session's now: before a
	// session's first run (or a reset) that is the next worker's.
	gen := s.worker.currentGeneration()
	if !r.req.Fresh {
		gen = s.worker.upcoming(r.req.Reset)
	}
	r.mu.Lock()
	r.generation = gen // what its snapshots say while it starts
	r.mu.Unlock()
	s.background.Add(1)
	go func() {
		defer s.background.Done()
		defer s.runEnded(r) // after the slot is free: a disk write
		defer s.release(r)
		s.execute(s.lifetime, r)
	}()
	s.leave(r)
	return &StartInfo{
		ServerID: s.serverID, SessionID: s.id, Generation: gen,
		RunID: r.id, Status: RunStarting, PollTool: "python_run", CancelTool: "python_cancel",
	}, nil
}

// admit validates the request and takes the slot for r, or returns the failure.
func (s *Session) admit(ctx context.Context, r *run, waitForStopping bool) *Result {
	if len(r.req.Code) > MaxCodeBytes || (r.req.Timeout != 0 && (r.req.Timeout < MinTimeout || r.req.Timeout > MaxTimeout)) {
		return s.early(r, ReasonLimits, msgLimits)
	}
	if r.req.Timeout == 0 {
		r.req.Timeout = DefaultTimeout
	}
	switch err := s.reserve(ctx, r, waitForStopping); {
	case err == nil:
		return nil
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return s.early(r, ReasonNotDispatched, msgBeforeDispatch)
	case errors.Is(err, ErrBusy):
		return s.early(r, ReasonBusy, s.busyError(r))
	default:
		return s.early(r, ReasonClosed, err.Error()) // claim's ErrClosed, its only other error
	}
}

// busyError names the run that holds the slot, how long it has run and what it
// runs, and how to wait for it or stop it: the caller may never have seen its id.
// The session's notebook records the refusal of refused, as it happened, when it
// was code (a restore or an inventory runs none of the caller's).
func (s *Session) busyError(refused *run) string {
	s.mu.Lock()
	active := s.active
	s.mu.Unlock()
	if active == nil {
		return msgBusy // released meanwhile
	}
	age := waited(time.Since(active.started))
	if !refused.req.quiet() {
		s.RecordEvent(EventBusy, active.id, fmt.Sprintf(msgEventBusy, active.id, age, active.what(), refused.what()))
	}
	msg := fmt.Sprintf(msgBusyRun, active.id, age, active.what(), int(MaxWait.Seconds()))
	if active.task.Load() {
		msg += msgBusyTask
	}
	return msg
}

// what is the run's first code line (at most busyCodeChars bytes), or the saved
// file it runs: how the session's texts name a run to an agent that may not know
// whether the run is its own.
func (r *run) what() string {
	if r.req.SourcePath != "" {
		return "file " + r.req.SourcePath
	}
	return firstLine(r.req.Code, busyCodeChars)
}

// firstLine is code's first non-blank line, cut to at most limit bytes.
func firstLine(code string, limit int) string {
	for line := range strings.Lines(code) {
		if line = strings.TrimSpace(line); line != "" {
			if len(line) > limit {
				return utf8cut.Prefix(line, limit-3) + "..."
			}
			return line
		}
	}
	return ""
}

// waited writes d as a person reads a wait: tenths under ten seconds, whole
// seconds above, and a run that has only just started as under a tenth (not "0 s",
// which reads as no time at all).
func waited(d time.Duration) string {
	if d < 50*time.Millisecond {
		return "under 0.1 s"
	}
	if d < 10*time.Second {
		return strconv.FormatFloat(d.Round(100*time.Millisecond).Seconds(), 'f', -1, 64) + " s"
	}
	return strconv.FormatInt(int64(d.Round(time.Second)/time.Second), 10) + " s"
}

// early is a failure of a run that never reached a worker nor the history: its run
// id names nothing python_run can read (Result.Recorded).
func (s *Session) early(r *run, reason Reason, msg string) *Result {
	res := failure(r.id, reason, msg)
	s.identify(res, r)
	res.unrecorded = true
	return res
}

func (s *Session) identify(res *Result, r *run) {
	res.RunID = r.id
	if res.kept == nil {
		res.kept = new(keptText) // one per run, however often it is read (KeepText)
	}
	res.ServerID = s.serverID
	res.SessionID = s.id
	res.ElapsedMS = msSince(r.started)
	res.code = r.what()
	if res.Generation == 0 {
		res.Generation = s.worker.currentGeneration()
	}
	limit := PreviewLimit
	if r.req.quiet() {
		limit = inventoryLimit
	}
	res.bound(limit)
}

// reserve takes the slot. A run that is already leaving (cancelled, timed out, or
// finished but not yet released) is waited for, up to busyWait, when wait is set.
func (s *Session) reserve(ctx context.Context, r *run, wait bool) error {
	if err := s.tryReserve(r); !errors.Is(err, ErrBusy) {
		return err
	}
	if !wait || !s.activeLeaving(ctx) {
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

// activeLeaving reports whether the active run is on its way out, giving a cancel
// that is still propagating cancelPropagation to arrive (see run.leavingSoon).
func (s *Session) activeLeaving(ctx context.Context) bool {
	s.mu.Lock()
	active := s.active
	s.mu.Unlock()
	return active == nil || active.leavingSoon(ctx, cancelPropagation)
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
	s.noteSandbox(r, res)
	s.identify(res, r)
	r.enter(phaseLeaving)
	if !r.req.inventory && !r.req.Fresh {
		s.snaps.ran()
	}
	if !r.req.quiet() {
		s.mu.Lock()
		s.history = append(s.history, res)
		if len(s.history) > HistoryRuns {
			s.history = append(s.history[:0:0], s.history[len(s.history)-HistoryRuns:]...)
		}
		retainImages(s.history)
		s.mu.Unlock()
	}
	s.record(r, res)
	r.finish(res)
	return res
}

// Cancel asks the active run (or the one named) to stop. It returns the run's id,
// or an error when no such run is active.
func (s *Session) Cancel(runID string) (string, error) {
	s.mu.Lock()
	r := s.active
	s.mu.Unlock()
	if r == nil || (runID != "" && r.id != runID) {
		return "", errors.New(s.unknownRun(runID, msgNoActiveRun))
	}
	r.cancel()
	s.RecordEvent(EventCancel, r.id, fmt.Sprintf(msgEventCancel, r.id, waited(time.Since(r.started)), r.what()))
	return r.id, nil
}

// Lookup finds a run: the active one as a live snapshot, or a retained result.
// An empty runID means the active run or else the newest result. from says how much
// of the run's output the caller has read already; an offset past the end of a
// stream is an *OffsetError.
func (s *Session) Lookup(runID string, from Offsets) (*Snapshot, *Result, error) {
	s.mu.Lock()
	r := s.active
	s.mu.Unlock()
	if r != nil && (runID == "" || r.id == runID) {
		select {
		case <-r.done:
			res, err := r.result.From(from)
			return nil, res, err
		default:
			snap, err := r.snapshot(from)
			if err != nil {
				return nil, nil, err
			}
			snap.ServerID, snap.SessionID = s.serverID, s.id
			return &snap, nil, nil
		}
	}
	if res, ok := s.retained(runID); ok {
		res, err := res.From(from)
		return nil, res, err
	}
	return nil, nil, errors.New(s.unknownRun(runID, msgRunNotFound))
}

// retained is the result of run runID (the newest for "") in the session's history.
func (s *Session) retained(runID string) (*Result, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.history) - 1; i >= 0; i-- {
		if runID == "" || s.history[i].RunID == runID {
			return s.history[i], true
		}
	}
	return nil, false
}

// Close cancels the active run, gives it grace to stop, abandons it after that,
// waits for its rpcs, ends the session's services and stops the worker. It is
// idempotent.
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
	if s.cfg.Services != nil {
		s.cfg.Services.SessionClosed(s.id, s.env.project)
	}
	if s.cfg.Recorder != nil {
		s.cfg.Recorder.SessionClosed(s.id)
	}
	s.snaps.close(s.discard)
	if s.discard {
		s.sessionClosed()
	}
	s.worker.close()
}

// Inspect returns the session's metadata and, when namespace is set, the bounded
// inventory of its variables (names and exact builtin types; no user code runs). The
// inventory needs an idle session and starts the worker if none runs (under policy,
// the call's under --sandbox inherit-codex); it is not recorded in history.
func (s *Session) Inspect(ctx context.Context, namespace bool, policy *CallPolicy) (Health, json.RawMessage, error) {
	if !namespace {
		return s.Health(), nil, nil
	}
	r := newRun(ctx, ExecRequest{inventory: true, Timeout: inventoryTimeout, Sandbox: policy})
	if err := s.tryReserve(r); errors.Is(err, ErrBusy) {
		return Health{}, nil, errors.New(s.busyError(r))
	} else if err != nil {
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

// ExecuteFile runs a saved Python file as ExecuteOrYield runs a cell; a relative
// path is taken against the session's project.
func (s *Session) ExecuteFile(ctx context.Context, path string, req ExecRequest) (*Result, *Snapshot) {
	req.SourcePath = s.ProjectPath(path)
	req.Code = ""
	return s.ExecuteOrYield(ctx, req)
}
