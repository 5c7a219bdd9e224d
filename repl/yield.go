package repl

import (
	"context"
	"time"
)

// Long work (docs/contract.md §5.6): a cell that outlives ExecRequest.YieldAfter
// leaves its caller and goes on as the session's own run, exactly as if python_start
// had started it; Await lets a python_run call wait for such a run in one call.

// MaxWait bounds python_run's wait: under the 60 s tool timeout of the clients that
// get the text form (Codex's tool_timeout_sec, the MCP TypeScript SDK's request
// timeout), so that a waiting poll is never itself cancelled.
const MaxWait = 45 * time.Second

// ExecuteOrYield runs one cell like Execute, except that a cell still running after
// req.YieldAfter (when positive) is left running: the call returns its live
// snapshot, from byte 0 of its output, and no result. From then on the run belongs
// to the session: ctx no longer reaches it, its timeout still applies, and only
// python_cancel (Cancel) or closing the session stop it. A ctx
// cancelled before the yield interrupts the cell, as in Execute. Exactly one of the
// two answers is non-nil.
func (s *Session) ExecuteOrYield(ctx context.Context, req ExecRequest) (*Result, *Snapshot) {
	if req.YieldAfter <= 0 {
		return s.Execute(ctx, req), nil
	}
	// The yield counts from the call, a wait for the slot and the worker's start
	// included: it is the client's deadline that it keeps under.
	yieldAt := time.Now().Add(req.YieldAfter)
	// The run's own context: the caller's cancel reaches it until the yield, the
	// session's end always.
	own, cancelOwn := context.WithCancel(s.lifetime)
	followCaller := context.AfterFunc(ctx, cancelOwn)
	r := newRun(own, req)
	if res := s.admit(ctx, r, true); res != nil {
		followCaller()
		cancelOwn()
		return res, nil
	}
	released := make(chan struct{})
	s.background.Add(1)
	go func() {
		defer s.background.Done()
		defer close(released)
		defer cancelOwn()
		defer s.runEnded(r) // after the slot is free: a disk write
		defer s.release(r)
		s.execute(own, r)
	}()
	yield := time.NewTimer(time.Until(yieldAt))
	defer yield.Stop()
	select {
	case <-released:
		return r.result, nil
	case <-yield.C:
	}
	if !followCaller() {
		// The caller cancelled first: the cell is being interrupted, as it
		// would be without yield_after.
		<-released
		return r.result, nil
	}
	select {
	case <-r.done:
		<-released
		return r.result, nil
	default:
	}
	snap, _ := r.snapshot(Offsets{}) // from byte 0: no offset can be past the end
	snap.ServerID, snap.SessionID = s.serverID, s.id
	snap.run = r
	s.leave(r)
	return nil, &snap
}

// Handle follows a run that left its caller (ExecuteOrYield's yield) to its end,
// however long the history keeps its result: what an MCP task needs of its run
// (docs/contract.md §2.8).
type Handle struct{ r *run }

// Handle is the run snap shows; the zero Handle for a snapshot that is not
// ExecuteOrYield's.
func (snap *Snapshot) Handle() Handle { return Handle{snap.run} }

// Valid reports a Handle that follows a run.
func (h Handle) Valid() bool { return h.r != nil }

// ID is the run's id.
func (h Handle) ID() string { return h.r.id }

// Result is the run's result once Done is closed, and when it was set; nil before.
func (h Handle) Result() (*Result, time.Time) {
	select {
	case <-h.r.done:
		return h.r.result, h.r.ended
	default:
		return nil, time.Time{}
	}
}

// Latest is the last line of the run's output (as OutputWatch.Latest says it) and
// how long it has run.
func (h Handle) Latest(maxRunes int) (line string, elapsed time.Duration) {
	h.r.mu.Lock()
	defer h.r.mu.Unlock()
	stream := &h.r.stdout
	if h.r.lastStream == "stderr" {
		stream = &h.r.stderr
	}
	kept, _ := stream.kept()
	return lastLine(kept, maxRunes), time.Since(h.r.started)
}

// MarkTask records that the run's call was answered with an MCP task: the busy
// refusal then says that its result comes by itself.
func (h Handle) MarkTask() { h.r.task.Store(true) }

// Await waits until the run named (the active one when runID is "") has ended, wait
// has passed, or ctx is done, whichever is first; it returns at once when no such
// run is active, or when wait is not positive. watch, when set, follows the run's
// output meanwhile. Lookup then reads what there is.
func (s *Session) Await(ctx context.Context, runID string, wait time.Duration, watch *OutputWatch) {
	if wait <= 0 {
		return
	}
	s.mu.Lock()
	r := s.active
	s.mu.Unlock()
	if r == nil || (runID != "" && r.id != runID) {
		return
	}
	if watch != nil {
		r.follow(watch)
		defer r.unfollow(watch)
	}
	timer := time.NewTimer(min(wait, MaxWait))
	defer timer.Stop()
	select {
	case <-r.done:
	case <-timer.C:
	case <-ctx.Done():
	case <-s.lifetime.Done():
	}
}
