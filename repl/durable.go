package repl

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/iota-uz/repl-mcp/statedir"
)

// What outlives a server (docs/contract.md §6.3, §6.7): the record of the server
// lifetimes launched in a project, the highest generation any session of a project
// used, and the sessions' snapshots, all in the state directory (package statedir).
// The Manager begins its lifetime in the launch project's record and ends it at
// Close; each session's first worker starts above the generations of its project's
// earlier lifetimes, and every worker start raises the project's record before its
// first result is reported.

// SnapshotConfig is how sessions keep snapshots.
type SnapshotConfig struct {
	// Off turns snapshots off (--no-snapshot); restores of existing ones still work.
	Off bool
	// MaxBytes bounds one session's snapshot, and the project's snapshots together
	// (--snapshot-max-mib); 0 means DefaultSnapshotMaxMiB.
	MaxBytes int64
	// Delay is how long a session stays idle after a run before a pass (0: snapshotDelay).
	Delay time.Duration
	// IdleRelease stops a worker idle that long, its namespace saved; its next run
	// restores it first (--idle-release). 0 never does.
	IdleRelease time.Duration
}

func (c SnapshotConfig) maxBytes() int64 {
	if c.MaxBytes > 0 {
		return c.MaxBytes
	}
	return DefaultSnapshotMaxMiB << 20
}

func (c SnapshotConfig) delay() time.Duration {
	if c.Delay > 0 {
		return c.Delay
	}
	return snapshotDelay
}

// projectState is a project's state directory as this server lifetime uses it.
type projectState struct {
	p *statedir.Project
	// base is the highest generation any earlier lifetime used in the project, read
	// once: every session of the project in this lifetime starts above it.
	base uint64
	// server is this lifetime's hold on its launch project's record; nil for others.
	server *statedir.Server

	// The project's snapshots as last listed (snapshots, changed).
	listMu  sync.Mutex
	listed  time.Time
	listing []statedir.Snapshot
}

// durable is the Manager's part of what outlives it.
type durable struct {
	dir      *statedir.Dir
	started  time.Time
	launch   *projectState // nil without a state directory
	earlier  []statedir.Lifetime
	mu       sync.Mutex
	projects map[string]*projectState
}

// beginLifetime records this server lifetime in the launch project; without a state
// directory, or when it cannot be used, the server keeps no record (logged).
func (m *Manager) beginLifetime() {
	m.state = &durable{dir: m.cfg.State, started: time.Now(), projects: map[string]*projectState{}}
	if m.cfg.State == nil {
		return
	}
	p, err := m.cfg.State.Project(m.cfg.Project)
	if err == nil {
		var server *statedir.Server
		var base uint64
		server, m.state.earlier, base, err = p.BeginLifetime(m.serverID, m.state.started)
		if err == nil {
			m.state.launch = &projectState{p: p, base: base, server: server}
			m.state.projects[m.cfg.Project] = m.state.launch
		}
	}
	if err != nil {
		m.cfg.Logger.Warn("the project's state directory cannot be used: no restart record, generations start at 1, no snapshots", "project", m.cfg.Project, "err", err)
	}
	for _, gone := range m.cfg.State.Sweep() {
		m.cfg.Logger.Debug("state of a removed project swept", "project", gone)
	}
}

// projectState is the state of project, opened once per lifetime; nil when there is
// no state directory or it cannot be used.
func (d *durable) project(path string, log func(msg string, args ...any)) *projectState {
	if d.dir == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if ps, ok := d.projects[path]; ok {
		return ps
	}
	p, err := d.dir.Project(path)
	var st statedir.State
	if err == nil {
		st, err = p.Read()
	}
	if err != nil {
		log("the project's state directory cannot be used", "project", path, "err", err)
		d.projects[path] = nil
		return nil
	}
	ps := &projectState{p: p, base: st.Generation}
	d.projects[path] = ps
	return ps
}

// attach gives a new session its project's state: the generation its first worker
// starts above, the record of its lifetime, its snapshots, and, for the default
// session of a server launched where an earlier one ran Python, that it continues
// after a restart.
func (m *Manager) attach(s *Session, isDefault bool) {
	ps := m.state.project(s.env.project, m.cfg.Logger.Warn)
	if ps == nil {
		return
	}
	s.proj, s.manager = ps, m
	s.worker.base = ps.base
	if isDefault && m.earlierDefaultRan() {
		s.worker.gone = ResetRestart
	}
	if launch := m.state.launch; launch != nil {
		err := launch.server.SessionOpened(statedir.Session{ID: s.id, Name: s.name, Project: s.env.project, Default: isDefault, Opened: time.Now()})
		if err != nil {
			m.cfg.Logger.Warn("session not recorded", "session", s.id, "err", err)
		}
	}
	if !m.cfg.Snapshots.Off {
		s.snaps = newSessionSnapshots(s, m.cfg.Snapshots, ps)
	}
}

// earlierDefaultRan reports whether a server launched earlier in this project, and
// gone now, ran Python in its default session: its variables are gone.
func (m *Manager) earlierDefaultRan() bool {
	for _, l := range m.state.earlier {
		if l.Live {
			continue
		}
		for _, rec := range l.Sessions {
			if rec.Default && rec.Generation > 0 {
				return true
			}
		}
	}
	return false
}

// Started is when this server lifetime began.
func (m *Manager) Started() time.Time { return m.state.started }

// endLifetime records the lifetime's end (Close, after the sessions).
func (m *Manager) endLifetime() {
	if l := m.state.launch; l != nil {
		if err := l.server.End(time.Now()); err != nil {
			m.cfg.Logger.Warn("server lifetime's end not recorded", "err", err)
		}
	}
}

// workerStarted records that session s's worker reached generation g, before any
// result of it is reported: the project's highest generation and the lifetime's
// record of the session. A failure is logged; the worker runs regardless.
func (s *Session) workerStarted(g uint64) {
	ps := s.proj
	if ps == nil {
		return
	}
	var err error
	if ps.server != nil {
		err = ps.server.WorkerStarted(s.id, g)
	} else {
		err = ps.p.RaiseGeneration(g)
	}
	if err != nil {
		s.logger.Warn("generation not recorded in the project's state: a later server may repeat it", "generation", g, "err", err)
	}
}

// lifetimeRecord is this server lifetime's record, which holds its sessions and the
// runs that left their callers; nil without one.
func (s *Session) lifetimeRecord() *statedir.Server {
	if s.proj == nil || s.manager == nil || s.manager.state.launch == nil {
		return nil
	}
	return s.manager.state.launch.server
}

// sessionClosed records an opened session's close in the lifetime's record.
func (s *Session) sessionClosed() {
	rec := s.lifetimeRecord()
	if rec == nil {
		return
	}
	now := time.Now().UTC()
	if err := rec.SessionChanged(s.id, func(rec *statedir.Session) { rec.Closed = &now }); err != nil {
		s.logger.Warn("session close not recorded", "err", err)
	}
}

// leave records that r left its caller (python_start, a yield): its caller holds
// its id and no result, so a later server lifetime answers a poll of it with what
// became of it (docs/contract.md §6.7). A run that ended meanwhile is recorded with
// its end; runEnded records the end of one that had not.
func (s *Session) leave(r *run) {
	rec := s.lifetimeRecord()
	if rec == nil {
		return
	}
	r.leftMu.Lock()
	defer r.leftMu.Unlock()
	r.left = true
	entry := statedir.Run{ID: r.id, Session: s.id, Started: r.started, Code: r.what()}
	select {
	case <-r.done:
		entry.RunEnd = s.ending(r)
	default:
	}
	if err := rec.RunLeft(entry); err != nil {
		s.logger.Warn("run not recorded: a later server will not know it", "run", r.id, "err", err)
	}
}

// runEnded records how r ended, when it left its caller: once its result is set and
// its slot let go, so that the next call never waits for the write.
func (s *Session) runEnded(r *run) {
	r.leftMu.Lock()
	defer r.leftMu.Unlock()
	if !r.left {
		return
	}
	if err := s.lifetimeRecord().RunEnded(r.id, s.ending(r)); err != nil {
		s.logger.Warn("run's end not recorded", "run", r.id, "err", err)
	}
}

// outcomeClosed is the recorded outcome of a run that its session's close stopped:
// python_session_close, or the server stopping.
const outcomeClosed = "closed"

// errorLineRunes bounds the words of a recorded run's error.
const errorLineRunes = 120

// ending is how r, which has ended, ended, as the lifetime's record says it: when;
// "ok", outcomeClosed or the reason it ended badly; and the error in one line, a
// traceback's exception or the first clause of the supervisor's words.
func (s *Session) ending(r *run) statedir.RunEnd {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	res := r.result
	ended := statedir.RunEnd{Ended: new(r.ended.UTC()), Outcome: string(res.Reason)}
	switch {
	case res.Success:
		ended.Outcome = "ok"
		return ended
	case closed && (res.Reason == ReasonCancelled || res.Reason == ReasonNotDispatched || res.Reason == ReasonAbandoned):
		// What a close does to a run; one that timed out or raised before the close
		// keeps its own reason.
		ended.Outcome = outcomeClosed
	}
	if res.Error != nil {
		words := *res.Error
		if res.Reason != ReasonRaised {
			words, _, _ = strings.Cut(words, ";")
		}
		ended.Error = lastLine([]byte(words), errorLineRunes)
	}
	return ended
}

// earlierRun finds run id among those the earlier server lifetimes of this project
// recorded, with its lifetime and its session's record. No id, asked by the default
// session, which has no run yet, means the newest run of the default session of the
// latest earlier lifetime that ran Python in it: the run a caller polling without an
// id after a restart is after.
func (m *Manager) earlierRun(id string, asker *Session) (statedir.Run, statedir.Lifetime, statedir.Session, bool) {
	if id == "" && asker != m.def {
		return statedir.Run{}, statedir.Lifetime{}, statedir.Session{}, false
	}
	for i := len(m.state.earlier) - 1; i >= 0; i-- {
		l := m.state.earlier[i]
		if l.Live {
			continue
		}
		def := slices.IndexFunc(l.Sessions, func(rec statedir.Session) bool { return rec.Default && rec.Generation > 0 })
		if id == "" && def < 0 {
			continue
		}
		for j := len(l.Runs) - 1; j >= 0; j-- {
			run := l.Runs[j]
			if run.ID == id || (id == "" && run.Session == l.Sessions[def].ID) {
				return run, l, recordOf(l, run.Session), true
			}
		}
		if id == "" {
			break // the latest lifetime that ran the default had no such run
		}
	}
	return statedir.Run{}, statedir.Lifetime{}, statedir.Session{}, false
}

// recordOf is session id's record in lifetime l (the zero record when it is not kept).
func recordOf(l statedir.Lifetime, id string) statedir.Session {
	if i := slices.IndexFunc(l.Sessions, func(rec statedir.Session) bool { return rec.ID == id }); i >= 0 {
		return l.Sessions[i]
	}
	return statedir.Session{}
}

// unknownRun is the answer to run id, which s does not know (plain says so), or to
// no id from a session that has no run: for a run of an earlier server lifetime it
// adds that the server restarted, when, what became of the run, and what can be
// restored (docs/contract.md §6.7).
func (s *Session) unknownRun(id, plain string) string {
	s.mu.Lock()
	ran := len(s.history) > 0
	s.mu.Unlock()
	if s.manager == nil || (id == "" && ran) {
		return plain
	}
	return plain + s.manager.earlierRunStory(id, s)
}

// EarlierRun is what became of run id when an earlier server lifetime of this
// project recorded it, as unknownRun says it after its first words: for an MCP
// task's id, which is its run's. It is "" for an id no lifetime recorded.
func (m *Manager) EarlierRun(id string) string {
	if id == "" {
		return ""
	}
	return m.earlierRunStory(id, nil)
}

// earlierRunStory tells of the earlier lifetime's run that earlierRun finds.
func (m *Manager) earlierRunStory(id string, asker *Session) string {
	run, l, rec, ok := m.earlierRun(id, asker)
	if !ok {
		return ""
	}
	name := cmp.Or(rec.Name, run.Session) // its record gone: more sessions than a lifetime keeps
	msg := fmt.Sprintf(msgEarlierRun, run.ID, name, Clock(run.Started), run.Code,
		Clock(l.Started), Clock(m.state.started))
	switch {
	case run.Ended != nil && run.Outcome == "ok":
		msg += fmt.Sprintf(msgEarlierRunFinished, Clock(*run.Ended))
	case run.Ended != nil && run.Outcome == outcomeClosed && rec.Closed != nil:
		msg += fmt.Sprintf(msgEarlierRunClosed, Clock(*run.Ended))
	case run.Ended != nil && run.Outcome == outcomeClosed:
		msg += fmt.Sprintf(msgEarlierRunStopped, Clock(*run.Ended))
	case run.Ended != nil:
		msg += fmt.Sprintf(msgEarlierRunFailed, Clock(*run.Ended), cmp.Or(run.Error, run.Outcome))
	case l.Ended != nil && !l.Ended.IsZero():
		msg += fmt.Sprintf(msgEarlierRunStopped, Clock(*l.Ended))
	default:
		msg += msgEarlierRunKilled
	}
	if e, ok := m.Earlier(run.Session); ok && e.Restorable != nil {
		msg += fmt.Sprintf(msgEarlierRunRestorable, variables(e.Restorable.Variables), Clock(e.Restorable.SavedAt), m.restoreTarget(e))
	}
	if run.Outcome != "ok" {
		msg += msgEarlierRunAgain
	}
	return msg
}

// EarlierSession describes a session id of an earlier server lifetime in this
// project: the answer a client gets for it says so (docs/contract.md §2.3).
type EarlierSession struct {
	Session statedir.Session
	Server  statedir.Lifetime
	// Restorable is its newest snapshot, when one can be restored.
	Restorable *Restorable
}

// Earlier looks id up among the sessions of the earlier server lifetimes launched
// in this project.
func (m *Manager) Earlier(id string) (EarlierSession, bool) {
	for i := len(m.state.earlier) - 1; i >= 0; i-- {
		l := m.state.earlier[i]
		for _, rec := range l.Sessions {
			if rec.ID != id {
				continue
			}
			e := EarlierSession{Session: rec, Server: l}
			if ps := m.state.project(rec.Project, m.cfg.Logger.Warn); ps != nil {
				e.Restorable = offerOf(ps, func(mf *statedir.Manifest) bool { return mf.SessionID == id }, "")
			}
			return e, true
		}
	}
	return EarlierSession{}, false
}

// UnknownSession is the answer to a session id this server does not know: a session
// of an earlier lifetime says that the server restarted, when, what is gone, what can
// be restored and which session is the default now; any other keeps the plain message.
func (m *Manager) UnknownSession(id string) string {
	e, ok := m.Earlier(id)
	if !ok {
		return msgSessionNotFound
	}
	def := m.def
	msg := fmt.Sprintf(msgEarlierSession, id, e.Session.Name, Clock(e.Server.Started),
		Clock(m.state.started))
	if r := e.Restorable; r != nil {
		msg += fmt.Sprintf(msgEarlierRestorable, variables(r.Variables), Clock(r.SavedAt), m.restoreTarget(e))
	}
	return msg + fmt.Sprintf(msgDefaultNow, def.id, def.worker.currentGeneration())
}

// restoreTarget is the python_session_restore arguments that bring the earlier
// session e's variables back: into the default session when e was the default (its
// name), else into a session opened for them.
func (m *Manager) restoreTarget(e EarlierSession) string {
	if e.Session.Name == m.def.name {
		return `{"from_session":"` + e.Session.ID + `"}`
	}
	return `{"session_id":"<a session you open with python_session_open>","from_session":"` + e.Session.ID + `"}`
}

// variables is "1 variable" or "N variables".
func variables(n int) string {
	if n == 1 {
		return "1 variable"
	}
	return fmt.Sprint(n, " variables")
}

// Clock is how a time reads in messages, the server's texts included: UTC, to the
// second.
func Clock(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") }
