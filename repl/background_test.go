package repl

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/iota-uz/repl-mcp/internal/pythons"
)

// run executes code in s and fails the test unless it succeeded with its variables
// preserved.
func mustRun(t *testing.T, s *Session, code string) *Result {
	t.Helper()
	res := s.Execute(t.Context(), ExecRequest{Code: code, Timeout: 60 * time.Second})
	if !res.Success || res.State != StatePreserved {
		errText := ""
		if res.Error != nil {
			errText = *res.Error
		}
		t.Fatalf("%q: success %v, state %s, error %s\nstderr %s", code, res.Success, res.State, errText, res.Stderr)
	}
	return res
}

// Libraries of real data work leave threads behind, and the session keeps its
// variables (docs/contract.md §5.10): tqdm's monitor, an executor left open, a
// daemon thread, a threading.Timer, a logging QueueListener. Each result names the
// threads still working for its cell, except a library's own daemon threads (tqdm's
// monitor), and a later cell reads every variable.
func TestLibraryThreadsKeepTheSession(t *testing.T) {
	m := newTestManager(t, pythons.DataVenv(t))
	s := m.Default()
	cells := []struct {
		code    string
		threads string // a regular expression of the names, joined by commas
	}{
		{"from tqdm import tqdm\nimport pandas as pd, numpy as np\ntotal = 0\nfor i in tqdm(range(50)):\n    total += i\n" +
			"df = pd.DataFrame({'a': np.arange(5)})", ``},
		{"from concurrent.futures import ThreadPoolExecutor\nimport threading\ngate = threading.Event()\n" +
			"pool = ThreadPoolExecutor(2, thread_name_prefix='pool')\nslow = pool.submit(gate.wait, 30)\nquick = pool.submit(sum, [1, 2])\nquick.result()",
			`pool_0,pool_1`},
		{"daemon = threading.Thread(target=gate.wait, args=(30,), name='daemon', daemon=True)\ndaemon.start()", `daemon`},
		{"timer = threading.Timer(30, print, args=('late',))\ntimer.name = 'timer'\ntimer.start()", `timer`},
		{"import logging, logging.handlers, queue, sys\nrecords = queue.Queue()\n" +
			"listener = logging.handlers.QueueListener(records, logging.StreamHandler(sys.stderr))\nlistener.start()",
			`Thread-\d+ \(_monitor\)`},
	}
	for _, c := range cells {
		res := mustRun(t, s, c.code)
		if !regexp.MustCompile(`^` + c.threads + `$`).MatchString(strings.Join(res.BackgroundThreads, ",")) {
			t.Fatalf("%q: background_threads %q, want %q", c.code, res.BackgroundThreads, c.threads)
		}
	}
	res := mustRun(t, s, "gate.set()\ntimer.cancel()\nlistener.stop()\n[total, int(df.a.sum()), slow.result(5), daemon.join(5) or daemon.is_alive()]")
	if string(res.Value) != `[1225,10,true,false]` || res.Generation != 1 {
		t.Fatalf("the variables did not survive: value %s, generation %d", res.Value, res.Generation)
	}
	// tqdm's progress bar shows its last state on stderr, not every redraw.
	first := mustRun(t, s, "for i in tqdm(range(3000), mininterval=0):\n    pass")
	if strings.Count(first.Stderr, "\r") != 0 || !strings.Contains(first.Stderr, "3000/3000") || strings.Contains(first.Stderr, " 0/3000") {
		t.Fatalf("tqdm's stderr is not its last state: %q", first.Stderr)
	}
}

// What a background thread prints lands with the next result, apart from the
// output of the cell that runs meanwhile, and each line only once.
func TestBackgroundOutputLandsWhereItBelongs(t *testing.T) {
	m := newTestManager(t, pythons.DataVenv(t))
	s := m.Default()
	mustRun(t, s, "import threading, time\nstop = threading.Event()\n"+
		"def tick():\n    n = 0\n    while not stop.wait(0.02):\n        print(f'tick {n}')\n        n += 1\n"+
		"threading.Thread(target=tick, name='ticker', daemon=True).start()")
	res := mustRun(t, s, "for i in range(3):\n    print(f'own {i}')\n    time.sleep(0.1)")
	if res.Stdout != "own 0\nown 1\nown 2\n" {
		t.Fatalf("the cell's stdout has more than its own: %q", res.Stdout)
	}
	if res.BackgroundOutput == nil || !strings.HasPrefix(res.BackgroundOutput.Stdout, "tick ") || strings.Contains(res.BackgroundOutput.Stdout, "own") {
		t.Fatalf("background output %+v", res.BackgroundOutput)
	}
	data, err := json.Marshal(res)
	if err != nil || !strings.Contains(string(data), `"background_output":{"stdout":"tick `) {
		t.Fatalf("JSON %s (%v)", data, err)
	}
	after := mustRun(t, s, "stop.set()\ntime.sleep(0.1)")
	if after.BackgroundOutput != nil && strings.Contains(after.BackgroundOutput.Stdout, strings.SplitN(res.BackgroundOutput.Stdout, "\n", 2)[0]+"\n") {
		t.Fatalf("a tick was reported twice: %q", after.BackgroundOutput.Stdout)
	}
}

// Cancellation stays real: a cell that times out while a thread it started ignores
// the interrupt (threads never see one) stops the worker, and the state is cleared.
func TestTimeoutWithThreadsStillRunningClears(t *testing.T) {
	m := newTestManager(t, pythons.DataVenv(t))
	s := m.Default()
	mustRun(t, s, "x = 1")
	res := s.Execute(t.Context(), ExecRequest{Code: "import threading, time\n" +
		"threading.Thread(target=time.sleep, args=(60,), name='stubborn').start()\ntime.sleep(60)", Timeout: time.Second})
	mustFailFor(t, res, ReasonTimeout, "Execution timed out after 1 s; variables cleared; for a longer cell pass a larger timeout (up to 3600 s), or start it with python_start and poll python_run\nInterrupted cell left active background threads or executor work (stubborn); worker stopped and variables cleared", StateCleared)
	if strings.Join(res.BackgroundThreads, ",") != "stubborn" {
		t.Fatalf("background_threads %q", res.BackgroundThreads)
	}
	next := s.Execute(t.Context(), ExecRequest{Code: "'x' in globals()"})
	if !next.Success || string(next.Value) != "false" || next.StateReset == nil || !*next.StateReset || next.Generation != 2 {
		t.Fatalf("the next run did not start from nothing: %+v", next)
	}
	// A tqdm loop that times out keeps its variables: its monitor is tqdm's own
	// daemon thread, not work of the cell's that could go on changing them.
	res = s.Execute(t.Context(), ExecRequest{Code: "from tqdm import tqdm\nimport time\ny = 2\nfor i in tqdm(range(100)):\n    time.sleep(1)", Timeout: 1500 * time.Millisecond})
	mustFailFor(t, res, ReasonTimeout, "Execution timed out after 1.5 s; variables preserved", StatePreserved)
	if len(res.BackgroundThreads) != 0 {
		t.Fatalf("background_threads %q, want none", res.BackgroundThreads)
	}
	if after := mustRun(t, s, "y"); string(after.Value) != "2" {
		t.Fatalf("y = %s after the timeout, want 2", after.Value)
	}
}
