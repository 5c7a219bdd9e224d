package repl

import (
	"context"
	"errors"
	"log/slog"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/iota-uz/repl-mcp/sandbox"
	"github.com/iota-uz/repl-mcp/statedir"
)

// Config is what every session of a server shares.
type Config struct {
	// Python is the server's default interpreter and PythonSource the rule that chose
	// it (ChosenByFlag, ChosenByEnv, ChosenBeside, ChosenFromPath). The default
	// session uses its project's .venv instead unless a flag or variable named Python.
	Python       string
	PythonSource string
	// Project is the canonical directory the default session runs in.
	Project string
	// Env is the environment workers inherit (plus their own variables).
	Env []string
	// CodeCache is a private directory where workers keep their compiled code between
	// starts (a cold start then skips compiling the worker); "" disables it.
	CodeCache string
	// MaxMemoryMiB is the worker RSS budget; zero disables it.
	MaxMemoryMiB int
	// Executable is the repl-mcp binary the guardian is started from; empty means
	// the running executable.
	Executable string
	// Version is the server version, reported in health.
	Version string
	// Services answer cell code's ops (the mcp bridge, artifacts); nil means none.
	Services Services
	// OpLimits are the bounds of those ops, which every worker is given (main
	// passes cellops.Limits); a Config without them starts no worker.
	OpLimits OpLimits
	// Recorder keeps every finished cell for the session's notebook; nil keeps none.
	Recorder Recorder
	// State is the user's state directory (package statedir): the record of server
	// lifetimes, the projects' generations and the snapshots. nil keeps nothing: no
	// restart answers, every lifetime's generations start at 1, no snapshots.
	State *statedir.Dir
	// Snapshots says how sessions keep snapshots, when State is set.
	Snapshots SnapshotConfig
	// NoSpareWorker turns the spare worker off (--no-spare-worker): every reset,
	// recovery and new session then waits for a worker's cold start.
	NoSpareWorker bool
	// Sandbox is what --sandbox asked for and the kernel enforces (docs/contract.md
	// §11); the zero value is full access.
	Sandbox sandbox.Settings
	Logger  *slog.Logger
}

// launch is what the workers of a session in env start from. An interpreter named
// by a bare command name (the default session's "python3") is the file PATH finds,
// as spawn would: a session opened on the same interpreter names it by that path
// (resolveInterpreter), and both must be one launch to share a spare. A name PATH
// does not find stays as it is, for spawn to report.
func (cfg *Config) launch(env sessionEnv) launch {
	python := env.python
	if !strings.ContainsRune(python, filepath.Separator) {
		if found, err := exec.LookPath(python); err == nil {
			python = found
		}
	}
	limits := ""
	if cfg.OpLimits != (OpLimits{}) {
		limits = WorkerLimitsEnv(cfg.OpLimits)
	}
	return launch{python: python, dir: env.project, env: cfg.Env, exe: cfg.Executable, cache: cfg.CodeCache, limits: limits, policy: cfg.initialPolicy()}
}

// ErrSessionNotFound is returned for an unknown or closed session id.
var ErrSessionNotFound = errors.New(msgSessionNotFound)

// Manager holds the sessions of one server lifetime.
type Manager struct {
	cfg      Config
	serverID string
	lifetime context.Context
	opening  chan struct{} // one token per open in progress
	spares   *spares       // the pre-started workers, one per launch in use
	// probeTimeout bounds an interpreter probe; tests shorten it.
	probeTimeout time.Duration

	mu       sync.Mutex
	def      *Session
	sessions map[string]*Session

	// state is what outlives this lifetime: its record, the projects' generations and
	// snapshots (durable.go).
	state *durable
}

// NewManager makes the manager and its default session. No Python starts here:
// workers start on the first execution. ctx bounds the sessions' lifetimes.
func NewManager(ctx context.Context, cfg Config) *Manager {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	m := &Manager{cfg: cfg, serverID: newUUID(), lifetime: ctx, opening: make(chan struct{}, maxOpening), probeTimeout: probeTimeout, sessions: map[string]*Session{}}
	m.spares = newSpares(cfg.NoSpareWorker, cfg.Logger)
	m.beginLifetime()
	m.def = newSession(ctx, defaultSessName, m.serverID, &m.cfg, defaultEnvironment(&m.cfg), m.spares)
	m.attach(m.def, true)
	m.sessions[m.def.id] = m.def
	return m
}

// ServerID is the id of this server lifetime.
func (m *Manager) ServerID() string { return m.serverID }

// Session resolves a session id; the empty id is the default session.
func (m *Manager) Session(id string) (*Session, error) {
	if id == "" {
		return m.def, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.sessions[id]; ok {
		return s, nil
	}
	return nil, ErrSessionNotFound
}

// Default is the default session.
func (m *Manager) Default() *Session { return m.def }

// List returns the health of every session, sorted by name (the default session
// first among equals).
func (m *Manager) List() []Health {
	m.mu.Lock()
	sessions := make([]*Session, 0, len(m.sessions))
	for _, s := range m.sessions {
		sessions = append(sessions, s)
	}
	m.mu.Unlock()
	out := make([]Health, 0, len(sessions))
	for _, s := range sessions {
		out = append(out, s.Health())
	}
	slices.SortStableFunc(out, func(a, b Health) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.SessionID, b.SessionID)
	})
	return out
}

// Close closes every session at once, giving active runs grace to stop, then stops
// the spare workers. An idle session's worker first gets a last snapshot pass, at
// most finalSnapshotWait, so that a restart loses none of its last cells.
func (m *Manager) Close(grace time.Duration) {
	m.mu.Lock()
	sessions := make([]*Session, 0, len(m.sessions))
	for _, s := range m.sessions {
		sessions = append(sessions, s)
	}
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range sessions {
		wg.Go(func() { s.snaps.final(finalSnapshotWait) })
	}
	wg.Wait()
	for _, s := range sessions {
		wg.Go(func() { s.Close(grace) })
	}
	wg.Wait()
	m.spares.close()
	m.endLifetime()
}
