package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/iota-uz/repl-mcp/internal/testwait"
	"github.com/iota-uz/repl-mcp/server/transport"
)

// taskMeta is the _meta of a 2026-07-28 request from client name, declaring the
// tasks extension.
func taskMeta(name string) map[string]any {
	return map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": name, "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": map[string]any{"extensions": map[string]any{tasksExtension: map[string]any{}}},
	}
}

// taskRequest is a raw 2026-07-28 request of the tasks extension, with its headers;
// id is written as it stands.
func taskRequest(id, method, taskID, client string) (http.Header, string) {
	h := http.Header{}
	h.Set("Mcp-Protocol-Version", "2026-07-28")
	h.Set("Mcp-Method", method)
	h.Set("Mcp-Name", taskID)
	params, _ := json.Marshal(map[string]any{"taskId": taskID, "_meta": taskMeta(client)})
	return h, `{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `","params":` + string(params) + `}`
}

// TestHTTPTasks: the tasks extension over Streamable HTTP (docs/contract.md §2.8):
// a stateless call that declares it becomes a task; tasks/get answers with the id as
// sent, needs Mcp-Method and Mcp-Name as the extension says, and works on a stateful
// MCP session too; a task's marks of what was delivered are its own client's: another
// client's python_run reads the run whole.
func TestHTTPTasks(t *testing.T) {
	after := 300 * time.Millisecond
	url, _ := startHTTPServer(t, transport.HTTPConfig{NoAuth: true}, func(c *Config) { c.TaskAfter, c.TaskPoll = &after, 50*time.Millisecond })
	post := func(h http.Header, body string) (int, map[string]any) {
		t.Helper()
		status, _, msgs, err := rawPost(t, t.Context(), url, h, body)
		if err != nil || len(msgs) != 1 {
			t.Fatalf("POST %s: status %d, %v, %v", body, status, msgs, err)
		}
		return status, msgs[0]
	}
	call := func(id int, client, tool string, args map[string]any) map[string]any {
		t.Helper()
		h, _ := statelessCall(id, tool, args)
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call",
			"params": map[string]any{"name": tool, "arguments": args, "_meta": taskMeta(client)}})
		status, msg := post(h, string(body))
		res, _ := msg["result"].(map[string]any)
		if status != 200 || res == nil {
			t.Fatalf("%s: status %d, %v", tool, status, msg)
		}
		return res
	}
	sid := call(1, "raw", "python_health", map[string]any{})["structuredContent"].(map[string]any)["server"].(map[string]any)["session_id"].(string)
	// The worker starts, in a call that declares no tasks: a cold start counts.
	if status, msg := post(statelessCall(2, "execute_python", map[string]any{"session_id": sid, "code": "1"})); status != 200 || msg["result"].(map[string]any)["isError"] != false {
		t.Fatalf("the first cell: %d %v", status, msg)
	}
	created := call(3, "raw", "execute_python", map[string]any{"session_id": sid, "code": "import time\nprint('one', flush=True)\ntime.sleep(1)\nprint('two')"})
	tid, _ := created["taskId"].(string)
	if created["resultType"] != "task" || tid == "" || created["status"] != "working" {
		t.Fatalf("a long cell's call: %v, want a task", created)
	}

	// The id as sent, beyond what a float64 holds.
	h, body := taskRequest("12345678901234567890123", methodTasksGet, tid, "raw")
	_, raw, _, err := postMessages(t, t.Context(), url, h, body)
	if err != nil || !strings.HasPrefix(string(raw), `{"id":12345678901234567890123,`) && !strings.Contains(string(raw), `"id":12345678901234567890123`) {
		t.Fatalf("tasks/get with a large id: %s, %v", raw, err)
	}

	// The headers the extension asks of a client.
	h, body = taskRequest("4", methodTasksGet, tid, "raw")
	h.Del("Mcp-Name")
	if status, msg := post(h, body); status != http.StatusBadRequest || msg["error"].(map[string]any)["code"] != -32020.0 {
		t.Errorf("tasks/get without Mcp-Name: %d %v, want 400 and -32020", status, msg)
	}
	h.Set("Mcp-Name", "another")
	if status, msg := post(h, body); status != http.StatusBadRequest || !strings.Contains(msg["error"].(map[string]any)["message"].(string), "does not match") {
		t.Errorf("tasks/get with another Mcp-Name: %d %v, want 400", status, msg)
	}
	h.Set("Mcp-Name", tid)
	h.Set("Mcp-Method", "tasks/cancel")
	if status, _ := post(h, body); status != http.StatusBadRequest {
		t.Errorf("tasks/get with Mcp-Method tasks/cancel: %d, want 400", status)
	}

	// Another client reads the running run whole; the task's own client's python_run
	// moves its mark.
	other := call(5, "another", "python_run", map[string]any{"session_id": sid, "run_id": tid})
	if sc := other["structuredContent"].(map[string]any); sc["stdout"] != "one\n" || sc["stdout_start"] != 0.0 {
		t.Fatalf("another client's python_run: %v", sc)
	}
	own := call(6, "raw", "python_run", map[string]any{"session_id": sid, "run_id": tid})
	if sc := own["structuredContent"].(map[string]any); sc["stdout"] != "one\n" {
		t.Fatalf("the task's client's python_run: %v", sc)
	}
	var state map[string]any
	end := time.Now().Add(testwait.Bound(t, 30*time.Second))
	for {
		h, body := taskRequest("7", methodTasksGet, tid, "raw")
		status, msg := post(h, body)
		state, _ = msg["result"].(map[string]any)
		if status != 200 || state == nil {
			t.Fatalf("tasks/get: %d %v", status, msg)
		}
		if state["status"] != "working" || time.Now().After(end) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	result, _ := state["result"].(map[string]any)
	if state["status"] != "completed" || result == nil {
		t.Fatalf("the task: %v, want completed", state)
	}
	if sc := result["structuredContent"].(map[string]any); sc["stdout"] != "two\n" || sc["stdout_start"] != 4.0 {
		t.Errorf("the task's result: %v, want the output its client had not read", sc)
	}
	if sc := call(8, "another", "python_run", map[string]any{"session_id": sid, "run_id": tid})["structuredContent"].(map[string]any); sc["stdout"] != "one\ntwo\n" {
		t.Errorf("another client's python_run after the task: %v, want the whole output", sc)
	}

	// A stateful MCP session: initialize, then tasks/get under its session id.
	status, hdr, msgs, err := rawPost(t, t.Context(), url, nil, initializeBody)
	if err != nil || status != 200 || len(msgs) != 1 || hdr.Get("Mcp-Session-Id") == "" {
		t.Fatalf("initialize: %d %v %v", status, msgs, err)
	}
	h = http.Header{}
	h.Set("Mcp-Session-Id", hdr.Get("Mcp-Session-Id"))
	h.Set("Mcp-Protocol-Version", "2025-11-25")
	params, _ := json.Marshal(map[string]any{"taskId": tid, "_meta": map[string]any{
		"io.modelcontextprotocol/clientCapabilities": map[string]any{"extensions": map[string]any{tasksExtension: map[string]any{}}}}})
	if status, msg := post(h, `{"jsonrpc":"2.0","id":"s","method":"tasks/get","params":`+string(params)+`}`); status != 200 || msg["id"] != "s" || msg["result"].(map[string]any)["status"] != "completed" {
		t.Errorf("tasks/get on a stateful session: %d %v", status, msg)
	}
}
