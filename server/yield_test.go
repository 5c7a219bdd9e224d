package server

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An execution that yields answers with the running branch of the execution
// schema (checked by call against the published outputSchema), for
// execute_python and python_execute_file alike, and python_run goes on from it.
func TestYieldedExecutionOnTheWire(t *testing.T) {
	w := startWire(t)
	w.write("gated.py", "import os, time\nprint('waiting', flush=True)\nwhile not os.path.exists('go'):\n    time.sleep(0.02)\nprint('through')\n")
	sid := w.succeed(t, "execute_python", map[string]any{"code": "1"})["session_id"]
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"execute_python", map[string]any{"code": "exec(open('gated.py').read())", "yield_after": 0.5}},
		{"python_execute_file", map[string]any{"session_id": sid, "path": "gated.py", "yield_after": 0.5}},
	} {
		t.Run(c.tool, func(t *testing.T) {
			sc := w.succeed(t, c.tool, c.args)
			if sc["status"] != "running" || sc["success"] != nil || sc["stdout_start"] != 0.0 {
				t.Fatalf("not a running run from byte 0: %v", sc)
			}
			run := sc["run_id"]
			w.write("go", "")
			done := w.succeed(t, "python_run", map[string]any{"run_id": run, "wait": 30, "stdout_offset": sc["stdout_end"], "stderr_offset": 0})
			// Each byte once: what the yield showed, then what followed.
			if whole, _ := done["stdout"].(string); done["success"] != true || sc["stdout"].(string)+whole != "waiting\nthrough\n" {
				t.Fatalf("the yielded run's rest after %q: %v", sc["stdout"], done)
			}
			w.succeed(t, "execute_python", map[string]any{"code": "import os; os.remove('go')"})
		})
	}
}

// The execution schema declares a property for every field any of its shapes (the
// result, the running run, a failure before any run) requires, so that a client building types from it knows each one.
func TestExecutionSchemaDeclaresWhatItRequires(t *testing.T) {
	type branch struct {
		Required   []string                   `json:"required"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	var schema struct {
		OneOf []branch `json:"oneOf"`
	}
	published := declare(t, (&Server{}).executePythonTool()).def.OutputSchema.(json.RawMessage)
	if err := json.Unmarshal(published, &schema); err != nil {
		t.Fatal(err)
	}
	if len(schema.OneOf) != 3 || !slices.Contains(schema.OneOf[1].Required, "status") ||
		!slices.Equal(schema.OneOf[2].Required, []string{"error"}) {
		t.Fatalf("the schema has no running shape or no failure's: %s", published)
	}
	for i, b := range schema.OneOf {
		for _, name := range b.Required {
			if _, ok := b.Properties[name]; !ok {
				t.Errorf("oneOf[%d]: required field %q has no property", i, name)
			}
		}
	}
}

// yield_after's default: 50 s for the text form's clients, none for the others, the
// server's --yield-after for all; a call's own yield_after wins. The python_run wait
// a text proposes is that yield, at most 45 s.
func TestYieldAfterDefaults(t *testing.T) {
	callFrom := func(client string) context.Context {
		req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Meta: mcp.Meta{
			mcp.MetaKeyClientInfo: map[string]any{"name": client, "version": "1"},
		}}}
		return withCallRequest(t.Context(), req)
	}
	given, flag := 2.5, 7*time.Second
	for _, c := range []struct {
		server  *Server
		client  string
		given   *float64
		want    time.Duration
		wantRun time.Duration
	}{
		{&Server{}, "claude-code", nil, 50 * time.Second, 45 * time.Second},
		{&Server{}, "codex-mcp-client", nil, 50 * time.Second, 45 * time.Second},
		{&Server{}, "gemini-cli-mcp-client", nil, 50 * time.Second, 45 * time.Second},
		{&Server{}, "opencode", nil, 50 * time.Second, 45 * time.Second},
		{&Server{}, "mcp-inspector", nil, 0, 45 * time.Second},
		{&Server{}, "mcp-inspector", &given, 2500 * time.Millisecond, 2500 * time.Millisecond},
		{&Server{yieldDefault: &flag}, "mcp-inspector", nil, flag, flag},
		{&Server{yieldDefault: &flag}, "claude-code", &given, 2500 * time.Millisecond, 2500 * time.Millisecond},
		{&Server{format: FormatStructured}, "claude-code", nil, 0, 45 * time.Second},
	} {
		got := c.server.yieldAfter(callFrom(c.client), c.given)
		if got != c.want || proposedWait(got) != c.wantRun {
			t.Errorf("%s (format %q, --yield-after %v, yield_after %v): yield %v and wait %v, want %v and %v",
				c.client, c.server.format, c.server.yieldDefault, c.given, got, proposedWait(got), c.want, c.wantRun)
		}
	}
}

// TestYieldAfterTasks: a call of a tool that runs a cell and declares the tasks
// extension leaves at the task threshold, unless it passes yield_after; other tools'
// calls, undeclared calls and a server with --task-after 0 keep the yield
// (docs/contract.md §2.8).
func TestYieldAfterTasks(t *testing.T) {
	call := func(tool string, declared bool) context.Context {
		caps := map[string]any{}
		if declared {
			caps["extensions"] = map[string]any{tasksExtension: map[string]any{}}
		}
		return withCallRequest(t.Context(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: tool, Meta: mcp.Meta{
			mcp.MetaKeyClientInfo:         map[string]any{"name": "claude-code", "version": "1"},
			mcp.MetaKeyClientCapabilities: caps,
		}}})
	}
	given := 2.5
	tasks := &Server{tasks: newTaskTable(3*time.Second, time.Second)}
	off := &Server{tasks: newTaskTable(0, time.Second)}
	for _, c := range []struct {
		server   *Server
		tool     string
		declared bool
		given    *float64
		want     time.Duration
	}{
		{tasks, "execute_python", true, nil, 3 * time.Second},
		{tasks, "python_execute_file", true, nil, 3 * time.Second},
		{tasks, "execute_python", true, &given, 2500 * time.Millisecond},
		{tasks, "execute_python", false, nil, textFormYield},
		{tasks, "python_run", true, nil, textFormYield},
		{off, "execute_python", true, nil, textFormYield},
	} {
		if got := c.server.yieldAfter(call(c.tool, c.declared), c.given); got != c.want {
			t.Errorf("%s (declared %v, threshold %v, yield_after %v): leaves after %v, want %v", c.tool, c.declared, c.server.tasks.after, c.given, got, c.want)
		}
	}
}
