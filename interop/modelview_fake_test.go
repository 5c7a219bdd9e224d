package interop

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/png"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The fake model APIs on their own, without a CLI: each request shape the CLIs send
// (measured with Claude Code 2.1.332 and Codex 0.171.0), and the requests they must
// refuse. TestModelView's Harness subtests then check the same fakes against the real
// CLIs.

const fakeTestSession = "0b7a2f4e-1c3d-4e5f-8a9b-0c1d2e3f4a5b"

// fakeTestSteps: a call, python_health, a call with the learned session, and a step
// derived from the first result that skips when it names no artifact.
func fakeTestSteps() []step {
	return []step{
		{id: "hello", server: "repl", tool: "execute_python", args: map[string]any{"code": "print(1)"}},
		{id: "health", server: "repl", tool: "python_health", args: map[string]any{}},
		{id: "again", server: "repl", tool: "execute_python", session: true, args: map[string]any{"code": "2"}},
		{id: "read", server: "repl", tool: "artifact_read", derive: func(g map[string]*given) (map[string]any, string) {
			if m := artifactIDPattern.FindStringSubmatch(g["hello"].Text()); m != nil {
				return map[string]any{"id": m[1]}, ""
			}
			return nil, "no artifact"
		}},
	}
}

// tinyPNG is a real 3×2 PNG, base64.
func tinyPNG(t *testing.T) string {
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewRGBA(image.Rect(0, 0, 3, 2))); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b.Bytes())
}

// post sends a JSON body to a handler and returns the status and the SSE events
// (name → data) or the plain body.
func post(t *testing.T, h http.Handler, path string, body any) (int, []map[string]any, string) {
	t.Helper()
	data, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, bytes.NewReader(data)))
	var events []map[string]any
	if strings.HasPrefix(rec.Header().Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(strings.NewReader(rec.Body.String()))
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok && d != "[DONE]" {
				var ev map[string]any
				if err := json.Unmarshal([]byte(d), &ev); err != nil {
					t.Fatalf("bad SSE data %q: %v", d, err)
				}
				events = append(events, ev)
			}
		}
	}
	return rec.Code, events, rec.Body.String()
}

// claudeCall is the tool_use the fake's SSE answer makes: its id, name and input.
func claudeCall(t *testing.T, events []map[string]any) (id, name string, input map[string]any) {
	t.Helper()
	for _, ev := range events {
		switch ev["type"] {
		case "content_block_start":
			cb := ev["content_block"].(map[string]any)
			if cb["type"] == "tool_use" {
				id, name = cb["id"].(string), cb["name"].(string)
			}
		case "content_block_delta":
			d := ev["delta"].(map[string]any)
			if d["type"] == "input_json_delta" {
				if err := json.Unmarshal([]byte(d["partial_json"].(string)), &input); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	return id, name, input
}

func TestFakeAnthropicAPI(t *testing.T) {
	m := newFakeModel("claude", "the prompt", fakeTestSteps())
	api := anthropicAPI{m}
	user := map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "<system-reminder>x</system-reminder>"}, map[string]any{"type": "text", "text": "the prompt"}}}
	tools := []any{map[string]any{"name": "ToolSearch"}}
	all := append(tools, map[string]any{"name": "mcp__repl__execute_python"}, map[string]any{"name": "mcp__repl__python_health"}, map[string]any{"name": "mcp__repl__artifact_read"})

	// Deferred tools are loaded with ToolSearch first.
	_, events, _ := post(t, api, "/v1/messages?beta=true", map[string]any{"model": "m", "stream": true, "tools": tools, "messages": []any{user}})
	if id, name, input := claudeCall(t, events); id != "toolu_mvsearch_hello" || name != "ToolSearch" || input["query"] != "select:mcp__repl__execute_python" {
		t.Fatalf("first call = %s %s %v, want ToolSearch selecting execute_python", id, name, input)
	}
	if last := events[len(events)-2]; last["delta"].(map[string]any)["stop_reason"] != "tool_use" {
		t.Errorf("message_delta = %v, want stop_reason tool_use", last)
	}

	// Once loaded, the step itself, with no session_id.
	_, events, _ = post(t, api, "/v1/messages", map[string]any{"model": "m", "stream": true, "tools": all, "messages": []any{user}})
	id, name, input := claudeCall(t, events)
	if id != "toolu_mv_hello" || name != "mcp__repl__execute_python" || input["code"] != "print(1)" || input["session_id"] != nil {
		t.Fatalf("call = %s %s %v", id, name, input)
	}

	// Its result: text, an image with Claude Code's note, the error flag.
	conv := []any{user,
		map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": id, "name": name, "input": input}}},
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "is_error": true, "content": []any{
			map[string]any{"type": "text", "text": "1\nartifact 9c3e1a2b-4d5f-4a6b-8c7d-9e0f1a2b3c4d"},
			map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": tinyPNG(t)}},
			map[string]any{"type": "text", "text": "[Image: source: /tmp/x.png]"},
		}}}},
	}
	_, events, _ = post(t, api, "/v1/messages", map[string]any{"model": "m", "stream": true, "tools": all, "messages": conv})
	id, name, input = claudeCall(t, events)
	if id != "toolu_mv_health" || name != "mcp__repl__python_health" {
		t.Fatalf("after hello: %s %s", id, name)
	}
	g := m.records().given["hello"]
	if g == nil || g.Text() != "1\nartifact 9c3e1a2b-4d5f-4a6b-8c7d-9e0f1a2b3c4d" || g.IsError == nil || !*g.IsError ||
		len(g.Envelope) != 1 || len(g.Images) != 1 || g.Images[0].Width != 3 || g.Images[0].Height != 2 || g.Images[0].Format != "png" {
		t.Fatalf("recorded %+v", g)
	}

	// python_health's result as a plain string teaches the session id.
	conv = append(conv,
		map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": id, "name": name, "input": input}}},
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": `{"server":{"session_id":"` + fakeTestSession + `"}}`}}},
	)
	_, events, _ = post(t, api, "/v1/messages", map[string]any{"model": "m", "stream": true, "tools": all, "messages": conv})
	id, _, input = claudeCall(t, events)
	if id != "toolu_mv_again" || input["session_id"] != fakeTestSession {
		t.Fatalf("third call %s %v, want session_id %s", id, input, fakeTestSession)
	}
	if h := m.records().given["health"]; h.IsError != nil || h.Text() == "" {
		t.Errorf("health recorded %+v", h)
	}

	// The derived step reads the artifact id from the first result.
	conv = append(conv,
		map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": id, "name": "mcp__repl__execute_python", "input": input}}},
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": "2"}}},
	)
	_, events, _ = post(t, api, "/v1/messages", map[string]any{"model": "m", "stream": true, "tools": all, "messages": conv})
	if id, _, input := claudeCall(t, events); id != "toolu_mv_read" || input["id"] != "9c3e1a2b-4d5f-4a6b-8c7d-9e0f1a2b3c4d" {
		t.Fatalf("derived call %s %v", id, input)
	}

	// Requests outside the script are refused, and say which.
	if code, _, body := post(t, api, "/v1/messages", map[string]any{"model": "haiku", "stream": true, "messages": []any{map[string]any{"role": "user", "content": "summarize"}}}); code != http.StatusNotFound || !strings.Contains(body, "outside the scripted conversation") {
		t.Errorf("a side request: %d %s", code, body)
	}
	rec := httptest.NewRecorder()
	api.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/models", nil))
	if code, _, _ := post(t, api, "/v1/messages/count_tokens", map[string]any{}); code != http.StatusOK || rec.Code != http.StatusNotFound {
		t.Errorf("count_tokens %d, GET /v1/models %d", code, rec.Code)
	}
	r := m.records()
	if len(r.unexpected) != 2 || !strings.Contains(r.unexpected[1], "GET /v1/models") || len(r.handled) != 1 || len(r.problems) != 0 {
		t.Errorf("unexpected %q, handled %q, problems %q", r.unexpected, r.handled, r.problems)
	}
}

func TestFakeResponsesAPI(t *testing.T) {
	m := newFakeModel("codex", "the prompt", fakeTestSteps())
	api := responsesAPI{m}
	user := map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": "the prompt"}}}
	item := func(events []map[string]any) map[string]any {
		for _, ev := range events {
			if ev["type"] == "response.output_item.done" {
				return ev["item"].(map[string]any)
			}
		}
		t.Fatalf("no output item in %v", events)
		return nil
	}

	// MCP tools deferred: tool_search first.
	_, events, _ := post(t, api, "/v1/responses", map[string]any{"model": "gpt-5.5", "stream": true, "input": []any{user}, "tools": []any{map[string]any{"type": "tool_search"}}})
	search := item(events)
	if search["type"] != "tool_search_call" || search["call_id"] != "ts_mv_hello" || events[len(events)-1]["type"] != "response.completed" {
		t.Fatalf("first item %v", search)
	}

	// After the search, the call in the namespace the search returned.
	ns := map[string]any{"type": "namespace", "name": "mcp__repl", "tools": []any{
		map[string]any{"type": "function", "name": "execute_python"}, map[string]any{"type": "function", "name": "python_health"}}}
	input := []any{user, search, map[string]any{"type": "tool_search_output", "call_id": "ts_mv_hello", "tools": []any{ns}}}
	_, events, _ = post(t, api, "/v1/responses", map[string]any{"model": "gpt-5.5", "stream": true, "input": input})
	call := item(events)
	if call["type"] != "function_call" || call["namespace"] != "mcp__repl" || call["name"] != "execute_python" || call["call_id"] != "call_mv_hello" || call["arguments"] != `{"code":"print(1)"}` {
		t.Fatalf("call %v", call)
	}

	// An array output: the envelope as its own part, text, an image.
	input = append(input, call, map[string]any{"type": "function_call_output", "call_id": "call_mv_hello", "output": []any{
		map[string]any{"type": "input_text", "text": "Wall time: 0.0088 seconds\nOutput:"},
		map[string]any{"type": "input_text", "text": "1"},
		map[string]any{"type": "input_image", "image_url": "data:image/png;base64," + tinyPNG(t), "detail": "original"},
	}})
	_, events, _ = post(t, api, "/v1/responses", map[string]any{"model": "gpt-5.5", "stream": true, "input": input})
	call = item(events)
	if call["name"] != "python_health" {
		t.Fatalf("after hello: %v", call)
	}
	g := m.records().given["hello"]
	if g == nil || g.Text() != "1" || g.IsError != nil || len(g.Envelope) != 1 || len(g.Images) != 1 || g.Images[0].Width != 3 || g.Tool != "mcp__repl.execute_python" {
		t.Fatalf("recorded %+v", g)
	}

	// A string output with the envelope in front; the session id it shows is used.
	input = append(input, call, map[string]any{"type": "function_call_output", "call_id": "call_mv_health",
		"output": "Wall time: 0.1 seconds\nOutput:\n" + `{"server":{"session_id":"` + fakeTestSession + `"}}`})
	_, events, _ = post(t, api, "/v1/responses", map[string]any{"model": "gpt-5.5", "stream": true, "input": input})
	call = item(events)
	var args map[string]any
	json.Unmarshal([]byte(call["arguments"].(string)), &args)
	if call["call_id"] != "call_mv_again" || args["session_id"] != fakeTestSession {
		t.Fatalf("third call %v", call)
	}
	if h := m.records().given["health"]; !strings.HasPrefix(h.Text(), `{"server"`) || len(h.Envelope) != 1 {
		t.Errorf("health recorded %+v", h)
	}

	// The derived step finds no artifact id: recorded as not run; artifact_read is not
	// offered, and the script ends with the final answer.
	input = append(input, call, map[string]any{"type": "function_call_output", "call_id": "call_mv_again", "output": "2"})
	_, events, _ = post(t, api, "/v1/responses", map[string]any{"model": "gpt-5.5", "stream": true, "input": input})
	if done := item(events); done["type"] != "message" {
		t.Fatalf("final item %v", done)
	}
	r := m.records()
	if r.given["read"] == nil || r.given["read"].Skipped != "no artifact" || !r.finished || len(r.missing(fakeTestSteps())) != 0 {
		t.Errorf("records: read %+v, finished %v, missing %v", r.given["read"], r.finished, r.missing(fakeTestSteps()))
	}

	// Outside the script: refused, and said.
	if code, _, body := post(t, api, "/v1/chat/completions", map[string]any{}); code != http.StatusNotFound || !strings.Contains(body, "unexpected request POST /v1/chat/completions") {
		t.Errorf("chat completions: %d %s", code, body)
	}
	if code, _, _ := post(t, api, "/v1/responses", map[string]any{"model": "gpt-5.5", "stream": true, "input": []any{}}); code != http.StatusNotFound {
		t.Errorf("a side request: %d", code)
	}
	if r := m.records(); len(r.unexpected) != 2 || len(r.problems) != 0 {
		t.Errorf("unexpected %q, problems %q", r.unexpected, r.problems)
	}

	// Code mode is a problem of the run, named.
	cm := newFakeModel("codex", "the prompt", fakeTestSteps())
	post(t, responsesAPI{cm}, "/v1/responses", map[string]any{"model": "gpt-5.5", "stream": true, "input": []any{user}, "tools": []any{map[string]any{"type": "custom", "name": "exec"}}})
	if p := cm.records().problems; len(p) != 1 || !strings.Contains(p[0], "code mode") {
		t.Errorf("problems with code mode on: %q", p)
	}
}

// A call Claude Code moved to the background: the fake keeps the conversation going
// (a ToolSearch) until the task's notification arrives, in a system message here, and
// records what it delivered as what the model read.
func TestFakeAnthropicBackgroundTask(t *testing.T) {
	m := newFakeModel("claude", "the prompt", []step{{id: "slow", server: "repl", tool: "execute_python", args: map[string]any{"code": "1"}}})
	api := anthropicAPI{m}
	all := []any{map[string]any{"name": "ToolSearch"}, map[string]any{"name": "mcp__repl__execute_python"}}
	conv := []any{
		map[string]any{"role": "user", "content": "the prompt"},
		map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "toolu_mv_slow", "name": "mcp__repl__execute_python", "input": map[string]any{"code": "1"}}}},
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "toolu_mv_slow", "content": []any{map[string]any{"type": "text",
			"text": `MCP tool "repl/execute_python" is still running after 2s. It was moved to the background as task kabc123 and keeps running; you'll receive a notification with the result when it completes.`}}}}},
	}
	_, events, _ := post(t, api, "/v1/messages", map[string]any{"model": "m", "stream": true, "tools": all, "messages": conv})
	if id, name, _ := claudeCall(t, events); name != "ToolSearch" || !strings.HasPrefix(id, claudeKeepAlivePrefix) {
		t.Fatalf("while the task runs: %s %s, want a keep-alive ToolSearch", id, name)
	}
	if _, ok := m.records().given["slow"]; ok {
		t.Fatal("the notice was recorded as what the model read")
	}
	conv = append(conv, map[string]any{"role": "system", "content": "[SYSTEM NOTIFICATION - NOT USER INPUT]\n\n<task-notification>\n<task-id>kabc123</task-id>\n" +
		"<status>completed</status>\n<summary>done</summary>\n<result>\n1\n[ok; generation 1]\n</result>\n</task-notification>"})
	_, events, _ = post(t, api, "/v1/messages", map[string]any{"model": "m", "stream": true, "tools": all, "messages": conv})
	if id, name, _ := claudeCall(t, events); id != "" || name != "" {
		t.Fatalf("after the notification: %s %s, want the final answer", id, name)
	}
	r := m.records()
	g := r.given["slow"]
	if g == nil || g.Text() != "1\n[ok; generation 1]" || !strings.Contains(g.Background, "kabc123") || !r.finished || len(r.problems) != 0 {
		t.Fatalf("recorded %+v, finished %v, problems %q", g, r.finished, r.problems)
	}
}
