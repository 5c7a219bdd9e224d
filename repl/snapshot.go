package repl

import (
	"encoding/hex"
	"errors"
	"sync"
	"time"

	"github.com/iota-uz/repl-mcp/statedir"
)

// A session's snapshots (docs/contract.md §6.7). After each run the session waits
// until it has been idle for the configured delay, then asks its worker for a pass
// (a snapshot frame); the worker saves on a thread of its own and stops at once when
// a command comes, so a pass never delays a cell. Each worker writes one snapshot
// directory, held (locked) while it lives: a worker that replaces it (a reset, a
// crash, a restart) writes a new one, and the one it leaves is what the session
// offers to restore, until a restore adopts it or the project's budget evicts it.

// Why a run's worker is new (Result.StateResetReason): a reset, a worker whose
// variables were lost (a crash, a kill, the RSS budget, a forced stop), an earlier
// server lifetime's session, or an idle release.
const (
	ResetReset    = "reset"
	ResetLost     = "lost"
	ResetRestart  = "restart"
	ResetReleased = "released"
)

// SnapshotSummary is what a complete snapshot holds.
type SnapshotSummary struct {
	SavedAt   time.Time `json:"saved_at"`
	Variables int       `json:"variables"`
	Bytes     int64     `json:"bytes"`
	Skipped   int       `json:"skipped"`
	// Stale counts the variables whose entries may be older than they are.
	Stale int `json:"stale"`
	// TookMS is how long the pass that saved it took (its last part, when a command
	// stopped it before); 0 for a snapshot this server did not write.
	TookMS float64 `json:"took_ms,omitempty"`
}

// SnapshotState is a session's snapshot as health shows it.
type SnapshotState struct {
	Enabled bool `json:"enabled"`
	// Status: none (no pass completed yet for this worker), saving, saved, released
	// (saved, and the worker stopped while idle: the next run restores it), failed.
	Status   string `json:"status"`
	Snapshot string `json:"snapshot,omitempty"`
	*SnapshotSummary
	// Error says why the last pass failed (a full disk, say); cells are unaffected.
	Error string `json:"error,omitempty"`
	// Reason says why snapshots are off for the session's worker (status off).
	Reason string `json:"reason,omitempty"`
	// Restorable is the snapshot a restore of this session would load.
	Restorable *Restorable `json:"restorable,omitempty"`
}

// Restorable is a snapshot that python_session_restore can load.
type Restorable struct {
	Snapshot    string `json:"snapshot"`
	SessionID   string `json:"session_id"`
	SessionName string `json:"session_name"`
	Generation  uint64 `json:"generation"`
	SnapshotSummary
}

// sessionSnapshots is a session's snapshot state.
type sessionSnapshots struct {
	s   *Session
	cfg SnapshotConfig
	ps  *projectState
	wg  sync.WaitGroup // passes and idle releases in progress; close waits

	mu      sync.Mutex
	closed  bool
	held    *statedir.Held // the directory the current worker writes
	heldBy  *process
	runs    uint64 // runs of the session that may have changed its namespace
	saved   uint64 // runs the held snapshot's last complete pass covers
	timer   *time.Timer
	idle    *time.Timer
	passing bool
	last    *SnapshotSummary
	status  string
	err     string
	// released is the snapshot of a worker stopped while idle (--idle-release): the
	// next run restores it before its code.
	released *statedir.Held
}

func newSessionSnapshots(s *Session, cfg SnapshotConfig, ps *projectState) *sessionSnapshots {
	return &sessionSnapshots{s: s, cfg: cfg, ps: ps, status: "none"}
}

// ran notes a run that may have changed the namespace and arms the pass, and the idle
// release, from now on.
func (ss *sessionSnapshots) ran() {
	if ss == nil {
		return
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.closed {
		return
	}
	ss.runs++
	ss.timer = rearm(ss.timer, ss.cfg.delay(), func() { ss.background(func() { ss.pass(0) }) })
	if ss.cfg.IdleRelease > 0 {
		ss.idle = rearm(ss.idle, ss.cfg.IdleRelease, func() { ss.background(ss.release) })
	}
}

// rearm stops t, when there is one, and returns a timer that runs f after d.
func rearm(t *time.Timer, d time.Duration, f func()) *time.Timer {
	if t != nil {
		t.Stop()
	}
	return time.AfterFunc(d, f)
}

// background runs f on a goroutine close waits for, unless closed.
func (ss *sessionSnapshots) background(f func()) {
	ss.mu.Lock()
	if ss.closed {
		ss.mu.Unlock()
		return
	}
	ss.wg.Add(1)
	ss.mu.Unlock()
	defer ss.wg.Done()
	f()
}

// pass asks the idle session's worker for a pass and waits for its answer: at most
// wait when wait is positive, else as long as it takes (a command stops it at once).
// It returns the pass's status, "" when none was asked for (busy, no worker, nothing
// changed, one in progress).
func (ss *sessionSnapshots) pass(wait time.Duration) string {
	s := ss.s
	w := s.worker.view()
	if w.state != workerReady || !w.proc.alive() {
		return ""
	}
	if w.proc.policy != nil {
		// A sandboxed cell may not write what a later worker without the sandbox
		// would unpickle: its worker keeps no snapshot (docs/contract.md §6.7).
		return ""
	}
	s.mu.Lock()
	busy := s.active != nil
	s.mu.Unlock()
	ss.mu.Lock()
	if busy || ss.closed || ss.passing {
		ss.mu.Unlock()
		return ""
	}
	if ss.heldBy != w.proc {
		letGo(ss.held)
		held, err := ss.ps.p.NewSnapshot()
		if err != nil {
			ss.status, ss.err = "failed", err.Error()
			ss.mu.Unlock()
			return "failed"
		}
		ss.held, ss.heldBy, ss.saved, ss.last = held, w.proc, 0, nil
	}
	if ss.saved == ss.runs && ss.last != nil {
		ss.mu.Unlock()
		return ""
	}
	ss.passing, ss.status = true, "saving"
	runs, held := ss.runs, ss.held
	ss.mu.Unlock()
	status, summary, errText := ss.ask(w, held, wait)
	ss.mu.Lock()
	ss.passing = false
	switch status {
	case "saved", "unchanged":
		if ss.heldBy == w.proc {
			ss.saved, ss.status, ss.err = runs, "saved", ""
			if summary != nil {
				ss.last = summary
			}
		}
	case "failed":
		ss.status, ss.err = "failed", errText
		s.logger.Warn("snapshot failed; cells are unaffected", "err", errText)
	default:
		if ss.last != nil {
			ss.status = "saved"
		} else {
			ss.status = "none"
		}
	}
	ss.mu.Unlock()
	if status == "saved" {
		ss.ps.changed()
		for _, id := range ss.ps.p.Evict(ss.cfg.maxBytes()) {
			s.logger.Info("snapshot evicted: the project's snapshots passed their budget", "snapshot", id)
		}
	}
	return status
}

// ask sends worker w a snapshot request for held and waits for the answer.
func (ss *sessionSnapshots) ask(w workerView, held *statedir.Held, wait time.Duration) (string, *SnapshotSummary, string) {
	s := ss.s
	token := newToken()
	frame := snapshotFrame{
		Type: "snapshot", ID: token,
		snapshotPlace: ss.ps.place(held.ID, held.Path),
		SessionID:     s.id, SessionName: s.name, ServerID: s.serverID,
		Generation: w.generation, Budget: ss.cfg.maxBytes(),
	}
	if err := w.proc.send(frame); err != nil {
		return "failed", nil, err.Error()
	}
	var deadline <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		deadline = t.C
	}
	for {
		select {
		case rep := <-w.proc.snapshots:
			if rep.id == token {
				return rep.status, rep.summary, rep.err
			}
		case <-w.proc.dead:
			return "stopped", nil, ""
		case <-w.proc.proc.Exited():
			return "stopped", nil, ""
		case <-deadline:
			return "stopped", nil, ""
		case <-s.lifetime.Done(): // the session closes: a pass stuck in a pickling hook must not hold it
			return "stopped", nil, ""
		}
	}
}

// place is where snapshot id of the project is, as the worker is told.
func (ps *projectState) place(id, path string) snapshotPlace {
	return snapshotPlace{Dir: path, Snapshot: id, Key: hexKey(ps.p), Project: ps.p.Path()}
}

// final gives the session's idle worker a last pass, at most wait, before the server
// stops it (Manager.Close): the cells of its last seconds are not lost to a restart.
func (ss *sessionSnapshots) final(wait time.Duration) {
	if ss == nil {
		return
	}
	ss.mu.Lock()
	stopTimer(ss.timer)
	stopTimer(ss.idle)
	ss.mu.Unlock()
	ss.background(func() { ss.pass(wait) })
}

// letGo lets go of a held snapshot: kept when a pass completed it, removed when
// none did (an empty namespace is no snapshot to offer).
func letGo(h *statedir.Held) {
	if h == nil {
		return
	}
	if !h.Complete() {
		h.Remove()
		return
	}
	h.Release()
}

func stopTimer(t *time.Timer) {
	if t != nil {
		t.Stop()
	}
}

// workerGone lets go of the snapshot of worker p, which left: it is kept, and a
// restore can load it (unless the worker was released, whose snapshot the session
// keeps to restore itself).
func (ss *sessionSnapshots) workerGone(p *process) {
	if ss == nil {
		return
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.heldBy == p {
		letGo(ss.held)
		ss.held, ss.heldBy, ss.last, ss.status = nil, nil, nil, "none"
		ss.ps.changed()
	}
}

// close stops the timers and waits for passes; with remove (python_session_close),
// the session's snapshots are deleted, else kept for a restart.
func (ss *sessionSnapshots) close(remove bool) {
	if ss == nil {
		return
	}
	ss.mu.Lock()
	ss.closed = true
	stopTimer(ss.timer)
	stopTimer(ss.idle)
	ss.mu.Unlock()
	ss.wg.Wait()
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for _, h := range []*statedir.Held{ss.held, ss.released} {
		if remove {
			h.Remove()
		} else {
			letGo(h)
		}
	}
	ss.held, ss.heldBy, ss.released = nil, nil, nil
	if remove {
		for _, snap := range ss.ps.snapshots() {
			if m := snap.Manifest; m != nil && m.SessionID == ss.s.id && !snap.Live {
				ss.ps.p.Remove(snap.ID)
			}
		}
	}
	ss.ps.changed()
}

// state is the session's snapshot for health: off under a sandbox from the start, as
// every worker of the session runs in it (Session.sandboxed).
func (ss *sessionSnapshots) state() SnapshotState {
	sandboxed := ss.s.sandboxed()
	ss.mu.Lock()
	st := SnapshotState{Enabled: true, Status: ss.status, SnapshotSummary: ss.last, Error: ss.err}
	if ss.held != nil {
		st.Snapshot = ss.held.ID
	}
	if ss.released != nil {
		st.Status, st.Snapshot = "released", ss.released.ID
	}
	if sandboxed {
		st = SnapshotState{Status: "off", Reason: msgSnapshotSandboxed}
	}
	ss.mu.Unlock()
	st.Restorable = ss.s.offer()
	return st
}

// current is the snapshot the session's live worker writes ("" for none).
func (ss *sessionSnapshots) current() string {
	if ss == nil {
		return ""
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.held == nil || ss.heldBy == nil || !ss.heldBy.alive() {
		return ""
	}
	return ss.held.ID
}

// offer is the snapshot a restore of the session loads by default: the newest
// complete one of its name in its project that no live worker writes; nil for none.
func (s *Session) offer() *Restorable {
	if s.proj == nil {
		return nil
	}
	own := s.snaps.current()
	return offerOf(s.proj, func(m *statedir.Manifest) bool { return m.SessionName == s.name }, own)
}

// offerOf is the newest complete snapshot of the project that match accepts, other
// than skip, that no server holds; nil for none.
func offerOf(ps *projectState, match func(*statedir.Manifest) bool, skip string) *Restorable {
	for _, snap := range ps.snapshots() {
		m := snap.Manifest
		if m == nil || snap.ID == skip || snap.Live || !match(m) {
			continue
		}
		return restorableOf(m)
	}
	return nil
}

func restorableOf(m *statedir.Manifest) *Restorable {
	return &Restorable{
		Snapshot: m.Snapshot, SessionID: m.SessionID, SessionName: m.SessionName, Generation: m.Generation,
		SnapshotSummary: SnapshotSummary{SavedAt: m.SavedAt, Variables: len(m.Entries), Bytes: m.Bytes, Skipped: len(m.Skipped), Stale: m.Stale()},
	}
}

// snapshots lists the project's snapshots, newest first, from a listing at most
// listingTTL old unless this server changed one since.
func (ps *projectState) snapshots() []statedir.Snapshot {
	ps.listMu.Lock()
	defer ps.listMu.Unlock()
	if ps.listed.IsZero() || time.Since(ps.listed) > listingTTL {
		ps.listing, ps.listed = ps.p.Snapshots(), time.Now()
	}
	return ps.listing
}

// changed drops the cached listing: this server changed a snapshot.
func (ps *projectState) changed() {
	ps.listMu.Lock()
	ps.listed = time.Time{}
	ps.listMu.Unlock()
}

// noSnapshot says that a restore found nothing to load from and, when this session
// takes no snapshots itself (--no-snapshot, or a worker in the sandbox), why: the
// general hint would send the caller back to run cells and try again.
func (s *Session) noSnapshot() error {
	switch {
	case s.snaps == nil:
		return errors.New(msgNoSnapshotHere + msgSnapshotsOff)
	case s.sandboxed():
		return errors.New(msgNoSnapshotHere + msgSnapshotSandboxed)
	}
	return errors.New(msgNoSnapshot)
}

// source finds the snapshot a restore of the session loads: the session's offer, or
// the newest snapshot of the session id (or the snapshot id) from names.
func (s *Session) source(from string) (*Restorable, error) {
	if s.proj == nil {
		return nil, errors.New(msgNoStateDir)
	}
	if from == "" {
		if r := s.offer(); r != nil {
			return r, nil
		}
		return nil, s.noSnapshot()
	}
	for _, snap := range s.proj.snapshots() {
		if m := snap.Manifest; m != nil && (m.SessionID == from || snap.ID == from) {
			return restorableOf(m), nil
		}
	}
	return nil, s.noSnapshot()
}

// hold takes snapshot id for the session's worker to adopt after a restore; nil when
// another worker (this server's or another's) writes it: the restore then copies.
func (ps *projectState) hold(id string) *statedir.Held {
	h, err := ps.p.Hold(id)
	if err != nil {
		return nil
	}
	return h
}

// hexKey is the key the project's snapshots are authenticated with, as frames carry it.
func hexKey(p *statedir.Project) string { return hex.EncodeToString(p.Key()) }
