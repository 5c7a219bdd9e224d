package statedir

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

func open(t *testing.T, root string) *Dir {
	t.Helper()
	d, err := Open(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	info, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Mode().Perm()
}

// TestOpenMakesAPrivateRootAndOneKey: the root is 0700, the key 0600 and the same for
// every server of the user; a root that is a symbolic link, or open to others, and a
// key file open to others are refused with the reason.
func TestOpenMakesAPrivateRootAndOneKey(t *testing.T) {
	root := filepath.Join(t.TempDir(), "state", "repl-mcp")
	a, b := open(t, root), open(t, root)
	if string(a.Key()) != string(b.Key()) || len(a.Key()) != keyBytes || a.KeyID() != b.KeyID() {
		t.Fatalf("two opens of one root disagree on the key")
	}
	if mode(t, root) != 0o700 || mode(t, filepath.Join(root, keyName)) != 0o600 {
		t.Fatalf("root %v, key %v; want 0700 and 0600", mode(t, root), mode(t, filepath.Join(root, keyName)))
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(root, link); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(link, nil); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("a symlinked root: %v", err)
	}
	os.Chmod(filepath.Join(root, keyName), 0o644)
	if _, err := Open(root, nil); err == nil || !strings.Contains(err.Error(), "open to group or others") {
		t.Errorf("a key open to others: %v", err)
	}
	open2 := filepath.Join(t.TempDir(), "open")
	os.Mkdir(open2, 0o755)
	os.Chmod(open2, 0o755)
	if _, err := Open(open2, nil); err == nil || !strings.Contains(err.Error(), "open to group or others") {
		t.Errorf("a root open to others: %v", err)
	}
}

// TestLifetimesAndGenerations: a server lifetime is live while it holds its lock and
// gone after it ends or dies; the highest generation a session used is kept for the
// next lifetime.
func TestLifetimesAndGenerations(t *testing.T) {
	d := open(t, filepath.Join(t.TempDir(), "state"))
	project := t.TempDir()
	p, err := d.Project(project)
	if err != nil {
		t.Fatal(err)
	}
	first, earlier, base, err := p.BeginLifetime("server-1", time.Now())
	if err != nil || len(earlier) != 0 || base != 0 {
		t.Fatalf("first lifetime: %v, %v, %d", err, earlier, base)
	}
	if err := first.SessionOpened(Session{ID: "s1", Name: "default", Project: project, Default: true}); err != nil {
		t.Fatal(err)
	}
	if err := first.WorkerStarted("s1", 3); err != nil {
		t.Fatal(err)
	}
	second, earlier, base, err := p.BeginLifetime("server-2", time.Now())
	if err != nil || len(earlier) != 1 || !earlier[0].Live || base != 3 {
		t.Fatalf("a second server beside the first: %v, %+v, base %d", err, earlier, base)
	}
	if err := first.End(time.Now()); err != nil {
		t.Fatal(err)
	}
	second.lock.Close() // dies without a word: its flock goes with the descriptor
	_, earlier, base, err = p.BeginLifetime("server-3", time.Now())
	if err != nil || len(earlier) != 2 || base != 3 {
		t.Fatalf("a third server: %v, %+v, base %d", err, earlier, base)
	}
	for _, l := range earlier {
		if l.Live || l.Ended == nil {
			t.Errorf("lifetime %s: live %v, ended %v; want gone with an end", l.ServerID, l.Live, l.Ended)
		}
	}
	if s := earlier[0].Sessions; len(s) != 1 || s[0].Generation != 3 || !s[0].Default {
		t.Errorf("the first lifetime's session: %+v", s)
	}
	if mode(t, filepath.Join(p.Dir(), stateName)) != 0o600 {
		t.Errorf("the record is not 0600")
	}
}

// TestRunsThatLeftTheirCallers: a lifetime records the runs that left their callers
// and how each ended; the newest keptRuns stay, and a record holding the most of
// everything stays well under the size a later server reads back.
func TestRunsThatLeftTheirCallers(t *testing.T) {
	d := open(t, filepath.Join(t.TempDir(), "state"))
	p, err := d.Project(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	first, _, _, err := p.BeginLifetime("server-1", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	code := strings.Repeat("x", 80) // the longest code line a result names
	for i := range keptRuns + 3 {
		if err := first.RunLeft(Run{ID: fmt.Sprint("run-", i), Session: "s1", Started: time.Now(), Code: code}); err != nil {
			t.Fatal(err)
		}
	}
	if err := first.RunEnded("run-3", RunEnd{Ended: new(time.Now()), Outcome: "ok"}); err != nil {
		t.Fatal(err)
	}
	if err := first.RunEnded("run-4", RunEnd{Ended: new(time.Now()), Outcome: "timeout", Error: "Execution timed out after 3 s"}); err != nil {
		t.Fatal(err)
	}
	first.End(time.Now())
	_, earlier, _, err := p.BeginLifetime("server-2", time.Now())
	if err != nil || len(earlier) != 1 {
		t.Fatalf("a second server: %v, %+v", err, earlier)
	}
	runs := earlier[0].Runs
	if len(runs) != keptRuns || runs[0].ID != "run-3" || runs[len(runs)-1].ID != fmt.Sprint("run-", keptRuns+2) {
		t.Fatalf("the runs kept: %d, from %s to %s; want the newest %d", len(runs), runs[0].ID, runs[len(runs)-1].ID, keptRuns)
	}
	if runs[0].Ended == nil || runs[0].Outcome != "ok" || runs[1].Outcome != "timeout" || runs[1].Error == "" || runs[2].Ended != nil {
		t.Errorf("how the runs ended: %+v, %+v, %+v", runs[0], runs[1], runs[2])
	}

	// The most the record holds: every lifetime with every session and every run.
	full := State{Format: stateFormat, Project: p.Path()}
	for range keptLifetimes {
		l := Lifetime{ServerID: newID(), Started: time.Now(), Ended: new(time.Now())}
		for range keptSessions {
			l.Sessions = append(l.Sessions, Session{ID: newID(), Name: strings.Repeat("n", 128), Project: p.Path(), Opened: time.Now(), Closed: new(time.Now()), Generation: 1 << 40})
		}
		for range keptRuns {
			l.Runs = append(l.Runs, Run{ID: newID(), Session: newID(), Started: time.Now(), Code: code,
				RunEnd: RunEnd{Ended: new(time.Now()), Outcome: "cancelled_before_dispatch", Error: strings.Repeat("e", 120)}})
		}
		full.Lifetimes = append(full.Lifetimes, l)
	}
	data, _ := json.MarshalIndent(full, "", " ")
	if len(data) > maxStateBytes*3/4 {
		t.Errorf("a full record is %d bytes; the read bound is %d, which needs a margin", len(data), maxStateBytes)
	}
}

func newID() string { return "00000000-0000-4000-8000-" + rand.Text()[:12] }

// writeManifest writes a snapshot's manifest as the worker does, authentic under key.
func writeManifest(t *testing.T, d *Dir, p *Project, id string, m Manifest) {
	t.Helper()
	body, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	data := append(append(body, '\n'), d.ManifestMAC(body)+"\n"...)
	if err := os.WriteFile(filepath.Join(p.SnapshotPath(id), manifestName), data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func manifest(d *Dir, p *Project, id string, saved time.Time) Manifest {
	return Manifest{Format: ManifestFormat, Snapshot: id, KeyID: d.KeyID(), Project: p.Path(), SessionName: "default", SavedAt: saved}
}

// TestManifestsAreAuthenticated: a manifest is read only when it is authentic under
// the user's key, about this project and snapshot; a tampered one, a foreign one and a
// symlinked snapshot directory are refused with the reason.
func TestManifestsAreAuthenticated(t *testing.T) {
	d := open(t, filepath.Join(t.TempDir(), "state"))
	p, _ := d.Project(t.TempDir())
	h, err := p.NewSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	if mode(t, h.Path) != 0o700 {
		t.Fatalf("snapshot directory mode %v", mode(t, h.Path))
	}
	if _, err := p.ReadManifest(h.ID); err != ErrNoManifest {
		t.Fatalf("no manifest yet: %v", err)
	}
	writeManifest(t, d, p, h.ID, manifest(d, p, h.ID, time.Now()))
	if m, err := p.ReadManifest(h.ID); err != nil || m.SessionName != "default" {
		t.Fatalf("an authentic manifest: %v, %v", m, err)
	}
	path := filepath.Join(h.Path, manifestName)
	data, _ := os.ReadFile(path)
	os.WriteFile(path, []byte(strings.Replace(string(data), "default", "defaulT", 1)), 0o600)
	if _, err := p.ReadManifest(h.ID); err == nil || !strings.Contains(err.Error(), "does not match its HMAC") {
		t.Errorf("a tampered manifest: %v", err)
	}
	other := open(t, filepath.Join(t.TempDir(), "state"))
	foreign := manifest(d, p, h.ID, time.Now())
	foreign.KeyID = other.KeyID()
	writeManifest(t, other, p, h.ID, foreign)
	if _, err := p.ReadManifest(h.ID); err == nil || !strings.Contains(err.Error(), "another key") {
		t.Errorf("a foreign manifest: %v", err)
	}
	elsewhere := t.TempDir()
	os.Chmod(elsewhere, 0o700)
	link := p.SnapshotPath("00000000000000aa")
	if err := os.Symlink(elsewhere, link); err != nil {
		t.Fatal(err)
	}
	if _, err := p.ReadManifest("00000000000000aa"); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("a symlinked snapshot directory: %v", err)
	}
	if _, err := p.Hold("00000000000000aa"); err == nil {
		t.Errorf("a symlinked snapshot directory was held")
	}
}

// TestEvictionTakesTheOldestNotHeld: over the budget, the oldest snapshots go first,
// never one a server holds.
func TestEvictionTakesTheOldestNotHeld(t *testing.T) {
	d := open(t, filepath.Join(t.TempDir(), "state"))
	p, _ := d.Project(t.TempDir())
	now := time.Now()
	var ids []string
	var held *Held // the oldest stays held, as a live worker's
	for i, age := range []time.Duration{3 * time.Hour, 2 * time.Hour, time.Hour} {
		h, err := p.NewSnapshot()
		if err != nil {
			t.Fatal(err)
		}
		writeManifest(t, d, p, h.ID, manifest(d, p, h.ID, now.Add(-age)))
		os.WriteFile(filepath.Join(h.Path, "seg-1.dat"), make([]byte, 1000), 0o600)
		ids = append(ids, h.ID)
		if i == 0 {
			held = h
		} else {
			h.Release()
		}
	}
	// Kept reachable to the end: a Held the collector frees closes its lock file
	// (os.File's finalizer), and the lock with it; the collection makes that certain.
	defer held.Release()
	runtime.GC()
	evicted := p.Evict(3000) // three of about 1,300 bytes each: one must go
	if len(evicted) != 1 || evicted[0] != ids[1] {
		t.Fatalf("evicted %v; want the oldest not held, %s (held: %s)", evicted, ids[1], ids[0])
	}
	if got := p.Evict(0); len(got) != 1 || got[0] != ids[2] {
		t.Fatalf("evicted %v down to 0; want %s and never the held one", got, ids[2])
	}
}

// TestSweepRemovesProjectsThatAreGone: the state of a project whose directory was
// removed goes; a live one's stays.
func TestSweepRemovesProjectsThatAreGone(t *testing.T) {
	d := open(t, filepath.Join(t.TempDir(), "state"))
	gone, kept := t.TempDir(), t.TempDir()
	for _, path := range []string{gone, kept} {
		p, _ := d.Project(path)
		if err := p.RaiseGeneration(1); err != nil {
			t.Fatal(err)
		}
	}
	os.RemoveAll(gone)
	if removed := d.Sweep(); len(removed) != 1 || removed[0] != gone {
		t.Fatalf("swept %v; want %s", removed, gone)
	}
	p, _ := d.Project(kept)
	if st, err := p.Read(); err != nil || st.Generation != 1 {
		t.Fatalf("the kept project: %+v, %v", st, err)
	}
}
