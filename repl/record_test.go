package repl

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// cellLog is a Recorder that keeps what it is told.
type cellLog struct {
	mu     sync.Mutex
	cells  []FinishedCell
	reprs  []string
	events []SessionEvent
	closed []string
}

func (l *cellLog) CellFinished(c FinishedCell) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cells = append(l.cells, c)
	l.reprs = append(l.reprs, c.Result.ReturnRepr)
}

func (l *cellLog) SessionEvent(e SessionEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
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
	m := NewManager(t.Context(), Config{OpLimits: testOps, Python: realPython(t), PythonSource: "test", Project: t.TempDir(),
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

// TestRecorderSeesSessionEvents: a call refused as busy and python_cancel are session
// events, told as they happen with the run they concern; each recorded cell says what
// stopped it (a cancel, a timeout) and the project it ran in.
func TestRecorderSeesSessionEvents(t *testing.T) {
	log := &cellLog{}
	project, _ := filepath.EvalSymlinks(t.TempDir())
	m := NewManager(t.Context(), Config{OpLimits: testOps, Python: realPython(t), PythonSource: "test", Project: project,
		Env: os.Environ(), Version: "test", Recorder: log})
	defer m.Close(time.Second)
	s := m.Default()
	info, failed := s.Start(ExecRequest{Code: "import time\nfor _ in range(300): time.sleep(0.1)"})
	if failed != nil {
		t.Fatal(*failed.Error)
	}
	refused := s.Execute(t.Context(), ExecRequest{Code: "x = 2\ny = 3"})
	if refused.Recorded() {
		t.Fatal("a refused call is recorded in the history")
	}
	if _, err := s.Cancel(info.RunID); err != nil {
		t.Fatal(err)
	}
	s.Await(t.Context(), info.RunID, 10*time.Second, nil)
	timedOut := s.Execute(t.Context(), ExecRequest{Code: "import time; time.sleep(5)", Timeout: 200 * time.Millisecond})
	if timedOut.Success {
		t.Fatal("the sleep did not time out")
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	if len(log.events) != 2 {
		t.Fatalf("events %+v, want the refusal and the cancel", log.events)
	}
	busy, cancel := log.events[0], log.events[1]
	if busy.Kind != EventBusy || busy.RunID != info.RunID || busy.Project != project ||
		!strings.Contains(busy.Text, "code: import time") || !strings.HasSuffix(busy.Text, "so this code did not run: x = 2") {
		t.Errorf("busy event %+v", busy)
	}
	if cancel.Kind != EventCancel || cancel.RunID != info.RunID || !strings.HasPrefix(cancel.Text, "python_cancel asked run "+info.RunID+" to stop after ") {
		t.Errorf("cancel event %+v", cancel)
	}
	if len(log.cells) != 2 || log.cells[0].Stopped != StopCancel || log.cells[1].Stopped != StopTimeout || log.cells[0].Project != project {
		t.Fatalf("cells %+v", log.cells)
	}
}
