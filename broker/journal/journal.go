package journal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/iota-uz/repl-mcp/internal/ids"
	"github.com/iota-uz/repl-mcp/internal/privfile"
)

// Journal limits (docs/contract.md §13.1).
const (
	maxRecords   = 256
	maxBytes     = 900_000 // serialized bytes held in memory
	maxFileBytes = 1 << 20
	maxString    = 400 // characters, for every string but project
	maxProject   = 4096
)

// Errors returned by Open, Dispatch and Finish.
var (
	// ErrLocked: another Journal, in this or another process, owns the path.
	ErrLocked = errors.New("Broker journal is already owned by another runtime; choose a separate --journal path")
	// ErrLockFile: the journal path ends in .lock, the name of a lock file; a
	// journal written there could replace another journal's lock.
	ErrLockFile = errors.New("Broker journal path must not be a lock file (a name ending in .lock); choose a separate --journal path")
	// ErrNotPrivate: the journal (or its lock) is a symlink, not a
	// regular file, not owned by the effective user, or open to group/others.
	ErrNotPrivate = errors.New("Broker journal must be an owned private 0600 file")
	// ErrInvalid: the journal file is too large or its content is not a
	// journal (a torn last record is not an error).
	ErrInvalid = errors.New("Broker journal is invalid")
	// ErrFull: every one of the 256 records is still in flight.
	ErrFull = errors.New("Effect journal has 256 in-flight calls; finish or cancel one before dispatching another")
	// ErrBudget: in-flight records alone fill the 900,000-byte budget.
	ErrBudget = errors.New("Effect journal metadata budget exhausted by in-flight calls; no tool was dispatched")
	// ErrPersist: a durable write failed. Dispatch wraps it when no tool
	// was dispatched; Finish wraps it in the contract's "do not retry blindly"
	// messages.
	ErrPersist = errors.New("durable journal update failed")
	// ErrClosed: the Journal was closed.
	ErrClosed = errors.New("broker journal is closed")
	// ErrInvalidCallMeta: call metadata exceeds the journal's string bounds.
	ErrInvalidCallMeta = errors.New("MCP call metadata exceeds journal limits; no tool was dispatched")
	// errWaitAbandoned: persist gave up waiting for other writers.
	errWaitAbandoned = errors.New("journal write abandoned")
	// ErrUnknownCall: Finish was given an id the journal does not hold.
	ErrUnknownCall = errors.New("journal has no record with this id")
	// ErrCallFinished: Finish was called twice for one id.
	ErrCallFinished = errors.New("journal record is already finished")
)

// Status is where a journalled call stands.
type Status string

// The call lifecycle: StatusDispatched, then exactly one terminal status.
const (
	StatusDispatched     Status = "dispatched"      // persisted before the request is sent
	StatusCompleted      Status = "completed"       // result without isError
	StatusToolError      Status = "tool_error"      // result with isError
	StatusOutcomeUnknown Status = "outcome_unknown" // transport/protocol error, timeout, cancel, or crash
)

func (s Status) valid() bool { return s == StatusDispatched || s.terminal() }

func (s Status) terminal() bool {
	return s == StatusCompleted || s == StatusToolError || s == StatusOutcomeUnknown
}

// CallMeta identifies a call for the journal. It has no room for arguments or
// results by design.
type CallMeta struct {
	SessionID string // ≤400 characters
	Project   string // canonical project directory, ≤4096 characters
	RunID     string // ≤400 characters
	Server    string // 1..400 characters
	Tool      string // 1..400 characters
}

// Record is one journalled call, as stored on disk and returned by
// mcp.journal(). FinishedMs is nil while the call is dispatched. Reason is a
// short broker-written explanation (never remote content), ≤400 characters.
type Record struct {
	ID         string `json:"id"` // "<epoch ms>-<uuid>"
	SessionID  string `json:"session_id"`
	Project    string `json:"project"`
	RunID      string `json:"run_id"`
	Server     string `json:"server"`
	Tool       string `json:"tool"`
	StartedMs  int64  `json:"started_ms"`
	FinishedMs *int64 `json:"finished_ms"`
	Status     Status `json:"status"`
}

// recordKeys are the only keys a stored record may have.
var recordKeys = map[string]bool{
	"id": true, "session_id": true, "project": true, "run_id": true, "server": true,
	"tool": true, "started_ms": true, "finished_ms": true, "status": true,
}

// Config configures Open.
type Config struct {
	// Path of the journal file; empty keeps the journal in memory only. The
	// lock file is Path with its extension replaced by "lock", beside the
	// journal in its directory with symbolic links and ".." resolved. A Path
	// ending in .lock is refused (ErrLockFile).
	Path string
	// Logger receives recovery, eviction and write-failure reports; nil discards.
	Logger *slog.Logger
}

// Stats reports a journal's occupancy, for health output.
type Stats struct {
	Durable   bool   // backed by a file
	Records   int    // records held
	InFlight  int    // records still dispatched
	Bytes     int    // serialized bytes held (bound 900,000)
	Evicted   uint64 // terminal records evicted, oldest first, since open
	Recovered int    // dispatched records turned into outcome_unknown at open
}

// Journal records call metadata. It is safe for concurrent use.
type Journal struct {
	path string // "" when memory only
	log  *slog.Logger
	lock *os.File // holds the flock; nil when memory only

	// writeSem (capacity 1) serializes snapshot writers. It is held across
	// I/O; mu never is.
	writeSem chan struct{}

	mu        sync.Mutex
	entries   []journalEntry // oldest first
	bytes     int
	seq       uint64 // bumped on every change to entries
	persisted uint64 // highest seq whose snapshot is on disk
	evicted   uint64
	recovered int
	closed    bool // no more Dispatch or Finish
	released  bool // lock released: no more writes
}

type journalEntry struct {
	rec  Record
	line []byte // rec as JSON, one line of the file
}

// size is what the entry costs against maxBytes: its line plus ",\n".
func (e journalEntry) size() int { return len(e.line) + 2 }

// Open opens the journal described by cfg. With a Path it takes an
// exclusive lock (failing at once with ErrLocked if held), checks that
// the file is private, loads it, turns unfinished dispatched records into
// outcome_unknown and saves the result before returning.
func Open(cfg Config) (*Journal, error) {
	j := &Journal{log: cfg.Logger, writeSem: make(chan struct{}, 1)}
	if j.log == nil {
		j.log = slog.New(slog.DiscardHandler)
	}
	if cfg.Path == "" {
		return j, nil
	}
	path, err := canonicalPath(cfg.Path)
	if err != nil {
		return nil, err
	}
	j.path = path
	lock, err := acquireLock(lockPath(j.path))
	if err != nil {
		return nil, err
	}
	j.lock = lock
	j.removeLeftovers()
	recs, torn, err := load(j.path)
	if err != nil {
		privfile.Unlock(lock)
		return nil, err
	}
	if torn {
		j.log.Warn("broker journal ended with a torn record; ignored it", "path", j.path)
	}
	now := time.Now().UnixMilli()
	for _, rec := range recs {
		if rec.Status == StatusDispatched {
			rec.Status = StatusOutcomeUnknown
			rec.FinishedMs = &now
			j.recovered++
		}
		line, err := json.Marshal(rec)
		if err != nil {
			privfile.Unlock(lock)
			return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, j.path, err)
		}
		j.entries = append(j.entries, journalEntry{rec: rec, line: line})
		j.bytes += len(line) + 2
	}
	// Every loaded record is terminal now, so the byte budget can always be met.
	for j.bytes > maxBytes {
		j.evictLocked(0)
	}
	if j.recovered > 0 {
		j.log.Warn("broker journal: unfinished calls marked outcome_unknown", "path", j.path, "count", j.recovered)
	}
	// Save at once: recovered records, evictions and a clean tail reach disk
	// before any new call is dispatched.
	j.seq = 1
	if err := j.persist(nil, 1); err != nil {
		privfile.Unlock(lock)
		return nil, fmt.Errorf("%w: %s: %w", ErrPersist, j.path, err)
	}
	return j, nil
}

// Dispatch records a call as dispatched and returns its id. With a file, the
// record is on disk before Dispatch returns; send the request only after a
// nil error. On error nothing is recorded and no tool may be dispatched.
// ctx bounds the wait for other writers.
func (j *Journal) Dispatch(ctx context.Context, meta CallMeta) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if err := meta.validate(); err != nil {
		return "", err
	}
	now := time.Now().UnixMilli()
	rec := Record{
		ID:        fmt.Sprintf("%d-%s", now, ids.UUID()),
		SessionID: meta.SessionID,
		Project:   meta.Project,
		RunID:     meta.RunID,
		Server:    meta.Server,
		Tool:      meta.Tool,
		StartedMs: now,
		Status:    StatusDispatched,
	}
	line, err := json.Marshal(rec)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrInvalidCallMeta, err)
	}
	e := journalEntry{rec: rec, line: line}

	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		return "", ErrClosed
	}
	if err := j.makeRoomLocked(e.size()); err != nil {
		j.mu.Unlock()
		return "", err
	}
	j.entries = append(j.entries, e)
	j.bytes += e.size()
	j.seq++
	want := j.seq
	j.mu.Unlock()

	if err := j.persist(ctx.Done(), want); err != nil {
		// The call will not be sent: drop the record. A snapshot that already
		// holds it can only make a crash report outcome_unknown, never hide a call.
		j.mu.Lock()
		if i := j.indexLocked(rec.ID); i >= 0 {
			j.removeLocked(i)
			j.seq++
		}
		j.mu.Unlock()
		switch {
		case errors.Is(err, errWaitAbandoned):
			return "", ctx.Err()
		case errors.Is(err, ErrClosed):
			return "", err
		}
		j.log.Error("broker journal dispatch record not written", "path", j.path, "err", err)
		return "", fmt.Errorf("%w; no tool was dispatched: %w", ErrPersist, err)
	}
	return rec.ID, nil
}

// Finish gives a dispatched call its terminal status (completed, tool_error or
// outcome_unknown). With a file, the change is on disk before
// Finish returns. Finish takes no context: a cancelled call must still be
// recorded. A write failure is reported with the contract's "do not retry
// blindly" message, wrapping ErrPersist.
func (j *Journal) Finish(id string, status Status) error {
	if !status.terminal() {
		return fmt.Errorf("journal: %q is not a terminal status", status)
	}
	now := time.Now().UnixMilli()

	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		return ErrClosed
	}
	i := j.indexLocked(id)
	if i < 0 {
		j.mu.Unlock()
		return fmt.Errorf("%w: %q", ErrUnknownCall, id)
	}
	if j.entries[i].rec.Status != StatusDispatched {
		j.mu.Unlock()
		return fmt.Errorf("%w: %q is %s", ErrCallFinished, id, j.entries[i].rec.Status)
	}
	rec := j.entries[i].rec
	rec.Status = status
	rec.FinishedMs = &now
	line, err := finishedLine(j.entries[i].line, rec)
	if err != nil {
		j.mu.Unlock()
		return fmt.Errorf("journal: %v", err)
	}
	j.bytes += len(line) - len(j.entries[i].line)
	j.entries[i] = journalEntry{rec: rec, line: line}
	for j.bytes > maxBytes {
		// The record just finished is terminal, so there is always one to evict.
		j.evictLocked(j.oldestTerminalLocked())
	}
	j.seq++
	want := j.seq
	j.mu.Unlock()

	if err := j.persist(nil, want); err != nil {
		if errors.Is(err, ErrClosed) {
			return err
		}
		j.log.Error("broker journal update failed", "path", j.path, "id", id, "status", string(status), "err", err)
		if status == StatusOutcomeUnknown {
			return fmt.Errorf("MCP outcome is unknown and %w; do not retry blindly (%w)", ErrPersist, err)
		}
		return fmt.Errorf("MCP call completed but %w; do not retry blindly (%w)", ErrPersist, err)
	}
	return nil
}

// dispatchedTail ends the line of every dispatched record: finished_ms and status
// are a Record's last fields.
const dispatchedTail = `"finished_ms":null,"status":"dispatched"}`

// finishedLine is rec's line, json.Marshal's encoding of it, made from the line of
// the dispatched record it finishes: only its last two fields change, so they are
// written in place of the old ones instead of encoding every field again.
func finishedLine(dispatched []byte, rec Record) ([]byte, error) {
	if !bytes.HasSuffix(dispatched, []byte(dispatchedTail)) || rec.FinishedMs == nil || !rec.Status.terminal() {
		return json.Marshal(rec)
	}
	head := dispatched[:len(dispatched)-len(dispatchedTail)]
	line := make([]byte, 0, len(dispatched)+16)
	line = append(line, head...)
	line = append(line, `"finished_ms":`...)
	line = strconv.AppendInt(line, *rec.FinishedMs, 10)
	line = append(line, `,"status":"`...)
	line = append(line, rec.Status...)
	return append(line, `"}`...), nil
}

// Records returns a copy of the records, oldest first, including those of
// every session and project. It never waits on disk I/O.
func (j *Journal) Records() []Record {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := make([]Record, len(j.entries))
	for i, e := range j.entries {
		out[i] = e.rec
		if e.rec.FinishedMs != nil {
			v := *e.rec.FinishedMs
			out[i].FinishedMs = &v
		}
	}
	return out
}

// Stats reports occupancy and eviction counts.
func (j *Journal) Stats() Stats {
	j.mu.Lock()
	defer j.mu.Unlock()
	s := Stats{
		Durable:   j.path != "",
		Records:   len(j.entries),
		Bytes:     j.bytes,
		Evicted:   j.evicted,
		Recovered: j.recovered,
	}
	for _, e := range j.entries {
		if e.rec.Status == StatusDispatched {
			s.InFlight++
		}
	}
	return s
}

// Close flushes any change not yet on disk and releases the lock. Records
// stays usable; Dispatch and Finish return ErrClosed. Calls still
// dispatched become outcome_unknown at the next open. Close is idempotent.
func (j *Journal) Close() error {
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		return nil
	}
	j.closed = true
	want := j.seq
	j.mu.Unlock()
	if j.path == "" {
		return nil
	}
	err := j.persist(nil, want)
	j.writeSem <- struct{}{} // no writer may run once the lock is gone
	j.mu.Lock()
	j.released = true
	j.mu.Unlock()
	privfile.Unlock(j.lock)
	<-j.writeSem
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrPersist, j.path, err)
	}
	return nil
}

// persist makes sure the snapshot numbered want (or a later one) is on disk.
// A closed done channel abandons the wait for other writers; nil waits.
func (j *Journal) persist(done <-chan struct{}, want uint64) error {
	if j.path == "" {
		return nil
	}
	select {
	case j.writeSem <- struct{}{}:
	case <-done:
		return errWaitAbandoned
	}
	defer func() { <-j.writeSem }()

	j.mu.Lock()
	if j.persisted >= want {
		j.mu.Unlock()
		return nil
	}
	if j.released {
		j.mu.Unlock()
		return ErrClosed
	}
	seq := j.seq
	var buf bytes.Buffer
	buf.Grow(j.bytes + 4)
	buf.WriteString("[\n")
	for i, e := range j.entries {
		buf.Write(e.line)
		if i < len(j.entries)-1 {
			buf.WriteByte(',')
		}
		buf.WriteByte('\n')
	}
	buf.WriteString("]\n")
	j.mu.Unlock()

	if err := writeAtomic(j.path, buf.Bytes()); err != nil {
		return err
	}
	j.mu.Lock()
	if seq > j.persisted {
		j.persisted = seq
	}
	j.mu.Unlock()
	return nil
}

// makeRoomLocked evicts the oldest terminal records until one more record of
// size bytes fits, or reports which bound in-flight records exhaust.
func (j *Journal) makeRoomLocked(size int) error {
	for len(j.entries)+1 > maxRecords || j.bytes+size > maxBytes {
		i := j.oldestTerminalLocked()
		if i < 0 {
			if len(j.entries)+1 > maxRecords {
				return ErrFull
			}
			return ErrBudget
		}
		j.evictLocked(i)
	}
	return nil
}

func (j *Journal) oldestTerminalLocked() int {
	for i, e := range j.entries {
		if e.rec.Status.terminal() {
			return i
		}
	}
	return -1
}

func (j *Journal) evictLocked(i int) {
	j.removeLocked(i)
	j.evicted++
	j.log.Debug("broker journal evicted its oldest finished record", "evicted_total", j.evicted)
}

func (j *Journal) removeLocked(i int) {
	j.bytes -= j.entries[i].size()
	if i == 0 {
		// The oldest record is the one eviction takes, on every call once the journal
		// is full: drop it off the front instead of moving the 255 after it down
		// (with a write barrier per pointer); append reallocates once that room runs out.
		j.entries[0] = journalEntry{}
		j.entries = j.entries[1:]
		return
	}
	j.entries = append(j.entries[:i], j.entries[i+1:]...)
}

func (j *Journal) indexLocked(id string) int {
	for i := len(j.entries) - 1; i >= 0; i-- {
		if j.entries[i].rec.ID == id {
			return i
		}
	}
	return -1
}

func (m CallMeta) validate() error {
	check := func(name, v string, minLen, maxLen int) error {
		if stringOK(v, minLen, maxLen) {
			return nil
		}
		return fmt.Errorf("%w: %s must be %d..%d characters of valid UTF-8 without control characters",
			ErrInvalidCallMeta, name, minLen, maxLen)
	}
	for _, err := range []error{
		check("server", m.Server, 1, maxString),
		check("tool", m.Tool, 1, maxString),
		check("session_id", m.SessionID, 0, maxString),
		check("run_id", m.RunID, 0, maxString),
		check("project", m.Project, 0, maxProject),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}

func stringOK(s string, minLen, maxLen int) bool {
	if !utf8.ValidString(s) {
		return false
	}
	n := utf8.RuneCountInString(s)
	if n < minLen || n > maxLen {
		return false
	}
	return strings.IndexFunc(s, unicode.IsControl) < 0
}

// canonicalPath is the journal's path with its directory resolved as the file
// system resolves it (symbolic links, then ".." from where they lead), so that
// every spelling of one journal derives the same lock. The last element stays
// as given: a journal that is itself a symbolic link is refused when opened.
// filepath.Clean is not used first: it removes ".." lexically, and "link/.."
// would name the link's directory instead of its target's parent.
func canonicalPath(path string) (string, error) {
	if !filepath.IsAbs(path) {
		wd, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("broker journal %s: the working directory cannot be resolved: %w", path, err)
		}
		path = wd + string(filepath.Separator) + path
	}
	i := strings.LastIndexByte(path, filepath.Separator)
	dir, base := path[:i+1], path[i+1:]
	if base == "" || base == "." || base == ".." {
		return "", fmt.Errorf("%w: %s names a directory, not a journal file", ErrInvalid, path)
	}
	if strings.EqualFold(filepath.Ext(base), ".lock") {
		return "", fmt.Errorf("%w (%s)", ErrLockFile, path)
	}
	dir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", fmt.Errorf("broker journal %s: its directory cannot be resolved: %w", path, err)
	}
	return filepath.Join(dir, base), nil
}

// lockPath is the journal's lock file: path with its extension replaced by
// "lock" (journal.json → journal.lock).
func lockPath(path string) string { return privfile.LockPath(path) }

// acquireLock opens (creating 0600, never following a link) the lock file and
// takes a non-blocking exclusive flock on it.
func acquireLock(path string) (*os.File, error) {
	f, err := privfile.Lock(path)
	var np *privfile.NotPrivateError
	switch {
	case err == nil:
		return f, nil
	case errors.Is(err, privfile.ErrLocked):
		return nil, fmt.Errorf("%w (lock %s is held)", ErrLocked, path)
	case errors.As(err, &np):
		return nil, fmt.Errorf("%w: lock %s %s", ErrNotPrivate, path, np.Reason)
	}
	return nil, fmt.Errorf("broker journal lock %s: %w", path, err)
}

// checkPrivate refuses anything but a regular file owned by the effective user
// without group or other permission bits.
func checkPrivate(f *os.File, path string) error {
	err := privfile.Check(f)
	var np *privfile.NotPrivateError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &np):
		return fmt.Errorf("%w: %s %s", ErrNotPrivate, path, np.Reason)
	}
	return fmt.Errorf("broker journal %s: %w", path, err)
}

// load reads and validates the journal at path. A missing file is an
// empty journal. torn reports a partial last record, which was dropped.
func load(path string) (recs []Record, torn bool, err error) {
	f, err := privfile.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if np := (*privfile.NotPrivateError)(nil); errors.As(err, &np) {
		return nil, false, fmt.Errorf("%w: %s %s", ErrNotPrivate, path, np.Reason)
	}
	if err != nil {
		return nil, false, fmt.Errorf("broker journal %s: %w", path, err)
	}
	defer f.Close()
	if err := checkPrivate(f, path); err != nil {
		return nil, false, err
	}
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, false, fmt.Errorf("broker journal %s: %w", path, err)
	}
	if len(data) > maxFileBytes {
		return nil, false, fmt.Errorf("%w: %s exceeds 1 MiB", ErrInvalid, path)
	}
	recs, torn, err = parse(data)
	if err != nil {
		return nil, false, fmt.Errorf("%w: %s: %v", ErrInvalid, path, err)
	}
	return recs, torn, nil
}

// parse decodes a journal: a JSON array of records, in any layout. If
// the data is not valid JSON it is read line by line as this package writes
// it, and an unparsable last line is a torn record: the end of the log.
func parse(data []byte) (recs []Record, torn bool, err error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, false, nil
	}
	var raws []json.RawMessage
	if json.Valid(data) {
		if err := json.Unmarshal(data, &raws); err != nil {
			return nil, false, errors.New("not a JSON array of records")
		}
	} else {
		lines := bytes.Split(data, []byte("\n"))
		for len(lines) > 0 && len(bytes.TrimSpace(lines[len(lines)-1])) == 0 {
			lines = lines[:len(lines)-1]
		}
		if !bytes.Equal(bytes.TrimSpace(lines[0]), []byte("[")) {
			return nil, false, errors.New("not a JSON array of records")
		}
		torn = true // until the closing "]" is seen
		for n, line := range lines[1:] {
			last := n == len(lines)-2
			line = bytes.TrimSpace(line)
			if bytes.Equal(line, []byte("]")) {
				if !last {
					return nil, false, fmt.Errorf("data after the end of the array on line %d", n+2)
				}
				torn = false
				break
			}
			line = bytes.TrimSuffix(line, []byte(","))
			if !json.Valid(line) {
				if last {
					break
				}
				return nil, false, fmt.Errorf("line %d is not a record", n+2)
			}
			raws = append(raws, json.RawMessage(line))
		}
	}
	if len(raws) > maxRecords {
		return nil, false, fmt.Errorf("%d records, more than %d", len(raws), maxRecords)
	}
	seen := make(map[string]bool, len(raws))
	for n, raw := range raws {
		rec, err := decodeRecord(raw)
		if err != nil {
			return nil, false, fmt.Errorf("record %d: %v", n+1, err)
		}
		if seen[rec.ID] {
			return nil, false, fmt.Errorf("record %d: duplicate id %q", n+1, rec.ID)
		}
		seen[rec.ID] = true
		recs = append(recs, rec)
	}
	return recs, torn, nil
}

// decodeRecord decodes one stored record, allowing only the record
// keys (matched exactly) and bounded strings without control characters.
func decodeRecord(raw json.RawMessage) (Record, error) {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil {
		return Record{}, errors.New("not a JSON object")
	}
	for k := range keys {
		if !recordKeys[k] {
			return Record{}, fmt.Errorf("key %q is not allowed", k)
		}
	}
	var rec Record
	if err := json.Unmarshal(raw, &rec); err != nil {
		return Record{}, err
	}
	for _, f := range []struct {
		name     string
		v        string
		min, max int
	}{
		{"id", rec.ID, 1, maxString},
		{"session_id", rec.SessionID, 0, maxString},
		{"project", rec.Project, 0, maxProject},
		{"run_id", rec.RunID, 0, maxString},
		{"server", rec.Server, 1, maxString},
		{"tool", rec.Tool, 1, maxString},
	} {
		if !stringOK(f.v, f.min, f.max) {
			return Record{}, fmt.Errorf("%s must be %d..%d characters without control characters", f.name, f.min, f.max)
		}
	}
	if !rec.Status.valid() {
		return Record{}, fmt.Errorf("unknown status %q", rec.Status)
	}
	if rec.StartedMs < 0 || (rec.FinishedMs != nil && *rec.FinishedMs < 0) {
		return Record{}, errors.New("negative timestamp")
	}
	return rec, nil
}

// leftoverName is a temp file of writeAtomic's for the journal named base: a
// process killed between writing one and renaming it leaves it behind.
func leftoverName(base, name string) bool {
	uuid, ok := strings.CutPrefix(name, base+".")
	if !ok {
		return false
	}
	uuid, ok = strings.CutSuffix(uuid, ".new")
	return ok && uuidPattern().MatchString(uuid)
}

var uuidPattern = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
})

// removeLeftovers removes the temp files of earlier processes that wrote this
// journal and were killed before renaming them. The lock is held, so none is
// being written now; only regular files of exactly writeAtomic's pattern go.
func (j *Journal) removeLeftovers() {
	dir, base := filepath.Dir(j.path), filepath.Base(j.path)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return // load reports what is wrong with the directory
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || !leftoverName(base, e.Name()) {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
			j.log.Warn("broker journal: could not remove a leftover temp file", "file", e.Name(), "err", err)
			continue
		}
		j.log.Info("broker journal: removed a temp file left by a killed process", "file", e.Name())
	}
}

// writeAtomic replaces path with data through a `<path>.<uuid>.new` temp file.
func writeAtomic(path string, data []byte) error {
	return privfile.WriteAtomic(path, path+"."+ids.UUID()+".new", data)
}
