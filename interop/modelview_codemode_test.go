package interop

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/iota-uz/repl-mcp/internal/pythons"
)

// Codex's code mode: the model writes JavaScript that calls the MCP tools (a call
// resolves to the whole CallToolResult) and reads only what the script passes to
// text(). The fake model's one program reads python_health's session_id from its
// text, runs a cell that prints JSON and JSON.parses the result's first text block,
// runs a cell whose value it reads with Number(), and prints what it found; the model
// is then given exactly that.

// codeModeScript is the program the fake model writes.
const codeModeScript = `const h = await tools.mcp__repl__python_health({});
const sid = (/session_id ([0-9a-f-]{36})/.exec(h.content[0].text) || [])[1] || null;
const report = {sid};
try {
  const r = await tools.mcp__repl__execute_python({code: "import json\nprint(json.dumps({'n': 42}))", timeout: 45, ...(sid ? {session_id: sid} : {})});
  report.blocks = r.content.length;
  report.footer = r.content[r.content.length - 1].text;
  report.parsed = JSON.parse(r.content[0].text).n + 1;
} catch (e) { report.parseError = String(e); }
try {
  const v = await tools.mcp__repl__execute_python({code: "6 * 7", timeout: 45, ...(sid ? {session_id: sid} : {})});
  report.number = Number(v.content[0].text) + 1;
} catch (e) { report.numberError = String(e); }
const value = async (code) => (await tools.mcp__repl__execute_python({code, timeout: 45, ...(sid ? {session_id: sid} : {})})).structuredContent.value;
try {
  const shape = await value("import numpy as np, pandas as pd\ndf = pd.DataFrame(np.zeros((200000, 7)))\ndf.shape");
  report.shape = shape;
  report.cells = shape[0] * shape[1];
  const d = await value("{'a': 1, 'b': None}");
  report.dict = {a: d.a + 1, b: d.b === null, keys: Object.keys(d)};
  report.float = (await value("np.float64(250.01)")) * 2;
} catch (e) { report.valueError = String(e); }
text(JSON.stringify(report));
`

const codeModeCallID = "call_mv_code"

// codeModeAPI is the fake Responses API of a code-mode run: it answers the scripted
// conversation's first request with one exec call of codeModeScript and records the
// custom_tool_call_output Codex sends back; then it ends the conversation.
type codeModeAPI struct {
	m *fakeModel
	// dump, when not "", receives every request body, for whoever changes this.
	dump string
	n    *atomic.Int32
	// first is the first scripted request's body: what the model is shown before it
	// writes any code.
	first *atomic.Value
}

func (o codeModeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/responses" {
		responsesAPI{o.m}.refuse(w, r, "no such endpoint in the fake Responses API")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxAPIBody))
	if err != nil {
		responsesAPI{o.m}.refuse(w, r, "unreadable body: "+err.Error())
		return
	}
	if o.dump != "" {
		os.WriteFile(filepath.Join(o.dump, fmt.Sprintf("codemode-request-%d.json", o.n.Add(1))), body, 0o600)
	}
	var req struct {
		Stream bool              `json:"stream"`
		Input  []json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(body, &req); err != nil || !req.Stream {
		responsesAPI{o.m}.refuse(w, r, fmt.Sprintf("undecodable or not streamed (%v)", err))
		return
	}
	if !strings.Contains(string(body), jsonFragment(o.m.prompt)) {
		responsesAPI{o.m}.refuse(w, r, "a Responses request outside the scripted conversation")
		return
	}
	if o.m.countRequest() == 1 {
		o.first.Store(string(body))
	}
	var item map[string]any
	if out, ok := codeModeOutput(req.Input); ok {
		g := &given{Step: "code", Tool: "exec", Raw: out, Args: map[string]any{"input": codeModeScript}}
		responsesAPI{o.m}.readOutput(g, out)
		o.m.record(g)
		o.m.next(map[string]bool{"code": true})
		item = map[string]any{"type": "message", "id": "msg_mv_done", "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": "The script is done.", "annotations": []any{}}}}
	} else {
		item = map[string]any{"type": "custom_tool_call", "id": "ctc_mv_code", "call_id": codeModeCallID, "name": "exec",
			"input": codeModeScript, "status": "completed"}
	}
	sse := newSSE(w)
	sse.event("response.created", map[string]any{"type": "response.created", "response": map[string]any{"id": "resp_mv_code"}})
	sse.event("response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item})
	sse.event("response.completed", map[string]any{"type": "response.completed", "response": map[string]any{"id": "resp_mv_code",
		"usage": map[string]any{"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}}})
}

// codeModeOutput finds the exec call's output among a request's input items.
func codeModeOutput(items []json.RawMessage) (json.RawMessage, bool) {
	for _, raw := range items {
		var it struct {
			Type   string          `json:"type"`
			CallID string          `json:"call_id"`
			Output json.RawMessage `json:"output"`
		}
		if json.Unmarshal(raw, &it) == nil && it.CallID == codeModeCallID && strings.HasSuffix(it.Type, "_output") {
			return it.Output, true
		}
	}
	return nil, false
}

// TestModelViewCodeMode runs Codex in code mode through codeModeScript: the script
// must find the session_id in python_health's text, parse a printed JSON from the
// first text block, read a value with Number(), and find the footer, naming its run,
// in the last block.
func TestModelViewCodeMode(t *testing.T) {
	s := newSuite(t)
	python := pythons.DataVenv(t)
	steps := []step{{id: "code", server: "repl", tool: "exec"}}
	var n atomic.Int32
	var first atomic.Value
	dump := os.Getenv(modelViewDumpEnv)
	run := runCodexMode(t, s, python, steps, true, func(m *fakeModel) http.Handler {
		return codeModeAPI{m: m, dump: dump, n: &n, first: &first}
	})
	t.Run("Harness", func(t *testing.T) { run.checkHarness(t, steps) })
	t.Run("ScriptUsesTheResults", func(t *testing.T) { reportCheck(t, func(c *checker) { checkCodeMode(c, run.recs) }) })
	t.Run("InstructionsFirstLineWhole", func(t *testing.T) {
		body, _ := first.Load().(string)
		reportCheck(t, func(c *checker) { checkDeferredLine(c, body) })
	})
}

// checkDeferredLine: before it searches its tools, code mode's model reads only the
// first line of the server's instructions, cut at 250 characters; that line must be
// whole, and say which tool runs code.
func checkDeferredLine(c *checker, body string) {
	var line string
	if err := json.Unmarshal([]byte(`"`+regexp.MustCompile(`- mcp__repl: ((?:[^"\\]|\\.)*?)\\n`).FindStringSubmatch(body + `- mcp__repl: \n`)[1]+`"`), &line); err != nil {
		c.fatalf("the request's deferred namespaces cannot be read: %v", err)
	}
	if line == "" {
		c.fatalf("the model is not shown repl-mcp's namespace line:\n%s", clip(body, 800))
	}
	// Codex ends a line it cut with "...".
	if !strings.HasSuffix(line, ".") || strings.HasSuffix(line, "...") || !strings.Contains(line, "execute_python") {
		c.errorf("the namespace line the model reads is not a whole sentence naming execute_python (%d characters): %q", len(line), line)
	}
}

// checkCodeMode reads the report the script printed: what the script read from the
// text blocks, and the values it computed with from structuredContent (a DataFrame's
// shape, a dict, a numpy float), which only code-mode calls carry.
func checkCodeMode(c *checker, r records) {
	g := stepGiven(c, r, "code")
	m := regexp.MustCompile(`\{"sid".*\}`).FindString(g.Text())
	var report struct {
		SID         *string `json:"sid"`
		Blocks      int     `json:"blocks"`
		Footer      string  `json:"footer"`
		Parsed      int     `json:"parsed"`
		ParseError  string  `json:"parseError"`
		Number      *int    `json:"number"`
		NumberError string  `json:"numberError"`
		Shape       []any   `json:"shape"`
		Cells       float64 `json:"cells"`
		Dict        struct {
			A    float64  `json:"a"`
			B    bool     `json:"b"`
			Keys []string `json:"keys"`
		} `json:"dict"`
		Float      float64 `json:"float"`
		ValueError string  `json:"valueError"`
	}
	if err := json.Unmarshal([]byte(m), &report); err != nil {
		c.fatalf("the script printed no report (%v); the model read:\n%s", err, clip(g.Text(), 1500))
	}
	if report.SID == nil {
		c.errorf("the script found no session_id <uuid> in python_health's first text block")
	}
	if report.Parsed != 43 {
		c.errorf("JSON.parse(r.content[0].text) of a printed {\"n\": 42} did not give 42 (%s)", report.ParseError)
	}
	if report.Number == nil || *report.Number != 43 {
		c.errorf("Number(r.content[0].text) of the value 42 did not give 42 (%v %s)", report.Number, report.NumberError)
	}
	if report.Blocks < 2 || !footerRun.MatchString(report.Footer) {
		c.errorf("the last of %d blocks is not a footer naming the run: %q", report.Blocks, report.Footer)
	}
	if report.ValueError != "" {
		c.errorf("reading structuredContent.value in JavaScript failed: %s", report.ValueError)
	}
	if fmt.Sprint(report.Shape) != "[200000 7]" || report.Cells != 1_400_000 {
		c.errorf("df.shape read as %v (cells %v), want the array [200000, 7]", report.Shape, report.Cells)
	}
	if report.Dict.A != 2 || !report.Dict.B || strings.Join(report.Dict.Keys, ",") != "a,b" {
		c.errorf("{'a': 1, 'b': None} read as %+v, want an object with a: 1 and b: null", report.Dict)
	}
	if report.Float != 500.02 {
		c.errorf("np.float64(250.01) * 2 in JavaScript gave %v, want 500.02", report.Float)
	}
}

// TestFakeCodeModeAPI: the code-mode fake on its own: one exec call of the script, then
// the output recorded as what the model read, and the end of the conversation.
func TestFakeCodeModeAPI(t *testing.T) {
	m := newFakeModel("codex", "the prompt", []step{{id: "code", server: "repl", tool: "exec"}})
	var n atomic.Int32
	var first atomic.Value
	api := codeModeAPI{m: m, n: &n, first: &first}
	user := map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": "the prompt"}}}
	_, events, _ := post(t, api, "/v1/responses", map[string]any{"model": "gpt-5.5", "stream": true, "input": []any{user}})
	var call map[string]any
	for _, ev := range events {
		if ev["type"] == "response.output_item.done" {
			call = ev["item"].(map[string]any)
		}
	}
	if call["type"] != "custom_tool_call" || call["name"] != "exec" || call["input"] != codeModeScript || first.Load() == nil {
		t.Fatalf("first item %v", call)
	}
	out := map[string]any{"type": "custom_tool_call_output", "call_id": codeModeCallID, "output": []any{
		map[string]any{"type": "input_text", "text": `{"sid":"x","parsed":43}`}}}
	post(t, api, "/v1/responses", map[string]any{"model": "gpt-5.5", "stream": true, "input": []any{user, call, out}})
	r := m.records()
	if g := r.given["code"]; g == nil || g.Text() != `{"sid":"x","parsed":43}` || !r.finished || len(r.problems) != 0 {
		t.Fatalf("records %+v, finished %v, problems %q", r.given, r.finished, r.problems)
	}
	if code, _, _ := post(t, api, "/v1/responses", map[string]any{"model": "gpt-5.5", "stream": true, "input": []any{}}); code != http.StatusNotFound {
		t.Errorf("a side request: %d", code)
	}
}
