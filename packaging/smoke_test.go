package packaging

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/iota-uz/repl-mcp/repl"
)

// terminateAfter is how long closing the session waits for repl-mcp to exit on its own
// after its stdin closes, before go-sdk sends SIGTERM; exiting within it is the test.
const terminateAfter = 20 * time.Second

// interpreterEnv are the variables that would choose the worker's interpreter or its
// imports; the smoke test clears them so only the sibling python can be chosen.
var interpreterEnv = []string{"REPL_MCP_PYTHON", "VIRTUAL_ENV", "PYTHONHOME", "PYTHONPATH"}

// health is the part of python_health's server object the smoke test reads.
type health struct {
	Server struct {
		SessionID        string          `json:"session_id"`
		Version          string          `json:"version"`
		PythonExecutable string          `json:"python_executable"`
		Python           json.RawMessage `json:"python"`
		Environment      struct {
			ChosenBy string `json:"chosen_by"`
		} `json:"environment"`
	} `json:"server"`
}

// smoke drives the repl-mcp installed in venv as a user's MCP client would
// (docs/contract.md §10.1), from a project directory outside the checkout.
func smoke(t *testing.T, r *repo, venv string) {
	exe := filepath.Join(venv, "bin", "repl-mcp")
	info, err := os.Stat(exe)
	if err != nil || !info.Mode().IsRegular() || info.Mode()&0o111 == 0 {
		t.Fatalf("the install left no executable %s (%v)", exe, err)
	}
	project := t.TempDir()
	if rel, err := filepath.Rel(r.root, project); err == nil && !strings.HasPrefix(rel, "..") {
		t.Fatalf("project %s is inside the checkout %s", project, r.root)
	}
	env := environ(interpreterEnv)

	if got, want := strings.TrimSpace(run(t, 10*time.Second, project, env, exe, "--version")), "repl-mcp "+r.version; got != want {
		t.Errorf("repl-mcp --version printed %q, want %q", got, want)
	}

	cmd := exec.Command(exe, "--mcp-scope", "none")
	cmd.Dir, cmd.Env = project, env
	inGroup(cmd)
	stderr := newTail(64 << 10)
	cmd.Stderr = stderr
	defer func() {
		killGroup(cmd)
		if t.Failed() {
			t.Logf("repl-mcp stderr (last 64 KiB):\n%s", stderr)
		}
	}()

	ctx, cancel := boundedContext(t, 60*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "repl-mcp-packaging-test", Version: "1.0.0"}, nil)
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: terminateAfter}, nil)
	if err != nil {
		t.Fatalf("connecting to the installed repl-mcp: %v", err)
	}
	closed := false
	defer func() {
		if !closed {
			session.Close()
		}
	}()
	if got := session.InitializeResult().ServerInfo.Version; got != r.version {
		t.Errorf("serverInfo.version = %q, want %q", got, r.version)
	}

	// Lazy: no interpreter before the first cell.
	h := callHealth(ctx, t, session)
	if h.Server.Version != r.version {
		t.Errorf("python_health server.version = %q, want %q", h.Server.Version, r.version)
	}
	if string(h.Server.Python) != "null" {
		t.Errorf("python_health server.python = %s before any cell, want null (lazy start)", h.Server.Python)
	}
	// The project has no .venv, so the python beside repl-mcp is the default.
	if !strings.HasPrefix(h.Server.Environment.ChosenBy, "the python "+repl.ChosenBeside) {
		t.Errorf("the default interpreter was chosen by %q (%s), want %q", h.Server.Environment.ChosenBy, h.Server.PythonExecutable, "the python "+repl.ChosenBeside)
	}

	code := "import importlib.metadata as m, sys\nimport httpx, openpyxl\n" +
		"{'prefix': sys.prefix, 'executable': sys.executable, " +
		"'httpx': m.version('httpx'), 'openpyxl': m.version('openpyxl')}"
	res, err := session.CallTool(ctx, &mcp.CallToolParams{
		Name:      "execute_python",
		Arguments: map[string]any{"code": code, "session_id": h.Server.SessionID, "timeout": 30},
	})
	if err != nil {
		t.Fatalf("execute_python: %v", err)
	}
	var cell struct {
		Success bool   `json:"success"`
		Error   string `json:"error"`
		Stderr  string `json:"stderr"`
		Value   struct {
			Prefix     string `json:"prefix"`
			Executable string `json:"executable"`
			HTTPX      string `json:"httpx"`
			OpenPyXL   string `json:"openpyxl"`
		} `json:"value"`
	}
	remarshal(t, res.StructuredContent, &cell)
	if res.IsError || !cell.Success {
		t.Fatalf("the cell failed (isError %v): %s\nstderr:\n%s", res.IsError, cell.Error, cell.Stderr)
	}
	t.Logf("cell: sys.prefix %s, sys.executable %s, httpx %s, openpyxl %s", cell.Value.Prefix, cell.Value.Executable, cell.Value.HTTPX, cell.Value.OpenPyXL)
	if !samePath(cell.Value.Prefix, venv) {
		t.Errorf("the cell's sys.prefix is %s, want the venv %s: the interpreter beside repl-mcp was not chosen", cell.Value.Prefix, venv)
	}
	for name, got := range map[string]string{"httpx": cell.Value.HTTPX, "openpyxl": cell.Value.OpenPyXL} {
		if want := r.pins[name]; got != want {
			t.Errorf("the cell imported %s %s, want the pinned %s", name, got, want)
		}
	}
	if h := callHealth(ctx, t, session); string(h.Server.Python) == "null" {
		t.Errorf("python_health server.python is still null after a cell")
	}

	// Closing stdin ends the server with status 0, before any signal.
	closed = true
	start := time.Now()
	err = session.Close()
	elapsed := time.Since(start)
	switch {
	case elapsed >= terminateAfter:
		t.Errorf("repl-mcp did not exit within %v of its stdin closing (it was signalled)", terminateAfter)
	case err != nil:
		t.Errorf("repl-mcp exited with %v after its stdin closed, want status 0", err)
	case cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 0:
		t.Errorf("repl-mcp exited with %v after its stdin closed, want status 0", cmd.ProcessState)
	default:
		t.Logf("repl-mcp exited 0 %v after its stdin closed", elapsed.Round(time.Millisecond))
	}
}

func callHealth(ctx context.Context, t *testing.T, session *mcp.ClientSession) health {
	t.Helper()
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "python_health", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("python_health: %v %+v", err, res)
	}
	var h health
	remarshal(t, res.StructuredContent, &h)
	if h.Server.SessionID == "" {
		t.Fatalf("python_health returned no session_id: %+v", res.StructuredContent)
	}
	return h
}

// samePath reports whether a and b name the same directory.
func samePath(a, b string) bool {
	ia, errA := os.Stat(a)
	ib, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(ia, ib)
}

// remarshal copies a decoded JSON value into v.
func remarshal(t *testing.T, from, v any) {
	t.Helper()
	data, err := json.Marshal(from)
	if err == nil {
		err = json.Unmarshal(data, v)
	}
	if err != nil {
		t.Fatalf("decoding %+v: %v", from, err)
	}
}
