package artifacts

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/iota-uz/repl-mcp/internal/artifactref"
	"github.com/iota-uz/repl-mcp/internal/ids"
)

// Limits of the store (docs/contract.md §9.2 and §13.1). They are fixed by the contract, not
// configurable.
const (
	MaxEntries       = 64        // artifacts in the whole store, all owners
	MaxTotalBytes    = 64 << 20  // bytes in the whole store
	MaxArtifactBytes = 16 << 20  // bytes of one artifact
	MaxReadLength    = 65536     // bytes of one range read
	MaxForwardBytes  = 512 << 10 // size of an artifact that may be forwarded
	MaxIOJobs        = 4         // concurrent create, commit, read, save and forward jobs
	MaxUploads       = 4         // unfinished uploads in the whole store
	ChunkBytes       = 262144    // raw bytes of one upload append
	MaxOwners        = 256       // registered owners (sessions)
	MaxRuns          = 256       // active runs, all owners
	MaxJSONDepth     = 128       // nesting of arrays and objects a JSON artifact may have

	// Lifetime and Eviction are the fixed values of every [Ref].
	Lifetime = "server"
	Eviction = "oldest-first"

	tempPrefix = "repl-mcp-artifact-"
	savePrefix = ".repl-artifact-save-"
	copyChunk  = 32768
)

// Format says what an artifact's bytes are (artifactref.Format, declared in that leaf
// package so that packages below the store can share it).
type Format = artifactref.Format

const (
	FormatJSON   = artifactref.FormatJSON
	FormatText   = artifactref.FormatText
	FormatBinary = artifactref.FormatBinary
)

// ParseFormat returns the format named s, or an error wrapping [ErrFormat].
func ParseFormat(s string) (Format, error) {
	if f := Format(s); f.Valid() {
		return f, nil
	}
	return "", ErrFormat
}

// Ref is the reference object handed to clients (docs/contract.md §3.9):
// artifactref.Ref, declared in that leaf package so that package repl can hold the
// references of a run's result without importing the store.
type Ref = artifactref.Ref

// Config configures a [Store].
type Config struct {
	// Dir is where the (immediately unlinked) content files are created; "" means
	// os.TempDir().
	Dir string
	// Confine, when set, is asked before Save writes in a directory on owner's
	// behalf (its real path); its error refuses the save. The sandbox keeps a
	// sandboxed session's saves within its writable roots with it.
	Confine func(owner, dir string) error
	Logger  *slog.Logger // nil discards
}

// Stats is a snapshot of the store for health reports.
type Stats struct {
	Entries   int    `json:"entries"`
	Bytes     int64  `json:"bytes"`
	Uploads   int    `json:"uploads"`
	IOJobs    int    `json:"io_jobs"`
	Owners    int    `json:"owners"`
	Runs      int    `json:"runs"`
	Evictions uint64 `json:"evictions"` // since the store was made
}

// limits are the bounds a Store enforces; tests lower them through export_test.go.
type limits struct {
	entries  int
	total    int64
	artifact int64
}

func defaultLimits() limits {
	return limits{entries: MaxEntries, total: MaxTotalBytes, artifact: MaxArtifactBytes}
}

// Store is the server's one artifact store. Its zero value is not usable; call [New].
type Store struct {
	log     *slog.Logger
	dir     string
	confine func(owner, dir string) error
	lim     limits
	io      chan struct{} // one token per running I/O job

	// hook, when set (tests only), is called at named points of a job: "save-copied"
	// once Save's temp file is complete and before the destination is touched,
	// "publish" just before a create or commit publishes.
	hook func(stage string)

	mu        sync.Mutex
	closed    bool
	owners    map[string]*ownerState
	runs      int // active runs, all owners
	entries   map[string]*entry
	order     []*entry // published entries, oldest first
	total     int64
	uploads   map[string]*upload
	beginning int // uploads reserved by a Begin still creating its file
	evictions uint64
}

type ownerState struct {
	name string
	runs map[string]struct{}
}

// entry is one published artifact. Its file stays open while users > 0 even after the
// entry is removed (dead), so a job that is reading it is never cut short.
type entry struct {
	ref   Ref
	owner string
	f     *os.File
	users int
	dead  bool
}

// New returns an empty store.
func New(cfg Config) *Store { return newStore(cfg, defaultLimits()) }

func newStore(cfg Config, lim limits) *Store {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	dir := cfg.Dir
	if dir == "" {
		dir = os.TempDir()
	}
	return &Store{
		log:     log,
		dir:     dir,
		confine: cfg.Confine,
		lim:     lim,
		io:      make(chan struct{}, MaxIOJobs),
		owners:  make(map[string]*ownerState),
		entries: make(map[string]*entry),
		uploads: make(map[string]*upload),
	}
}

// Close releases every artifact and upload; later operations fail with [ErrClosed].
// Jobs still running finish on the descriptors they hold, then close them.
func (s *Store) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	var files []*os.File
	for _, e := range slices.Clone(s.order) {
		files = s.removeLocked(e, files)
	}
	ups := make([]*upload, 0, len(s.uploads))
	for id, u := range s.uploads {
		ups = append(ups, u)
		delete(s.uploads, id)
	}
	clear(s.owners)
	s.runs = 0
	s.mu.Unlock()
	closeAll(files)
	for _, u := range ups {
		u.discard()
	}
}

// Register makes owner known to the store; registering a known owner does nothing.
func (s *Store) Register(owner string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if _, ok := s.owners[owner]; ok {
		return nil
	}
	if len(s.owners) >= MaxOwners {
		return ErrTooManyOwners
	}
	s.owners[owner] = &ownerState{name: owner, runs: make(map[string]struct{})}
	return nil
}

// DropOwner deletes owner's artifacts, aborts its uploads and forgets it: its later
// operations fail as for an unknown owner, and an import it has in flight is not
// published. Dropping an unknown owner does nothing.
func (s *Store) DropOwner(owner string) {
	s.mu.Lock()
	o := s.owners[owner]
	if o == nil {
		s.mu.Unlock()
		return
	}
	delete(s.owners, owner)
	s.runs -= len(o.runs)
	var files []*os.File
	for _, e := range slices.Clone(s.order) {
		if e.owner == owner {
			files = s.removeLocked(e, files)
		}
	}
	ups := s.takeUploadsLocked(func(u *upload) bool { return u.owner == o })
	s.mu.Unlock()
	closeAll(files)
	for _, u := range ups {
		u.discard()
	}
	s.log.Debug("artifact owner dropped", "owner", owner, "artifacts", len(files), "uploads", len(ups))
}

// StartRun marks run of owner active, so that it may begin uploads. Starting an
// active run does nothing.
func (s *Store) StartRun(owner, run string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	o := s.owners[owner]
	if o == nil {
		return ErrUnknownOwner
	}
	if _, ok := o.runs[run]; ok {
		return nil
	}
	if s.runs >= MaxRuns {
		return ErrTooManyRuns
	}
	o.runs[run] = struct{}{}
	s.runs++
	return nil
}

// EndRun marks run of owner finished and aborts its unfinished uploads; later begins
// for it fail with [ErrNoActiveRun] and a commit still validating fails with
// [ErrRunFinished]. Ending an unknown run does nothing.
func (s *Store) EndRun(owner, run string) {
	s.mu.Lock()
	o := s.owners[owner]
	if o == nil {
		s.mu.Unlock()
		return
	}
	if _, ok := o.runs[run]; ok {
		delete(o.runs, run)
		s.runs--
	}
	ups := s.takeUploadsLocked(func(u *upload) bool { return u.owner == o && u.run == run })
	s.mu.Unlock()
	for _, u := range ups {
		u.discard()
	}
}

// Delete removes owner's artifact id.
func (s *Store) Delete(owner, id string) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	e := s.entries[id]
	if e == nil || e.owner != owner {
		s.mu.Unlock()
		return ErrUnknown
	}
	files := s.removeLocked(e, nil)
	s.mu.Unlock()
	closeAll(files)
	s.log.Debug("artifact deleted", "id", id, "owner", owner)
	return nil
}

// Stats returns a snapshot of the store's counters.
func (s *Store) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Stats{
		Entries:   len(s.order),
		Bytes:     s.total,
		Uploads:   len(s.uploads) + s.beginning,
		IOJobs:    len(s.io),
		Owners:    len(s.owners),
		Runs:      s.runs,
		Evictions: s.evictions,
	}
}

// acquire returns owner's entry id with a use held on its file; the caller must
// release it.
func (s *Store) acquire(owner, id string) (*entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	e := s.entries[id]
	if e == nil || e.owner != owner {
		return nil, ErrUnknown
	}
	e.users++
	return e, nil
}

func (s *Store) release(e *entry) {
	s.mu.Lock()
	e.users--
	last := e.dead && e.users == 0
	s.mu.Unlock()
	if last {
		e.f.Close()
	}
}

// tryIO takes an I/O job slot without waiting.
func (s *Store) tryIO() (release func(), err error) {
	select {
	case s.io <- struct{}{}:
		return func() { <-s.io }, nil
	default:
		return nil, ErrIOBusy
	}
}

// removeLocked unpublishes e and appends its file to files when no job holds it.
func (s *Store) removeLocked(e *entry, files []*os.File) []*os.File {
	if e.dead {
		return files
	}
	e.dead = true
	delete(s.entries, e.ref.ID)
	for i, o := range s.order {
		if o == e {
			s.order = append(s.order[:i], s.order[i+1:]...)
			break
		}
	}
	s.total -= e.ref.Size
	if e.users == 0 {
		files = append(files, e.f)
	}
	return files
}

func (s *Store) takeUploadsLocked(match func(*upload) bool) []*upload {
	var ups []*upload
	for id, u := range s.uploads {
		if match(u) {
			ups = append(ups, u)
			delete(s.uploads, id)
		}
	}
	return ups
}

// publish makes f, already validated, an artifact of o, evicting oldest-first until
// it fits. run, when not "", must still be active. On error the caller keeps f.
func (s *Store) publish(o *ownerState, run string, f *os.File, size int64, format Format, sum string) (Ref, error) {
	s.testHook("publish")
	ref := Ref{ID: ids.UUID(), Size: size, Format: format, SHA256: sum, Lifetime: Lifetime, Eviction: Eviction}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return Ref{}, ErrClosed
	}
	if s.owners[o.name] != o {
		s.mu.Unlock()
		return Ref{}, ErrOwnerClosed
	}
	if run != "" {
		if _, ok := o.runs[run]; !ok {
			s.mu.Unlock()
			return Ref{}, ErrRunFinished
		}
	}
	var evicted []*entry
	var files []*os.File
	for len(s.order) > 0 && (len(s.order) >= s.lim.entries || s.total+size > s.lim.total) {
		e := s.order[0]
		evicted = append(evicted, e)
		files = s.removeLocked(e, files)
		s.evictions++
	}
	e := &entry{ref: ref, owner: o.name, f: f}
	s.entries[ref.ID] = e
	s.order = append(s.order, e)
	s.total += size
	entries, total := len(s.order), s.total
	s.mu.Unlock()
	closeAll(files)
	for _, v := range evicted {
		s.log.Info("artifact evicted", "id", v.ref.ID, "owner", v.owner, "size", v.ref.Size,
			"for", ref.ID, "entries", entries, "bytes", total)
	}
	s.log.Debug("artifact published", "id", ref.ID, "owner", o.name, "size", size, "format", format)
	return ref, nil
}

// ownerOf returns the registered owner named name.
func (s *Store) ownerOf(name string) (*ownerState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	o := s.owners[name]
	if o == nil {
		return nil, ErrUnknownOwner
	}
	return o, nil
}

// tempFile creates a private content file and unlinks it at once.
func (s *Store) tempFile() (*os.File, error) {
	name := filepath.Join(s.dir, tempPrefix+ids.UUID())
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStorage, sysCause(err))
	}
	if err := os.Remove(name); err != nil {
		f.Close()
		os.Remove(name)
		return nil, fmt.Errorf("%w: %w", ErrStorage, sysCause(err))
	}
	return f, nil
}

func (s *Store) testHook(stage string) {
	if s.hook != nil {
		s.hook(stage)
	}
}

func closeAll(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}
