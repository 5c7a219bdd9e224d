package journal

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Environment of the re-executed test binary (TestJournalHelperProcess).
const (
	journalHelperModeEnv = "REPL_MCP_JOURNAL_HELPER"
	journalHelperPathEnv = "REPL_MCP_JOURNAL_HELPER_PATH"
)

func journalTestMeta(i int) CallMeta {
	return CallMeta{
		SessionID: fmt.Sprintf("session-%d", i%3),
		Project:   fmt.Sprintf("/projects/p%d", i%2),
		RunID:     fmt.Sprintf("run-%d", i),
		Server:    "github",
		Tool:      fmt.Sprintf("create_issue_%d", i),
	}
}

func openTestJournal(t *testing.T, path string) *Journal {
	t.Helper()
	j, err := Open(Config{Path: path})
	if err != nil {
		t.Fatalf("Open(%q): %v", path, err)
	}
	return j
}

// readJournalFile decodes the file as a plain JSON array, without the Journal.
func readJournalFile(t *testing.T, path string) []Record {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var recs []Record
	if err := json.Unmarshal(data, &recs); err != nil {
		t.Fatalf("journal file is not a JSON array: %v\n%s", err, data)
	}
	return recs
}

func TestJournalLockPath(t *testing.T) {
	for in, want := range map[string]string{
		"/d/journal.json": "/d/journal.lock",
		"/d/journal":      "/d/journal.lock",
		"/d/x.lock":       "/d/x.lock.lock",
		"/d.x/journal":    "/d.x/journal.lock",
	} {
		if got := lockPath(in); got != want {
			t.Errorf("journalLockPath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestJournalDurableBeforeDispatchReturns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.json")
	j := openTestJournal(t, path)

	fi, err := os.Stat(path)
	if err != nil {
		t.Fatalf("journal not created at open: %v", err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Fatalf("journal mode %04o, want 0600", perm)
	}
	if fi, err := os.Stat(filepath.Join(filepath.Dir(path), "journal.lock")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("lock file: %v %v", fi, err)
	}

	id1, err := j.Dispatch(t.Context(), journalTestMeta(1))
	if err != nil {
		t.Fatal(err)
	}
	// On disk as soon as Dispatch returns: read the file directly.
	disk := readJournalFile(t, path)
	if len(disk) != 1 || disk[0].ID != id1 || disk[0].Status != StatusDispatched || disk[0].FinishedMs != nil {
		t.Fatalf("file after Dispatch = %+v", disk)
	}
	if disk[0].Server != "github" || disk[0].Tool != "create_issue_1" || disk[0].SessionID != "session-1" ||
		disk[0].Project != "/projects/p1" || disk[0].RunID != "run-1" || disk[0].StartedMs <= 0 {
		t.Fatalf("record fields = %+v", disk[0])
	}
	if ms, _, ok := strings.Cut(id1, "-"); !ok || ms != fmt.Sprint(disk[0].StartedMs) {
		t.Fatalf("id %q is not <epoch ms>-<uuid>", id1)
	}

	id2, err := j.Dispatch(t.Context(), journalTestMeta(2))
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Finish(id2, StatusToolError); err != nil {
		t.Fatal(err)
	}
	disk = readJournalFile(t, path)
	if len(disk) != 2 || disk[1].Status != StatusToolError || disk[1].FinishedMs == nil {
		t.Fatalf("file after Finish = %+v", disk)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}

	// A fresh Journal sees both; the unfinished one is recovered.
	j2 := openTestJournal(t, path)
	defer j2.Close()
	recs := j2.Records()
	if len(recs) != 2 || recs[0].ID != id1 || recs[1].ID != id2 {
		t.Fatalf("reopened records = %+v", recs)
	}
	if recs[0].Status != StatusOutcomeUnknown || recs[1].Status != StatusToolError {
		t.Fatalf("reopened statuses = %s, %s", recs[0].Status, recs[1].Status)
	}
	if st := j2.Stats(); !st.Durable || st.Recovered != 1 || st.Records != 2 || st.InFlight != 0 {
		t.Fatalf("stats = %+v", st)
	}
}

// TestJournalRecoveryAfterCrash kills a process holding the journal right
// after Dispatch (no Finish, no Close) and reopens it.
func TestJournalRecoveryAfterCrash(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.json")
	cmd, out, _ := startJournalHelper(t, "crash", path)
	id, err := out.ReadString('\n')
	if err != nil {
		t.Fatalf("helper output: %v", err)
	}
	id = strings.TrimSpace(id)
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("helper did not die by SIGKILL: %v", err)
	}
	if disk := readJournalFile(t, path); len(disk) != 1 || disk[0].ID != id || disk[0].Status != StatusDispatched {
		t.Fatalf("file after crash = %+v", disk)
	}

	j := openTestJournal(t, path)
	defer j.Close()
	recs := j.Records()
	if len(recs) != 1 || recs[0].ID != id || recs[0].Status != StatusOutcomeUnknown ||
		recs[0].FinishedMs == nil {
		t.Fatalf("recovered records = %+v", recs)
	}
	// Saved at open, before any new call.
	if disk := readJournalFile(t, path); len(disk) != 1 || disk[0].Status != StatusOutcomeUnknown {
		t.Fatalf("file after recovery = %+v", disk)
	}
	if st := j.Stats(); st.Recovered != 1 {
		t.Fatalf("stats = %+v", st)
	}
}

func TestJournalSecondOpenerSameProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.json")
	j := openTestJournal(t, path)
	_, err := Open(Config{Path: path})
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second open: %v, want ErrLocked", err)
	}
	if !strings.Contains(err.Error(), "Broker journal is already owned by another runtime; choose a separate --journal path") {
		t.Fatalf("message = %q", err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	openTestJournal(t, path).Close()
}

func TestJournalSecondOpenerOtherProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.json")
	cmd, out, stdin := startJournalHelper(t, "hold", path)
	if line, err := out.ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("helper: %q %v", line, err)
	}
	_, err := Open(Config{Path: path})
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("open while another process holds it: %v", err)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper: %v", err)
	}
	openTestJournal(t, path).Close()

	// And the other way round: the child is refused while we hold it.
	j := openTestJournal(t, path)
	defer j.Close()
	cmd, out, _ = startJournalHelper(t, "try", path)
	line, _ := out.ReadString('\n')
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper: %v", err)
	}
	if line != "locked\n" {
		t.Fatalf("child open while we hold it: %q", line)
	}
}

func TestJournalRefusesGroupReadable(t *testing.T) {
	for _, perm := range []os.FileMode{0o644, 0o640, 0o602} {
		path := filepath.Join(t.TempDir(), "journal.json")
		if err := os.WriteFile(path, []byte("[]\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, perm); err != nil {
			t.Fatal(err)
		}
		_, err := Open(Config{Path: path})
		if !errors.Is(err, ErrNotPrivate) || !strings.Contains(err.Error(), fmt.Sprintf("%04o", perm)) ||
			!strings.Contains(err.Error(), "Broker journal must be an owned private 0600 file") {
			t.Fatalf("mode %04o: %v", perm, err)
		}
		// The failed open released its lock.
		os.Chmod(path, 0o600)
		openTestJournal(t, path).Close()
	}
}

func TestJournalRefusesSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "real.json")
	if err := os.WriteFile(target, []byte("[]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "journal.json")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	_, err := Open(Config{Path: link})
	if !errors.Is(err, ErrNotPrivate) || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("symlink journal: %v", err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("symlink was replaced: %v %v", fi, err)
	}

	// A symlinked lock file is refused too, and not followed.
	dir = t.TempDir()
	lockTarget := filepath.Join(dir, "elsewhere")
	if err := os.Symlink(lockTarget, filepath.Join(dir, "journal.lock")); err != nil {
		t.Fatal(err)
	}
	_, err = Open(Config{Path: filepath.Join(dir, "journal.json")})
	if !errors.Is(err, ErrNotPrivate) || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("symlink lock: %v", err)
	}
	if _, err := os.Lstat(lockTarget); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("lock symlink was followed: %v", err)
	}
}

func TestJournalRefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "journal.json")
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Config{Path: path}); !errors.Is(err, ErrNotPrivate) || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("directory journal: %v", err)
	}
	// A FIFO is refused without blocking on open.
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Config{Path: fifo}); !errors.Is(err, ErrNotPrivate) {
		t.Fatalf("fifo journal: %v", err)
	}
}

func TestJournalRefusesForeignOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		// Giving a file to another uid needs root; CI and the development machines
		// run as root, so a missing privilege is a broken environment, not a pass.
		t.Fatal("this test must run as root to give the journal to another uid")
	}
	path := filepath.Join(t.TempDir(), "journal.json")
	if err := os.WriteFile(path, []byte("[]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, 4242, 4242); err != nil {
		t.Fatal(err)
	}
	_, err := Open(Config{Path: path})
	if !errors.Is(err, ErrNotPrivate) || !strings.Contains(err.Error(), "owned by uid 4242") {
		t.Fatalf("foreign owner: %v", err)
	}
}

func TestJournalRefusesOversizedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.json")
	if err := os.WriteFile(path, append([]byte("[]"), make([]byte, maxFileBytes)...), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Config{Path: path}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "1 MiB") {
		t.Fatalf("oversized: %v", err)
	}
}

func journalRecordLine(t *testing.T, r Record) string {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestJournalTornTrailingRecord(t *testing.T) {
	fin := int64(1700000000500)
	done := Record{ID: "1700000000000-a", Server: "s", Tool: "t", StartedMs: 1700000000000, FinishedMs: &fin, Status: StatusCompleted}
	open := Record{ID: "1700000000001-b", Server: "s", Tool: "u", StartedMs: 1700000000001, Status: StatusDispatched}
	full := journalRecordLine(t, done)
	for name, content := range map[string]string{
		"cut inside record": "[\n" + full + ",\n" + journalRecordLine(t, open)[:20],
		"cut after comma":   "[\n" + full + ",\n",
		"cut before ]":      "[\n" + full + "\n",
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "journal.json")
			if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			j := openTestJournal(t, path)
			defer j.Close()
			recs := j.Records()
			if len(recs) != 1 || recs[0].ID != done.ID || recs[0].Status != StatusCompleted {
				t.Fatalf("records = %+v", recs)
			}
			// Rewritten clean at open.
			if disk := readJournalFile(t, path); len(disk) != 1 {
				t.Fatalf("file = %+v", disk)
			}
		})
	}

	// Only the last line may be torn; a compact array (another writer's
	// layout) loads too.
	for name, tc := range map[string]struct {
		content string
		ok      bool
	}{
		"garbage in the middle": {"[\n{\"id\":\n" + full + "\n]\n", false},
		"data after the array":  {"[\n" + full + "\n]\nxx\n", false},
		"unknown key":           {`[{"id":"1-a","server":"s","tool":"t","started_ms":1,"finished_ms":null,"status":"completed","arguments":{}}]`, false},
		"key in other case":     {`[{"ID":"1-a","server":"s","tool":"t","started_ms":1,"finished_ms":null,"status":"completed"}]`, false},
		"bad status":            {`[{"id":"1-a","server":"s","tool":"t","started_ms":1,"finished_ms":null,"status":"done"}]`, false},
		"control character":     {`[{"id":"1-a","server":"s\u0007","tool":"t","started_ms":1,"finished_ms":null,"status":"completed"}]`, false},
		"long string":           {`[{"id":"1-a","server":"` + strings.Repeat("x", 401) + `","tool":"t","started_ms":1,"finished_ms":null,"status":"completed"}]`, false},
		"duplicate id":          {"[" + full + "," + full + "]", false},
		"not an array":          {`{"id":"1-a"}`, false},
		"compact array":         {"[" + full + "," + journalRecordLine(t, open) + "]", true},
		"empty file":            {"", true},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "journal.json")
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			j, err := Open(Config{Path: path})
			if tc.ok {
				if err != nil {
					t.Fatal(err)
				}
				j.Close()
				return
			}
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
		})
	}
}

func TestJournalMemoryOnlyTouchesNoFiles(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	j := openTestJournal(t, "")
	id, err := j.Dispatch(t.Context(), journalTestMeta(0))
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Finish(id, StatusCompleted); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("memory journal wrote %v", ents)
	}
}

// TestJournalPersistFailure removes the journal's directory: Dispatch must
// refuse (nothing recorded) and Finish must say not to retry blindly.
func TestJournalPersistFailure(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	j := openTestJournal(t, filepath.Join(dir, "journal.json"))
	defer j.Close()
	done, err := j.Dispatch(t.Context(), journalTestMeta(0))
	if err != nil {
		t.Fatal(err)
	}
	unknown, err := j.Dispatch(t.Context(), journalTestMeta(1))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}

	if _, err := j.Dispatch(t.Context(), journalTestMeta(2)); !errors.Is(err, ErrPersist) ||
		!strings.Contains(err.Error(), "no tool was dispatched") || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Dispatch with failing disk: %v", err)
	}
	if n := len(j.Records()); n != 2 {
		t.Fatalf("failed dispatch left a record: %d records", n)
	}
	err = j.Finish(done, StatusCompleted)
	if !errors.Is(err, ErrPersist) || !strings.Contains(err.Error(), "MCP call completed but durable journal update failed; do not retry blindly") {
		t.Fatalf("Finish completed: %v", err)
	}
	err = j.Finish(unknown, StatusOutcomeUnknown)
	if !errors.Is(err, ErrPersist) || !strings.Contains(err.Error(), "MCP outcome is unknown and durable journal update failed; do not retry blindly") {
		t.Fatalf("Finish outcome_unknown: %v", err)
	}
}

// TestJournalReadersDoNotWaitForWriters holds the writer slot as a slow
// fsync would: Records and Stats still answer, a waiting Dispatch honours
// its context, and a released writer proceeds.
func TestJournalReadersDoNotWaitForWriters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.json")
	j := openTestJournal(t, path)
	defer j.Close()

	j.writeSem <- struct{}{} // a writer is "flushing"
	ctx, cancel := context.WithCancel(t.Context())
	type result struct {
		id  string
		err error
	}
	res := make(chan result, 1)
	go func() {
		id, err := j.Dispatch(ctx, journalTestMeta(0))
		res <- result{id, err}
	}()
	journalWaitFor(t, func() bool { return len(j.Records()) == 1 })
	if st := j.Stats(); st.InFlight != 1 {
		t.Fatalf("stats = %+v", st)
	}
	cancel()
	r := <-res
	if !errors.Is(r.err, context.Canceled) {
		t.Fatalf("Dispatch waiting on the writer: %v", r.err)
	}
	if n := len(j.Records()); n != 0 {
		t.Fatalf("abandoned dispatch left %d records", n)
	}

	go func() {
		id, err := j.Dispatch(t.Context(), journalTestMeta(1))
		res <- result{id, err}
	}()
	journalWaitFor(t, func() bool { return len(j.Records()) == 1 })
	<-j.writeSem // the "flush" ends
	r = <-res
	if r.err != nil {
		t.Fatal(r.err)
	}
	if disk := readJournalFile(t, path); len(disk) != 1 || disk[0].ID != r.id {
		t.Fatalf("file = %+v", disk)
	}
}

func TestJournalConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.json")
	j := openTestJournal(t, path)
	const workers, perWorker = 16, 12
	stop := make(chan struct{})
	var readers sync.WaitGroup
	for range 4 {
		readers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				for _, r := range j.Records() {
					if r.Status == "" {
						t.Error("torn record observed")
					}
				}
				j.Stats()
			}
		})
	}
	var writers sync.WaitGroup
	idsCh := make(chan string, workers*perWorker)
	for w := range workers {
		writers.Go(func() {
			for i := range perWorker {
				id, err := j.Dispatch(t.Context(), journalTestMeta(w*100+i))
				if err != nil {
					t.Error(err)
					return
				}
				status := StatusCompleted
				if i%3 == 0 {
					status = StatusToolError
				}
				if err := j.Finish(id, status); err != nil {
					t.Error(err)
					return
				}
				idsCh <- id
			}
		})
	}
	writers.Wait()
	close(stop)
	readers.Wait()
	close(idsCh)
	var want []string
	for id := range idsCh {
		want = append(want, id)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	j2 := openTestJournal(t, path)
	defer j2.Close()
	var got []string
	for _, r := range j2.Records() {
		if r.Status == StatusDispatched || r.Status == StatusOutcomeUnknown {
			t.Fatalf("record not finished on disk: %+v", r)
		}
		got = append(got, r.ID)
	}
	sort.Strings(want)
	sort.Strings(got)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("reopened %d records, want %d", len(got), len(want))
	}
}

// TestJournalHoldsNoPayload pins that neither a record nor call metadata has
// anywhere to put arguments or results.
func TestJournalHoldsNoPayload(t *testing.T) {
	var keys []string
	rt := reflect.TypeFor[Record]()
	for f := range rt.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		keys = append(keys, name)
	}
	sort.Strings(keys)
	want := []string{"finished_ms", "id", "project", "run_id", "server", "session_id", "started_ms", "status", "tool"}
	if !reflect.DeepEqual(keys, want) {
		t.Fatalf("Record keys = %v, want %v", keys, want)
	}
	if len(recordKeys) != len(want) {
		t.Fatalf("journalKeys = %v", recordKeys)
	}
	for _, k := range want {
		if !recordKeys[k] {
			t.Fatalf("journalKeys lacks %q", k)
		}
	}
	var fields []string
	for f := range reflect.TypeFor[CallMeta]().Fields() {
		if f.Type.Kind() != reflect.String {
			t.Fatalf("CallMeta.%s is %s, only strings allowed", f.Name, f.Type)
		}
		fields = append(fields, f.Name)
	}
	if !reflect.DeepEqual(fields, []string{"SessionID", "Project", "RunID", "Server", "Tool"}) {
		t.Fatalf("CallMeta fields = %v", fields)
	}
}

// journalWaitFor polls cond until it holds or the test deadline nears.
func journalWaitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	if d, ok := t.Deadline(); ok {
		deadline = d.Add(-time.Second)
	}
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met before the test deadline")
		}
		time.Sleep(time.Millisecond)
	}
}

// startJournalHelper re-executes the test binary as TestJournalHelperProcess
// in the given mode, killed at test end if still running.
func startJournalHelper(t *testing.T, mode, path string, env ...string) (*exec.Cmd, *bufio.Reader, io.WriteCloser) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestJournalHelperProcess$", "-test.v=false")
	cmd.Env = append(os.Environ(), journalHelperModeEnv+"="+mode, journalHelperPathEnv+"="+path)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	return cmd, bufio.NewReader(stdout), stdin
}

// TestJournalHelperProcess is not a test: it is the other process of the
// cross-process tests, and returns at once when not re-executed.
func TestJournalHelperProcess(t *testing.T) {
	mode := os.Getenv(journalHelperModeEnv)
	if mode == "" {
		return
	}
	path := os.Getenv(journalHelperPathEnv)
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "journal helper:", err)
		os.Exit(2)
	}
	switch mode {
	case "hold":
		j, err := Open(Config{Path: path})
		if err != nil {
			fail(err)
		}
		fmt.Println("ready")
		io.Copy(io.Discard, os.Stdin)
		if err := j.Close(); err != nil {
			fail(err)
		}
	case "crash":
		j, err := Open(Config{Path: path})
		if err != nil {
			fail(err)
		}
		id, err := j.Dispatch(t.Context(), journalTestMeta(7))
		if err != nil {
			fail(err)
		}
		fmt.Println(id)
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	case "race":
		if err := raceHelper(t.Context(), path); err != nil {
			fail(err)
		}
	case "try":
		_, err := Open(Config{Path: path})
		if errors.Is(err, ErrLocked) {
			fmt.Println("locked")
		} else {
			fmt.Println("opened:", err)
		}
	default:
		fail(fmt.Errorf("unknown mode %q", mode))
	}
	os.Exit(0)
}

// TestJournalFinishedLineIsTheRecordsEncoding: the line a finished record keeps
// (what the byte budget counts and the file holds) is json.Marshal's encoding of
// the record, for every terminal status and for strings that need escaping.
func TestJournalFinishedLineIsTheRecordsEncoding(t *testing.T) {
	j := openTestJournal(t, "")
	for i, status := range []Status{StatusCompleted, StatusToolError, StatusOutcomeUnknown} {
		meta := journalTestMeta(i)
		meta.Tool = `t"<é>\` + string(rune('a'+i))
		id, err := j.Dispatch(t.Context(), meta)
		if err != nil {
			t.Fatal(err)
		}
		if err := j.Finish(id, status); err != nil {
			t.Fatal(err)
		}
		j.mu.Lock()
		e := j.entries[j.indexLocked(id)]
		j.mu.Unlock()
		want, err := json.Marshal(e.rec)
		if err != nil {
			t.Fatal(err)
		}
		if string(e.line) != string(want) {
			t.Errorf("finished line\n%s\nwant json.Marshal's\n%s", e.line, want)
		}
	}
	if got, err := finishedLine([]byte(`{"id":"x"}`), Record{ID: "x", Status: StatusCompleted}); err != nil || !strings.Contains(string(got), `"finished_ms":null,"status":"completed"`) {
		t.Errorf("a line without the dispatched tail is encoded whole: %s, %v", got, err)
	}
}

// TestJournalRemovesItsLeftoverTempFiles: the temp files a process killed in the
// middle of a write left beside the journal are removed by the next Open, and
// nothing else is: not another journal's, not a name that only looks alike, not a
// directory or a symbolic link of that name.
func TestJournalRemovesItsLeftoverTempFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "journal.json")
	const uuid = "0f1e2d3c-4b5a-4697-8877-665544332211"
	leftovers := []string{"journal.json." + uuid + ".new", "journal.json.01234567-89ab-4cde-8f01-23456789abcd.new"}
	kept := []string{
		"other.json." + uuid + ".new",                           // another journal's
		"journal.json." + uuid + ".new.keep",                    // not the pattern
		"journal.json.not-a-uuid.new",                           // not a uuid
		"journal.json." + uuid + "x.new",                        // not exactly one
		"xjournal.json." + uuid + ".new",                        // another name that ends alike
		"journal.json.0F1E2D3C-4B5A-4697-8877-665544332211.new", // not ids.UUID's lowercase
	}
	for _, name := range append(append([]string{}, leftovers...), kept...) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("{"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	subdir := "journal.json.aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee.new"
	if err := os.Mkdir(filepath.Join(dir, subdir), 0o700); err != nil {
		t.Fatal(err)
	}
	link := "journal.json.11111111-2222-4333-8444-555555555555.new"
	if err := os.Symlink(filepath.Join(dir, kept[0]), filepath.Join(dir, link)); err != nil {
		t.Fatal(err)
	}
	kept = append(kept, subdir, link)

	openTestJournal(t, path)
	for _, name := range leftovers {
		if _, err := os.Lstat(filepath.Join(dir, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("leftover %s still there: %v", name, err)
		}
	}
	for _, name := range kept {
		if _, err := os.Lstat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s was removed: %v", name, err)
		}
	}
}
