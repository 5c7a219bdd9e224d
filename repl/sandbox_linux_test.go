package repl

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iota-uz/repl-mcp/internal/testwait"
	"github.com/iota-uz/repl-mcp/sandbox"
	"github.com/iota-uz/repl-mcp/statedir"
)

// sandboxManager is a manager whose sessions run under settings, checked against
// this kernel as main checks them; its launch project is a new directory.
func sandboxManager(t *testing.T, python string, set sandbox.Settings, spare bool) (*Manager, string) {
	t.Helper()
	project := t.TempDir()
	set.Project = project
	policy := set.Policy()
	if policy == nil {
		policy = &sandbox.Policy{Mode: sandbox.ReadOnly, ProxyPort: set.ProxyPort}
	}
	e, err := sandbox.HostKernel().Check(set.Mode, policy)
	if err != nil {
		t.Fatalf("this test needs a kernel with Landlock and seccomp: %v", err)
	}
	set.Enforcement = e
	m := NewManager(t.Context(), Config{OpLimits: testOps, Python: python, PythonSource: "test", Project: project, Env: os.Environ(),
		Version: "test", CodeCache: t.TempDir(), NoSpareWorker: !spare, Sandbox: set})
	t.Cleanup(func() { m.Close(time.Second) })
	return m, project
}

// loopbackService is a TCP server on 127.0.0.1 that accepts and closes: any local
// service a cell might reach.
func loopbackService(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return l.Addr().(*net.TCPAddr).Port
}

// probeCell tries, from a cell, every way a cell writes (itself, sh(), a Popen, a
// multiprocessing child) inside and outside the project and in $TMPDIR, and a TCP
// connection to a loopback service; its value maps each attempt to "ok" or the
// exception's type. sandbox_probe(outside, port) is its entry.
const probeCell = `
import json, multiprocessing, os, shutil, socket, subprocess, tempfile
def _write(path):
    with open(path, "w") as f:
        f.write("x")
def sandbox_probe(outside, port):
    out = {}
    def attempt(name, f):
        try:
            f()
            out[name] = "ok"
        except Exception as e:
            out[name] = type(e).__name__
    attempt("cell_project", lambda: _write("in-project.txt"))
    attempt("cell_tmp", lambda: _write(os.path.join(tempfile.gettempdir(), "in-tmp.txt")))
    attempt("cell_outside", lambda: _write(os.path.join(outside, "cell.txt")))
    attempt("sh_outside", lambda: sh("echo x > " + os.path.join(outside, "sh.txt")))
    attempt("popen_outside", lambda: subprocess.run(["sh", "-c", "echo x > " + os.path.join(outside, "popen.txt")], check=True, stderr=subprocess.DEVNULL))
    src = os.path.join(tempfile.gettempdir(), "src.txt")
    _write(src)
    p = multiprocessing.get_context("spawn").Process(target=shutil.copyfile, args=(src, os.path.join(outside, "mp.txt")))
    p.start(); p.join(60)
    out["mp_outside"] = "ok" if p.exitcode == 0 else "exit %s" % p.exitcode
    attempt("tcp_loopback", lambda: socket.create_connection(("127.0.0.1", port), timeout=5).close())
    out["tmpdir"] = tempfile.gettempdir()
    return out
`

func probeSandbox(t *testing.T, s *Session, outside string, port int, req ExecRequest) (map[string]string, *Result) {
	t.Helper()
	req.Code = probeCell + "\nsandbox_probe(" + pyString(outside) + ", " + itoa(port) + ")"
	req.Timeout = 90 * time.Second
	res := s.Execute(t.Context(), req)
	if !res.Success {
		t.Fatalf("probe cell failed: %v\nstderr: %s", errText(res), res.Stderr)
	}
	got := map[string]string{}
	if err := json.Unmarshal(res.Value, &got); err != nil {
		t.Fatalf("probe value %s: %v", res.Value, err)
	}
	return got, res
}

func pyString(s string) string { b, _ := json.Marshal(s); return string(b) }

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func errText(res *Result) string {
	if res.Error == nil {
		return ""
	}
	return *res.Error
}

func checkProbe(t *testing.T, got map[string]string, want map[string]string) {
	t.Helper()
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: %q, want %q (all: %v)", k, got[k], w, got)
		}
	}
}

// TestSandboxModes runs real cells under workspace-write and read-only: writes
// outside the allowed roots are refused from the cell, sh(), a Popen and a
// multiprocessing child; the project (workspace-write) and the worker's own
// temp directory are writable; a TCP connection to a loopback service is refused.
// Nothing lands outside.
func TestSandboxModes(t *testing.T) {
	python := realPython(t)
	port := loopbackService(t)
	refused := "PermissionError"
	for _, c := range []struct {
		mode sandbox.Mode
		want map[string]string
	}{
		{sandbox.WorkspaceWrite, map[string]string{"cell_project": "ok", "cell_tmp": "ok", "cell_outside": refused,
			"sh_outside": "ShellError", "popen_outside": "CalledProcessError", "mp_outside": "exit 1", "tcp_loopback": refused}},
		{sandbox.ReadOnly, map[string]string{"cell_project": refused, "cell_tmp": "ok", "cell_outside": refused,
			"sh_outside": "ShellError", "popen_outside": "CalledProcessError", "mp_outside": "exit 1", "tcp_loopback": refused}},
	} {
		t.Run(string(c.mode), func(t *testing.T) {
			t.Parallel()
			m, project := sandboxManager(t, python, sandbox.Settings{Mode: c.mode}, false)
			outside := t.TempDir()
			got, res := probeSandbox(t, m.Default(), outside, port, ExecRequest{})
			checkProbe(t, got, c.want)
			if !strings.HasPrefix(filepath.Base(got["tmpdir"]), "repl-mcp-worker-") {
				t.Errorf("the cell's temp directory is %q, not its worker's own", got["tmpdir"])
			}
			if entries, _ := os.ReadDir(outside); len(entries) != 0 {
				t.Errorf("files appeared outside the roots: %v", entries)
			}
			if _, err := os.Stat(filepath.Join(project, "in-project.txt")); (err == nil) != (c.mode == sandbox.WorkspaceWrite) {
				t.Errorf("the project file: %v", err)
			}
			h := m.Default().Health().Sandbox
			if h.Mode != string(c.mode) || h.Network != "off" || h.LandlockABI == 0 || !contains(h.WritableRoots, got["tmpdir"]) ||
				contains(h.WritableRoots, project) != (c.mode == sandbox.WorkspaceWrite) {
				t.Errorf("health: %+v", h)
			}
			// The children's refusals are in stderr: the note names the sandbox once.
			if res.Sandbox == nil || !strings.Contains(res.Sandbox.Refused, string(c.mode)) {
				t.Errorf("the probe's sandbox note: %+v", res.Sandbox)
			}
		})
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// TestSandboxRefusalNote: the first run the sandbox refuses says once, in its note,
// which sandbox refused and how to widen it; later refusals say nothing more.
func TestSandboxRefusalNote(t *testing.T) {
	m, _ := sandboxManager(t, realPython(t), sandbox.Settings{Mode: sandbox.WorkspaceWrite}, false)
	outside := t.TempDir()
	code := "open(" + pyString(filepath.Join(outside, "x")) + ", 'w')"
	res := m.Default().Execute(t.Context(), ExecRequest{Code: code})
	if res.Success || !strings.Contains(errText(res), "PermissionError") {
		t.Fatalf("the write succeeded or failed otherwise: %q", errText(res))
	}
	if res.Sandbox == nil || !strings.Contains(res.Sandbox.Refused, "workspace-write") || !strings.Contains(res.Sandbox.Refused, "--add-writable-root") {
		t.Errorf("first refusal's note: %+v", res.Sandbox)
	}
	again := m.Default().Execute(t.Context(), ExecRequest{Code: code})
	if again.Sandbox != nil {
		t.Errorf("second refusal repeats the note: %+v", again.Sandbox)
	}
}

// TestSandboxedSpare: the spare worker starts under the same policy as the
// session's workers, and a reset that takes it runs sandboxed.
func TestSandboxedSpare(t *testing.T) {
	m, _ := sandboxManager(t, realPython(t), sandbox.Settings{Mode: sandbox.ReadOnly}, true)
	s := m.Default()
	if res := s.Execute(t.Context(), ExecRequest{Code: "1"}); !res.Success {
		t.Fatalf("first cell: %s", errText(res))
	}
	var sparePid int
	testwait.Until(t, 30*time.Second, "a spare worker", func() bool {
		sp := s.Health().Spare
		sparePid = sp.Pid
		return sp.Ready
	})
	outside := t.TempDir()
	got, res := probeSandbox(t, s, outside, loopbackService(t), ExecRequest{Reset: true})
	if res.StateReset == nil || !*res.StateReset {
		t.Errorf("the reset's result: state_reset %v", res.StateReset)
	}
	if h := s.Health(); h.Python == nil || h.Python.Pid != sparePid {
		t.Errorf("the reset ran on pid %v, not the spare %d", h.Python, sparePid)
	}
	checkProbe(t, got, map[string]string{"cell_project": "PermissionError", "cell_outside": "PermissionError", "cell_tmp": "ok"})
}

// TestInheritCodexPolicy: under inherit-codex a run without Codex's policy starts
// nothing; each run's policy is enforced; a new policy restarts the worker (the
// result says so, generation+1) and a guarded run learns STATE_CHANGED; Codex's full
// access is no sandbox at all.
func TestInheritCodexPolicy(t *testing.T) {
	m, project := sandboxManager(t, realPython(t), sandbox.Settings{Mode: sandbox.InheritCodex}, false)
	s := m.Default()
	outside := t.TempDir()
	write := "open('in-project.txt', 'w').write('x'); open(" + pyString(filepath.Join(outside, "x")) + ", 'w').write('x')"

	res := s.Execute(t.Context(), ExecRequest{Code: "1"})
	if res.Success || !strings.Contains(errText(res), "Codex's sandbox policy is missing") || s.Health().Python != nil {
		t.Fatalf("a run without the policy: %q; python %v", errText(res), s.Health().Python)
	}
	if h := s.Health().Sandbox; h.Policy != msgAwaitingCodex {
		t.Errorf("health before any policy: %+v", h)
	}

	readOnly := &sandbox.Policy{Mode: sandbox.ReadOnly, Codex: true, WritableRoots: sandbox.SystemWritable}
	res = s.Execute(t.Context(), ExecRequest{Code: write, Sandbox: &CallPolicy{readOnly}})
	if res.Success || !strings.Contains(errText(res), "PermissionError") || res.Sandbox == nil || !strings.Contains(res.Sandbox.Refused, "Codex's read-only sandbox") {
		t.Fatalf("read-only: %q, note %+v", errText(res), res.Sandbox)
	}

	workspace := &sandbox.Policy{Mode: sandbox.WorkspaceWrite, Codex: true, WritableRoots: append([]string{project}, sandbox.SystemWritable...),
		NotEnforced: []string{"Codex keeps .git read-only; it stays writable here"}}
	res = s.Execute(t.Context(), ExecRequest{Code: "open('in-project.txt', 'w').write('x')", Sandbox: &CallPolicy{workspace}})
	if !res.Success || res.Generation != 2 || res.StateReset == nil || !*res.StateReset || res.Sandbox == nil ||
		!strings.Contains(res.Sandbox.Changed, "from Codex's read-only to Codex's workspace-write") || len(res.Sandbox.NotEnforced) != 1 {
		t.Fatalf("workspace-write: success %v, %q, generation %d, note %+v", res.Success, errText(res), res.Generation, res.Sandbox)
	}
	if h := s.Health().Sandbox; h.Policy != "Codex's workspace-write" || !contains(h.NotEnforced, workspace.NotEnforced[0]) {
		t.Errorf("health: %+v", h)
	}
	again := s.Execute(t.Context(), ExecRequest{Code: "2", Sandbox: &CallPolicy{workspace}})
	if !again.Success || again.Generation != 2 || again.Sandbox != nil {
		t.Errorf("the same policy again: generation %d, note %+v", again.Generation, again.Sandbox)
	}

	gen := uint64(2)
	res = s.Execute(t.Context(), ExecRequest{Code: "3", ExpectedGeneration: &gen, Sandbox: &CallPolicy{readOnly}})
	if res.Success || !strings.Contains(errText(res), "STATE_CHANGED") {
		t.Errorf("a guarded run under a new policy: %q", errText(res))
	}

	res = s.Execute(t.Context(), ExecRequest{Code: write, Sandbox: &CallPolicy{nil}})
	if !res.Success {
		t.Errorf("Codex's full access: %q", errText(res))
	}
	if h := s.Health().Sandbox; h.Policy != "full-access" || h.WritableRoots != nil {
		t.Errorf("health under full access: %+v", h)
	}
}

// TestSandboxedWorkerTakesNoSnapshot: a sandboxed worker writes no snapshot, since a
// cell in it could forge one that a later worker without the sandbox would unpickle;
// health says why snapshots are off (docs/contract.md §6.7, §11).
func TestSandboxedWorkerTakesNoSnapshot(t *testing.T) {
	d, err := statedir.Open(filepath.Join(t.TempDir(), "state"), nil)
	if err != nil {
		t.Fatal(err)
	}
	project := t.TempDir()
	set := sandbox.Settings{Mode: sandbox.WorkspaceWrite, Project: project}
	e, err := sandbox.HostKernel().Check(set.Mode, set.Policy())
	if err != nil {
		t.Fatalf("this test needs a kernel with Landlock and seccomp: %v", err)
	}
	set.Enforcement = e
	m := NewManager(t.Context(), Config{OpLimits: testOps, Python: realPython(t), PythonSource: "test", Project: project, Env: os.Environ(),
		Version: "test", CodeCache: t.TempDir(), NoSpareWorker: true, Sandbox: set, State: d,
		Snapshots: SnapshotConfig{Delay: time.Hour}})
	t.Cleanup(func() { m.Close(time.Second) })
	s := m.Default()
	if st := s.Health().Snapshot; st.Status != "off" || st.Reason != msgSnapshotSandboxed {
		t.Errorf("health's snapshot before any worker: %+v, want off already", st)
	}
	if res := s.Execute(t.Context(), ExecRequest{Code: "x = 41"}); !res.Success {
		t.Fatalf("cell: %s", errText(res))
	}
	if status := s.snaps.pass(10 * time.Second); status != "" {
		t.Errorf("a sandboxed worker's pass: %q, want none asked for", status)
	}
	st := s.Health().Snapshot
	if st.Status != "off" || st.Enabled || st.Reason != msgSnapshotSandboxed {
		t.Errorf("health's snapshot: %+v", st)
	}
	p, err := d.Project(project)
	if err != nil {
		t.Fatal(err)
	}
	if snaps := p.Snapshots(); len(snaps) != 0 {
		t.Errorf("snapshots written: %+v", snaps)
	}
	if _, err := s.Restore(t.Context(), "", time.Minute); err == nil || err.Error() != msgNoSnapshotHere+msgSnapshotSandboxed {
		t.Errorf("a restore with none saved: %v, want why this session saves none", err)
	}
}
