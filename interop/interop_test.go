package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/iota-uz/repl-mcp/internal/testproc"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/iota-uz/repl-mcp/internal/testwait"
)

// The tools repl-mcp lists, in its order.
var replTools = []string{
	"execute_python", "python_start", "python_health", "python_run", "python_cancel",
	"python_session_open", "python_session_close", "python_session_list",
	"python_session_inspect", "python_session_export", "python_session_restore", "python_execute_file",
	"artifact_create", "artifact_read", "artifact_save", "artifact_delete", "artifact_forward",
}

// TestInterop builds repl-mcp once and runs every third-party client and server
// against it, in parallel subtests.
func TestInterop(t *testing.T) {
	s := newSuite(t)
	t.Run("InspectorCLI", func(t *testing.T) { t.Parallel(); s.testInspector(t) })
	for _, mode := range []string{"legacy", "auto", "2026-07-28"} {
		t.Run("TypeScriptSDK/"+mode, func(t *testing.T) {
			t.Parallel()
			s.testClient(t, mode, s.node, s.path("clients", "ts_client.mjs"))
		})
		t.Run("PythonSDK/"+mode, func(t *testing.T) {
			t.Parallel()
			s.testClient(t, mode, s.venvPython, s.path("clients", "py_client.py"))
		})
	}
	t.Run("Broker/FastMCPStdio", func(t *testing.T) { t.Parallel(); s.testFastMCP(t) })
	t.Run("Broker/EverythingStdio", func(t *testing.T) { t.Parallel(); s.testEverything(t, false) })
	t.Run("Broker/EverythingHTTP", func(t *testing.T) { t.Parallel(); s.testEverything(t, true) })
}

// testInspector runs the inspector CLI against repl-mcp: tools/list, then a
// tools/call of execute_python. inspector-cli 1.0.x reads ../package.json relative to
// its working directory, so it runs from interop/clients, never interop/ itself.
func (s *suite) testInspector(t *testing.T) {
	cli := s.path("node_modules", "@modelcontextprotocol", "inspector-cli", "build", "cli.js")
	inspect := func(args ...string) map[string]any {
		t.Helper()
		full := append([]string{cli, "--cli", s.replMCP, "--python", s.python}, args...)
		out := s.run(t, 60*time.Second, s.path("clients"), s.node, full...)
		var v map[string]any
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("inspector printed no JSON result (%v):\n%s", err, out)
		}
		return v
	}

	var list struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	remarshal(t, inspect("--method", "tools/list"), &list)
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	if !reflect.DeepEqual(names, replTools) {
		t.Errorf("tools/list = %q\nwant %q", names, replTools)
	}

	// The CLI parses a key=value argument as JSON when it can, so the code must not
	// be valid JSON on its own.
	var call struct {
		IsError bool `json:"isError"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		StructuredContent struct {
			Success bool   `json:"success"`
			Stdout  string `json:"stdout"`
			Value   any    `json:"value"`
			State   string `json:"state"`
		} `json:"structuredContent"`
	}
	remarshal(t, inspect("--method", "tools/call", "--tool-name", "execute_python",
		"--tool-arg", `code=print("from the inspector"); sum(range(10)) * 2`), &call)
	sc := call.StructuredContent
	if call.IsError || !sc.Success || sc.Value != 90.0 || sc.Stdout != "from the inspector\n" || sc.State != "preserved" {
		t.Errorf("execute_python through the inspector: %+v", call)
	}
	if len(call.Content) == 0 || !strings.HasSuffix(call.Content[0].Text, "90") {
		t.Errorf("text content = %+v, want it to end with the value 90", call.Content)
	}
}

// clientSummary is what clients/ts_client.mjs and clients/py_client.py print.
type clientSummary struct {
	Error           string   `json:"error"`
	SDK             string   `json:"sdk"`
	Mode            string   `json:"mode"`
	ProtocolVersion string   `json:"protocolVersion"`
	Tools           []string `json:"tools"`
	Health          struct {
		IsError   bool   `json:"isError"`
		SessionID string `json:"session_id"`
	} `json:"health"`
	First, Second, Failure execSummary
	Progress               progressSummary
}

type execSummary struct {
	IsError   bool    `json:"isError"`
	Success   bool    `json:"success"`
	Value     any     `json:"value"`
	Error     *string `json:"error"`
	SessionID string  `json:"session_id"`
	Text      string  `json:"text"`
}

// testClient runs an SDK client script (ts_client.mjs or py_client.py) against
// repl-mcp in mode and checks its summary.
func (s *suite) testClient(t *testing.T, mode, interpreter, script string) {
	out := s.run(t, 90*time.Second, t.TempDir(), interpreter, script, mode, s.replMCP, "--python", s.python)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var sum clientSummary
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
		t.Fatalf("%s printed no summary (%v):\n%s", filepath.Base(script), err, out)
	}
	if sum.Error != "" {
		t.Fatalf("%s failed:\n%s", filepath.Base(script), sum.Error)
	}
	t.Logf("%s, mode %s: negotiated %s", sum.SDK, sum.Mode, sum.ProtocolVersion)

	wantVersion := "2026-07-28"
	if mode == "legacy" {
		wantVersion = "2025-11-25"
	}
	if sum.ProtocolVersion != wantVersion {
		t.Errorf("negotiated protocol %q, want %q", sum.ProtocolVersion, wantVersion)
	}
	if !reflect.DeepEqual(sum.Tools, replTools) {
		t.Errorf("tools = %q\nwant %q", sum.Tools, replTools)
	}
	sid := sum.Health.SessionID
	if sum.Health.IsError || sid == "" {
		t.Fatalf("python_health: %+v", sum.Health)
	}
	for _, c := range []struct {
		name string
		got  execSummary
		want float64
	}{{"first", sum.First, 21}, {"second (the variable the first set)", sum.Second, 42}} {
		if c.got.IsError || !c.got.Success || c.got.Value != c.want || c.got.SessionID != sid || c.got.Error != nil {
			t.Errorf("%s execute_python = %+v, want value %v in session %s", c.name, c.got, c.want, sid)
		}
	}
	f := sum.Failure
	if !f.IsError || f.Success || f.Error == nil || !strings.Contains(*f.Error, "ValueError: interop boom") || !strings.Contains(f.Text, "ValueError: interop boom") {
		t.Errorf("a raising cell = %+v, want isError with the traceback", f)
	}
	checkProgress(t, sum.Progress)
}

// testFastMCP registers servers/fastmcp_server.py, run by the venv's Python, as a
// stdio downstream server and calls its tools from one cell.
func (s *suite) testFastMCP(t *testing.T) {
	marker := markerFor(t)
	dir := project(t, map[string]any{
		"fast": map[string]any{
			"command": s.venvPython,
			"args":    []string{s.path("servers", "fastmcp_server.py")},
			"env":     map[string]string{"INTEROP_MARKER": marker},
		},
	})
	r := s.startRepl(t, dir)
	var got struct {
		Greet      string         `json:"greet"`
		Structured map[string]any `json:"structured"`
		Failure    string         `json:"failure"`
	}
	remarshal(t, r.execute(s.cell(t, "cell_fastmcp.py"), 60*time.Second), &got)
	want := map[string]any{"count": 3.0, "total": 7.5, "mean": 2.5, "labels": []any{"x0", "x1", "x2"}}
	const failure = "Error executing tool fail: refused: on purpose"
	if got.Greet != "Hello, repl-mcp!" || !reflect.DeepEqual(got.Structured, want) || got.Failure != failure {
		t.Errorf("cell value = %+v, want greet, structured %v and failure %q", got, want, failure)
	}
	s.closeAndCheckReaped(t, r, marker)
}

// testEverything registers server-everything as a downstream server, over stdio
// (node with the package's entry file) or Streamable HTTP, and runs one cell.
func (s *suite) testEverything(t *testing.T, overHTTP bool) {
	marker := markerFor(t)
	entry := map[string]any{
		"command": s.node,
		"args":    []string{s.everythingEntry(), "stdio"},
		"env":     map[string]string{"INTEROP_MARKER": marker},
	}
	var httpLogs *testproc.Tail
	if overHTTP {
		var url string
		url, httpLogs = s.startEverythingHTTP(t)
		entry = map[string]any{"type": "http", "url": url}
	}
	r := s.startRepl(t, project(t, map[string]any{"everything": entry}))
	var got struct {
		Tools           int            `json:"tools"`
		Echo            string         `json:"echo"`
		Structured      map[string]any `json:"structured"`
		Cancelled       []string       `json:"cancelled"`
		After           string         `json:"after"`
		CancelSeconds   float64        `json:"cancel_seconds"`
		DeadlineSeconds float64        `json:"deadline_seconds"`
	}
	remarshal(t, r.execute(s.cell(t, "cell_everything.py"), 60*time.Second), &got)
	wantWeather := map[string]any{"temperature": 36.0, "conditions": "Light rain / drizzle", "humidity": 82.0}
	if got.Echo != "Echo: hello from repl-mcp" || !reflect.DeepEqual(got.Structured, wantWeather) ||
		!reflect.DeepEqual(got.Cancelled, []string{"outcome_unknown", "outcome_unknown"}) || got.After != "Echo: still here" {
		t.Errorf("cell value = %+v", got)
	}
	t.Logf("%d tools; a cancelled acall ended in %.3f s, a 1 s call timeout in %.3f s", got.Tools, got.CancelSeconds, got.DeadlineSeconds)
	if !overHTTP {
		// server-everything ignores stdin EOF: the broker must end it on close.
		s.closeAndCheckReaped(t, r, marker)
		return
	}
	// Over HTTP the broker ends its MCP session (DELETE) when repl-mcp closes.
	r.close()
	testwait.Until(t, 10*time.Second, "server-everything to log the session's termination", func() bool {
		return strings.Contains(httpLogs.String(), "Received session termination request")
	})
}

// closeAndCheckReaped closes repl-mcp and requires every process of the downstream
// server registered with marker to be gone within 10 s.
func (s *suite) closeAndCheckReaped(t *testing.T, r *repl, marker string) {
	t.Helper()
	if len(markedProcesses(marker)) == 0 {
		t.Fatalf("no live process carries INTEROP_MARKER=%s before close: the marker check would prove nothing", marker)
	}
	r.close()
	testwait.Until(t, 10*time.Second, "the downstream server to be gone after repl-mcp closed", func() bool {
		return len(markedProcesses(marker)) == 0
	})
}

// markerFor is a value unique to this test run and subtest.
func markerFor(t *testing.T) string {
	return fmt.Sprintf("%d-%d-%s", os.Getpid(), time.Now().UnixNano(), strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()))
}

// cell reads a cell from testdata/.
func (s *suite) cell(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(s.path("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// run runs a client to completion in dir, bounded by d, and returns its stdout; a
// failure shows both streams.
func (s *suite) run(t *testing.T, d time.Duration, dir, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	start := time.Now()
	stdout, stderr, err := runGroup(ctx, dir, nil, name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\nstdout:\n%s\nstderr:\n%s", filepath.Base(name), strings.Join(args, " "), err, stdout, stderr)
	}
	t.Logf("%s %s: %v", filepath.Base(name), filepath.Base(args[0]), time.Since(start).Round(time.Millisecond))
	return stdout
}
