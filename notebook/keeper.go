package notebook

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/iota-uz/repl-mcp/internal/ids"
	"github.com/iota-uz/repl-mcp/internal/privfile"
	"github.com/iota-uz/repl-mcp/internal/savefile"
	"github.com/iota-uz/repl-mcp/repl"
)

// Config configures a [Keeper].
type Config struct {
	// Root holds the records of every server lifetime: the keeper makes its own
	// directory in it (a new UUID, 0700, one subdirectory per session), holds
	// <uuid>.lock beside it while it lives, removes both at Close, and at New removes
	// the directories whose lock nobody holds (servers that died without closing).
	Root string
	// LiveDir, when set, receives <session name>-<short id>.ipynb, replaced
	// atomically as the session's cells finish (--notebook-dir, live.go).
	LiveDir string
	// Confine, when set, is asked before Export writes in a directory on a session's
	// behalf (its real path); its error refuses the export. The sandbox keeps a
	// sandboxed session's exports within its writable roots with it.
	Confine func(sessionID, dir string) error
	Logger  *slog.Logger // nil discards
}

// Keeper keeps the sessions' records and writes their notebooks; it is safe for
// concurrent use.
type Keeper struct {
	dir     string
	lock    *os.File
	live    string
	confine func(sessionID, dir string) error
	limits  limits
	log     *slog.Logger
	now     func() time.Time

	mu       sync.Mutex
	sessions map[string]*kept

	// writes carries the record's file work, in order, to the one goroutine that
	// does it (writeRecords), off the cell's reply path; open guards sending on it
	// against Close.
	writes  chan func()
	open    sync.RWMutex
	closed  bool
	written chan struct{} // closed when writeRecords has drained writes

	// The live notebooks (live.go), with a live directory only: liveLoop writes them.
	liveMu       sync.Mutex
	liveDirty    map[string]*kept // sessions with cells their live file lacks, by id; under liveMu
	liveWake     chan struct{}    // a session became dirty (one pending wake-up is enough)
	liveReqs     chan liveRequest
	liveStop     chan struct{} // closed by Close: liveLoop writes what is left and returns
	liveStopOnce sync.Once
	liveDone     chan struct{} // closed when liveLoop has returned
	liveHook     func()        // tests: called by liveLoop before each live write
}

// pendingWrites bounds the record work waiting for its goroutine: a cell that finds
// it full waits, so that memory stays bounded when the disk is slow.
const pendingWrites = 16

// kept is one session's record and what its notebook says about the session.
type kept struct {
	mu     sync.Mutex
	info   session
	record *record
	// pending are the session's events since its last recorded cell (SessionEvent).
	pending []event
}

// maxPendingEvents bounds a session's events waiting for its next cell: a client
// that retries a busy call in a loop must not grow the keeper without end.
const maxPendingEvents = 64

var _ repl.Recorder = (*Keeper)(nil)

// New makes the keeper and its private directory.
func New(cfg Config) (*Keeper, error) {
	return newKeeper(cfg, limits{cells: MaxCells, bytes: MaxBytes})
}

func newKeeper(cfg Config, lim limits) (*Keeper, error) {
	if cfg.Root == "" {
		return nil, errors.New("notebook: no record directory")
	}
	if err := os.MkdirAll(cfg.Root, 0o700); err != nil {
		return nil, err
	}
	if err := privateDir(cfg.Root); err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	dir := filepath.Join(cfg.Root, ids.UUID())
	// Locked before the directory exists, so that a sweep never takes it for stale.
	lock, err := privfile.Lock(dir + lockSuffix)
	if err != nil {
		return nil, err
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		unlockRemove(lock, dir+lockSuffix)
		return nil, err
	}
	sweep(cfg.Root, dir, log)
	k := &Keeper{dir: dir, lock: lock, live: cfg.LiveDir, confine: cfg.Confine, limits: lim, log: log, now: time.Now, sessions: map[string]*kept{},
		writes: make(chan func(), pendingWrites), written: make(chan struct{}),
		liveDirty: map[string]*kept{}, liveWake: make(chan struct{}, 1), liveReqs: make(chan liveRequest),
		liveStop: make(chan struct{}), liveDone: make(chan struct{})}
	go k.writeRecords()
	if k.live != "" {
		if removed := sweepLiveTemps(k.live, k.now()); len(removed) > 0 {
			log.Info("notebook: removed temp files of live notebooks a killed server left", "dir", k.live, "files", removed)
		}
		go k.liveLoop()
	} else {
		close(k.liveDone)
	}
	return k, nil
}

// writeRecords does the record's file work in the order it was asked for, until
// Close.
func (k *Keeper) writeRecords() {
	defer close(k.written)
	for work := range k.writes {
		work()
	}
}

// later hands work to writeRecords; after Close it is dropped (the records are gone).
func (k *Keeper) later(work func()) {
	k.open.RLock()
	defer k.open.RUnlock()
	if !k.closed {
		k.writes <- work
	}
}

// flush returns once the work handed over before it is done.
func (k *Keeper) flush() {
	done := make(chan struct{})
	k.later(func() { close(done) })
	k.open.RLock()
	closed := k.closed
	k.open.RUnlock()
	if !closed {
		<-done
	}
}

const lockSuffix = ".lock"

// privateDir checks that root, which may have existed before (a shared temp
// directory), is a directory of this user's that no one else can enter: records hold
// the cells' code and output.
func privateDir(root string) error {
	st, err := os.Lstat(root)
	if err != nil {
		return err
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	switch {
	case !st.IsDir():
		return fmt.Errorf("notebook records: %s is not a directory", root)
	case st.Mode().Perm()&0o077 != 0:
		return fmt.Errorf("notebook records: %s is open to other users (mode %#o)", root, st.Mode().Perm())
	case ok && int(sys.Uid) != os.Geteuid():
		return fmt.Errorf("notebook records: %s belongs to another user", root)
	}
	return nil
}

// sweep removes the record directories under root, other than own, whose lock no
// live server holds.
func sweep(root, own string, log *slog.Logger) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return
	}
	for _, e := range entries {
		dir := filepath.Join(root, e.Name())
		if !e.IsDir() || dir == own {
			continue
		}
		lock, err := privfile.Lock(dir + lockSuffix)
		if err != nil {
			continue // a live server's, or not ours to judge
		}
		if err := os.RemoveAll(dir); err != nil {
			log.Warn("notebook: cannot remove a dead server's records", "dir", dir, "err", err)
		}
		unlockRemove(lock, dir+lockSuffix)
	}
}

func unlockRemove(lock *os.File, path string) {
	os.Remove(path)
	privfile.Unlock(lock)
}

// Close finishes the record work handed over and brings the live notebooks up to
// it, then removes every record and the keeper's directory.
func (k *Keeper) Close() error {
	k.open.Lock()
	if !k.closed {
		k.closed = true
		close(k.writes)
	}
	k.open.Unlock()
	<-k.written
	// Only once every cell is recorded: liveLoop writes what is left, then returns.
	if k.live != "" {
		k.liveStopOnce.Do(func() { close(k.liveStop) })
	}
	<-k.liveDone
	k.mu.Lock()
	sessions := k.sessions
	k.sessions = map[string]*kept{}
	k.mu.Unlock()
	for _, s := range sessions {
		s.mu.Lock()
		if s.record != nil {
			s.record.closeSegment()
		}
		s.mu.Unlock()
	}
	err := os.RemoveAll(k.dir)
	unlockRemove(k.lock, k.dir+lockSuffix)
	return err
}

func (k *Keeper) session(id, name string) *kept {
	k.mu.Lock()
	defer k.mu.Unlock()
	s := k.sessions[id]
	if s == nil {
		s = &kept{info: session{id: id, name: name}}
		k.sessions[id] = s
	}
	return s
}

// CellFinished records a finished cell after the call has answered (writeRecords),
// in order; an export waits for it. With a live directory, the session's live
// notebook gets the cell soon after (liveLoop): never on the call's path, so that a
// cell's cost does not grow with the notebook. A failure to write is logged, and the
// notebook says where a cell is missing: the run's result stands.
func (k *Keeper) CellFinished(fc repl.FinishedCell) {
	s := k.session(fc.SessionID, fc.SessionName)
	c := cellOf(fc) // a copy: the result may change once this returns
	var version, executable string
	if fc.Python != nil {
		version, executable = fc.Python.PythonVersion, fc.Python.PythonExecutable
	}
	k.later(func() { k.recordCell(s, c, version, executable, fc.Project) })
}

// SessionEvent records what happened to a session beside its cells, in order with
// them: it waits in the session until its next cell is recorded, whose notebook cells
// it precedes, and an export shows the ones still waiting after the last cell. The
// live notebook shows it with the next cell: an event alone (a burst of busy refusals,
// say) does not rewrite the file.
func (k *Keeper) SessionEvent(e repl.SessionEvent) {
	s := k.session(e.SessionID, e.SessionName)
	ev := event{Kind: string(e.Kind), At: e.At, RunID: e.RunID, Text: e.Text}
	k.later(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if e.Project != "" {
			s.info.project = e.Project
		}
		if len(s.pending) == maxPendingEvents {
			s.pending = s.pending[1:] // bounded: the oldest goes first
		}
		s.pending = append(s.pending, ev)
	})
}

// recordCell adds c to s's record and tells liveLoop, with a live directory.
func (k *Keeper) recordCell(s *kept, c cell, version, executable, project string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if version != "" || executable != "" {
		s.info.pythonVersion, s.info.pythonExecutable = version, executable
	}
	if project != "" {
		s.info.project = project
	}
	c.Events, s.pending = s.pending, nil
	if s.record == nil {
		rec, err := newRecord(filepath.Join(k.dir, s.info.id), k.limits)
		if err != nil {
			k.log.Warn("notebook: cannot keep the session's record", "session", s.info.id, "err", err)
			return
		}
		s.record = rec
	}
	if err := s.record.add(c); err != nil {
		k.log.Warn("notebook: cannot record a cell", "session", s.info.id, "err", err)
	}
	if k.live != "" {
		k.liveChanged(s)
	}
}

// SessionClosed removes the session's record; a live notebook stays, the person's.
func (k *Keeper) SessionClosed(sessionID string) {
	k.flush()              // the session's last cells are on disk before the record goes,
	k.liveFlush(sessionID) // and in its live notebook
	k.mu.Lock()
	s := k.sessions[sessionID]
	delete(k.sessions, sessionID)
	k.mu.Unlock()
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.record != nil {
		if err := s.record.remove(); err != nil {
			k.log.Warn("notebook: cannot remove a closed session's record", "session", sessionID, "err", err)
		}
		s.record = nil
	}
}

// LiveName is the file name of a session's live notebook: its name (characters
// outside letters, digits, dot, dash and underscore as underscores, and without
// leading dots or dashes: no hidden file, nothing a command line takes for an
// option), "session" when nothing is left, and the first 8 characters of its id.
func LiveName(name, id string) string {
	safe := strings.Map(func(r rune) rune {
		if r == '.' || r == '-' || r == '_' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' {
			return r
		}
		return '_'
	}, name)
	safe = strings.TrimLeft(safe, ".-")
	if safe == "" {
		safe = "session"
	}
	short := id
	if len(short) > 8 {
		short = short[:8]
	}
	return safe + "-" + short + ".ipynb"
}

// Exported is what an export wrote (docs/contract.md §3, python_session_export).
type Exported struct {
	Path    string `json:"path"`
	Cells   int    `json:"cells"`
	Dropped int    `json:"dropped"`
	Bytes   int64  `json:"bytes"`
}

// Errors of an export, after artifact_save's path rules.
var (
	ErrExportPath   = errors.New("Notebook export needs an absolute destination path")
	ErrExportDir    = errors.New("Notebook destination is a directory")
	ErrExportParent = errors.New("Notebook destination directory does not exist or is not a directory")
	ErrExportExists = errors.New("Notebook destination exists or cannot be linked; pass overwrite=true to replace it")
	ErrExportWrite  = errors.New("Notebook destination cannot be written")
	ErrExportFile   = errors.New("Notebook destination is not a regular file; overwrite replaces only a regular file")
	ErrExportName   = errors.New("Notebook destination cannot be a file name")
)

func exportRules() savefile.Rules {
	return savefile.Rules{
		TempPrefix: ".repl-notebook-export-",
		NotAbs:     ErrExportPath, IsDir: ErrExportDir, Parent: ErrExportParent,
		Exists: ErrExportExists, NotFile: ErrExportFile, Write: ErrExportWrite, BadName: ErrExportName,
	}
}

// Export writes the notebook of session id (named name) to the absolute path,
// under artifact_save's rules: an existing file is replaced only when overwrite is
// set, and the path is never half-written. A session that has finished no cell
// gets a notebook with its first cell only.
func (k *Keeper) Export(ctx context.Context, id, name, path string, overwrite bool) (Exported, error) {
	k.flush() // every cell that has answered is in the notebook
	k.mu.Lock()
	s := k.sessions[id]
	k.mu.Unlock()
	if s == nil { // no cell finished yet: nothing to keep for it
		s = &kept{info: session{id: id, name: name}}
	}
	// The notebook is one moment's: the record as it is now, read without the lock, so
	// that cells finishing meanwhile are recorded.
	s.mu.Lock()
	info, pending := s.info, slices.Clone(s.pending)
	sn := &snapshot{}
	if s.record != nil {
		sn = s.record.snapshot(0)
	}
	s.mu.Unlock()
	defer sn.close()
	var size int64
	var cells int
	rules := exportRules()
	if k.confine != nil {
		rules.Confine = func(dir string) error { return k.confine(id, dir) }
	}
	written, err := savefile.Save(ctx, path, overwrite, rules, func(w io.Writer) error {
		cw := &countingWriter{w: w}
		n, err := writeNotebook(&failingWriter{w: cw}, info, sn.contents().then(pending), k.now())
		size, cells = cw.n, n
		return err
	})
	if err != nil {
		return Exported{}, err
	}
	return Exported{Path: written, Cells: cells, Dropped: sn.dropped, Bytes: size}, nil
}

// failingWriter says ErrExportWrite when the destination refuses bytes.
type failingWriter struct{ w io.Writer }

func (f *failingWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if err != nil {
		err = fmt.Errorf("%w: %w", ErrExportWrite, savefile.SysCause(err))
	}
	return n, err
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// cellOf is the record's cell of a finished run.
func cellOf(fc repl.FinishedCell) cell {
	res := fc.Result
	c := cell{
		RunID: res.RunID, Generation: res.Generation, Started: fc.Started, ElapsedMS: res.ElapsedMS,
		Code: fc.Code, SourcePath: fc.SourcePath, Argv: fc.Argv, Reset: fc.Reset, Fresh: fc.Fresh,
		// A fresh worker's end says nothing of the session's namespace.
		Success: res.Success, Cleared: res.State == repl.StateCleared && !fc.Fresh,
		Stdout: res.Stdout, Stderr: res.Stderr, Preview: res.ReturnValue, HTML: res.HTML, Error: res.Error,
		ImagesNotShown: len(res.ImageArtifacts), Stopped: string(fc.Stopped),
	}
	if res.StateReset != nil && *res.StateReset {
		c.NewWorker = res.StateResetReason
	}
	if res.ReturnRepr != "" && res.ReturnValue != nil {
		c.Preview = &res.ReturnRepr // what Jupyter shows of a builtin value
	}
	// The strings themselves, not the result's fields: the record is written after
	// the result has moved on.
	c.Preview, c.Error = copyString(c.Preview), copyString(c.Error)
	for _, d := range res.Displays {
		c.Displays = append(c.Displays, display{Text: d.Text, HTML: d.HTML, Repr: d.Repr})
	}
	for _, img := range res.Images {
		if img.Data == nil {
			c.ImagesNotShown++
			continue
		}
		c.Images = append(c.Images, image{MIME: img.MIME, Width: img.Width, Height: img.Height, Data: img.Data})
	}
	return c
}

func copyString(s *string) *string {
	if s == nil {
		return nil
	}
	v := *s
	return &v
}
