package repl

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// cellLog is a Recorder that keeps what it is told.
type cellLog struct {
	mu     sync.Mutex
	cells  []FinishedCell
	reprs  []string
	closed []string
}

func (l *cellLog) CellFinished(c FinishedCell) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cells = append(l.cells, c)
	l.reprs = append(l.reprs, c.Result.ReturnRepr)
}

func (l *cellLog) SessionClosed(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = append(l.closed, id)
}

// TestRecorderSeesEveryCellButInventories: the recorder gets each finished cell with
// its code, reset flag, start, generation and the worker's Python, a failing one too,
// before the caller's result, which keeps the repr the text form shows; not an
// inventory; and the session's close.
func TestRecorderSeesEveryCellButInventories(t *testing.T) {
	log := &cellLog{}
	m := NewManager(t.Context(), Config{Python: realPython(t), PythonSource: "test", Project: t.TempDir(),
		Env: os.Environ(), Version: "test", Recorder: log})
	defer m.Close(time.Second)
	project, _ := filepath.EvalSymlinks(m.cfg.Project)
	s, err := m.Open(t.Context(), OpenRequest{Name: "recorded", Project: project})
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	first := s.Execute(t.Context(), ExecRequest{Code: "{'a': (1, 'b')}"})
	// The repr is the text form's too: the caller keeps it.
	if first.ReturnRepr != "{'a': (1, 'b')}" || first.ReturnValue == nil {
		t.Fatalf("the caller's result: repr %q, return_value %v", first.ReturnRepr, first.ReturnValue)
	}
	if _, _, err := s.Inspect(t.Context(), true, nil); err != nil {
		t.Fatal(err)
	}
	s.Execute(t.Context(), ExecRequest{Code: "1 / 0", Reset: true})
	log.mu.Lock()
	cells, reprs := log.cells, log.reprs
	log.mu.Unlock()
	if len(cells) != 2 {
		t.Fatalf("recorded %d cells, want 2 (the inventory is not one)", len(cells))
	}
	if c := cells[0]; c.Code != "{'a': (1, 'b')}" || c.SessionName != "recorded" || c.SessionID != s.ID() ||
		c.Result.RunID != first.RunID || c.Started.Before(before) || c.Python == nil || c.Python.PythonVersion == "" {
		t.Fatalf("first cell: %+v", c)
	}
	if reprs[0] != "{'a': (1, 'b')}" {
		t.Fatalf("the recorder got repr %q", reprs[0])
	}
	if c := cells[1]; !c.Reset || c.Result.Success || c.Result.Generation != 2 {
		t.Fatalf("second cell: reset %v, success %v, generation %d", c.Reset, c.Result.Success, c.Result.Generation)
	}
	if _, err := m.CloseSession(s.ID()); err != nil {
		t.Fatal(err)
	}
	if len(log.closed) != 1 || log.closed[0] != s.ID() {
		t.Fatalf("closed: %v", log.closed)
	}
}
