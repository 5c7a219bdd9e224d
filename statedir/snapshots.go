package statedir

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/iota-uz/repl-mcp/internal/privfile"
)

// The snapshot files, as the worker writes them (worker/PROTOCOL.md,
// "Snapshots"): a directory per snapshot, its manifest the JSON body, a newline, the
// hex HMAC-SHA256 of manifestLabel and the body, a newline.
const (
	ManifestFormat = "repl-mcp-snapshot-v1"
	manifestName   = "manifest"
	manifestLabel  = "repl-mcp snapshot manifest v1\n"
	// maxManifestBytes bounds a manifest read back (100,000 variables fit).
	maxManifestBytes = 64 << 20
)

// IsSnapshotID reports whether id has the form of a snapshot's id (its directory's
// name): 16 lowercase hex digits.
func IsSnapshotID(id string) bool {
	if len(id) != 16 {
		return false
	}
	for _, c := range id {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Manifest is what the server reads of a snapshot's manifest: who wrote it, when,
// and what it holds. The worker writes more (where each entry is, its HMAC, the
// run that bound it); the restore reads that.
type Manifest struct {
	Format      string          `json:"format"`
	Snapshot    string          `json:"snapshot"`
	KeyID       string          `json:"key_id"`
	Project     string          `json:"project"`
	SessionID   string          `json:"session_id"`
	SessionName string          `json:"session_name"`
	ServerID    string          `json:"server_id"`
	Generation  uint64          `json:"generation"`
	SavedAt     time.Time       `json:"saved_at"`
	Python      string          `json:"python"`
	Pickler     string          `json:"pickler"`
	Bytes       int64           `json:"bytes"`
	Entries     []ManifestEntry `json:"entries"`
	Skipped     []ManifestEntry `json:"skipped"`
}

// ManifestEntry is a variable a snapshot holds, or one it could not hold (Reason).
type ManifestEntry struct {
	Name       string `json:"name"`
	Type       string `json:"type"`
	Bytes      int64  `json:"bytes"`
	Stale      bool   `json:"stale,omitempty"`
	Reason     string `json:"reason,omitempty"`
	RunID      string `json:"run_id,omitempty"`
	Generation uint64 `json:"generation,omitempty"`
}

// Stale counts the entries that may be older than their variables.
func (m *Manifest) Stale() int {
	n := 0
	for _, e := range m.Entries {
		if e.Stale {
			n++
		}
	}
	return n
}

// Snapshot is a snapshot directory of the project.
type Snapshot struct {
	ID   string
	Path string
	// Manifest is its authenticated manifest; nil with Err saying why not (none
	// written yet, unreadable, or not authentic).
	Manifest *Manifest
	Err      error
	// Size is the bytes of its files; Modified when it last changed.
	Size     int64
	Modified time.Time
	// Live: a server (this one or another) holds its lock: a worker writes it.
	Live bool
}

// Held is a snapshot directory this server writes: its lock keeps other servers'
// evictions off it until Release.
type Held struct {
	ID   string
	Path string
	lock *os.File
}

// SnapshotPath is where snapshot id of the project is.
func (p *Project) SnapshotPath(id string) string { return filepath.Join(p.dir, snapshotsDir, id) }

// NewSnapshot makes a new, empty snapshot directory and holds it.
func (p *Project) NewSnapshot() (*Held, error) {
	id := hex.EncodeToString(randomBytes(8))
	path := p.SnapshotPath(id)
	lock, err := privfile.Lock(path + ".lock") // before the directory: never taken for abandoned
	if err != nil {
		return nil, err
	}
	if err := os.Mkdir(path, 0o700); err != nil {
		privfile.Unlock(lock)
		os.Remove(path + ".lock")
		return nil, err
	}
	return &Held{ID: id, Path: path, lock: lock}, nil
}

// Hold takes an existing snapshot directory for this server, as a restore adopts it;
// privfile.ErrLocked when a server holds it already.
func (p *Project) Hold(id string) (*Held, error) {
	if !IsSnapshotID(id) {
		return nil, fmt.Errorf("%q is not a snapshot id", id)
	}
	path := p.SnapshotPath(id)
	if _, err := statNoFollow(path); err != nil {
		return nil, err
	}
	lock, err := privfile.Lock(path + ".lock")
	if err != nil {
		return nil, err
	}
	return &Held{ID: id, Path: path, lock: lock}, nil
}

// Complete reports whether a pass completed the held snapshot (it has a manifest).
func (h *Held) Complete() bool {
	_, err := os.Lstat(filepath.Join(h.Path, manifestName))
	return err == nil
}

// Release lets go of a held snapshot; it stays on disk.
func (h *Held) Release() {
	if h == nil || h.lock == nil {
		return
	}
	os.Remove(h.lock.Name())
	privfile.Unlock(h.lock)
	h.lock = nil
}

// Remove deletes a held snapshot and lets go of it.
func (h *Held) Remove() error {
	if h == nil {
		return nil
	}
	err := os.RemoveAll(h.Path)
	h.Release()
	return err
}

// Remove deletes the snapshot id unless a server holds it.
func (p *Project) Remove(id string) error {
	h, err := p.Hold(id)
	if err != nil {
		return err
	}
	return h.Remove()
}

// Snapshots lists the project's snapshots, each with its manifest read and
// authenticated, newest first (by the manifest's time, else the directory's).
func (p *Project) Snapshots() []Snapshot {
	dir := filepath.Join(p.dir, snapshotsDir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []Snapshot
	for _, e := range entries {
		if !e.IsDir() || !IsSnapshotID(e.Name()) {
			continue
		}
		s := Snapshot{ID: e.Name(), Path: filepath.Join(dir, e.Name())}
		if info, err := e.Info(); err == nil {
			s.Modified = info.ModTime()
		}
		s.Size = dirSize(s.Path)
		s.Manifest, s.Err = p.ReadManifest(s.ID)
		if s.Manifest != nil {
			s.Modified = s.Manifest.SavedAt
		}
		s.Live = lockHeld(s.Path + ".lock")
		out = append(out, s)
	}
	slices.SortStableFunc(out, func(a, b Snapshot) int { return b.Modified.Compare(a.Modified) })
	return out
}

// lockHeld reports whether a server holds the lock at path (a lock no one holds is
// left where it is: its directory may be on its way to being held).
func lockHeld(path string) bool {
	if _, err := os.Lstat(path); err != nil {
		return false // released: Release removes the lock file
	}
	f, err := privfile.Lock(path)
	if err == nil {
		privfile.Unlock(f)
		return false
	}
	return errors.Is(err, privfile.ErrLocked)
}

// ErrNoManifest: the snapshot has no complete manifest yet.
var ErrNoManifest = errors.New("no complete snapshot yet")

// ReadManifest reads snapshot id's manifest and checks it: a private regular file,
// authentic under this user's key, about this project and this snapshot.
func (p *Project) ReadManifest(id string) (*Manifest, error) {
	dir := p.SnapshotPath(id)
	if _, err := statNoFollow(dir); err != nil {
		return nil, err
	}
	f, err := privfile.Open(filepath.Join(dir, manifestName))
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNoManifest
	}
	if err != nil {
		return nil, fmt.Errorf("manifest %w", err)
	}
	defer f.Close()
	if err := privfile.Check(f); err != nil {
		return nil, fmt.Errorf("manifest %w", err)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxManifestBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxManifestBytes {
		return nil, fmt.Errorf("manifest larger than %d bytes", maxManifestBytes)
	}
	body, ok := p.d.authentic(data)
	if !ok {
		return nil, errors.New("manifest does not match its HMAC: tampered, or written with another key")
	}
	var m Manifest
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	switch {
	case m.Format != ManifestFormat:
		return nil, fmt.Errorf("manifest of format %q, not %s", m.Format, ManifestFormat)
	case m.KeyID != p.d.keyID:
		return nil, errors.New("manifest written with another key")
	case m.Snapshot != id || m.Project != p.path:
		return nil, fmt.Errorf("manifest of snapshot %q of %q, found in snapshot %s of %q", m.Snapshot, m.Project, id, p.path)
	}
	return &m, nil
}

// authentic splits a manifest file into its body and checks its HMAC line.
func (d *Dir) authentic(data []byte) ([]byte, bool) {
	data, ok := bytes.CutSuffix(data, []byte("\n"))
	if !ok {
		return nil, false
	}
	at := bytes.LastIndexByte(data, '\n')
	if at < 0 {
		return nil, false
	}
	body, sum := data[:at], data[at+1:]
	want, err := hex.DecodeString(string(sum))
	if err != nil {
		return nil, false
	}
	mac := hmac.New(sha256.New, d.key)
	mac.Write([]byte(manifestLabel))
	mac.Write(body)
	return body, hmac.Equal(mac.Sum(nil), want)
}

// ManifestMAC is the hex HMAC line of a manifest body (for tests and fixtures).
func (d *Dir) ManifestMAC(body []byte) string {
	mac := hmac.New(sha256.New, d.key)
	mac.Write([]byte(manifestLabel))
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

// Evict removes the oldest snapshots no server holds until the project's snapshots
// together take at most budget bytes, and returns the ids it removed. Held
// snapshots (a live worker's) are never removed, even when they alone pass it.
func (p *Project) Evict(budget int64) []string {
	snaps := p.Snapshots()
	var total int64
	for _, s := range snaps {
		total += s.Size
	}
	var evicted []string
	for i := len(snaps) - 1; i >= 0 && total > budget; i-- { // oldest first
		s := snaps[i]
		if s.Live {
			continue
		}
		if err := p.Remove(s.ID); err != nil {
			p.d.log.Warn("snapshot not evicted", "snapshot", s.ID, "err", err)
			continue
		}
		total -= s.Size
		evicted = append(evicted, s.ID)
	}
	return evicted
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}
