package repl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

	plain := newTestManager(t, realPython(t))
	if res := plain.Default().Execute(t.Context(), ExecRequest{Code: "1"}); res.Generation != 1 {
		t.Fatalf("without a state directory: generation %d", res.Generation)
	}
}
