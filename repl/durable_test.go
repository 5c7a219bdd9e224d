package repl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iota-uz/repl-mcp/internal/testwait"
	"github.com/iota-uz/repl-mcp/statedir"
)

// lifetime is one server lifetime of a project, sharing a state directory with the
// others the test makes.
func lifetime(t *testing.T, state, project string, snaps SnapshotConfig) *Manager {
	t.Helper()
	d, err := statedir.Open(state, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := NewManager(t.Context(), Config{OpLimits: testOps, Python: realPython(t), PythonSource: "test", Project: project, Env: os.Environ(),
		Version: "test", State: d, Snapshots: snaps})
	t.Cleanup(func() { m.Close(time.Second) })
	return m
}

// TestGenerationsNeverRepeatAcrossLifetimes: a later server's workers start above every
// generation an earlier one used in the project, so an expected_generation of the
// earlier server is refused; the earlier session's id is answered with the restart;
// opened sessions of one lifetime still start together, and a project without a state
// directory starts at 1 (issue 31, point 3; docs/contract.md §6.3).
func TestGenerationsNeverRepeatAcrossLifetimes(t *testing.T) {
	state, project := filepath.Join(t.TempDir(), "state"), t.TempDir()
	off := SnapshotConfig{Off: true}
	first := lifetime(t, state, project, off)
	old := first.Default().ID()
	for _, code := range []string{"x = 1", "import os; os._exit(1)", "x = 2"} {
		first.Default().Execute(t.Context(), ExecRequest{Code: code})
	}
	if g := first.Default().worker.currentGeneration(); g != 2 {
		t.Fatalf("the first lifetime reached generation %d, want 2", g)
	}
	first.Close(time.Second)

	second := lifetime(t, state, project, off)
	two := uint64(2)
	mustFail(t, second.Default().Execute(t.Context(), ExecRequest{Code: "x", ExpectedGeneration: &two}), "STATE_CHANGED", StatePreserved)
	res := second.Default().Execute(t.Context(), ExecRequest{Code: "1"})
	if res.Generation != 3 || res.StateReset == nil || !*res.StateReset || res.StateResetReason != ResetRestart || res.ServerStarted == nil {
		t.Fatalf("the second lifetime's first result: generation %d, state_reset %v, reason %q", res.Generation, res.StateReset, res.StateResetReason)
	}
	opened, err := second.Open(t.Context(), OpenRequest{Name: "other", Project: project})
	if err != nil {
		t.Fatal(err)
	}
	if res := opened.Execute(t.Context(), ExecRequest{Code: "1"}); res.Generation != 3 || res.StateResetReason != "" {
		t.Fatalf("an opened session's first worker: generation %d, reason %q; want 3 and none", res.Generation, res.StateResetReason)
	}
	msg := second.UnknownSession(old)
	for _, want := range []string{"Session not found or closed", old, "belonged to an earlier repl-mcp server", "the server restarted at", "The default session now is " + second.Default().ID()} {
		if !strings.Contains(msg, want) {
			t.Errorf("the answer to the earlier session's id lacks %q: %s", want, msg)
		}
	}
	if msg := second.UnknownSession("never-seen"); msg != msgSessionNotFound {
		t.Errorf("an id no lifetime knew: %s", msg)
	}

	// A restore in a server that takes no snapshots says so, rather than that one is
	// taken 2 s after a cell.
	if _, err := second.Default().Restore(t.Context(), "", time.Minute); err == nil || err.Error() != msgNoSnapshotHere+msgSnapshotsOff {
		t.Errorf("a restore under --no-snapshot: %v", err)
	}

	plain := newTestManager(t, realPython(t))
	if res := plain.Default().Execute(t.Context(), ExecRequest{Code: "1"}); res.Generation != 1 {
		t.Fatalf("without a state directory: generation %d", res.Generation)
	}
}

// TestRunsOfAnEarlierServerAreAnswered: a run that left its caller (python_start, a
// yield) and is polled or cancelled after a restart is answered with the restart and
// what became of it: stopped with its server or its session, finished, or failed with
// its error; python_run without an id in the new default session, which has run
// nothing, tells of the earlier default's newest such run; an id no lifetime recorded
// keeps the plain answer (docs/contract.md §6.7).
func TestRunsOfAnEarlierServerAreAnswered(t *testing.T) {
	state, project := filepath.Join(t.TempDir(), "state"), t.TempDir()
	off := SnapshotConfig{Off: true}
	first := lifetime(t, state, project, off)
	def := first.Default()
	_, yielded := def.ExecuteOrYield(t.Context(), ExecRequest{Code: "import time\ntime.sleep(0.3)", YieldAfter: 50 * time.Millisecond})
	if yielded == nil {
		t.Fatal("the cell did not yield")
	}
	awaitIdle(t, def)
	failed := mustStart(t, def, "raise ValueError('no')")
	awaitIdle(t, def)
	running := mustStart(t, def, "import time\ntime.sleep(60)")
	other, err := first.Open(t.Context(), OpenRequest{Name: "other", Project: project})
	if err != nil {
		t.Fatal(err)
	}
	closed := mustStart(t, other, "import time\ntime.sleep(60)")
	if _, err := first.CloseSession(other.ID()); err != nil {
		t.Fatal(err)
	}
	first.Close(time.Second)

	second := lifetime(t, state, project, off)
	def = second.Default()
	for _, c := range []struct {
		name, id string
		want     []string
		rerun    bool
	}{
		{"stopped with its server", running, []string{"it was stopped at", "when that server stopped"}, true},
		{"finished", yielded.RunID, []string{"it finished at", "its result went with that server"}, false},
		{"failed", failed, []string{"it ended at", " (ValueError: no), and its result went with that server"}, true},
		{"its session closed", closed, []string{`(session "other", started `, "when its session was closed"}, true},
	} {
		_, _, err := def.Lookup(c.id, Offsets{})
		if err == nil {
			t.Fatalf("%s: the run of the earlier server was found", c.name)
		}
		want := append([]string{msgRunNotFound + "; run " + c.id + ` (session "`,
			"belonged to an earlier repl-mcp server", "the server restarted at"}, c.want...)
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: the answer lacks %q: %s", c.name, w, err)
			}
		}
		if strings.Contains(err.Error(), msgEarlierRunAgain) != c.rerun {
			t.Errorf("%s: says to run it again: %v, want %v: %s", c.name, !c.rerun, c.rerun, err)
		}
	}
	if _, err := def.Cancel(running); err == nil || !strings.HasPrefix(err.Error(), msgNoActiveRun+"; run "+running) {
		t.Errorf("cancelling the earlier server's run: %v", err)
	}
	if _, _, err := def.Lookup("", Offsets{}); err == nil || !strings.Contains(err.Error(), "; run "+running+" ") {
		t.Errorf("polling without an id before any run names the earlier default's newest run: %v", err)
	}
	if _, _, err := def.Lookup("9b2bc3c5-0000-4000-8000-000000000000", Offsets{}); err == nil || err.Error() != msgRunNotFound {
		t.Errorf("an id no lifetime recorded: %v", err)
	}
	if story := second.EarlierRun(running); !strings.HasPrefix(story, "; run "+running) || !strings.Contains(story, "when that server stopped") {
		t.Errorf("the story of an MCP task's run: %q", story)
	}
	if story := second.EarlierRun(""); story != "" {
		t.Errorf("the story of no task: %q", story)
	}
	def.Execute(t.Context(), ExecRequest{Code: "1"})
	if _, res, err := def.Lookup("", Offsets{}); err != nil || res == nil {
		t.Errorf("polling without an id after a run: %v", err)
	}
}

// TestEarlierRunOfAnEvictedSession: a run whose session's record the lifetime no
// longer keeps (more sessions than it records) is named by its session's id.
func TestEarlierRunOfAnEvictedSession(t *testing.T) {
	m := newTestManager(t, realPython(t))
	started := time.Now().Add(-time.Hour)
	m.state.earlier = []statedir.Lifetime{{ServerID: "earlier", Started: started,
		Runs: []statedir.Run{{ID: "0b7e4a39-0000-4000-8000-00000000000e", Session: "5e551011-0000-4000-8000-000000000000", Started: started, Code: "x = 1"}}}}
	story := m.EarlierRun("0b7e4a39-0000-4000-8000-00000000000e")
	if !strings.Contains(story, `(session "5e551011-0000-4000-8000-000000000000", started `) {
		t.Errorf("the story names no session: %q", story)
	}
}

// awaitIdle waits until s's run, if any, has ended and let go of the session.
func awaitIdle(t *testing.T, s *Session) {
	t.Helper()
	testwait.Until(t, 10*time.Second, "the session to be idle", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.active == nil
	})
}

// mustStart starts code as python_start does and returns the run's id.
func mustStart(t *testing.T, s *Session, code string) string {
	t.Helper()
	info, res := s.Start(ExecRequest{Code: code})
	if res != nil {
		t.Fatalf("start %q: %s", code, errorOf(res))
	}
	return info.RunID
}
