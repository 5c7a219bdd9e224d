package repl

import (
	"fmt"
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

// sessionClosed records an opened session's close in the lifetime's record.
func (s *Session) sessionClosed() {
	if s.proj == nil || s.manager == nil || s.manager.state.launch == nil {
		return
	}
	now := time.Now().UTC()
	if err := s.manager.state.launch.server.SessionChanged(s.id, func(rec *statedir.Session) { rec.Closed = &now }); err != nil {
		s.logger.Warn("session close not recorded", "err", err)
	}
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
	msg := fmt.Sprintf(msgEarlierSession, id, e.Session.Name, e.Server.Started.Format(clockLayout),
		m.state.started.UTC().Format(clockLayout))
	if r := e.Restorable; r != nil {
		target := `{"from_session":"` + id + `"}`
		if e.Session.Name != def.name {
			target = `{"session_id":"<a session you open with python_session_open>","from_session":"` + id + `"}`
		}
		msg += fmt.Sprintf(msgEarlierRestorable, r.Variables, r.SavedAt.UTC().Format(clockLayout), target)
	}
	return msg + fmt.Sprintf(msgDefaultNow, def.id, def.worker.currentGeneration())
}

// clockLayout is how times read in messages: UTC, to the second.
const clockLayout = "2006-01-02 15:04:05 UTC"
