package server

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/iota-uz/repl-mcp/repl"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("want one content block, got %d", len(res.Content))
	}
	return res.Content[0].(*mcp.TextContent).Text
}

func ptr(s string) *string { return &s }

func TestPresentExecutionText(t *testing.T) {
	res := present(&repl.Result{Success: true, ReturnValue: ptr("4"), State: repl.StatePreserved})
	if got := text(t, res); got != "\n4" {
		t.Fatalf("text = %q", got)
	}
	if res.IsError {
		t.Fatal("success presented as error")
	}
	res = present(&repl.Result{Stdout: "out", Stderr: "err", Error: ptr("boom"), State: repl.StateCleared})
	if got := text(t, res); got != "out\nStderr:\nerr\nboom\nWorker state cleared." {
		t.Fatalf("text = %q", got)
	}
	if !res.IsError {
		t.Fatal("failure not presented as error")
	}
	if got := text(t, present(&repl.Result{Success: true, State: repl.StatePreserved})); got != "Execution completed." {
		t.Fatalf("empty text = %q", got)
	}
}

func TestPresentCutsTextAt8KiB(t *testing.T) {
	res := present(&repl.Result{Success: true, Stdout: strings.Repeat("Ж", 10000), State: repl.StatePreserved})
	got := text(t, res)
	body := strings.TrimSuffix(got, textCutNote)
	if len(body) > textLimit || !strings.HasSuffix(got, textCutNote) {
		t.Fatalf("text not cut: %d bytes", len(got))
	}
	if !strings.HasPrefix(body, "Ж") || len(body)%2 != 0 {
		t.Fatal("cut splits a character")
	}
	var v map[string]any
	json.Unmarshal(res.StructuredContent.(json.RawMessage), &v)
	if v["text_truncated"] != true || len(v["stdout"].(string)) != 20000 {
		t.Fatalf("structured content lost data or flag: %v", v["text_truncated"])
	}
}

func TestPresentStaysUnderResultLimit(t *testing.T) {
	nul := strings.Repeat("\x00", 50000)
	res := present(&repl.Result{Success: true, Stdout: nul, Stderr: nul, ReturnValue: ptr(strings.Repeat("\x00", 20000)), Error: ptr(strings.Repeat("\x00", 20000)), State: repl.StatePreserved})
	encoded, _ := json.Marshal(res)
	if len(encoded) > resultLimit {
		t.Fatalf("result is %d bytes", len(encoded))
	}
	// A value larger than any bounded result forces the text block out.
	huge, _ := json.Marshal(strings.Repeat("\x00", 120000))
	res = present(map[string]any{"success": true, "stdout": nul, "big": json.RawMessage(huge)})
	if text(t, res) != omittedText {
		t.Fatal("oversized result kept its text")
	}
}

// TestIsErrorByType pins where isError comes from: the value's type, never the
// look of its JSON (a value with an "error" key or success false is no error unless
// it is a failure or an execution result).
func TestIsErrorByType(t *testing.T) {
	for _, c := range []struct {
		name  string
		value any
		want  bool
	}{
		{"execution success", &repl.Result{Success: true}, false},
		{"execution failure", &repl.Result{Success: false}, true},
		{"execution with an error", &repl.Result{Success: true, Error: ptr("x")}, true},
		{"failure", failed{"error": "x"}, true},
		{"encoded error", encodedResult{JSON: json.RawMessage(`{"content":[]}`), IsError: true}, true},
		{"encoded success", encodedResult{JSON: json.RawMessage(`{"content":[],"error":"x"}`), IsError: false}, false},
		{"plain value shaped like an error", map[string]any{"success": false, "error": "x", "isError": true}, false},
		{"unencodable", map[string]any{"x": func() {}}, true},
	} {
		if got := present(c.value).IsError; got != c.want {
			t.Errorf("%s: isError = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestWithField(t *testing.T) {
	if got := string(withField([]byte(`{"a":1}`), "b", true)); got != `{"a":1,"b":true}` {
		t.Fatal(got)
	}
	if got := string(withField([]byte(`{}`), "b", true)); got != `{"b":true}` {
		t.Fatal(got)
	}
}
