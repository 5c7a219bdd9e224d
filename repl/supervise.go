package repl

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The supervisor: how a run gets a worker from the session's lifecycle
// (lifecycle.go), what it waits for there, and when the worker is stopped because
// the run ended badly. Every function here runs on the goroutine of the run that
// holds the session's slot, except onOutput, which the worker's frame reader calls.

// dispatch checks the generation guard, makes sure a worker runs, sends the cell and
// waits for its outcome.
func (s *Session) dispatch(ctx context.Context, r *run) *Result {
	if res := s.usePolicy(r); res != nil {
		return res
	}
	if res := s.guard(r); res != nil {
		return res
	}
	if r.req.Fresh {
		return s.dispatchFresh(ctx, r)
	}
	w, fresh, res := s.claimWorker(ctx, r)
	if res != nil {
		s.offerLost(res)
		return res
	}
	res = s.runOn(ctx, r, w.proc, w.generation)
	s.worker.idle(w.proc)
	if !r.req.inventory {
		// The first result of every new worker says so, whatever made it new (an
		// inventory's start is no result the caller reads).
		var why string
		fresh, why = s.worker.announced(w.proc)
		if fresh && r.req.Reset && why != "" {
			why = ResetReset // asked for: whatever happened before, a deliberate fresh start
		}
		if fresh && why != "" {
			res.StateResetReason = why
			if why == ResetRestart && s.manager != nil {
				started := s.manager.Started().UTC()
				res.ServerStarted = &started
			}
		}
	}
	res.StateReset = &fresh
	res.ExecutionMode = "persistent"
	res.Restored = r.restored
	s.offerLost(res)
	return res
}

// offerLost adds to a result that reports lost variables (the worker died under it,
// or it is the first of a worker that replaced one whose variables were lost, an
// earlier server's, or a released one that did not all come back) the snapshot a
// restore would load; a reset is a deliberate fresh start, offered nothing.
func (s *Session) offerLost(res *Result) {
	lost := res.State == StateCleared
	switch res.StateResetReason {
	case ResetLost, ResetRestart:
		lost = true
	case ResetReleased:
		lost = res.Restored == nil || res.Restored.NotRestoredCount > 0
	}
	if lost {
		res.Restorable = s.offer()
	}
}

// guard enforces expected_generation before any source runs. A stale generation
// is refused with the namespace untouched. After the worker was lost (a crash, a
// kill), the replacement is started first, so that the refusal reports the
// generation a retry must name and that retry runs: refusing without a new worker
// would leave the caller no generation that can ever match. A reset or a fresh
// run that names the current generation goes ahead: it needs no old state.
func (s *Session) guard(r *run) *Result {
	want := r.req.ExpectedGeneration
	if want == nil {
		return nil
	}
	w, _ := s.worker.settled(nil)
	if w.state == workerReady && !w.proc.alive() {
		// Died idle, before its watcher has caught up: the same as dead.
		s.worker.stop(w.proc, workerDead)
		w, _ = s.worker.settled(nil)
	}
	state, gen := w.state, w.generation
	if *want == gen && (state != workerDead || r.req.Reset || r.req.Fresh) {
		return nil
	}
	reason, msg, replaced, why := ReasonStale, msgStaleGeneration, false, ""
	if state == workerDead && !r.req.Reset && !r.req.Fresh {
		if res := s.startWorker(r.ctx, r); res != nil {
			return res
		}
		replaced = true
		// The refusal is the new worker's first result: it says so, once.
		_, why = s.worker.announced(s.worker.view().proc)
		if *want == gen {
			reason, msg = ReasonRestarted, msgWorkerRestarted
		}
	}
	res := failure(r.id, reason, msg)
	if replaced {
		res.StateReset, res.StateResetReason, res.Restored = &replaced, why, r.restored
	}
	res.Generation = s.worker.currentGeneration()
	return res
}

// claimWorker returns the session's worker for r, now busy, with its generation:
// the live one, or a new one after a reset, a loss, or on the first run. fresh
// reports a new worker.
func (s *Session) claimWorker(ctx context.Context, r *run) (workerView, bool, *Result) {
	fresh := false
	for {
		w, ok := s.worker.settled(ctx.Done())
		if !ok {
			return workerView{}, false, failure(r.id, ReasonNotDispatched, msgBeforeDispatch)
		}
		switch {
		case w.state == workerReady && r.req.Reset && !fresh:
			s.worker.reset(w.proc) // the caller's own choice
		case w.state == workerReady && !w.proc.alive():
			s.worker.stop(w.proc, workerDead) // died idle before its watcher caught up
		case w.state == workerReady:
			if s.worker.take(w.proc) {
				return w, fresh, nil
			}
			// Its watcher found it dead meanwhile: look again.
		case fresh:
			// The new worker died at once, and was stopped.
			return workerView{}, false, failure(r.id, ReasonCrashed, msgCrashed+msgEndedAtStart)
		case w.state == workerStopped || w.state == workerDead:
			if ctx.Err() != nil {
				return workerView{}, false, failure(r.id, ReasonNotDispatched, msgBeforeDispatch)
			}
			if res := s.startWorker(ctx, r); res != nil {
				return workerView{}, false, res
			}
			fresh = true
		default:
			// Busy: only the slot's holder claims a worker, and that is this run,
			// so the supervisor is broken.
			return workerView{}, false, failure(r.id, ReasonCrashed, msgCrashed+msgEndedAtStart)
		}
	}
}

// startWorker starts the session's worker for r, records its generation in the
// project's state, and, when the last worker was released while idle, restores its
// snapshot before r's code. A start that fails leaves no worker, and says that no
// Python state exists.
func (s *Session) startWorker(ctx context.Context, r *run) *Result {
	switch err := s.worker.start(); {
	case err == nil:
		s.workerStarted(s.worker.currentGeneration())
		if r.req.Reset {
			s.snaps.takeReleased().Release() // a deliberate fresh start restores nothing, later either
		} else {
			s.restoreReleased(ctx, r)
		}
		return nil
	case errors.Is(err, errStartRefused):
		return failure(r.id, ReasonCrashed, msgCrashed)
	default:
		return failure(r.id, ReasonStartFailed, err.Error()+msgNoState)
	}
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

// dispatchFresh runs a file in a worker of its own (the spare when one waits),
// halted afterwards and reaped in the background. Whatever happens to that worker,
// the persistent namespace is untouched.
func (s *Session) dispatchFresh(ctx context.Context, r *run) *Result {
	gen := s.worker.currentGeneration()
	p, err := s.worker.startFresh()
	if err != nil {
		res := failure(r.id, ReasonStartFailed, err.Error())
		res.State, res.Generation = StatePreserved, gen // the persistent namespace is untouched
		return res
	}
	defer s.worker.drop(p) // its result does not wait for the reap
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
	r.proc, r.generation = p, gen
	r.mu.Unlock()
	r.enter(phaseRunning)
	token := newToken()
	p.native.reset(token)
	frame := executeFrame{
		Type: "execute", ID: r.id, Code: r.req.Code, Timeout: r.req.Timeout.Seconds(), Barrier: token,
		SourcePath: r.req.SourcePath, Argv: r.req.Argv, Inventory: r.req.inventory,
		Bindings: s.snaps != nil && !r.req.quiet(), Restore: r.req.restore,
	}
	r.startRPCs(ctx)
	defer r.endRPCs()
	r.dispatched = time.Now()
	if svc := s.cfg.Services; svc != nil {
		svc.RunStarted(s.id, r.id)
		defer svc.RunEnded(s.id, r.id) // ends the run's unfinished uploads
	}
	var res *Result
	if err := p.send(frame); err != nil {
		if errors.Is(err, errCommandTooLarge) {
			res = failure(r.id, ReasonTooLarge, msgFrameTooLarge)
		} else {
			res = s.crashed(p, r, stopping{})
		}
	} else {
		res = s.await(ctx, r, p)
	}
	res.Generation = gen
	return res
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
			if rss, over := s.overBudget(p); over {
				return s.lost(p, r, ReasonMemory, s.overBudgetError(p, rss))
			}
		case rf := <-p.results:
			if rf.id != r.id {
				continue // a stale result of an earlier run; it cannot be this one's
			}
			return s.complete(p, r, rf.result)
		case <-p.dead:
			return s.crashed(p, r, stopping{})
		case <-p.proc.Exited():
			return s.crashed(p, r, stopping{})
		case <-r.cancelled:
			return s.interrupt(ctx, r, p, s.cancelStopping())
		case <-deadline.C:
			return s.interrupt(ctx, r, p, s.timingOut(r))
		case <-s.lifetime.Done():
			return s.lost(p, r, ReasonAbandoned, msgAbandoned)
		case <-ctx.Done():
			return s.interrupt(ctx, r, p, cancelling)
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
// exceeds the budget, with the resident bytes sampled.
func (s *Session) overBudget(p *process) (int64, bool) {
	rss, err := residentBytes(p.ready.Pid)
	return rss, err == nil && rss > int64(s.cfg.MaxMemoryMiB)<<20
}

// overBudgetError says what the worker reached, the budget, and the flag that sets
// it. The peak is the kernel's high-water mark when it keeps one: the sample only
// saw the worker on its way up.
func (s *Session) overBudgetError(p *process, sampled int64) string {
	peak := max(sampled, peakResidentBytes(p.ready.Pid))
	return fmt.Sprintf(msgRSS, withCommas(int(peak>>20)), withCommas(s.cfg.MaxMemoryMiB))
}

// complete makes the worker's result the run's result, with the native output the
// worker wrote before it joining stderr: after its barrier, when the worker wrote one.
func (s *Session) complete(p *process, r *run, res *Result) *Result {
	if !res.noBarrier {
		p.native.wait(barrierWait)
	}
	native, nativeCut := p.native.finish()
	p.native.promote() // a pipe the worker put at fd 1 and 2 with this result is the next run's
	stderr := CutText{res.Stderr, res.stderrGaps}.Join(native)
	res.Stderr, res.stderrGaps = stderr.Text, stderr.Gaps
	if nativeCut {
		res.Truncated.Stderr = true
	}
	if bg, cut := p.native.takeBackground(); bg.Text != "" {
		// What the session's processes wrote outside a run: theirs, not the cell's.
		if res.BackgroundOutput == nil {
			res.BackgroundOutput = &BackgroundOutput{}
		}
		b := res.BackgroundOutput
		if b.Stderr != "" && !strings.HasSuffix(b.Stderr, "\n") {
			b.Stderr += "\n" // the processes' lines start lines of their own
		}
		joined := CutText{b.Stderr, res.bgGaps[1]}.Join(bg)
		b.Stderr, res.bgGaps[1], b.Truncated = joined.Text, joined.Gaps, b.Truncated || cut
	}
	if res.State == StateCleared {
		// The worker ended its own state and exits; do not hand it another cell.
		s.worker.stop(p, workerDead)
	}
	switch {
	case res.Success:
	case res.State == StateCleared:
		res.Reason = ReasonPolicy // the worker clears only on a policy failure (PROTOCOL.md)
	default:
		res.Reason = ReasonRaised
	}
	return res
}

// stopping is why the supervisor interrupts a run: its reason, the words its error
// opens with, and, for a timeout, how to give the cell more time. The zero stopping
// is a run that was not being interrupted.
type stopping struct {
	reason Reason
	text   string
	// longer says how to give the cell more time: a timeout's error says too what
	// became of the variables, and then this, on its first line.
	longer string
}

// cancelling is the stopping of python_cancel, a client's cancel and a session's
// close.
var cancelling = stopping{reason: ReasonCancelled, text: msgCancelled}

// cancelStopping is the stopping of a run whose cancel came: its session's close
// says so, for the caller that waits on the run did not ask for it (another agent
// closed the session, or the server is stopping).
func (s *Session) cancelStopping() stopping {
	s.mu.Lock()
	closing := s.closed
	s.mu.Unlock()
	if closing {
		return stopping{reason: ReasonCancelled, text: msgCancelled + msgByClose}
	}
	return cancelling
}

// timingOut is the stopping of r past its deadline. Its error's first line says the
// limit, whether the variables survived, and how to give the cell more time; what the
// worker said of its own state follows on the next lines.
func (s *Session) timingOut(r *run) stopping {
	st := stopping{reason: ReasonTimeout, text: fmt.Sprintf(msgTimedOut, strconv.FormatFloat(r.req.Timeout.Seconds(), 'f', -1, 64)),
		longer: msgLongerCell}
	if r.background {
		st.longer = msgLongerStart
	}
	return st
}

// firstLine is the first line of the error of a run stopped for st: its words, what
// became of the variables (a timeout's; how they were lost, when they were), then the
// note, and how to give the cell more time.
func (st stopping) firstLine(lostHow string, state State, note string) string {
	line := st.text
	switch {
	case lostHow != "":
		line += lostHow
	case st.longer == "":
	case state == StatePreserved:
		line += msgKeptVariables
	default:
		line += "; " + msgVariablesCleared // the worker's own lines say why
	}
	return line + note + st.longer
}

// interrupt stops a run: SIGINT to the worker and the processes its cell started
// (scope.go), then the grace period, then the worker is stopped. It reports which of
// those ended the run and, when the variables survived, which of the session's
// processes ended meanwhile.
func (s *Session) interrupt(ctx context.Context, r *run, p *process, st stopping) *Result {
	r.enter(phaseLeaving)
	r.endRPCs() // downstream calls are cancelled before the cell is
	scope := p.interruptCell(r)
	grace := time.NewTimer(interruptGrace)
	defer grace.Stop()
	for {
		select {
		case rf := <-p.results:
			if rf.id != r.id {
				continue
			}
			// The first line says what became of the processes, after the reason.
			return s.answered(p, r, rf.result, st, func() string { return scope.note(scopeWait) })
		case <-p.dead:
			return s.crashed(p, r, st)
		case <-p.proc.Exited():
			return s.crashed(p, r, st)
		case <-s.lifetime.Done():
			return s.lost(p, r, ReasonAbandoned, msgAbandoned)
		case <-grace.C:
			return s.lost(p, r, st.reason, st.firstLine(msgDidNotStop, StateCleared, ""))
		}
	}
}

// answered is the result the worker sent for a run; when the run was being
// interrupted (st) and did not succeed, its error says why, before the worker's own.
// note, when there is one, says what became of the cell's processes, on a first line
// that keeps the variables.
func (s *Session) answered(p *process, r *run, worker *Result, st stopping, note func() string) *Result {
	res := s.complete(p, r, worker)
	if st.reason == "" || res.Success {
		return res
	}
	var noted string
	if note != nil && res.State == StatePreserved {
		noted = note()
	}
	msg := st.firstLine("", res.State, noted)
	if w := res.Error; w != nil && *w != "" && !res.interrupted {
		msg += "\n" + *w // the worker says more than that it was interrupted
	}
	res.Error, res.Reason = &msg, st.reason
	return res
}

// crashed reports a worker that died under a run; st is why the run was being
// interrupted, the zero stopping when it was not. A result the worker managed to send
// before it exited still wins: a worker that stops itself (state cleared) may be seen
// gone before its last result is read.
func (s *Session) crashed(p *process, r *run, st stopping) *Result {
	select {
	case <-p.dead:
	case <-time.After(barrierWait / 2):
	}
	select {
	case rf := <-p.results:
		if rf.id == r.id {
			return s.answered(p, r, rf.result, st, nil)
		}
	default:
	}
	if st.reason != "" {
		return s.lost(p, r, st.reason, st.firstLine(msgExited, StateCleared, ""))
	}
	msg := msgCrashed + " (" + p.proc.ExitStatus().String() + ")"
	if p.deathErr != nil {
		msg = msgCrashed + " (" + p.deathErr.Error() + ")"
	}
	return s.lost(p, r, ReasonCrashed, msg)
}

// lost stops a worker whose variables can no longer be trusted and reports the run,
// failed for reason, with whatever output it produced.
func (s *Session) lost(p *process, r *run, reason Reason, msg string) *Result {
	s.worker.stop(p, workerDead)
	res := failure(r.id, reason, msg)
	res.State = StateCleared // an interrupt's too: the worker is gone
	r.mu.Lock()
	// The newest output says most about how the run ended.
	res.Stdout, res.stdoutBase = r.stdout.tail(StreamLimit)
	res.Stderr, res.stderrBase = r.stderr.tail(StreamLimit)
	res.Truncated = Truncated{Stdout: res.stdoutBase > 0, Stderr: res.stderrBase > 0}
	r.mu.Unlock()
	native, cut := p.native.takeCut()
	stderr := CutText{Text: res.Stderr}.Join(native)
	res.Stderr, res.stderrGaps = stderr.Text, stderr.Gaps
	res.Truncated.Stderr = res.Truncated.Stderr || cut
	return res
}
