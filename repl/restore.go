package repl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/iota-uz/repl-mcp/statedir"
)

// Restores (docs/contract.md §6.7): python_session_restore loads a snapshot into the
// session's worker (starting one if none runs), and a worker released while idle is
// restored before the next run's code. A restore is a run of its own on the worker
// (an execute frame with restore), so deadlines, interrupts and crashes apply as to a
// cell; it is kept neither in the history nor in the notebook.

// RestoreReport is what a restore brought back, and what it did not and why.
type RestoreReport struct {
	Snapshot         string             `json:"snapshot"`
	FromSessionID    string             `json:"from_session_id"`
	FromSessionName  string             `json:"from_session_name"`
	SavedAt          time.Time          `json:"saved_at"`
	SavedGeneration  uint64             `json:"saved_generation"`
	Python           string             `json:"python"`
	Pickler          string             `json:"pickler"`
	RestoredCount    int                `json:"restored_count"`
	NotRestoredCount int                `json:"not_restored_count"`
	Restored         []RestoredVariable `json:"restored"`
	NotRestored      []LostVariable     `json:"not_restored"`
	// Interrupted: a cancel or timeout stopped it; the variables not reached are listed.
	Interrupted bool `json:"interrupted,omitempty"`
}

// RestoredVariable is a variable that came back; Note says when it may be older than
// the variable was.
type RestoredVariable struct {
	Name  string `json:"name"`
	Type  string `json:"type"`
	Bytes int64  `json:"bytes"`
	Note  string `json:"note,omitempty"`
}

// LostVariable is a variable that did not come back: why, and the run whose code
// bound it (with its first line), so that only that run need be run again.
type LostVariable struct {
	Name       string `json:"name"`
	Type       string `json:"type"`
	Reason     string `json:"reason"`
	RunID      string `json:"run_id"`
	Generation uint64 `json:"generation"`
	CodeLine   string `json:"code_line"`
}

// workerReport is the worker's report as it sends it (restore.py).
type workerReport struct {
	RestoreReport
	SessionID   string `json:"session_id"`
	SessionName string `json:"session_name"`
	Generation  uint64 `json:"generation"`
}

// RestoreResult is python_session_restore's answer: the report, and the session's
// identity after it.
type RestoreResult struct {
	RestoreReport
	ServerID   string  `json:"server_id"`
	SessionID  string  `json:"session_id"`
	Generation uint64  `json:"generation"`
	StateReset bool    `json:"state_reset"`
	ElapsedMS  float64 `json:"elapsed_ms"`
	// Adopted: the session's later snapshots go on in the restored one.
	Adopted bool `json:"adopted"`
}

// Restore loads a snapshot into the session: the newest of the session's name in its
// project that no live worker writes, or, with from, the newest of that session id
// (or the snapshot of that id). It starts a worker if none runs. The slot is taken as
// for a cell (a busy session refuses).
func (s *Session) Restore(ctx context.Context, from string, timeout time.Duration) (*RestoreResult, error) {
	src, err := s.source(from)
	if err != nil {
		return nil, err
	}
	spec, held := s.restoreSpec(src.Snapshot)
	r := newRun(ctx, ExecRequest{Timeout: timeout, restore: spec})
	if res := s.admit(ctx, r, true); res != nil {
		held.Release()
		return nil, errors.New(*res.Error)
	}
	defer s.release(r)
	res := s.execute(ctx, r)
	report, err := restoreReport(res)
	if err != nil {
		held.Release()
		return nil, err
	}
	out := &RestoreResult{RestoreReport: *report, ServerID: s.serverID, SessionID: s.id,
		Generation: res.Generation, ElapsedMS: res.ElapsedMS, StateReset: res.StateReset != nil && *res.StateReset}
	out.Adopted = s.snaps.adopt(held, r.worker(), report)
	s.RecordEvent(EventRestore, r.id, fmt.Sprintf(msgEventRestore, report.RestoredCount,
		report.RestoredCount+report.NotRestoredCount, report.FromSessionName, report.SavedAt.UTC().Format(time.DateTime), res.Generation,
		lostNames(report.NotRestored)))
	return out, nil
}

// lostNames lists the variables a restore did not bring back, for the notebook.
func lostNames(lost []LostVariable) string {
	if len(lost) == 0 {
		return "none"
	}
	names := make([]string, len(lost))
	for i, v := range lost {
		names[i] = v.Name + " (" + v.Reason + ")"
	}
	return strings.Join(names, ", ")
}

// restoreSpec is the restore of snapshot id, held for the session's worker to adopt
// when no other worker writes it and snapshots are on.
func (s *Session) restoreSpec(id string) (*restoreSpec, *statedir.Held) {
	var held *statedir.Held
	if s.snaps != nil {
		held = s.proj.hold(id)
	}
	return &restoreSpec{snapshotPlace: s.proj.place(id, s.proj.p.SnapshotPath(id)), Adopt: held != nil}, held
}

// restoreReport reads a restore run's report, or its failure.
func restoreReport(res *Result) (*RestoreReport, error) {
	if !res.Success || len(res.Value) == 0 {
		msg := msgRestoreFailed
		if res.Error != nil {
			msg = *res.Error
		}
		return nil, errors.New(msg)
	}
	var wr workerReport
	if err := json.Unmarshal(res.Value, &wr); err != nil {
		return nil, errors.New(msgRestoreFailed + ": " + err.Error())
	}
	wr.FromSessionID, wr.FromSessionName, wr.SavedGeneration = wr.SessionID, wr.SessionName, wr.Generation
	return &wr.RestoreReport, nil
}

// worker is the process the run ran on, once dispatched.
func (r *run) worker() *process {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.proc
}

// adopt makes the restored snapshot held the one worker p writes from now on, its old
// one removed (its variables are in the namespace, and the next pass writes them
// there); without held, or when p is gone, nothing changes. It reports the adoption.
func (ss *sessionSnapshots) adopt(held *statedir.Held, p *process, report *RestoreReport) bool {
	if ss == nil || held == nil {
		return false
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if p == nil || !p.alive() || ss.closed {
		held.Release()
		return false
	}
	if ss.heldBy == p && ss.held != nil && ss.held.ID != held.ID {
		ss.held.Remove()
	}
	ss.held, ss.heldBy, ss.saved, ss.status = held, p, 0, "saved"
	ss.last = &SnapshotSummary{SavedAt: report.SavedAt, Variables: report.RestoredCount}
	ss.ps.changed()
	return true
}

// takeReleased is the snapshot of a worker released while idle, once: the next run
// restores it before its code.
func (ss *sessionSnapshots) takeReleased() *statedir.Held {
	if ss == nil {
		return nil
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	h := ss.released
	ss.released = nil
	return h
}

// release stops the worker once it has been idle for IdleRelease, after a complete
// pass: a run that comes meanwhile keeps it.
func (ss *sessionSnapshots) release() {
	s := ss.s
	if status := ss.pass(0); status != "saved" && status != "unchanged" && status != "" {
		return
	}
	w := s.worker.view()
	ss.mu.Lock()
	if ss.closed || ss.heldBy != w.proc || w.proc == nil || ss.saved != ss.runs || ss.last == nil {
		ss.mu.Unlock()
		return
	}
	lost := ss.last.Skipped > 0 || ss.last.Stale > 0
	held := ss.held
	ss.released, ss.held, ss.heldBy = held, nil, nil
	ss.mu.Unlock()
	if s.worker.release(w.proc, lost) {
		s.logger.Info("idle worker released; its next run restores it", "snapshot", held.ID)
		return
	}
	ss.mu.Lock()
	if ss.released == held { // a run took the worker: it keeps writing there
		ss.released, ss.held, ss.heldBy = nil, held, w.proc
	}
	ss.mu.Unlock()
}

// restoreReleased restores the snapshot of a released worker into the new worker
// the run r just started, before r's code; the report goes into r's result.
func (s *Session) restoreReleased(ctx context.Context, r *run) {
	held := s.snaps.takeReleased()
	if held == nil {
		return
	}
	w := s.worker.view()
	if w.state != workerReady {
		held.Release()
		return
	}
	spec := &restoreSpec{snapshotPlace: s.proj.place(held.ID, held.Path), Adopt: true}
	rr := newRun(ctx, ExecRequest{Timeout: restoreTimeout, restore: spec})
	res := s.runOn(ctx, rr, w.proc, w.generation)
	report, err := restoreReport(res)
	if err != nil {
		held.Release()
		r.restored = &RestoreReport{NotRestored: []LostVariable{{Name: "*", Reason: err.Error()}}, NotRestoredCount: 1}
		return
	}
	s.snaps.adopt(held, w.proc, report)
	r.restored = report
}
