package interop

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// sdkCase is one call clients/py_client.py and clients/ts_client.mjs make in their
// --cases mode (the format of the file they read).
type sdkCase struct {
	ID        string         `json:"id"`
	Tool      string         `json:"tool"`
	Arguments map[string]any `json:"arguments"`
	Session   bool           `json:"session"` // add python_health's server.session_id
}

// sdkResult is what the clients print for each call: the result as the SDK hands it
// over, structuredContent and content untouched.
type sdkResult struct {
	ID         string         `json:"id"`
	Error      string         `json:"error"` // the call raised in the client (output schema validation, transport)
	IsError    bool           `json:"isError"`
	Structured map[string]any `json:"structuredContent"`
	Content    []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		MimeType string `json:"mimeType"`
		Data     string `json:"data"`
	} `json:"content"`
}

// runSDKCases runs the script's repl-mcp calls (those that depend on nothing the model
// read) through an SDK client in auto mode, which negotiates 2026-07-28, and returns
// its results by step id.
func (s *suite) runSDKCases(t *testing.T, interpreter, script, python string, steps []step) map[string]sdkResult {
	t.Helper()
	var cases []sdkCase
	for _, st := range steps {
		if st.server == "repl" && st.derive == nil {
			cases = append(cases, sdkCase{ID: st.id, Tool: st.tool, Arguments: st.args, Session: st.session})
		}
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "cases.json")
	if err := writeJSONFile(file, cases); err != nil {
		t.Fatal(err)
	}
	out := s.run(t, sdkCasesBound, dir, interpreter, script, "--cases", file, "auto", s.replMCP, "--python", python)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var sum struct {
		Error           string      `json:"error"`
		SDK             string      `json:"sdk"`
		ProtocolVersion string      `json:"protocolVersion"`
		Results         []sdkResult `json:"results"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
		t.Fatalf("%s printed no summary (%v):\n%s", filepath.Base(script), err, clip(out, 4000))
	}
	if sum.Error != "" {
		t.Fatalf("%s failed:\n%s", filepath.Base(script), sum.Error)
	}
	t.Logf("%s negotiated %s", sum.SDK, sum.ProtocolVersion)
	results := map[string]sdkResult{}
	for _, r := range sum.Results {
		results[r.ID] = r
		sc, _ := json.Marshal(r.Structured)
		t.Logf("%s: isError=%v, %d content blocks, structuredContent %s", r.ID, r.IsError, len(r.Content), clip(string(sc), 600))
	}
	return results
}

// A structuredCheck is what the structured form of one step's result must keep.
type structuredCheck struct {
	step  string
	check func(c *checker, r sdkResult)
}

// structuredChecks hold for a client that is given the structured form (any client
// but Claude Code and Codex): structuredContent carries every field of the execution
// result (docs/contract.md §4.1) and what the cell did, beside the content blocks.
func structuredChecks() []structuredCheck {
	return []structuredCheck{
		{"hello", func(c *checker, r sdkResult) {
			sc := executionFields(c, r)
			if sc["success"] != true || sc["stdout"] != "hello\n" {
				c.errorf("success %v, stdout %q; want true and \"hello\\n\"", sc["success"], sc["stdout"])
			}
		}},
		{"health", func(c *checker, r sdkResult) {
			if r.IsError {
				c.errorf("python_health is an error: %v", r.Structured)
			}
			for _, f := range []string{"server", "broker", "sessions"} {
				if _, ok := r.Structured[f].(map[string]any); !ok {
					c.errorf("structuredContent.%s is %T, want an object", f, r.Structured[f])
				}
			}
			if server, _ := r.Structured["server"].(map[string]any); server == nil || server["session_id"] == nil {
				c.errorf("structuredContent.server has no session_id")
			}
		}},
		{"error", func(c *checker, r sdkResult) {
			sc := executionFields(c, r)
			msg, _ := sc["error"].(string)
			if sc["success"] != false || !strings.Contains(msg, "Traceback (most recent call last)") || !strings.Contains(msg, "Boom: model view boom") {
				c.errorf("success %v, error %q; want false and the traceback", sc["success"], msg)
			}
		}},
		{"large", func(c *checker, r sdkResult) {
			sc := executionFields(c, r)
			stdout, _ := sc["stdout"].(string)
			trunc, _ := sc["truncated"].(map[string]any)
			if !strings.HasPrefix(stdout, largeLine(1)+"\n") {
				c.errorf("stdout does not start with the output's head: %q", clip(stdout, 200))
			}
			if len(stdout) > 50000 || trunc["stdout"] != true {
				c.errorf("stdout is %d bytes with truncated.stdout %v: want at most 50,000 and true (§4.1)", len(stdout), trunc["stdout"])
			}
		}},
		{"progress", func(c *checker, r sdkResult) {
			sc := executionFields(c, r)
			stdout, _ := sc["stdout"].(string)
			stderr, _ := sc["stderr"].(string)
			if sc["success"] != true || stdout != "progress done\n" || !strings.Contains(stderr, "100/100") {
				c.errorf("success %v, stdout %q, stderr %q; want the bar's last state in stderr", sc["success"], stdout, clip(stderr, 300))
			}
		}},
		{"figure", func(c *checker, r sdkResult) {
			sc := executionFields(c, r)
			if sc["success"] != true {
				c.errorf("the figure cell failed: %v", sc["error"])
			}
			g := &given{Step: "figure"}
			for _, c := range r.Content {
				if c.Type == "image" {
					g.addImage(c.MimeType, c.Data)
				}
			}
			if len(g.Images) == 0 {
				c.fatalf("no image content block for plt.show()")
			}
			for _, im := range g.Images {
				if im.DecodeErr != "" || im.Width == 0 || !strings.HasPrefix(im.MediaType, "image/") {
					c.errorf("an undecodable image block: %+v", im)
				}
			}
		}},
		{"dataframe", func(c *checker, r sdkResult) {
			sc := executionFields(c, r)
			rv, _ := sc["return_value"].(string)
			if sc["success"] != true || strings.Contains(rv, "safe preview omitted") || !strings.Contains(rv, "city") || !strings.Contains(rv, "Lima") {
				c.errorf("success %v, return_value %q; want the table", sc["success"], rv)
			}
		}},
		{"syntax", func(c *checker, r sdkResult) {
			sc := executionFields(c, r)
			msg, _ := sc["error"].(string)
			lines := strings.Split(msg, "\n")
			caret := false
			for i := 1; i < len(lines); i++ {
				caret = caret || caretLine.MatchString(lines[i]) && strings.Contains(lines[i-1], "def f(:")
			}
			if sc["success"] != false || !strings.Contains(msg, "SyntaxError") || !caret {
				c.errorf("success %v, error %q; want SyntaxError with its caret line", sc["success"], msg)
			}
		}},
	}
}

// executionFields checks that an execution result's structured form has every field
// the output schema requires and the identity fields, with their types, that isError
// is !success, and that a text block stands beside it; it returns the fields.
func executionFields(c *checker, r sdkResult) map[string]any {
	sc := r.Structured
	if sc == nil {
		c.fatalf("no structuredContent (isError %v, content %+v)", r.IsError, r.Content)
	}
	kinds := map[string]string{
		"run_id": "string", "success": "bool", "stdout": "string", "stderr": "string",
		"return_value": "string|null", "error": "string|null", "elapsed_ms": "number",
		"truncated": "object", "state": "string",
		"server_id": "string", "session_id": "string", "generation": "number",
	}
	for field, kind := range kinds {
		v, ok := sc[field]
		if !ok {
			c.errorf("structuredContent has no %s: %v", field, clip(fmt.Sprint(sc), 400))
			continue
		}
		if got := jsonKind(v); !strings.Contains("|"+kind+"|", "|"+got+"|") {
			c.errorf("structuredContent.%s is %s, want %s", field, got, kind)
		}
	}
	if trunc, ok := sc["truncated"].(map[string]any); ok {
		for _, f := range []string{"stdout", "stderr", "return"} {
			if _, ok := trunc[f].(bool); !ok {
				c.errorf("structuredContent.truncated.%s is not a boolean", f)
			}
		}
	}
	if st := sc["state"]; st != "preserved" && st != "cleared" {
		c.errorf("state = %v", st)
	}
	if success, ok := sc["success"].(bool); ok && r.IsError == success {
		c.errorf("isError %v with success %v", r.IsError, success)
	}
	text := false
	for _, c := range r.Content {
		text = text || c.Type == "text"
	}
	if !text {
		c.errorf("no text content block beside structuredContent")
	}
	return sc
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "bool"
	case float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}
