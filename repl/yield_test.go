package repl

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iota-uz/repl-mcp/internal/testwait"
)

// gatedCell prints first, waits for the file gate, then prints second and writes the
// file done: its end is the test's to choose, not a sleep's.
func gatedCell(dir string) string {
	gate, done := strconv.Quote(filepath.Join(dir, "gate")), strconv.Quote(filepath.Join(dir, "done"))
	return "import os, time\nprint('first', flush=True)\nwhile not os.path.exists(" + gate + "):\n    time.sleep(0.02)\n" +
		"print('second')\nopen(" + done + ", 'w').close()\n'finished'"
}

func openGate(t *testing.T, dir string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "gate"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
}

// A cell that outlives yield_after leaves its call as a live snapshot from byte 0;
// the call's cancel then no longer reaches it, Await follows it to its end, and its
// result has all of its output.
func TestYieldedRunSurvivesItsCallersCancel(t *testing.T) {
	m := newTestManager(t, realPython(t))
	s := m.Default()
	if res := s.Execute(t.Context(), ExecRequest{Code: "1"}); !res.Success {
		t.Fatalf("warm-up: %+v", res)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	res, snap := s.ExecuteOrYield(ctx, ExecRequest{Code: gatedCell(dir), YieldAfter: 300 * time.Millisecond})
	if res != nil || snap == nil {
		t.Fatalf("a cell waiting at its gate did not yield: result %+v", res)
	}
	if snap.StdoutStart != 0 || snap.StdoutEnd != int64(len(snap.Stdout)) || !strings.HasPrefix("first\n", snap.Stdout) {
		t.Fatalf("the yield's snapshot is not the output from byte 0: %+v", snap)
	}
	if snap.SessionID != s.ID() || snap.RunID == "" {
		t.Fatalf("the snapshot does not say which run: %+v", snap)
	}
	cancel() // the client gives up on the call that yielded

	watch := NewOutputWatch()
	openGate(t, dir)
	waited := make(chan struct{})
	go func() {
		defer close(waited)
		s.Await(t.Context(), snap.RunID, MaxWait, watch)
	}()
	select {
	case <-waited:
	case <-time.After(testwait.Bound(t, MaxWait)):
		t.Fatal("Await did not return")
	}
	_, final, err := s.Lookup(snap.RunID, Offsets{})
	if err != nil || final == nil {
		t.Fatalf("after Await the run has no result: %v", err)
	}
	if !final.Success || final.Stdout != "first\nsecond\n" || string(final.Value) != `"finished"` {
		t.Fatalf("the yielded run did not finish whole: %+v (error %v)", final, final.Error)
	}
	if _, err := os.Stat(filepath.Join(dir, "done")); err != nil {
		t.Fatalf("the yielded cell did not run to its end: %v", err)
	}
}

// A call cancelled before its cell yielded interrupts the cell, as without
// yield_after, and its answer is that result.
func TestCancelBeforeYieldInterrupts(t *testing.T) {
	m := newTestManager(t, realPython(t))
	s := m.Default()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	watch := NewOutputWatch()
	go func() {
		<-watch.Changed() // "first" is out: the cell is running
		cancel()
	}()
	res, snap := s.ExecuteOrYield(ctx, ExecRequest{Code: gatedCell(dir), YieldAfter: time.Hour, Watch: watch})
	if snap != nil || res == nil {
		t.Fatalf("a cancelled call yielded: %+v", snap)
	}
	mustFailFor(t, res, ReasonCancelled, msgCancelled, StatePreserved)
	if res.Stdout != "first\n" {
		t.Fatalf("stdout = %q", res.Stdout)
	}
	if h := s.Health(); h.ActiveRun != nil {
		t.Fatalf("run %s still active after the cancelled call returned", *h.ActiveRun)
	}
}

// Await ends at the wait when the run goes on, and at once for a run that is not
// active; a run that ends within YieldAfter is answered with its result.
func TestAwaitBounds(t *testing.T) {
	m := newTestManager(t, realPython(t))
	s := m.Default()
	res, snap := s.ExecuteOrYield(t.Context(), ExecRequest{Code: "6 * 7", YieldAfter: time.Hour})
	if snap != nil || !res.Success || *res.ReturnValue != "42" {
		t.Fatalf("a quick cell: %+v %+v", res, snap)
	}
	s.Await(t.Context(), res.RunID, time.Hour, nil) // finished: returns at once
	dir := t.TempDir()
	res, snap = s.ExecuteOrYield(t.Context(), ExecRequest{Code: gatedCell(dir), YieldAfter: 100 * time.Millisecond})
	if snap == nil {
		t.Fatalf("no yield: %+v", res)
	}
	s.Await(t.Context(), snap.RunID, 100*time.Millisecond, nil)
	if live, _, err := s.Lookup(snap.RunID, Offsets{}); err != nil || live == nil {
		t.Fatalf("the run ended though its gate is shut: %v", err)
	}
	if _, err := s.Cancel(snap.RunID); err != nil {
		t.Fatal(err)
	}
	s.Await(t.Context(), snap.RunID, MaxWait, nil)
	_, final, _ := s.Lookup(snap.RunID, Offsets{})
	if final == nil {
		t.Fatal("python_cancel did not stop the yielded run")
	}
	mustFailFor(t, final, ReasonCancelled, msgCancelled, StatePreserved)
}
