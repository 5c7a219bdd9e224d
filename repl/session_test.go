package repl

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iota-uz/repl-mcp/guardian"
	"github.com/iota-uz/repl-mcp/internal/pythons"
	"github.com/iota-uz/repl-mcp/internal/testwait"
)

// TestMain lets the test binary serve as the process guardian.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == guardian.Flag {
		os.Exit(guardian.Main())
	}
	os.Exit(m.Run())
}

func newTestManager(t *testing.T, python string) *Manager {
	t.Helper()
	m := NewManager(t.Context(), Config{OpLimits: testOps, Python: python, PythonSource: "test", Project: t.TempDir(), Env: os.Environ(), Version: "test"})
	t.Cleanup(func() { m.Close(time.Second) })
	return m
}

// fakePython writes an executable script that stands in for an interpreter.
func fakePython(t *testing.T, script string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "python")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func realPython(t *testing.T) string {
	t.Helper()
	return pythons.ForTest(t)[0].Path
}

func mustFail(t *testing.T, res *Result, want string, state State) {
	t.Helper()
	if res.Success || res.Error == nil || !strings.Contains(*res.Error, want) {
		got := "<nil>"
		if res.Error != nil {
			got = *res.Error
		}
		t.Fatalf("want failure containing %q, got success=%v error=%q", want, res.Success, got)
	}
	if res.State != state {
		t.Fatalf("state = %s, want %s (error %q)", res.State, state, *res.Error)
	}
	checkReason(t, res)
}

func TestHandshakeFailures(t *testing.T) {
	cases := []struct {
		name, script, want string
	}{
		{"garbage", `echo 'this is not json' >&4; sleep 5`, "Invalid Python worker handshake"},
		{"wrong first frame", `echo '{"type":"result","id":"x"}' >&4; sleep 5`, "Invalid Python worker handshake"},
		{"no pid", `echo '{"type":"ready","protocol":1,"pid":0}' >&4; sleep 5`, "Worker handshake omitted real PID"},
		{"source unread", `echo '{"type":"ready","protocol":1,"pid":'$$'}' >&4; exit 0`, "did not read its source"},
		{"dies", `echo 'boom: no such module' >&2; exit 5`, "exited during startup (exit status 5): boom: no such module"},
		{"old protocol", `echo '{"type":"ready","protocol":0,"pid":1}' >&4; sleep 5`, "protocol 0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := newTestManager(t, fakePython(t, c.script))
			res := m.Default().Execute(t.Context(), ExecRequest{Code: "1"})
			mustFailFor(t, res, ReasonStartFailed, c.want, StateCleared)
			if h := m.Default().Health(); h.Python != nil || h.Generation != 0 {
				t.Fatalf("a failed start left state behind: %+v", h)
			}
		})
	}
}

func TestMissingInterpreter(t *testing.T) {
	m := newTestManager(t, "/nonexistent/python3")
	mustFailFor(t, m.Default().Execute(t.Context(), ExecRequest{Code: "1"}), ReasonStartFailed, "/nonexistent/python3", StateCleared)
}

func TestOldPythonRefused(t *testing.T) {
	old := filepath.Join(os.Getenv("HOME"), ".pyenv/versions/3.9.18/bin/python")
	if _, err := os.Stat(old); err != nil {
		// Any interpreter below 3.10 will do; fake one that reports its version the
		// way the bootstrap does.
		old = fakePython(t, `exec `+realPython(t)+` -c 'import sys; sys.version_info = (3, 9, 0); exec(sys.argv[1])' "$4"`)
		t.Logf("no Python 3.9 here; faking one")
	}
	m := newTestManager(t, old)
	mustFailFor(t, m.Default().Execute(t.Context(), ExecRequest{Code: "1"}), ReasonStartFailed, "needs Python 3.10 or newer", StateCleared)
}

// TestGarbageAfterReadyKillsWorker: a worker that breaks the protocol mid-run is
// killed and the run says why.
func TestGarbageAfterReadyKillsWorker(t *testing.T) {
	script := `read n digest <&3; head -c $n <&3 >/dev/null
echo '{"type":"ready","protocol":1,"pid":'$$'}' >&4; read line <&3; echo 'garbage' >&4; sleep 30`
	m := newTestManager(t, fakePython(t, script))
	res := m.Default().Execute(t.Context(), ExecRequest{Code: "1"})
	mustFailFor(t, res, ReasonCrashed, "Python worker crashed; variables cleared", StateCleared)
	if !strings.Contains(*res.Error, "not JSON") {
		t.Fatalf("error does not say the frame was bad: %q", *res.Error)
	}
}

func TestGenerationGuard(t *testing.T) {
	m := newTestManager(t, realPython(t))
	s := m.Default()
	zero := uint64(0)
	if res := s.Execute(t.Context(), ExecRequest{Code: "x = 1", ExpectedGeneration: &zero}); !res.Success || res.Generation != 1 {
		t.Fatalf("first run: %+v", res)
	}
	stale := uint64(0)
	marker := filepath.Join(t.TempDir(), "marker")
	code := "open(" + quote(marker) + ", 'w').write('x')"
	mustFailFor(t, s.Execute(t.Context(), ExecRequest{Code: code, ExpectedGeneration: &stale}), ReasonStale, "STATE_CHANGED", StatePreserved)
	s.Execute(t.Context(), ExecRequest{Code: "import os; os._exit(7)"})
	// After the crash the guarded call starts the replacement first and is refused
	// with the replacement's generation; nothing ran, so its own state is preserved.
	one := uint64(1)
	res := s.Execute(t.Context(), ExecRequest{Code: code, ExpectedGeneration: &one})
	mustFailFor(t, res, ReasonRestarted, "STATE_CHANGED: worker restarted", StatePreserved)
	if res.Generation != 2 || res.StateReset == nil || !*res.StateReset {
		t.Fatalf("refusal after the crash: generation %d, state_reset %v", res.Generation, res.StateReset)
	}
	if h := s.Health(); h.Generation != 2 || h.Python == nil || !h.Python.Running {
		t.Fatalf("health after the refusal: generation %d, python %+v", h.Generation, h.Python)
	}
	// The old generation stays stale, and starts no second replacement.
	res = s.Execute(t.Context(), ExecRequest{Code: code, ExpectedGeneration: &one})
	mustFailFor(t, res, ReasonStale, "STATE_CHANGED: stale expected_generation", StatePreserved)
	if res.Generation != 2 {
		t.Fatalf("second refusal: generation %d", res.Generation)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a rejected run wrote its marker")
	}
	// The generation the refusal named runs.
	two := uint64(2)
	res = s.Execute(t.Context(), ExecRequest{Code: code, ExpectedGeneration: &two})
	if !res.Success || res.Generation != 2 || res.StateReset == nil || *res.StateReset {
		t.Fatalf("retry with the new generation: %+v", res)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the accepted retry did not run: %v", err)
	}
}

// TestStartGuardsAtTheCall: python_start refuses a stale generation when called,
// not when polled, and a refused start leaves the session free.
func TestStartGuardsAtTheCall(t *testing.T) {
	m := newTestManager(t, realPython(t))
	s := m.Default()
	if res := s.Execute(t.Context(), ExecRequest{Code: "x = 1"}); !res.Success {
		t.Fatalf("first run: %+v", res)
	}
	stale := uint64(7)
	info, failed := s.Start(ExecRequest{Code: "x = 2", ExpectedGeneration: &stale})
	if info != nil || failed == nil {
		t.Fatalf("stale start accepted: %+v", info)
	}
	mustFailFor(t, failed, ReasonStale, "STATE_CHANGED: stale expected_generation", StatePreserved)
	s.Execute(t.Context(), ExecRequest{Code: "import os; os._exit(3)"})
	one := uint64(1)
	info, failed = s.Start(ExecRequest{Code: "x = 3", ExpectedGeneration: &one})
	if info != nil || failed == nil {
		t.Fatalf("start after the crash accepted: %+v", info)
	}
	mustFailFor(t, failed, ReasonRestarted, "STATE_CHANGED: worker restarted", StatePreserved)
	if failed.Generation != 2 {
		t.Fatalf("refused start reports generation %d, want 2", failed.Generation)
	}
	two := uint64(2)
	info, failed = s.Start(ExecRequest{Code: "y = 4", ExpectedGeneration: &two})
	if failed != nil {
		t.Fatalf("start with the new generation: %s", *failed.Error)
	}
	testwait.Until(t, 10*time.Second, "the started run's result", func() bool { _, res, _ := s.Lookup(info.RunID, Offsets{}); return res != nil })
	if _, res, _ := s.Lookup(info.RunID, Offsets{}); !res.Success || res.Generation != 2 {
		t.Fatalf("started run: %+v", res)
	}
}

func TestBusyAndCancelledPredecessor(t *testing.T) {
	m := newTestManager(t, realPython(t))
	s := m.Default()
	info, failed := s.Start(ExecRequest{Code: "import time; time.sleep(30)"})
	if failed != nil {
		t.Fatalf("start: %v", *failed.Error)
	}
	testwait.Until(t, 10*time.Second, "the run to reach its worker", func() bool {
		snap, _, _ := s.Lookup(info.RunID, Offsets{})
		return snap != nil && snap.Status == RunRunning
	})
	mustFailFor(t, s.Execute(t.Context(), ExecRequest{Code: "1"}), ReasonBusy, "already running", StatePreserved)
	if _, failed := s.Start(ExecRequest{Code: "1"}); failed == nil {
		t.Fatal("second start accepted while busy")
	}
	if _, err := s.Cancel(info.RunID); err != nil {
		t.Fatal(err)
	}
	// A call arriving while the predecessor is being cancelled waits for it.
	res := s.Execute(t.Context(), ExecRequest{Code: "2 + 2"})
	if !res.Success || *res.ReturnValue != "4" {
		t.Fatalf("call after cancel: %+v", res)
	}
	_, old, err := s.Lookup(info.RunID, Offsets{})
	if err != nil || old.Reason != ReasonCancelled || *old.Error != msgCancelled || old.State != StatePreserved {
		t.Fatalf("cancelled run: %+v %v", old, err)
	}
}

func TestLimitsRefusedBeforeDispatch(t *testing.T) {
	m := newTestManager(t, "/nonexistent/python3")
	for _, req := range []ExecRequest{
		{Code: strings.Repeat("Ж", MaxCodeBytes/2+1)},
		{Code: "1", Timeout: time.Millisecond},
		{Code: "1", Timeout: MaxTimeout + time.Second},
	} {
		mustFailFor(t, m.Default().Execute(t.Context(), req), ReasonLimits, msgLimits, StatePreserved)
	}
}

func TestCloseStopsBackgroundRun(t *testing.T) {
	m := NewManager(context.Background(), Config{OpLimits: testOps, Python: realPython(t), Project: t.TempDir(), Env: os.Environ()})
	s := m.Default()
	info, failed := s.Start(ExecRequest{Code: "import time\nwhile True:\n  try: time.sleep(1)\n  except KeyboardInterrupt: pass"})
	if failed != nil {
		t.Fatal(*failed.Error)
	}
	testwait.Until(t, 10*time.Second, "the run to reach its worker", func() bool {
		snap, _, _ := s.Lookup(info.RunID, Offsets{})
		return snap != nil && snap.Status == RunRunning
	})
	pid := s.Health().Python.Pid
	start := time.Now()
	m.Close(200 * time.Millisecond)
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("close took %v", d)
	}
	// The cell swallows KeyboardInterrupt, but the worker re-delivers it every 50 ms
	// and one may land between the try blocks: then the cell honestly ends as
	// cancelled within the grace. Otherwise it is abandoned and killed.
	_, res, _ := s.Lookup(info.RunID, Offsets{})
	if res.Reason != ReasonCancelled && res.Reason != ReasonAbandoned {
		t.Fatalf("closed run: %+v", res)
	}
	checkReason(t, res)
	testwait.Until(t, 10*time.Second, "the closed session's worker to be gone", func() bool { return !processAlive(pid) })
	mustFailFor(t, s.Execute(t.Context(), ExecRequest{Code: "1"}), ReasonClosed, msgSessionClosed, StatePreserved)
}

// TestCloseSaysItCancelledTheRun: a call waiting on a cell of a session that another
// call closes reads that the close cancelled it, not a bare cancel it never asked for.
func TestCloseSaysItCancelledTheRun(t *testing.T) {
	m := newTestManager(t, realPython(t))
	s, err := m.Open(t.Context(), OpenRequest{Name: "shared", Project: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan *Result, 1)
	go func() { done <- s.Execute(t.Context(), ExecRequest{Code: "import time\ntime.sleep(60)"}) }()
	testwait.Until(t, 10*time.Second, "the cell to reach its worker", func() bool {
		snap, _, _ := s.Lookup("", Offsets{})
		return snap != nil && snap.Status == RunRunning
	})
	if _, err := m.CloseSession(s.ID()); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res.Reason != ReasonCancelled || res.Error == nil || !strings.HasPrefix(*res.Error, msgCancelled+msgByClose) {
		t.Fatalf("the closed session's cell: reason %q, error %q", res.Reason, errorOf(res))
	}
	checkReason(t, res)
}

func processAlive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	return err == nil && strings.Fields(string(stat))[2] != "Z"
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "\\'") + "'" }

func TestRSSBudget(t *testing.T) {
	m := NewManager(t.Context(), Config{OpLimits: testOps, Python: realPython(t), Project: t.TempDir(), Env: os.Environ(), MaxMemoryMiB: 48})
	t.Cleanup(func() { m.Close(time.Second) })
	s := m.Default()
	res := s.Execute(t.Context(), ExecRequest{Code: "import time\nblob = bytearray(128 << 20)\ntime.sleep(5)"})
	mustFailFor(t, res, ReasonMemory, "RSS budget", StateCleared)
	if h := s.Health(); h.Python == nil || h.Python.Running {
		t.Fatalf("worker still running after the budget kill: %+v", h.Python)
	}
	if res := s.Execute(t.Context(), ExecRequest{Code: "1 + 1"}); !res.Success || !*res.StateReset {
		t.Fatalf("next cell: %+v", res)
	}
}

// TestInventoriesStayOutOfHistory: 65 inspections (more than the history holds) leave
// the last real run retrievable.
func TestInventoriesStayOutOfHistory(t *testing.T) {
	m := newTestManager(t, realPython(t))
	s := m.Default()
	res := s.Execute(t.Context(), ExecRequest{Code: "numbers = [1, 2, 3]"})
	if !res.Success {
		t.Fatalf("cell: %+v", res)
	}
	for range HistoryRuns + 1 {
		_, namespace, err := s.Inspect(t.Context(), true, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(namespace), `"numbers"`) {
			t.Fatalf("inventory misses numbers: %s", namespace)
		}
	}
	_, last, err := s.Lookup("", Offsets{})
	if err != nil || last.RunID != res.RunID {
		t.Fatalf("latest run = %+v, %v; want %s", last, err, res.RunID)
	}
}

// TestBusyInventoryNamesTheRun: an inventory refused by a running cell names the run
// and how to wait for it or stop it, as a refused cell does, and the notebook records
// no refused code for it.
func TestBusyInventoryNamesTheRun(t *testing.T) {
	m := newTestManager(t, realPython(t))
	s := m.Default()
	id := mustStart(t, s, "import time\ntime.sleep(30)")
	_, _, err := s.Inspect(t.Context(), true, nil)
	for _, want := range []string{"A cell is already running in this session", "run " + id, "code: import time",
		`python_cancel {"run_id": "` + id + `"}`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("the inventory's refusal lacks %q: %v", want, err)
		}
	}
	if _, err := s.Cancel(id); err != nil {
		t.Fatal(err)
	}
}

// TestWaitedReadsAsAWait: how the busy refusal and the notebook say how long a run
// has gone on: tenths, then whole seconds, and never "0 s" for one just started.
func TestWaitedReadsAsAWait(t *testing.T) {
	for d, want := range map[time.Duration]string{
		10 * time.Millisecond:    "under 0.1 s",
		60 * time.Millisecond:    "0.1 s",
		1340 * time.Millisecond:  "1.3 s",
		12400 * time.Millisecond: "12 s",
	} {
		if got := waited(d); got != want {
			t.Errorf("waited(%v) = %q, want %q", d, got, want)
		}
	}
}
