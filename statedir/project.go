package statedir

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/iota-uz/repl-mcp/internal/privfile"
)

// The layout under the root (docs/design.md, "Durable sessions").
const (
	projectsDir  = "projects"
	stateName    = "state.json"
	stateLock    = "state.lock"
	serversDir   = "servers"
	snapshotsDir = "snapshots"
	// stateFormat names the record's format.
	stateFormat = "repl-mcp-project-state-v1"
	// keptLifetimes bounds the record: the newest lifetimes are kept.
	keptLifetimes = 16
	// keptSessions bounds the sessions recorded per lifetime.
	keptSessions = 64
	// keptRuns bounds the runs recorded per lifetime: with keptLifetimes and the
	// bounded code and error lines, the runs stay under a fifth of maxStateBytes
	// (TestRunsThatLeftTheirCallers).
	keptRuns = 32
	// maxStateBytes bounds the record read back.
	maxStateBytes = 1 << 20
	// lockWait bounds a wait for another server's update of the record.
	lockWait = 5 * time.Second
)

// Project is one project's state directory.
type Project struct {
	d    *Dir
	path string // the project directory itself
	dir  string // its state directory
}

// State is a project's record: the highest generation any of its sessions used, in
// any server lifetime, and the newest lifetimes of the servers launched in it.
type State struct {
	Format     string     `json:"format"`
	Project    string     `json:"project"`
	Generation uint64     `json:"generation"`
	Lifetimes  []Lifetime `json:"lifetimes"`
}

// Lifetime is one server launched in the project.
type Lifetime struct {
	ServerID string     `json:"server_id"`
	Pid      int        `json:"pid"`
	Started  time.Time  `json:"started"`
	Ended    *time.Time `json:"ended,omitempty"`
	Sessions []Session  `json:"sessions"`
	// Runs are the newest runs of the lifetime that left their callers, oldest first.
	Runs []Run `json:"runs,omitempty"`
	// Live is whether its server still runs (its lock is held): set by BeginLifetime
	// for the lifetimes it returns, never stored.
	Live bool `json:"-"`
}

// Session is one session of a lifetime.
type Session struct {
	ID      string     `json:"id"`
	Name    string     `json:"name"`
	Project string     `json:"project"`
	Default bool       `json:"default,omitempty"`
	Opened  time.Time  `json:"opened"`
	Closed  *time.Time `json:"closed,omitempty"`
	// Generation is the last generation its worker reached (0: it never ran Python).
	Generation uint64 `json:"generation"`
}

// Run is a run that left its caller (python_start, a cell that yielded, an MCP
// task): its caller holds an id and no result, so a later server answers a poll of
// it with what became of it (docs/contract.md §6.7).
type Run struct {
	ID      string    `json:"id"`
	Session string    `json:"session"`
	Started time.Time `json:"started"`
	// Code names it as results do: its first code line, or its file, bounded.
	Code string `json:"code"`
	// RunEnd is unset while it runs, and for a run its server did not outlive.
	RunEnd
}

// RunEnd is how a recorded run ended.
type RunEnd struct {
	// Ended is when it ended, and Outcome how: "ok", "closed" (its session's close
	// stopped it), or the reason it ended badly, whose words Error holds in one
	// bounded line.
	Ended   *time.Time `json:"ended,omitempty"`
	Outcome string     `json:"outcome,omitempty"`
	Error   string     `json:"error,omitempty"`
}

// Project opens (making it when needed) the state directory of the project at path,
// a canonical absolute directory: projects/<the first 32 hex digits of its SHA-256>.
func (d *Dir) Project(path string) (*Project, error) {
	sum := sha256.Sum256([]byte(path))
	p := &Project{d: d, path: path, dir: filepath.Join(d.root, projectsDir, hex.EncodeToString(sum[:16]))}
	for _, dir := range []string{p.dir, filepath.Join(p.dir, serversDir), filepath.Join(p.dir, snapshotsDir)} {
		if err := privateDir(dir, false); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// Key is the user's key, which authenticates the project's snapshots.
func (p *Project) Key() []byte { return p.d.key }

// Path is the project directory; Dir its state directory.
func (p *Project) Path() string { return p.path }
func (p *Project) Dir() string  { return p.dir }

// Read returns the project's record as it is now.
func (p *Project) Read() (State, error) {
	return p.read()
}

// Update changes the project's record under its lock, for servers in the project
// may do so at once, and writes it back whole.
func (p *Project) Update(change func(*State)) error {
	lock, err := p.lock()
	if err != nil {
		return err
	}
	defer privfile.Unlock(lock)
	st, err := p.read()
	if err != nil {
		p.d.log.Warn("project state record unreadable; starting a new one", "project", p.path, "err", err)
		st = State{Generation: st.Generation}
	}
	change(&st)
	st.Format, st.Project = stateFormat, p.path
	if n := len(st.Lifetimes); n > keptLifetimes {
		st.Lifetimes = slices.Clone(st.Lifetimes[n-keptLifetimes:])
	}
	data, err := json.MarshalIndent(st, "", " ")
	if err != nil {
		return err
	}
	path := filepath.Join(p.dir, stateName)
	return privfile.WriteAtomic(path, path+".tmp-"+rand.Text()[:10], append(data, '\n'))
}

// read reads the record; a missing one is empty. A record of another project (a
// hash collision, or a directory moved by hand) is an error, unless p knows no
// project yet (Sweep).
func (p *Project) read() (State, error) {
	f, err := privfile.Open(filepath.Join(p.dir, stateName))
	if errors.Is(err, fs.ErrNotExist) {
		return State{}, nil
	}
	if err != nil {
		return State{}, err
	}
	defer f.Close()
	if err := privfile.Check(f); err != nil {
		return State{}, fmt.Errorf("%s %w", f.Name(), err)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxStateBytes+1))
	if err != nil {
		return State{}, err
	}
	var st State
	if len(data) > maxStateBytes {
		return State{}, fmt.Errorf("%s is larger than %d bytes", f.Name(), maxStateBytes)
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return State{}, fmt.Errorf("%s: %w", f.Name(), err)
	}
	if st.Format != stateFormat || (p.path != "" && st.Project != p.path) {
		return State{Generation: st.Generation}, fmt.Errorf("%s is the record of %q, format %q", f.Name(), st.Project, st.Format)
	}
	return st, nil
}

// lock takes the record's lock, waiting at most lockWait for another server.
func (p *Project) lock() (*os.File, error) {
	path := filepath.Join(p.dir, stateLock)
	deadline := time.Now().Add(lockWait)
	for {
		f, err := privfile.Lock(path)
		if !errors.Is(err, privfile.ErrLocked) || time.Now().After(deadline) {
			return f, err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// RaiseGeneration records that a session of the project used generation g: the
// record keeps the highest, so that a later server lifetime starts above it.
func (p *Project) RaiseGeneration(g uint64) error {
	return p.Update(func(st *State) { st.Generation = max(st.Generation, g) })
}

// Server is a server lifetime's hold on the project: while it holds its lock,
// other servers see it live.
type Server struct {
	p    *Project
	id   string
	lock *os.File
}

// BeginLifetime records a server lifetime launched in the project and returns the
// earlier ones (oldest first), each marked live or gone, and the project's record as
// it was. The lifetime holds its lock until End.
func (p *Project) BeginLifetime(serverID string, started time.Time) (*Server, []Lifetime, uint64, error) {
	lockPath := filepath.Join(p.dir, serversDir, serverID+".lock")
	lock, err := privfile.Lock(lockPath)
	if err != nil {
		return nil, nil, 0, err
	}
	var earlier []Lifetime
	var generation uint64
	err = p.Update(func(st *State) {
		generation = st.Generation
		for i := range st.Lifetimes {
			l := &st.Lifetimes[i]
			l.Live = p.serverLive(l.ServerID)
			if !l.Live && l.Ended == nil {
				// Killed, or the machine stopped: it ended some time after its last record.
				gone := time.Time{}
				l.Ended = &gone
			}
			earlier = append(earlier, *l)
		}
		st.Lifetimes = append(st.Lifetimes, Lifetime{ServerID: serverID, Pid: os.Getpid(), Started: started.UTC()})
	})
	if err != nil {
		privfile.Unlock(lock)
		os.Remove(lockPath)
		return nil, nil, 0, err
	}
	return &Server{p: p, id: serverID, lock: lock}, earlier, generation, nil
}

// serverLive reports whether the server of that id holds its lock; a lock no one
// holds is removed.
func (p *Project) serverLive(id string) bool {
	path := filepath.Join(p.dir, serversDir, id+".lock")
	f, err := privfile.Lock(path)
	switch {
	case errors.Is(err, privfile.ErrLocked):
		return true
	case err == nil:
		os.Remove(path)
		privfile.Unlock(f)
	}
	return false
}

// Record changes this lifetime's entry in the project's record.
func (s *Server) Record(change func(*Lifetime)) error {
	return s.p.Update(func(st *State) {
		for i := range st.Lifetimes {
			if st.Lifetimes[i].ServerID == s.id {
				l := &st.Lifetimes[i]
				change(l)
				if n := len(l.Sessions); n > keptSessions {
					l.Sessions = slices.Clone(l.Sessions[n-keptSessions:])
				}
				if n := len(l.Runs); n > keptRuns {
					l.Runs = slices.Clone(l.Runs[n-keptRuns:])
				}
				return
			}
		}
	})
}

// SessionOpened records a session of this lifetime.
func (s *Server) SessionOpened(rec Session) error {
	rec.Opened = rec.Opened.UTC()
	return s.Record(func(l *Lifetime) { l.Sessions = append(l.Sessions, rec) })
}

// SessionChanged applies change to the record of session id.
func (s *Server) SessionChanged(id string, change func(*Session)) error {
	return s.Record(func(l *Lifetime) {
		for i := range l.Sessions {
			if l.Sessions[i].ID == id {
				change(&l.Sessions[i])
			}
		}
	})
}

// RunLeft records run, which left its caller, in this lifetime.
func (s *Server) RunLeft(run Run) error {
	run.Started = run.Started.UTC()
	return s.Record(func(l *Lifetime) { l.Runs = append(l.Runs, run) })
}

// RunEnded records how run id of this lifetime ended.
func (s *Server) RunEnded(id string, end RunEnd) error {
	return s.Record(func(l *Lifetime) {
		for i := range l.Runs {
			if l.Runs[i].ID == id {
				l.Runs[i].RunEnd = end
			}
		}
	})
}

// WorkerStarted records that session id of this lifetime reached generation g: the
// project's highest generation and the session's record, in one update.
func (s *Server) WorkerStarted(id string, g uint64) error {
	return s.p.Update(func(st *State) {
		st.Generation = max(st.Generation, g)
		for i := range st.Lifetimes {
			if st.Lifetimes[i].ServerID != s.id {
				continue
			}
			for j := range st.Lifetimes[i].Sessions {
				if st.Lifetimes[i].Sessions[j].ID == id {
					st.Lifetimes[i].Sessions[j].Generation = g
				}
			}
		}
	})
}

// End records the lifetime's end and lets go of its lock.
func (s *Server) End(at time.Time) error {
	at = at.UTC()
	err := s.Record(func(l *Lifetime) { l.Ended = &at })
	os.Remove(s.lock.Name())
	privfile.Unlock(s.lock)
	return err
}

// Project is the project the lifetime was launched in.
func (s *Server) Project() *Project { return s.p }

// dirSize is the bytes of the regular files directly in dir.
func dirSize(dir string) int64 {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	var total int64
	for _, e := range entries {
		if info, err := e.Info(); err == nil && info.Mode().IsRegular() {
			total += info.Size()
		}
	}
	return total
}

// statNoFollow is Lstat of a directory that must be private (privfile.CheckDir).
func statNoFollow(path string) (fs.FileInfo, error) {
	info, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	return info, privfile.CheckDir(path, info)
}

// anyServerLive reports whether a server of the project still runs.
func (p *Project) anyServerLive() bool {
	entries, _ := os.ReadDir(filepath.Join(p.dir, serversDir))
	for _, e := range entries {
		if id, ok := strings.CutSuffix(e.Name(), ".lock"); ok && p.serverLive(id) {
			return true
		}
	}
	return false
}

// anySnapshotLive reports whether a server holds a snapshot of the project.
func (p *Project) anySnapshotLive() bool {
	entries, _ := os.ReadDir(filepath.Join(p.dir, snapshotsDir))
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".lock") && lockHeld(filepath.Join(p.dir, snapshotsDir, e.Name())) {
			return true
		}
	}
	return false
}
