package journal

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Environment of the racing helper processes (TestJournalHelperProcess, mode race).
const (
	raceMarkerEnv = "REPL_MCP_JOURNAL_RACE_MARKER"
	raceRoundsEnv = "REPL_MCP_JOURNAL_RACE_ROUNDS"
	raceUntilEnv  = "REPL_MCP_JOURNAL_RACE_UNTIL"
)

// completed dispatches and finishes one call in j and returns its id.
func completed(t *testing.T, j *Journal, i int) string {
	t.Helper()
	id, err := j.Dispatch(t.Context(), journalTestMeta(i))
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Finish(id, StatusCompleted); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestJournalRefusesALockFileAsItsPath: a second server whose --journal is the
// first's lock file would replace that lock with its journal, and a third on the
// first's path would then start beside the first: two writers. Any .lock path is
// refused, and the first keeps its journal.
func TestJournalRefusesALockFileAsItsPath(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "journal.json")
	first := openTestJournal(t, path)
	defer first.Close()
	id := completed(t, first, 1)
	for _, p := range []string{lockPath(path), filepath.Join(dir, "other.LOCK"), filepath.Join(dir, "journal.lock.lock")} {
		if j, err := Open(Config{Path: p}); !errors.Is(err, ErrLockFile) {
			if j != nil {
				j.Close()
			}
			t.Fatalf("Open(%s) = %v, want ErrLockFile", p, err)
		}
	}
	if _, err := Open(Config{Path: path}); !errors.Is(err, ErrLocked) {
		t.Fatalf("a third opener of the first's path: %v, want ErrLocked", err)
	}
	if disk := readJournalFile(t, path); len(disk) != 1 || disk[0].ID != id || disk[0].Status != StatusCompleted {
		t.Fatalf("the first's journal = %+v", disk)
	}
	if data, err := os.ReadFile(lockPath(path)); err != nil || len(data) != 0 {
		t.Fatalf("the lock file was written: %q %v", data, err)
	}
}

// journalSpellings makes a journal directory and returns spellings of one journal
// path in it: plain, through a symlinked directory, with a ".." after a symlink
// (which the file system resolves from the link's target, not lexically), and
// relative to the working directory.
func journalSpellings(t *testing.T) []string {
	root := t.TempDir()
	real := filepath.Join(root, "real")
	for _, d := range []string{real, filepath.Join(real, "sub")} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(real, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(real, "sub"), filepath.Join(root, "hop")); err != nil {
		t.Fatal(err)
	}
	t.Chdir(root)
	return []string{
		filepath.Join(real, "journal.json"),
		root + "/link/journal.json",
		root + "/hop/../journal.json",
		root + "/real/sub/../journal.json",
		"real/journal.json",
		"hop/../journal.json",
	}
}

// TestJournalOtherSpellingsShareTheLock: every spelling of one journal takes the
// same lock, so a second opener is refused whichever spelling either uses.
func TestJournalOtherSpellingsShareTheLock(t *testing.T) {
	paths := journalSpellings(t)
	for _, held := range paths {
		j := openTestJournal(t, held)
		for _, other := range paths {
			if k, err := Open(Config{Path: other}); !errors.Is(err, ErrLocked) {
				if k != nil {
					k.Close()
				}
				j.Close()
				t.Fatalf("holding %s, Open(%s) = %v, want ErrLocked", held, other, err)
			}
		}
		completed(t, j, 1)
		if err := j.Close(); err != nil {
			t.Fatal(err)
		}
	}
	j := openTestJournal(t, paths[0])
	defer j.Close()
	if n := len(j.Records()); n != len(paths) {
		t.Fatalf("%d records in the one journal, want %d: a spelling wrote elsewhere", n, len(paths))
	}
	if leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(filepath.Dir(paths[0])), "journal.*")); len(leftovers) != 0 {
		t.Fatalf("a spelling resolved lexically and made %v", leftovers)
	}
}

// TestJournalRaceOfProcesses: several real processes open one journal, each by
// its own spelling (one of them the lock file), again and again. At any moment at
// most one owns it (an owner creates a marker file exclusively while it holds the
// journal), and no completed record ever vanishes.
func TestJournalRaceOfProcesses(t *testing.T) {
	paths := journalSpellings(t)
	lock := lockPath(paths[0])
	marker := filepath.Join(t.TempDir(), "owner")
	const rounds = 8
	until := time.Now().Add(60 * time.Second)
	if d, ok := t.Deadline(); ok && d.Add(-10*time.Second).Before(until) {
		until = d.Add(-10 * time.Second)
	}
	type helper struct {
		path string
		cmd  *exec.Cmd
		out  *bufio.Reader
	}
	var helpers []helper
	for _, p := range append(paths[:4], lock) {
		cmd, out, _ := startJournalHelper(t, "race", p,
			raceMarkerEnv+"="+marker, raceRoundsEnv+"="+strconv.Itoa(rounds), raceUntilEnv+"="+until.Format(time.RFC3339Nano))
		helpers = append(helpers, helper{p, cmd, out})
	}
	var want []string
	for _, h := range helpers {
		var ids []string
		var refused string
		for {
			line, err := h.out.ReadString('\n')
			if err != nil {
				break
			}
			line = strings.TrimSpace(line)
			switch {
			case strings.HasPrefix(line, "completed "):
				ids = append(ids, strings.TrimPrefix(line, "completed "))
			case strings.HasPrefix(line, "refused "):
				refused = strings.TrimPrefix(line, "refused ")
			default:
				t.Errorf("helper on %s: %s", h.path, line)
			}
		}
		if err := h.cmd.Wait(); err != nil {
			t.Errorf("helper on %s: %v", h.path, err)
		}
		if h.path == lock {
			if len(ids) != 0 || !strings.Contains(refused, ErrLockFile.Error()) {
				t.Errorf("the helper on the lock file completed %d calls, refused with %q", len(ids), refused)
			}
			continue
		}
		if len(ids) != rounds {
			t.Errorf("helper on %s completed %d calls, want %d", h.path, len(ids), rounds)
		}
		want = append(want, ids...)
	}
	if t.Failed() {
		t.FailNow()
	}
	j := openTestJournal(t, paths[0])
	defer j.Close()
	have := map[string]Status{}
	for _, r := range j.Records() {
		have[r.ID] = r.Status
	}
	for _, id := range want {
		if have[id] != StatusCompleted {
			t.Errorf("completed call %s is %q in the journal", id, have[id])
		}
	}
}

// raceHelper is one racing process: rounds times it opens the journal at path,
// waiting while another holds it, and, holding it, creates marker exclusively,
// checks its earlier records, completes one call, removes marker and closes.
func raceHelper(ctx context.Context, path string) error {
	marker := os.Getenv(raceMarkerEnv)
	rounds, _ := strconv.Atoi(os.Getenv(raceRoundsEnv))
	until, err := time.Parse(time.RFC3339Nano, os.Getenv(raceUntilEnv))
	if err != nil {
		return err
	}
	var mine []string
	for round := 0; round < rounds; {
		if time.Now().After(until) {
			return fmt.Errorf("round %d not reached before the deadline", round)
		}
		j, err := Open(Config{Path: path})
		switch {
		case errors.Is(err, ErrLocked):
			time.Sleep(time.Millisecond)
			continue
		case err != nil:
			fmt.Println("refused", err)
			return nil
		}
		f, err := os.OpenFile(marker, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			j.Close()
			return fmt.Errorf("two owners at once: %v", err)
		}
		f.Close()
		have := map[string]bool{}
		for _, r := range j.Records() {
			have[r.ID] = r.Status == StatusCompleted
		}
		for _, id := range mine {
			if !have[id] {
				j.Close()
				return fmt.Errorf("completed call %s vanished", id)
			}
		}
		id, err := j.Dispatch(ctx, journalTestMeta(round))
		if err == nil {
			err = j.Finish(id, StatusCompleted)
		}
		if err != nil {
			j.Close()
			return err
		}
		mine = append(mine, id)
		fmt.Println("completed", id)
		if err := os.Remove(marker); err != nil {
			j.Close()
			return err
		}
		if err := j.Close(); err != nil {
			return err
		}
		round++
	}
	return nil
}
