package interop

import (
	"context"
	"encoding/json"
	"github.com/iota-uz/repl-mcp/internal/testproc"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// repl is one repl-mcp process driven over stdio by go-sdk's client, which speaks
// 2026-07-28 by default: every execution passes the session_id from python_health.
type repl struct {
	t         *testing.T
	cmd       *exec.Cmd
	session   *mcp.ClientSession
	sessionID string
	stderr    *testproc.Tail
	closed    bool
}

// startRepl starts repl-mcp in project (the default session's directory, whose
// .mcp.json is the broker's registry). Cleanup closes it and kills its group.
func (s *suite) startRepl(t *testing.T, project string) *repl {
	t.Helper()
	cmd := exec.Command(s.replMCP, "--python", s.python)
	cmd.Dir = project
	inGroup(cmd)
	r := &repl{t: t, cmd: cmd, stderr: newTail(64 << 10)}
	cmd.Stderr = r.stderr
	t.Cleanup(func() {
		r.close()
		if t.Failed() {
			t.Logf("repl-mcp stderr (last 64 KiB):\n%s", r.stderr)
		}
	})

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "repl-mcp-interop-go", Version: "1.0.0"}, nil)
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second}, nil)
	if err != nil {
		killGroup(cmd)
		t.Fatalf("connecting to repl-mcp: %v", err)
	}
	r.session = session
	health, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "python_health", Arguments: map[string]any{}})
	if err != nil || health.IsError {
		t.Fatalf("python_health: %v %+v", err, health)
	}
	var h struct {
		Server struct {
			SessionID string `json:"session_id"`
		} `json:"server"`
	}
	remarshal(t, health.StructuredContent, &h)
	if h.Server.SessionID == "" {
		t.Fatalf("python_health returned no session_id: %+v", health.StructuredContent)
	}
	r.sessionID = h.Server.SessionID
	return r
}

// execute runs one cell and requires it to succeed; it returns the cell's value, the
// JSON of its trailing expression.
func (r *repl) execute(code string, d time.Duration) any {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(r.t.Context(), d+10*time.Second)
	defer cancel()
	res, err := r.session.CallTool(ctx, &mcp.CallToolParams{
		Name:      "execute_python",
		Arguments: map[string]any{"code": code, "session_id": r.sessionID, "timeout": d.Seconds()},
	})
	if err != nil {
		r.t.Fatalf("execute_python: %v", err)
	}
	var sc struct {
		Success bool   `json:"success"`
		Error   string `json:"error"`
		Stdout  string `json:"stdout"`
		Stderr  string `json:"stderr"`
		Value   any    `json:"value"`
	}
	remarshal(r.t, res.StructuredContent, &sc)
	if res.IsError || !sc.Success {
		r.t.Fatalf("the cell failed (isError %v):\n%s\nstdout:\n%s\nstderr:\n%s", res.IsError, sc.Error, sc.Stdout, sc.Stderr)
	}
	return sc.Value
}

// close closes stdin, waits for repl-mcp to exit (it must within 10 s, with status 0),
// then kills whatever is left in its process group.
func (r *repl) close() {
	if r.closed || r.session == nil {
		killGroup(r.cmd)
		return
	}
	r.closed = true
	start := time.Now()
	err := r.session.Close()
	elapsed := time.Since(start)
	killGroup(r.cmd)
	if err != nil {
		r.t.Errorf("closing repl-mcp: %v (after %v)", err, elapsed.Round(time.Millisecond))
		return
	}
	r.t.Logf("repl-mcp exited %v after its stdin closed", elapsed.Round(time.Millisecond))
}

// project makes a project directory whose .mcp.json registers servers.
func project(t *testing.T, servers map[string]any) string {
	t.Helper()
	dir := t.TempDir()
	data, err := json.MarshalIndent(map[string]any{"mcpServers": servers}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".mcp.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
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
