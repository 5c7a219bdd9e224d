package server

import (
	"encoding/json"
	"testing"
)

// TestCodeModeGetsValues: a tools/call that Codex's code mode makes (_meta.callId
// "exec-<uuid>") gets the text form's blocks and structuredContent too, the value as
// exact JSON beside the result's fields, so that its JavaScript reads a tuple as an
// array, a dict as an object and a number as a number; Codex's direct calls, and any
// call of Claude Code's, keep the text form alone (docs/contract.md §3.4).
func TestCodeModeGetsValues(t *testing.T) {
	call := func(w *wireServer, code, callID string) map[string]any {
		t.Helper()
		res := w.request("tools/call", map[string]any{
			"name": "execute_python", "arguments": map[string]any{"code": code},
			"_meta": map[string]any{"callId": callID},
		}).result()
		if res == nil {
			t.Fatalf("%q: no result", code)
		}
		return res
	}
	w := startWireAs(t, wireClient{name: "codex-mcp-client", protocol: "2025-06-18"})
	for code, want := range map[string]string{
		"(200000, 7)":         `[200000,7]`,
		"{'a': 1, 'b': None}": `{"a":1,"b":null}`,
		"2.5":                 `2.5`,
	} {
		res := call(w, code, "exec-5f0e6c1d-0000-4000-8000-000000000001")
		content, _ := res["content"].([]any)
		if len(content) != 2 || content[0].(map[string]any)["type"] != "text" {
			t.Errorf("%s: content is not the text form's body and footer: %v", code, content)
		}
		sc, _ := res["structuredContent"].(map[string]any)
		value, _ := json.Marshal(sc["value"])
		if string(value) != want || sc["run_id"] == nil || sc["success"] != true {
			t.Errorf("%s: structuredContent %v, want value %s beside the result's fields", code, sc, want)
		}
	}
	direct := call(w, "(1, 2)", "call_Rk2b")
	if _, ok := direct["structuredContent"]; ok {
		t.Errorf("a direct call of Codex's got structuredContent: %v", direct)
	}
	claude := startWireAs(t, wireClient{name: "claude-code", protocol: "2025-11-25"})
	if res := call(claude, "(1, 2)", "exec-5f0e6c1d-0000-4000-8000-000000000002"); res["structuredContent"] != nil {
		t.Errorf("Claude Code got structuredContent: %v", res)
	}
}
