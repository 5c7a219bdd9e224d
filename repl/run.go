package repl

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// RunStatus is an active run's phase as python_run reports it.
type RunStatus string

const (
	RunStarting RunStatus = "starting"
	RunRunning  RunStatus = "running"
)

// runPhase is where a run is in its life; it only moves forward.
type runPhase int

const (
	// phaseStarting: admitted; its worker is being made ready.
	phaseStarting runPhase = iota
	// phaseRunning: its cell is on the worker.
	phaseRunning
	// phaseLeaving: cancelled, timed out, or its result is being recorded: a call
	// that finds it busy may wait for the slot instead of failing.
	phaseLeaving
	// phaseDone: its result is recorded.
	phaseDone
)

// status is the phase as python_run reports it: a leaving run still runs.
func (p runPhase) status() RunStatus {
	if p == phaseStarting {
		return RunStarting
	}
	return RunRunning
}

// run is one execution holding the session's slot.
type run struct {
	id      string
	req     ExecRequest
	started time.Time
	// dispatched is when its cell went to the worker: a process started since, that
	// the worker did not report for another run, is the cell's (scope.go).
	dispatched time.Time
	// background: started by python_start, so no call waits for it.
	background bool
	// task: its call was answered with an MCP task (Handle.MarkTask), whose
	// result the client fetches by itself.
	task atomic.Bool
	// left: it left its caller (python_start, a yield), so the lifetime's record
	// holds it (Session.leave); leftMu orders that record and its end's.
	leftMu sync.Mutex
	left   bool

	cancelOnce sync.Once
	cancelled  chan struct{} // closed by python_cancel or session close
	// ctx is the caller's context; once it is cancelled (a client cancel) the run
	// is on its way out even before the supervisor has acted on it.
	ctx context.Context

	// policyNote is what the sandbox says of the run's policy (usePolicy); only
	// the run's goroutine touches it.
	policyNote *SandboxNote

	mu         sync.Mutex
	phase      runPhase
	leaving    chan struct{} // closed when the phase reaches phaseLeaving
	generation uint64
	stdout     liveStream
	stderr     liveStream
	lastStream string   // the stream that had output last
	proc       *process // the worker executing it, once dispatched
	// watches follow its output: its caller's (ExecRequest.Watch) and those of
	// python_run calls waiting for it (Session.Await).
	watches []*OutputWatch

	done   chan struct{} // closed once result is set
	result *Result
	// restored is what the restore of a released worker before this run brought back.
	restored *RestoreReport
	ended    time.Time // when result was set

	// rpcCtx bounds the run's bridge calls; stopRPCs cancels them all (interrupt,
	// end of run). rpcs holds the cancel of each outstanding call by rpc id.
	rpcCtx   context.Context
	stopRPCs context.CancelFunc
	rpcs     map[string]context.CancelFunc
}

func newRun(ctx context.Context, req ExecRequest) *run {
	r := &run{
		ctx:       ctx,
		id:        newUUID(),
		req:       req,
		started:   time.Now(),
		phase:     phaseStarting,
		leaving:   make(chan struct{}),
		cancelled: make(chan struct{}),
		done:      make(chan struct{}),
	}
	if req.Watch != nil {
		r.follow(req.Watch)
	}
	return r
}

// follow makes w report the run's output from now on, until unfollow.
func (r *run) follow(w *OutputWatch) {
	w.attach(r)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.watches = append(r.watches, w)
}

func (r *run) unfollow(w *OutputWatch) {
	r.mu.Lock()
	defer r.mu.Unlock()
	// A new slice: appendOutput pulses a copy of the old one outside the lock.
	r.watches = slices.DeleteFunc(slices.Clone(r.watches), func(x *OutputWatch) bool { return x == w })
}

func (r *run) cancel() { r.cancelOnce.Do(func() { close(r.cancelled) }) }

// startRPCs opens the run to bridge calls, bounded by ctx.
func (r *run) startRPCs(ctx context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rpcCtx, r.stopRPCs = context.WithCancel(ctx)
	r.rpcs = map[string]context.CancelFunc{}
}

// endRPCs cancels every outstanding bridge call of the run.
func (r *run) endRPCs() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopRPCs != nil {
		r.stopRPCs()
	}
}

// admitRPC registers a new call unless its id is taken or too many are outstanding.
func (r *run) admitRPC(id string) (context.Context, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.rpcs == nil || r.rpcCtx.Err() != nil || len(r.rpcs) >= maxOutstandingRPCs {
		return nil, false
	}
	if _, taken := r.rpcs[id]; taken {
		return nil, false
	}
	ctx, cancel := context.WithCancel(r.rpcCtx)
	r.rpcs[id] = cancel
	return ctx, true
}

// endRPC ends one call: the worker gave up on it (rpc_cancel), or it was served and
// its reply is about to go out. Either way it leaves the run's count at once, since
// the worker frees the call's slot as it sends rpc_cancel or reads the reply and may
// fill it with its very next frame, which the reader handles after this one. A call
// still being served ends by itself, promptly, since its context is done.
func (r *run) endRPC(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if cancel, ok := r.rpcs[id]; ok {
		cancel()
		delete(r.rpcs, id)
	}
}

// enter moves the run forward to phase; a run never moves back.
func (r *run) enter(phase runPhase) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if phase <= r.phase {
		return
	}
	if r.phase < phaseLeaving && phase >= phaseLeaving {
		close(r.leaving)
	}
	r.phase = phase
}

// leavingSoon waits, at most d, until the run is on its way out: leaving, cancelled
// by python_cancel or a session close, or cancelled by its caller. A client's
// notifications/cancelled reaches the run's context asynchronously (go-sdk cancels
// the handler from a goroutine), so a call sent right after a cancel may arrive
// first; waiting a moment tells the two apart.
func (r *run) leavingSoon(ctx context.Context, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-r.leaving:
	case <-r.cancelled:
	case <-r.ctx.Done():
	case <-timer.C:
		return false
	case <-ctx.Done():
		return false
	}
	return true
}

// isLeaving reports, without waiting, whether the run is on its way out.
func (r *run) isLeaving() bool {
	select {
	case <-r.leaving:
	case <-r.cancelled:
	case <-r.ctx.Done():
	default:
		return false
	}
	return true
}

func (r *run) finish(res *Result) {
	r.mu.Lock()
	res.stdoutEnd, res.stderrEnd = r.stdout.end, r.stderr.end
	r.mu.Unlock()
	r.result = res
	r.ended = time.Now()
	r.enter(phaseDone)
	close(r.done)
}

func (r *run) appendOutput(stream, text string) {
	if text == "" {
		return
	}
	r.mu.Lock()
	switch stream {
	case "stdout":
		r.stdout.add(text)
	case "stderr":
		r.stderr.add(text)
	default:
		r.mu.Unlock()
		return
	}
	r.lastStream = stream
	watches := r.watches
	r.mu.Unlock()
	for _, w := range watches {
		w.pulse()
	}
}

// Snapshot is python_run's view of an active run. Stdout and Stderr hold the live
// output from the offsets asked for (from the start without them): at most
// LiveLimit bytes each, beginning at the *_start offset; *_end is where a later poll
// continues. LiveTruncated says that output the poller asked for had already been
// dropped from the bounded live copy (*_start is then past the offset asked for).
type Snapshot struct {
	ServerID    string    `json:"server_id"`
	SessionID   string    `json:"session_id"`
	Generation  uint64    `json:"generation"`
	RunID       string    `json:"run_id"`
	Status      RunStatus `json:"status"`
	ElapsedMS   float64   `json:"elapsed_ms"`
	Stdout      string    `json:"stdout"`
	Stderr      string    `json:"stderr"`
	StdoutStart int64     `json:"stdout_start"`
	StdoutEnd   int64     `json:"stdout_end"`
	StderrStart int64     `json:"stderr_start"`
	StderrEnd   int64     `json:"stderr_end"`
	// NativeStderr is the run's fd 1 and 2 output from native_stderr_offset on,
	// offset-polled like the streams: it begins at byte NativeStderrStart of that
	// output, which has had NativeStderrEnd bytes so far.
	NativeStderr      string    `json:"native_stderr"`
	NativeStderrStart int64     `json:"native_stderr_start"`
	NativeStderrEnd   int64     `json:"native_stderr_end"`
	OutputLimit       int       `json:"output_limit_bytes_per_stream"`
	LiveTruncated     Truncated `json:"truncated"`
	// Code is the run's first code line or saved file (Result.Code), for the text
	// python_run answers with: not a field of the contract's snapshot.
	Code string `json:"-"`

	run *run // the run it shows, for Handle
}

func (r *run) snapshot(from Offsets) (Snapshot, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := Snapshot{
		RunID:       r.id,
		Status:      r.phase.status(),
		Generation:  r.generation,
		ElapsedMS:   msSince(r.started),
		StdoutEnd:   r.stdout.end,
		StderrEnd:   r.stderr.end,
		OutputLimit: LiveLimit,
		Code:        r.what(),
	}
	var err error
	if s.Stdout, s.StdoutStart, s.LiveTruncated.Stdout, err = r.stdout.from("stdout", offsetOf(from.Stdout)); err != nil {
		return Snapshot{}, err
	}
	if s.Stderr, s.StderrStart, s.LiveTruncated.Stderr, err = r.stderr.from("stderr", offsetOf(from.Stderr)); err != nil {
		return Snapshot{}, err
	}
	if r.proc != nil {
		if s.NativeStderr, s.NativeStderrStart, s.NativeStderrEnd, err = r.proc.native.from(offsetOf(from.Native)); err != nil {
			return Snapshot{}, err
		}
	} else if from.Native != nil && *from.Native > 0 {
		return Snapshot{}, &OffsetError{Stream: "native_stderr"} // nothing written yet
	}
	return s, nil
}

func msSince(t time.Time) float64 {
	return float64(time.Since(t).Microseconds()) / 1000
}
