package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/iota-uz/repl-mcp/artifacts"
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

// textBlocks are the text blocks of a text-form result, joined: how a terminal
// would show them.
func textBlocks(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func ptr(s string) *string { return &s }

// presentStructured presents value as a structured client receives it.
func presentStructured(t *testing.T, value any) *mcp.CallToolResult {
	return presentAs(t, formStructured, value)
}

// presentAs presents a value of no routed session in form f, as a tool call does:
// what its text needs kept first (there is no session to keep it in), then the text.
func presentAs(t *testing.T, f form, value any) *mcp.CallToolResult {
	var kept *keptText
	if f == formText {
		kept = keepText(t.Context(), nil, value)
	}
	return present(f, value, kept)
}

func TestStructuredExecutionText(t *testing.T) {
	res := presentStructured(t, executed(&repl.Result{Success: true, ReturnValue: ptr("4"), State: repl.StatePreserved}))
	if got := text(t, res); got != "4" {
		t.Fatalf("text = %q", got)
	}
	if res.IsError {
		t.Fatal("success presented as error")
	}
	res = presentStructured(t, executed(&repl.Result{Stdout: "out", Stderr: "err", Error: ptr("boom"), State: repl.StateCleared}))
	if got := text(t, res); got != "out\n[stderr]\nerr\nboom" {
		t.Fatalf("text = %q", got)
	}
	if !res.IsError {
		t.Fatal("failure not presented as error")
	}
	if got := text(t, presentStructured(t, executed(&repl.Result{Success: true, State: repl.StatePreserved}))); got != "Execution completed." {
		t.Fatalf("empty text = %q", got)
	}
}

func TestPresentCutsTextAt8KiB(t *testing.T) {
	res := presentStructured(t, executed(&repl.Result{Success: true, Stdout: strings.Repeat("Ж", 10000), State: repl.StatePreserved}))
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
	res := presentStructured(t, executed(&repl.Result{Success: true, Stdout: nul, Stderr: nul, ReturnValue: ptr(strings.Repeat("\x00", 20000)), Error: ptr(strings.Repeat("\x00", 20000)), State: repl.StatePreserved}))
	encoded, _ := json.Marshal(res)
	if len(encoded) > resultLimit {
		t.Fatalf("result is %d bytes", len(encoded))
	}
	// A value larger than any bounded result forces the text block out.
	huge, _ := json.Marshal(strings.Repeat("\x00", 120000))
	res = presentStructured(t, map[string]any{"success": true, "stdout": nul, "big": json.RawMessage(huge)})
	if text(t, res) != omittedText {
		t.Fatal("oversized result kept its text")
	}
}

// TestIsErrorByType pins where isError comes from: the value's type, never the
// look of its JSON (a value with an "error" key or success false is no error unless
// it is a failure or an execution result), and the same in both forms.
func TestIsErrorByType(t *testing.T) {
	for _, c := range []struct {
		name  string
		value any
		want  bool
	}{
		{"execution success", executed(&repl.Result{Success: true}), false},
		{"execution failure", executed(&repl.Result{Success: false}), true},
		{"execution with an error", executed(&repl.Result{Success: true, Error: ptr("x")}), true},
		{"failure", failed{"error": "x"}, true},
		{"encoded error", encodedResult{JSON: json.RawMessage(`{"content":[]}`), IsError: true}, true},
		{"encoded success", encodedResult{JSON: json.RawMessage(`{"content":[],"error":"x"}`), IsError: false}, false},
		{"plain value shaped like an error", map[string]any{"success": false, "error": "x", "isError": true}, false},
		{"unencodable", map[string]any{"x": func() {}}, true},
	} {
		for _, f := range []form{formStructured, formText} {
			if got := presentAs(t, f, c.value).IsError; got != c.want {
				t.Errorf("%s (form %d): isError = %v, want %v", c.name, f, got, c.want)
			}
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

// view decodes a synthetic execution result into the repl.Result the text form is
// read from.
func view(t *testing.T, raw string) *repl.Result {
	t.Helper()
	var r repl.Result
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return &r
}

func noSave(string) (artifacts.Ref, error) {
	return artifacts.Ref{}, errors.New("nothing may be saved here")
}

// execText is r's text form as a tool call makes it: the complete text kept by save
// when the text needs it (keepText), then the text.
func execText(r *repl.Result, polled bool, save func(string) (artifacts.Ref, error)) reply {
	e := execution{Result: r, polled: polled}
	var kept *keptText
	if text := e.completeText(); text != "" {
		ref, err := save(text)
		kept = &keptText{ref: ref, err: err}
	}
	return e.textForm(kept)
}

// TestExecTextReadsLikeATerminal pins the text form of execution results: output,
// stderr, value and error as plain text, then one footer line. A failure's reason is
// no field of the JSON: repl sets it, and a case names it after its JSON.
func TestExecTextReadsLikeATerminal(t *testing.T) {
	for _, c := range []struct {
		name, raw, want string
		reason          repl.Reason
	}{
		{"print", `{"run_id":"R","success":true,"stdout":"hello\n","return_value":null,"error":null,"state":"preserved","generation":1}`,
			"hello\n[ok; generation 1; run R]", ""},
		{"output and a value", `{"success":true,"stdout":"hello\nworld\n","return_value":"42","value":42,"state":"preserved","generation":1}`,
			"hello\nworld\n42\n[ok; generation 1]", ""},
		{"nothing", `{"success":true,"stdout":"","return_value":null,"state":"preserved","generation":3}`,
			"[ok; generation 3]", ""},
		{"output without a newline", `{"success":true,"stdout":"a","stderr":"b","return_value":"1","state":"preserved","generation":1}`,
			"a\n[stderr]\nb\n1\n[ok; generation 1]", ""},
		{"a multi-line string", `{"success":true,"return_value":"\"a\\nb\"","value":"a\nb","state":"preserved","generation":1}`,
			"a\nb\n[ok; generation 1]", ""},
		{"a one-line string keeps its quotes", `{"success":true,"return_value":"\"hi\"","value":"hi","state":"preserved","generation":1}`,
			"\"hi\"\n[ok; generation 1]", ""},
		{"an exception", `{"success":false,"error":"Traceback (most recent call last):\nZeroDivisionError: division by zero","state":"preserved","generation":2}`,
			"Traceback (most recent call last):\nZeroDivisionError: division by zero\n[failed; generation 2]", repl.ReasonRaised},
		{"a crash is said once", `{"success":false,"error":"Python worker crashed; variables cleared (exit status 3)","state":"cleared","generation":1}`,
			"Python worker crashed; variables cleared (exit status 3)\n[failed; generation 1]", repl.ReasonCrashed},
		{"a cleared state the error does not name", `{"success":false,"error":"Request abandoned; worker killed","state":"cleared","generation":1}`,
			"Request abandoned; worker killed\n[failed; state cleared; generation 1]", repl.ReasonAbandoned},
		{"a failed start", `{"success":false,"error":"Python worker startup timed out; no Python state exists","state":"cleared","generation":0}`,
			"Python worker startup timed out; no Python state exists\n[failed; state cleared; generation 0]", repl.ReasonStartFailed},
		{"a stuck timeout, said once", `{"success":false,"error":"Execution timed out after 1 s; worker did not stop; variables cleared","state":"cleared","generation":1}`,
			"Execution timed out after 1 s; worker did not stop; variables cleared\n[failed; generation 1]", repl.ReasonTimeout},
		{"a new worker after the first", `{"success":true,"stdout":"x\n","state":"preserved","state_reset":true,"state_reset_reason":"lost","generation":2}`,
			"x\n[ok; generation 2; new worker: earlier variables are gone]", ""},
		{"a saved file's exit code, in a fresh worker", `{"success":false,"error":"SystemExit: 3","exit_code":3,"execution_mode":"fresh","state":"preserved","generation":1}`,
			"SystemExit: 3\n[failed; exit code 3; generation 1; fresh worker]", repl.ReasonRaised},
		{"leftover tasks", `{"success":true,"state":"preserved","generation":1,"background_tasks_cancelled":2}`,
			"[ok; generation 1; 2 leftover asyncio tasks cancelled]", ""},
		{"a value artifact", `{"success":true,"return_value":"<list; length=3000; safe preview omitted>","truncated":{"return":true},"artifact":{"id":"A","size":123456,"format":"json"},"state":"preserved","session_id":"S","generation":1}`,
			"<list; length=3000; safe preview omitted>\n[ok; generation 1; value: artifact A (123,456 bytes); session S]", ""},
		{"a failed value artifact", `{"success":true,"return_value":"<x; safe preview omitted>","truncated":{"return":true},"artifact_error":"Artifact store is full","state":"preserved","generation":1}`,
			"<x; safe preview omitted>\n[ok; generation 1; value not saved: Artifact store is full]", ""},
		{"a stream the worker cut", `{"success":true,"stdout":"xxx","truncated":{"stdout":true},"state":"preserved","generation":1}`,
			"xxx\n[ok; generation 1; stdout cut at 50,000 bytes]", ""},
	} {
		r := view(t, c.raw)
		r.Reason = c.reason
		if got := execText(r, false, noSave).text(); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}

// TestExecTextNewFields renders each field of this round's threads and images, from
// synthetic results (docs/contract.md §4.1).
func TestExecTextNewFields(t *testing.T) {
	for _, c := range []struct{ name, raw, want string }{
		{"background threads", `{"success":true,"state":"preserved","generation":1,"background_threads":["tqdm_monitor","Thread-3 (worker)","a","b","c","d"]}`,
			"[ok; generation 1; threads still running: tqdm_monitor, Thread-3 (worker), a, b, and 2 more]"},
		{"background output", `{"success":true,"stdout":"now\n","state":"preserved","generation":1,"background_output":{"stdout":"tick\n","stderr":"50%\n","truncated":true}}`,
			"now\n[background stdout]\ntick\n[background stderr]\n50%\n[ok; generation 1; background output cut]"},
		{"output artifacts", `{"success":true,"stdout":"head...tail","stderr":"e","truncated":{"stdout":true,"stderr":true},"state":"preserved","session_id":"S","generation":1,"output_artifacts":{"stdout":{"id":"O1","size":2000000,"format":"text"},"stderr":{"id":"O2","size":70000,"format":"text"}}}`,
			"head...tail\n[stderr]\ne\n[ok; generation 1; complete stdout: artifact O1 (2,000,000 bytes); complete stderr: artifact O2 (70,000 bytes); session S]"},
		{"images", `{"success":true,"state":"preserved","generation":1,"images":[{"mime":"image/png","bytes":1234,"width":640,"height":480}]}`,
			"[ok; generation 1; image: png 640x480]"},
		{"image artifacts", `{"success":true,"state":"preserved","session_id":"S","generation":1,"images":[{"mime":"image/png","bytes":1,"width":1,"height":1},{"mime":"image/jpeg","bytes":2,"width":2,"height":3}],"image_artifacts":[{"id":"I1","size":9000000,"format":"binary","reason":"past the 512 KiB of images one run shows inline"}]}`,
			"[ok; generation 1; images: png 1x1, jpeg 2x3; 1 image not shown (past the 512 KiB of images one run shows inline), kept as artifact: artifact I1 (9,000,000 bytes); session S]"},
		{"images past the count", `{"success":true,"state":"preserved","session_id":"S","generation":1,"images":[` + strings.Repeat(`{"mime":"image/png","bytes":1,"width":640,"height":480},`, 7) + `{"mime":"image/png","bytes":1,"width":640,"height":480}],"image_artifacts":[{"id":"I9","size":4102,"format":"binary","reason":"more than 8 images in one run"},{"id":"I10","size":4102,"format":"binary","reason":"more than 8 images in one run"}]}`,
			"[ok; generation 1; 8 images: png 640x480, png 640x480, png 640x480, png 640x480, and 4 more; 2 images not shown (more than 8 images in one run), kept as artifacts: artifact I9 (4,102 bytes), artifact I10 (4,102 bytes); session S]"},
	} {
		if got := execText(view(t, c.raw), false, noSave).text(); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
	// python_run read from offsets says where to read on from.
	if got := execText(view(t, `{"run_id":"R","success":true,"stdout":"b\n","state":"preserved","generation":4,"stdout_start":2,"stdout_end":4,"stderr_start":0,"stderr_end":0}`), true, noSave); got != (reply{body: "b\n", footer: "[ok; generation 4; run R; stdout_end 4; stderr_end 0]"}) {
		t.Errorf("polled: %q", got)
	}
}

// TestExecTextLongValue: a long multi-line string's preview, a JSON literal cut
// short, reads as text and says where it was cut.
func TestExecTextLongValue(t *testing.T) {
	lit, _ := json.Marshal(strings.Repeat("line\n", 10))
	cut := string(lit[:len(lit)-9]) // inside the last escapes, no closing quote
	raw, _ := json.Marshal(map[string]any{"success": true, "return_value": cut, "truncated": map[string]bool{"return": true},
		"artifact": map[string]any{"id": "V", "size": 50, "format": "text"}, "state": "preserved", "session_id": "S", "generation": 1})
	got := execText(view(t, string(raw)), false, noSave).text()
	if !strings.HasPrefix(got, "line\nline\n") || strings.Contains(got, `\n`) {
		t.Fatalf("a long string's preview does not read as text: %q", got)
	}
	if !strings.Contains(got, "[... value cut here; all of it is the value artifact named below ...]") || !strings.Contains(got, "value: artifact V") {
		t.Fatalf("the cut is not said: %q", got)
	}
}

// TestExecTextBound: the text stays within modelTextLimit with every part present,
// each cut in its middle; what no artifact holds is saved whole, and the footer
// names it.
func TestExecTextBound(t *testing.T) {
	out := "first line\n" + strings.Repeat("o", 49000) + "\nlast line\n"
	tb := "Traceback (most recent call last):\n" + strings.Repeat("  frame\n", 2400) + "ValueError: the end\n"
	raw, _ := json.Marshal(map[string]any{"success": false, "stdout": out, "stderr": strings.Repeat("e", 30000), "return_value": nil,
		"error": tb, "state": "preserved", "session_id": "S", "generation": 1})
	var saved string
	got := execText(view(t, string(raw)), false, func(s string) (artifacts.Ref, error) {
		saved = s
		return artifacts.Ref{ID: "T", Size: int64(len(s)), Format: artifacts.FormatText}, nil
	}).text()
	if len(got) > modelTextLimit {
		t.Fatalf("text is %d bytes", len(got))
	}
	for _, want := range []string{"first line\n", "\nlast line\n", "[stderr]\n", "Traceback (most recent call last):", "ValueError: the end",
		"bytes of stdout left out", "bytes of stderr left out", "bytes of the error left out", "complete text: artifact T"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in the bounded text", want)
		}
	}
	if !strings.HasSuffix(got, "; session S]") || !strings.HasPrefix(got[strings.LastIndex(got, "\n")+1:], "[failed; generation 1;") {
		t.Errorf("footer: %q", got[strings.LastIndex(got, "\n")+1:])
	}
	if saved != out+"[stderr]\n"+strings.Repeat("e", 30000)+"\n"+tb {
		t.Errorf("the saved text is not the whole text (%d bytes)", len(saved))
	}

	// When artifacts already hold the parts that are cut, nothing more is saved.
	raw, _ = json.Marshal(map[string]any{"success": true, "stdout": strings.Repeat("o", 50000), "truncated": map[string]bool{"stdout": true},
		"state": "preserved", "session_id": "S", "generation": 1, "output_artifacts": map[string]any{"stdout": map[string]any{"id": "O", "size": 9000000, "format": "text"}}})
	got = execText(view(t, string(raw)), false, noSave).text()
	if len(got) > modelTextLimit || !strings.Contains(got, "bytes of stdout left out") || strings.Contains(got, "complete text") ||
		!strings.HasSuffix(got, "[ok; generation 1; complete stdout: artifact O (9,000,000 bytes); session S]") {
		t.Errorf("a cut held by the output artifact: %d bytes, footer %q", len(got), got[strings.LastIndex(got, "\n")+1:])
	}

	// A failed save is said, and the text still fits.
	raw, _ = json.Marshal(map[string]any{"success": true, "stdout": strings.Repeat("o", 45000), "state": "preserved", "generation": 1})
	got = execText(view(t, string(raw)), false, noSave).text()
	if len(got) > modelTextLimit || !strings.HasSuffix(got, "[ok; generation 1; complete text not saved: nothing may be saved here]") {
		t.Errorf("a failed save: %d bytes, footer %q", len(got), got[strings.LastIndex(got, "\n")+1:])
	}
}

func TestCutMiddle(t *testing.T) {
	s := strings.Repeat("a\n", 500) + strings.Repeat("Ж", 1000) + strings.Repeat("b\n", 500)
	for _, limit := range []int{100, 777, 1500, 3000} {
		got := cutMiddle(s, limit, "stdout")
		if len(got) > limit || !utf8.ValidString(got) {
			t.Errorf("limit %d: %d bytes, valid UTF-8 %v", limit, len(got), utf8.ValidString(got))
		}
		if !strings.HasPrefix(got, "a\n") || !strings.HasSuffix(got, "b\n") || !strings.Contains(got, "bytes of stdout left out") {
			t.Errorf("limit %d: head, tail or marker missing: %q", limit, got)
		}
	}
	if got := cutMiddle("short", 10, "x"); got != "short" {
		t.Errorf("a text that fits was cut: %q", got)
	}
	if got := cutMiddle(strings.Repeat("x", 100), 5, "x"); len(got) > 100 || !strings.Contains(got, "left out") {
		t.Errorf("no room for anything but the marker: %q", got)
	}
}

func TestFitShares(t *testing.T) {
	texts := []int{10, 1000, 0, 100}
	got := fitShares(texts, 500)
	if got[0] != 10 || got[3] != 100 || got[2] != 0 || got[1] != 390 {
		t.Errorf("shares = %v", got)
	}
	if got := fitShares(texts, 5000); got[1] != 1000 {
		t.Errorf("room for everything: %v", got)
	}
}

func TestCount(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 50000: "50,000", 2000000: "2,000,000", -1234: "-1,234"} {
		if got := count(n); got != want {
			t.Errorf("count(%d) = %q", n, got)
		}
	}
}

// TestHealthTextBound: python_health's text stays under healthTextLimit and names
// the default session once even with the longest paths, a long registry error and
// every session open.
func TestHealthTextBound(t *testing.T) {
	long := "/" + strings.Repeat("very-long-directory-name/", 160)
	session := func(id, name string) repl.Health {
		h := repl.Health{SessionID: id, Name: name, Project: long, Generation: 7, Version: "0.1.0",
			Limits: repl.Limits{CodeBytes: repl.MaxCodeBytes, StreamBytes: repl.StreamLimit, TimeoutSeconds: 3600, HistoryRuns: 64, WorkerRSSMiB: 2048}}
		h.Environment = repl.Environment{Source: "explicit", Python: long + "python", ActualPythonExecutable: long + "python3.14",
			Version: "3.14.0", Validated: true, RuntimeStatus: "running"}
		h.ActiveRun = ptr("11111111-2222-4333-8444-555555555555")
		return h
	}
	def := session("00000000-0000-4000-8000-000000000000", strings.Repeat("n", 128))
	list := sessionList{Sessions: []repl.Health{def}, Limit: repl.MaxSessions}
	for i := 1; i < repl.MaxSessions; i++ {
		list.Sessions = append(list.Sessions, session(fmt.Sprintf("%08d-0000-4000-8000-000000000000", i), strings.Repeat("x", 128)))
	}
	report := healthReport{Server: def, Sessions: list}
	report.Broker.ConfigurationError = ptr(strings.Repeat("bad registry ", 200))
	got := report.modelText().body
	if len(got) >= healthTextLimit || strings.Count(got, def.SessionID) != 1 || !strings.Contains(got, "more: python_session_list") {
		t.Fatalf("health text is %d bytes, names the default session %d times:\n%s", len(got), strings.Count(got, def.SessionID), got)
	}
}

// TestTextFormFooterIsItsOwnBlock: in the text form the footer is the last text
// block and the output the first, so code that reads the first block (Codex's code
// mode) parses the output alone; every execution's footer names its run, and a live
// run's where to read on from.
func TestTextFormFooterIsItsOwnBlock(t *testing.T) {
	res := presentAs(t, formText, executed(&repl.Result{RunID: "R", Success: true,
		Stdout: `{"n": 42}` + "\n", State: repl.StatePreserved, Generation: 1}))
	if len(res.Content) != 2 {
		t.Fatalf("want the output and the footer, got %d blocks", len(res.Content))
	}
	var printed struct{ N int }
	if out := res.Content[0].(*mcp.TextContent).Text; json.Unmarshal([]byte(out), &printed) != nil || printed.N != 42 {
		t.Errorf("the first block is not the printed JSON: %q", out)
	}
	if foot := res.Content[1].(*mcp.TextContent).Text; foot != "[ok; generation 1; run R]" {
		t.Errorf("footer block: %q", foot)
	}
	snap := &repl.Snapshot{RunID: "R", Status: "running", Stdout: "7\n", StdoutEnd: 2, StderrEnd: 0, Generation: 1}
	res = presentAs(t, formText, runningRun{Snapshot: snap})
	if len(res.Content) != 2 || res.Content[0].(*mcp.TextContent).Text != "7\n" ||
		!strings.Contains(res.Content[1].(*mcp.TextContent).Text, `"stdout_offset":2,"stderr_offset":0}`) {
		t.Errorf("a live run: %v", res.Content)
	}
}

// TestJSONTextIsWhatJSONCarries: the structured text block is measured in the text
// its JSON carries, each byte that is no UTF-8 (native output may hold some) a
// U+FFFD, exactly as encoding/json writes it.
func TestJSONTextIsWhatJSONCarries(t *testing.T) {
	for _, s := range []string{"plain", "a\xffb\xc3", "\xe2\x82", "ok \ufffd", "\x80\x80x\xf0\x9f\x98"} {
		encoded, _ := json.Marshal(s)
		var carried string
		json.Unmarshal(encoded, &carried)
		if got := jsonText(s); got != carried {
			t.Errorf("%q: jsonText %q, JSON carries %q", s, got, carried)
		}
	}
}

// TestReleasedFooterNamesWhatDidNotComeBack: after an idle release, the footer lists
// each variable that did not come back with its whole reason, the parenthesis closed,
// however long the reason (docs/contract.md §6.7).
func TestReleasedFooterNamesWhatDidNotComeBack(t *testing.T) {
	reset := true
	res := &repl.Result{RunID: "R", Success: true, State: repl.StatePreserved, Generation: 2, StateReset: &reset,
		StateResetReason: repl.ResetReleased, Restored: &repl.RestoreReport{RestoredCount: 4, NotRestoredCount: 2,
			NotRestored: []repl.LostVariable{
				{Name: "lock", Reason: "not saved: not picklable: cannot pickle '_thread.lock' object"},
				{Name: "f", Reason: "not saved: " + strings.Repeat("very long reason ", 20)},
			}}}
	got := executed(res).footer(nil)
	want := "[ok; generation 2; worker released while idle, restored: 4 of 6 variables back; not back: " +
		"lock (not saved: not picklable: cannot pickle '_thread.lock' object), f (not saved: " +
		strings.Repeat("very long reason ", 4) + "very lon...); run R]"
	if got != want {
		t.Errorf("footer:\n got %q\nwant %q", got, want)
	}
}
