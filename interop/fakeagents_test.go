package interop

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// The fake Gemini and Chat Completions APIs on their own, without a CLI: the request
// shapes Gemini CLI 0.61.0 and opencode 1.18.33 send (measured), what the fakes
// record of them, and the requests they refuse. TestModelView's Harness subtests
// then check the same fakes against the real CLIs.

func TestFakeGeminiAPI(t *testing.T) {
	m := newFakeModel("gemini", "the prompt", fakeTestSteps())
	api := geminiAPI{m}
	tools := []any{map[string]any{"functionDeclarations": []any{
		map[string]any{"name": "run_shell_command"}, map[string]any{"name": "mcp_repl_execute_python"},
		map[string]any{"name": "mcp_repl_python_health"}, map[string]any{"name": "mcp_repl_artifact_read"}}}}
	user := map[string]any{"role": "user", "parts": []any{map[string]any{"text": "the prompt"}}}
	const stream = "/v1beta/models/gemini-3.1-pro-preview:streamGenerateContent"
	call := func(events []map[string]any) map[string]any {
		t.Helper()
		if len(events) != 1 {
			t.Fatalf("%d SSE events, want 1", len(events))
		}
		part := events[0]["candidates"].([]any)[0].(map[string]any)["content"].(map[string]any)["parts"].([]any)[0].(map[string]any)
		return part
	}

	_, events, _ := post(t, api, stream, map[string]any{"contents": []any{user}, "tools": tools})
	fc := call(events)["functionCall"].(map[string]any)
	if fc["id"] != "gmv_hello" || fc["name"] != "mcp_repl_execute_python" || fc["args"].(map[string]any)["code"] != "print(1)" {
		t.Fatalf("first call %v", fc)
	}

	// Its result: two text blocks wrapped as untrusted context, an image announced by
	// a line of its own and passed beside the function response.
	output := "<untrusted_context>\n1\n\n</untrusted_context>\n[Tool 'execute_python' provided the following image data with mime-type: image/png]\n" +
		"<untrusted_context>\n[ok; artifact 9c3e1a2b-4d5f-4a6b-8c7d-9e0f1a2b3c4d]\n</untrusted_context>"
	conv := []any{user,
		map[string]any{"role": "model", "parts": []any{map[string]any{"functionCall": fc}}},
		map[string]any{"role": "user", "parts": []any{
			map[string]any{"functionResponse": map[string]any{"id": "gmv_hello", "name": "mcp_repl_execute_python", "response": map[string]any{"output": output}}},
			map[string]any{"inlineData": map[string]any{"mimeType": "image/png", "data": tinyPNG(t)}},
		}},
	}
	_, events, _ = post(t, api, stream, map[string]any{"contents": conv, "tools": tools})
	fc = call(events)["functionCall"].(map[string]any)
	if fc["id"] != "gmv_health" {
		t.Fatalf("after hello: %v", fc)
	}
	g := m.records().given["hello"]
	if g == nil || len(g.Texts) != 2 || g.Texts[0] != "1\n" || !strings.HasPrefix(g.Texts[1], "[ok; artifact") || len(g.Envelope) != 3 ||
		g.IsError != nil || len(g.Images) != 1 || g.Images[0].Width != 3 || g.Tool != "mcp_repl_execute_python" {
		t.Fatalf("recorded %+v", g)
	}

	// An isError result: Gemini CLI's one line quoting it; the text blocks inside are
	// what the model reads of the server's words, and the error flag is set.
	quoted, _ := json.Marshal([]any{map[string]any{"functionResponse": map[string]any{"name": "python_health", "response": map[string]any{
		"content": []any{map[string]any{"type": "text", "text": "session_id " + fakeTestSession}}, "isError": true}}}})
	conv = append(conv,
		map[string]any{"role": "model", "parts": []any{map[string]any{"functionCall": fc}}},
		map[string]any{"role": "user", "parts": []any{map[string]any{"functionResponse": map[string]any{"id": "gmv_health", "name": "mcp_repl_python_health",
			"response": map[string]any{"error": `MCP tool 'python_health' reported tool error for function call: {"name":"python_health","args":{}} with response: ` + string(quoted)}}}}},
	)
	_, events, _ = post(t, api, stream, map[string]any{"contents": conv, "tools": tools})
	if fc := call(events)["functionCall"].(map[string]any); fc["id"] != "gmv_again" || fc["args"].(map[string]any)["session_id"] != fakeTestSession {
		t.Fatalf("third call %v", fc)
	}
	if h := m.records().given["health"]; h.IsError == nil || !*h.IsError || h.Text() != "session_id "+fakeTestSession || len(h.Envelope) != 1 {
		t.Errorf("health recorded %+v", h)
	}

	// Token counts are answered; anything outside the script is refused, and said.
	if code, _, _ := post(t, api, "/v1beta/models/gemini-3.1-pro-preview:countTokens", map[string]any{}); code != http.StatusOK {
		t.Errorf("countTokens: %d", code)
	}
	if code, _, body := post(t, api, "/v1beta/models/gemini-3.5-flash-lite:generateContent", map[string]any{"contents": []any{user}}); code != http.StatusNotFound || !strings.Contains(body, "outside the scripted conversation") {
		t.Errorf("a side request: %d %s", code, body)
	}
	if code, _, _ := post(t, api, "/v1beta/models/gemini-3.1-pro-preview:generateContent", map[string]any{"contents": []any{user}, "tools": tools}); code != http.StatusNotFound {
		t.Errorf("the script without streaming: %d", code)
	}
	r := m.records()
	if len(r.unexpected) != 2 || len(r.handled) != 1 || len(r.problems) != 0 {
		t.Errorf("unexpected %q, handled %q, problems %q", r.unexpected, r.handled, r.problems)
	}
}

func TestFakeChatAPI(t *testing.T) {
	m := newFakeModel("opencode", "the prompt", fakeTestSteps())
	api := chatAPI{m}
	tools := []any{}
	for _, n := range []string{"bash", "repl_execute_python", "repl_python_health", "repl_artifact_read"} {
		tools = append(tools, map[string]any{"type": "function", "function": map[string]any{"name": n}})
	}
	user := map[string]any{"role": "user", "content": "the prompt"}
	delta := func(events []map[string]any) map[string]any {
		t.Helper()
		if len(events) != 2 {
			t.Fatalf("%d chunks, want 2", len(events))
		}
		return events[0]["choices"].([]any)[0].(map[string]any)["delta"].(map[string]any)
	}
	toolCall := func(events []map[string]any) map[string]any {
		t.Helper()
		calls, _ := delta(events)["tool_calls"].([]any)
		if len(calls) != 1 {
			t.Fatalf("no tool call in %v", events)
		}
		return calls[0].(map[string]any)
	}

	// The title request, without tools, is answered and counted.
	_, events, _ := post(t, api, "/v1/chat/completions", map[string]any{"stream": true, "messages": []any{
		map[string]any{"role": "system", "content": chatTitleRequest + ". You output ONLY a thread title."}, user}})
	if delta(events)["content"] != "repl-mcp model view" {
		t.Fatalf("title answer %v", events)
	}

	_, events, _ = post(t, api, "/v1/chat/completions", map[string]any{"stream": true, "messages": []any{user}, "tools": tools})
	c := toolCall(events)
	fn := c["function"].(map[string]any)
	if c["id"] != "call_mv_hello" || fn["name"] != "repl_execute_python" || fn["arguments"] != `{"code":"print(1)"}` {
		t.Fatalf("first call %v", c)
	}

	// Its result: the text blocks joined as one string; the image in the user
	// message opencode adds after the tool messages.
	conv := []any{user,
		map[string]any{"role": "assistant", "content": "", "tool_calls": []any{map[string]any{"id": c["id"], "type": "function", "function": fn}}},
		map[string]any{"role": "tool", "tool_call_id": c["id"], "content": "1\n\n\n[ok; artifact 9c3e1a2b-4d5f-4a6b-8c7d-9e0f1a2b3c4d]"},
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": chatMediaNote},
			map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64," + tinyPNG(t)}}}},
	}
	_, events, _ = post(t, api, "/v1/chat/completions", map[string]any{"stream": true, "messages": conv, "tools": tools})
	if c := toolCall(events); c["id"] != "call_mv_health" {
		t.Fatalf("after hello: %v", c)
	}
	g := m.records().given["hello"]
	if g == nil || len(g.Texts) != 1 || len(g.Images) != 1 || g.Images[0].Height != 2 || len(g.Envelope) != 1 || g.IsError != nil {
		t.Fatalf("recorded %+v", g)
	}
	if b := opencode.blocks(g); len(b) != 2 || b[0] != "1\n" || !strings.HasPrefix(b[1], "[ok") {
		t.Errorf("the joined text cut into %q", b)
	}

	// Outside the script: refused, and said.
	if code, _, body := post(t, api, "/v1/responses", map[string]any{}); code != http.StatusNotFound || !strings.Contains(body, "unexpected request POST /v1/responses") {
		t.Errorf("responses: %d %s", code, body)
	}
	if code, _, _ := post(t, api, "/v1/chat/completions", map[string]any{"stream": true, "messages": []any{map[string]any{"role": "user", "content": "other"}}, "tools": tools}); code != http.StatusNotFound {
		t.Errorf("a side request: %d", code)
	}
	r := m.records()
	if len(r.unexpected) != 2 || len(r.handled) != 1 || len(r.problems) != 0 {
		t.Errorf("unexpected %q, handled %q, problems %q", r.unexpected, r.handled, r.problems)
	}
}
