package repl

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iota-uz/repl-mcp/internal/testproc"
	"github.com/iota-uz/repl-mcp/internal/testwait"
)

// pidCell returns the worker's pid, whatever the namespace holds.
const pidCell = "__import__('os').getpid()"

// workerPid runs pidCell on s and returns the pid with the result's generation.
func workerPid(t *testing.T, s *Session, req ExecRequest) (int, uint64) {
	t.Helper()
	req.Code = pidCell
	res := s.Execute(t.Context(), req)
	if !res.Success || res.ReturnValue == nil {
		t.Fatalf("pid cell failed: %+v", res)
	}
	pid, err := strconv.Atoi(string(res.Value))
	if err != nil {
		t.Fatalf("pid cell returned %s", res.Value)
	}
	return pid, res.Generation
}

// waitForSpare waits until s's launch has a spare other than the pids in not, and
// returns its pid.
func waitForSpare(t *testing.T, s *Session, not ...int) int {
	t.Helper()
	var pid int
	testwait.Until(t, 20*time.Second, "a spare worker", func() bool {
		h := s.Health()
		pid = h.Spare.Pid
		for _, n := range not {
			if pid == n {
				return false
			}
		}
		return h.Spare.Ready && pid > 0
	})
	return pid
}

// TestIdleServerStartsNoSpare: no Python before the first cell, and health says a
// spare is enabled but none waits.
func TestIdleServerStartsNoSpare(t *testing.T) {
	m := newTestManager(t, realPython(t))
	h := m.Default().Health()
	if !h.Spare.Enabled || h.Spare.Ready || h.Spare.Pid != 0 || h.Python != nil {
		t.Fatalf("idle health: spare %+v, python %+v", h.Spare, h.Python)
	}
	if kids := children(t); len(kids) != 0 {
		t.Fatalf("an idle manager started processes: %v", kids)
	}
}

// TestResetTakesTheSpare: the spare waits beside the first worker without being a
// generation, and a reset's cell runs on it; its generation starts then.
func TestResetTakesTheSpare(t *testing.T) {
	m := newTestManager(t, realPython(t))
	s := m.Default()
	first, gen := workerPid(t, s, ExecRequest{})
	spare := waitForSpare(t, s, first)
	h := s.Health()
	if h.Generation != 1 || h.Python.Pid != first || h.Spare.RSSBytes <= 0 {
		t.Fatalf("with a spare waiting: generation %d (want 1), worker %d (want %d), spare RSS %d", h.Generation, h.Python.Pid, first, h.Spare.RSSBytes)
	}
	if gen != 1 {
		t.Fatalf("first generation %d", gen)
	}
	second, gen := workerPid(t, s, ExecRequest{Reset: true})
	if second != spare || gen != 2 {
		t.Fatalf("after reset: worker %d generation %d; want the spare %d, generation 2", second, gen, spare)
	}
	testwait.Until(t, 10*time.Second, "the old worker to be gone", func() bool { return !processAlive(first) })
	if h := s.Health(); h.Python.Pid != spare || h.Generation != 2 {
		t.Fatalf("health after reset: %+v generation %d", h.Python, h.Generation)
	}
	waitForSpare(t, s, first, spare) // refilled
}

// TestCrashRecoveryTakesTheSpare: the next cell after a crash runs on the spare.
func TestCrashRecoveryTakesTheSpare(t *testing.T) {
	m := newTestManager(t, realPython(t))
	s := m.Default()
	first, _ := workerPid(t, s, ExecRequest{})
	spare := waitForSpare(t, s, first)
	mustFail(t, s.Execute(t.Context(), ExecRequest{Code: "import os; os._exit(3)"}), msgCrashed, StateCleared)
	got, gen := workerPid(t, s, ExecRequest{})
	if got != spare || gen != 2 {
		t.Fatalf("after the crash: worker %d generation %d; want the spare %d, generation 2", got, gen, spare)
	}
}

// TestFreshFileTakesTheSpare: a fresh run of a file runs on the spare and leaves
// the persistent worker and its generation alone.
func TestFreshFileTakesTheSpare(t *testing.T) {
	m := newTestManager(t, realPython(t))
	s := m.Default()
	first, _ := workerPid(t, s, ExecRequest{})
	spare := waitForSpare(t, s, first)
	file := filepath.Join(t.TempDir(), "pid.py")
	if err := os.WriteFile(file, []byte("import os\nprint(os.getpid())\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := s.Execute(t.Context(), ExecRequest{SourcePath: file, Fresh: true})
	if !res.Success || strings.TrimSpace(res.Stdout) != strconv.Itoa(spare) || res.Generation != 1 {
		t.Fatalf("fresh run: stdout %q generation %d, want the spare %d, generation 1: %+v", res.Stdout, res.Generation, spare, res)
	}
	if got, gen := workerPid(t, s, ExecRequest{}); got != first || gen != 1 {
		t.Fatalf("after the fresh run: worker %d generation %d; want %d, 1", got, gen, first)
	}
}

// TestNewSessionTakesTheSpare: a session opened on the same interpreter and project
// takes the spare for its first cell (its generation 1), without a probe of its own.
func TestNewSessionTakesTheSpare(t *testing.T) {
	m := newTestManager(t, realPython(t))
	first, _ := workerPid(t, m.Default(), ExecRequest{})
	spare := waitForSpare(t, m.Default(), first)
	opened, err := m.Open(t.Context(), OpenRequest{Name: "second", Project: m.cfg.Project})
	if err != nil {
		t.Fatal(err)
	}
	if h := opened.Health(); !h.Environment.Validated || h.Environment.VersionInfo == nil || h.Environment.VersionInfo.Major != 3 {
		t.Fatalf("the spare did not stand for the probe: %+v", h.Environment)
	}
	got, gen := workerPid(t, opened, ExecRequest{})
	if got != spare || gen != 1 {
		t.Fatalf("new session: worker %d generation %d; want the spare %d, generation 1", got, gen, spare)
	}
	if h := m.Default().Health(); h.Generation != 1 || h.Python.Pid != first {
		t.Fatalf("the default session changed: %+v generation %d", h.Python, h.Generation)
	}
}

// TestNewSessionTakesTheSpareOfAPathName: a server whose interpreter is a command
// name PATH finds (python3, the usual default) and a session opened on the file it
// finds are one launch: the session's first cell takes the spare.
func TestNewSessionTakesTheSpareOfAPathName(t *testing.T) {
	bin := t.TempDir()
	if err := os.Symlink(realPython(t), filepath.Join(bin, "python3-spare")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	m := newTestManager(t, "python3-spare")
	first, _ := workerPid(t, m.Default(), ExecRequest{})
	spare := waitForSpare(t, m.Default(), first)
	opened, err := m.Open(t.Context(), OpenRequest{Name: "second", Project: m.cfg.Project})
	if err != nil {
		t.Fatal(err)
	}
	if got, gen := workerPid(t, opened, ExecRequest{}); got != spare || gen != 1 {
		t.Fatalf("new session: worker %d generation %d; want the spare %d, generation 1", got, gen, spare)
	}
}

// TestSpareNeverCrossesLaunches: a session on another interpreter path, or in
// another project, starts its own worker and leaves the spare waiting.
func TestSpareNeverCrossesLaunches(t *testing.T) {
	python := realPython(t)
	m := newTestManager(t, python)
	first, _ := workerPid(t, m.Default(), ExecRequest{})
	spare := waitForSpare(t, m.Default(), first)
	other := filepath.Join(t.TempDir(), "python3")
	if err := os.Symlink(python, other); err != nil {
		t.Fatal(err)
	}
	for _, req := range []OpenRequest{
		{Name: "other python", Project: m.cfg.Project, Python: other},
		{Name: "other project", Project: t.TempDir()},
	} {
		s, err := m.Open(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := workerPid(t, s, ExecRequest{}); got == spare || got == first {
			t.Fatalf("%s ran on worker %d (spare %d, default %d)", req.Name, got, spare, first)
		}
		if h := m.Default().Health(); h.Spare.Pid != spare {
			t.Fatalf("%s: the default launch's spare is now %d, was %d", req.Name, h.Spare.Pid, spare)
		}
	}
}

// TestDeadSpareIsNotHandedOut: a spare killed while it waits is never a session's
// worker; the reset starts one of its own.
func TestDeadSpareIsNotHandedOut(t *testing.T) {
	m := newTestManager(t, realPython(t))
	s := m.Default()
	first, _ := workerPid(t, s, ExecRequest{})
	spare := waitForSpare(t, s, first)
	if err := syscall.Kill(spare, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 10*time.Second, "the spare to die", func() bool { return !processAlive(spare) })
	got, gen := workerPid(t, s, ExecRequest{Reset: true})
	if got == spare || got == first || gen != 2 {
		t.Fatalf("after killing the spare %d: worker %d generation %d", spare, got, gen)
	}
	testwait.Until(t, 10*time.Second, "the pool to drop the dead spare", func() bool { return s.Health().Spare.Pid != spare })
}

// TestStaleSpareIsNotHandedOut: a spare that started before a .pth file appeared in
// its site-packages (an editable install, say) would not see what that file adds; the
// reset after it starts a worker of its own, which does.
func TestStaleSpareIsNotHandedOut(t *testing.T) {
	venv := filepath.Join(t.TempDir(), "venv")
	if _, stderr, err := testproc.Run(t.Context(), "", nil, realPython(t), "-m", "venv", "--without-pip", venv); err != nil {
		t.Fatalf("make a venv: %v: %s", err, stderr)
	}
	sites, _ := filepath.Glob(filepath.Join(venv, "lib", "python3*", "site-packages"))
	if len(sites) != 1 {
		t.Fatalf("site-packages of the venv: %v", sites)
	}
	// The venv was just made: date its directories back, or every spare is stale.
	past := time.Now().Add(-time.Hour)
	for _, dir := range []string{sites[0], filepath.Dir(sites[0]), venv} {
		if err := os.Chtimes(dir, past, past); err != nil {
			t.Fatal(err)
		}
	}
	m := newTestManager(t, filepath.Join(venv, "bin", "python"))
	s := m.Default()
	first, _ := workerPid(t, s, ExecRequest{})
	spare := waitForSpare(t, s, first)
	if got, _ := workerPid(t, s, ExecRequest{Reset: true}); got != spare {
		t.Fatalf("reset ran on %d, not on the current spare %d", got, spare)
	}
	stale := waitForSpare(t, s, first, spare)
	modules := t.TempDir()
	if err := os.WriteFile(filepath.Join(modules, "stalemod.py"), []byte("VALUE = 42\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sites[0], "extra.pth"), []byte(modules+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := s.Execute(t.Context(), ExecRequest{Reset: true, Code: "import os, stalemod; (os.getpid(), stalemod.VALUE)"})
	if !res.Success {
		t.Fatalf("the worker after the install does not see it: %+v", res)
	}
	if strings.Contains(string(res.Value), strconv.Itoa(stale)) {
		t.Fatalf("the stale spare %d was handed out: %s", stale, res.Value)
	}
	testwait.Until(t, 10*time.Second, "the stale spare to be stopped", func() bool { return !processAlive(stale) })
}

// TestCloseStopsSpares: closing a session keeps the spare its launch still has
// users for; closing the manager stops it, and nothing the manager started is left.
func TestCloseStopsSpares(t *testing.T) {
	m := NewManager(t.Context(), Config{OpLimits: testOps, Python: realPython(t), Project: t.TempDir(), Env: os.Environ()})
	defer m.Close(time.Second)
	first, _ := workerPid(t, m.Default(), ExecRequest{})
	spare := waitForSpare(t, m.Default(), first)
	opened, err := m.Open(t.Context(), OpenRequest{Name: "other", Project: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	own, _ := workerPid(t, opened, ExecRequest{})
	ownSpare := waitForSpare(t, opened, own)
	if _, err := m.CloseSession(opened.ID()); err != nil {
		t.Fatal(err)
	}
	if processAlive(own) || processAlive(ownSpare) {
		t.Fatalf("the closed session's worker %d or its launch's spare %d runs on", own, ownSpare)
	}
	if h := m.Default().Health(); h.Spare.Pid != spare {
		t.Fatalf("closing another launch's session took the default's spare %d: %+v", spare, h.Spare)
	}
	m.Close(time.Second)
	for _, pid := range []int{first, spare} {
		testwait.Until(t, 10*time.Second, "worker "+strconv.Itoa(pid)+" to be gone", func() bool { return !processAlive(pid) })
	}
	if kids := children(t); len(kids) != 0 {
		t.Fatalf("the closed manager left processes: %v", kids)
	}
}

// TestCloseGivesUpAFillInProgress: a server that stops while its spare is still
// starting does not wait for that start, and leaves nothing of it behind.
func TestCloseGivesUpAFillInProgress(t *testing.T) {
	dir := t.TempDir()
	// The first start is the session's and is quick; the second, the spare's, hangs
	// before its handshake.
	python := fakePython(t, `if [ -e `+dir+`/started ]; then echo $$ > `+dir+`/slow.tmp; mv `+dir+`/slow.tmp `+dir+`/slow; exec sleep 60; fi
touch `+dir+`/started; exec `+realPython(t)+` "$@"`)
	m := NewManager(t.Context(), Config{OpLimits: testOps, Python: python, Project: t.TempDir(), Env: os.Environ()})
	defer m.Close(time.Second)
	workerPid(t, m.Default(), ExecRequest{})
	var slow int
	testwait.Until(t, 20*time.Second, "the spare's start to hang", func() bool {
		data, err := os.ReadFile(filepath.Join(dir, "slow"))
		slow, _ = strconv.Atoi(strings.TrimSpace(string(data)))
		return err == nil && slow > 0
	})
	start := time.Now()
	m.Close(time.Second)
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("close waited %v for a spare's start", took)
	}
	testwait.Until(t, 10*time.Second, "the hung start to be gone", func() bool { return !processAlive(slow) })
	if kids := children(t); len(kids) != 0 {
		t.Fatalf("the closed manager left processes: %v", kids)
	}
}

// TestNoSpareWorker: with the spare off, health says so and a reset's worker is a
// new one started for it.
func TestNoSpareWorker(t *testing.T) {
	m := NewManager(t.Context(), Config{OpLimits: testOps, Python: realPython(t), Project: t.TempDir(), Env: os.Environ(), NoSpareWorker: true})
	t.Cleanup(func() { m.Close(time.Second) })
	s := m.Default()
	first, _ := workerPid(t, s, ExecRequest{})
	if h := s.Health(); h.Spare != (SpareState{}) {
		t.Fatalf("spare off, health says %+v", h.Spare)
	}
	if kids := children(t); len(kids) != 1 {
		t.Fatalf("spare off: %d guardians, want the worker's alone: %v", len(kids), kids)
	}
	if second, gen := workerPid(t, s, ExecRequest{Reset: true}); second == first || gen != 2 {
		t.Fatalf("reset: worker %d generation %d", second, gen)
	}
}

// children lists the live child processes of the test (the guardians of workers).
func children(t *testing.T) []string {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the child processes are read from /proc, which only Linux has")
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal("no /proc on Linux:", err)
	}
	self := strconv.Itoa(os.Getpid())
	var kids []string
	for _, e := range entries {
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after its ')'.
		s := string(stat)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 1 && fields[1] == self && fields[0] != "Z" {
			kids = append(kids, e.Name())
		}
	}
	return kids
}
