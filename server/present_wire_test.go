package server

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iota-uz/repl-mcp/internal/testwait"
	"github.com/iota-uz/repl-mcp/repl"
)

// textCall makes a tools/call that must be answered in the text form: one text
// block, an explicit boolean isError, and no structuredContent.
func (w *wireServer) textCall(t *testing.T, tool string, args map[string]any) (string, bool) {
	t.Helper()
	reply := w.request("tools/call", map[string]any{"name": tool, "arguments": args})
	res := reply.result()
	if res == nil {
		t.Fatalf("%s %v: not a tool result: %s", tool, args, abbreviate(reply.raw))
	}
	if _, ok := res["structuredContent"]; ok {
		t.Fatalf("%s %v: a text-form result has structuredContent: %s", tool, args, abbreviate(reply.raw))
	}
	isError, ok := res["isError"].(bool)
	if !ok {
		t.Fatalf("%s %v: the result has no boolean isError: %s", tool, args, abbreviate(reply.raw))
	}
	// One text block, or the body and then the footer line, each a block of its own
	// (the reply type).
	content, _ := res["content"].([]any)
	if len(content) != 1 && len(content) != 2 {
		t.Fatalf("%s %v: want one or two content blocks: %s", tool, args, abbreviate(reply.raw))
	}
	var text string
	for i, c := range content {
		block, _ := c.(map[string]any)
		part, _ := block["text"].(string)
		if block["type"] != "text" || part == "" {
			t.Fatalf("%s %v: block %d is not a text: %s", tool, args, i, abbreviate(reply.raw))
		}
		if i == 1 && (strings.Contains(part, "\n") || !strings.HasPrefix(part, "[")) {
			t.Fatalf("%s %v: the second block is not a footer line: %q", tool, args, part)
		}
		text += part
	}
	if len(text) > modelTextLimit {
		t.Fatalf("%s %v: the text is %d bytes, over %d", tool, args, len(text), modelTextLimit)
	}
	return text, isError
}

// footerOf is the last line of a text-form execution result.
func footerOf(text string) string { return text[strings.LastIndex(text, "\n")+1:] }

var uuidPattern = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// TestTextFormForClaudeCodeAndCodex: the clients that show their model one part of
// a result (Claude Code, Codex, Gemini CLI, opencode) get the text form, chosen by the clientInfo of initialize, of each
// request's _meta, or of server/discover when a request's _meta leaves it out: tools without outputSchema in the contract's order, results
// without structuredContent that read like a terminal, the same isError (none to
// Gemini CLI: the text says a failure), and a health text that is small and names the
// default session once.
func TestTextFormForClaudeCodeAndCodex(t *testing.T) {
	for _, c := range []wireClient{
		{name: "claude-code", protocol: "2026-07-28"},
		{name: "claude-code", protocol: "2026-07-28", discover: true},
		{name: "claude-code", protocol: "2025-11-25"},
		{name: "codex-mcp-client", protocol: "2025-06-18"},
		{name: "gemini-cli-mcp-client", protocol: "2025-11-25"},
		{name: "opencode", protocol: "2025-11-25"},
	} {
		name := c.name + "@" + c.protocol
		if c.discover {
			name += "+discover"
		}
		t.Run(name, func(t *testing.T) {
			w := startWireAs(t, c)
			flagged := c.name != unflaggedClient // whether a failure carries isError
			list := w.list.result()
			if list["ttlMs"] != 0.0 || list["cacheScope"] != "private" {
				t.Errorf("tools/list hints: ttlMs %v, cacheScope %v", list["ttlMs"], list["cacheScope"])
			}
			tools := list["tools"].([]any)
			for i, want := range w.srv.tools() {
				tl := tools[i].(map[string]any)
				if tl["name"] != want.name {
					t.Errorf("tool %d is %v, want %s", i, tl["name"], want.name)
				}
				if _, ok := tl["outputSchema"]; ok {
					t.Errorf("%s: an outputSchema is published to a text-form client", tl["name"])
				}
				if tl["inputSchema"] == nil || tl["annotations"] == nil {
					t.Errorf("%s: lost its inputSchema or annotations", tl["name"])
				}
			}

			health, isError := w.textCall(t, "python_health", map[string]any{})
			sid := w.srv.repl.Default().ID()
			if isError || len(health) >= healthTextLimit || strings.Count(health, sid) != 1 || strings.Contains(health, "{") {
				t.Errorf("health (%d bytes, the default session %d times):\n%s", len(health), strings.Count(health, sid), health)
			}

			// No session_id: over stdio the default session, whatever the protocol.
			got, isError := w.textCall(t, "execute_python", map[string]any{"code": `print("hello")`})
			if isError || got != "hello\n[ok; generation 1; run "+uuidPattern.FindString(got)+"]" || len(got)-len("hello\n") > 80 {
				t.Errorf("print(\"hello\"): %q", got)
			}
			got, _ = w.textCall(t, "execute_python", map[string]any{"code": `print("hello\nworld"); 6*7`})
			if got != "hello\nworld\n42\n[ok; generation 1; run "+uuidPattern.FindString(got)+"]" {
				t.Errorf("output and a value: %q", got)
			}
			got, _ = w.textCall(t, "execute_python", map[string]any{"code": `"a\nb"`})
			if got != "a\nb\n[ok; generation 1; run "+uuidPattern.FindString(got)+"]" {
				t.Errorf("a multi-line string: %q", got)
			}
			got, isError = w.textCall(t, "execute_python", map[string]any{"code": "1/0"})
			if isError != flagged || !strings.Contains(got, "ZeroDivisionError: division by zero\n[failed; generation 1; run ") {
				t.Errorf("1/0 (isError %v): %q", isError, got)
			}
			got, isError = w.textCall(t, "execute_python", map[string]any{"code": "import os; os._exit(3)"})
			if isError != flagged || strings.Count(got, "cleared") != 1 || footerOf(got) != "[failed; generation 1; run "+uuidPattern.FindString(got)+"]" || !strings.Contains(got, "crashed") {
				t.Errorf("a crash: %q", got)
			}
			got, _ = w.textCall(t, "execute_python", map[string]any{"code": "x = 1"})
			if got != "[ok; generation 2; new worker: earlier variables are gone; run "+uuidPattern.FindString(got)+"]" {
				t.Errorf("after the crash: %q", got)
			}

			// The other tools say what they did in a line or two, never as JSON.
			started, _ := w.textCall(t, "python_start", map[string]any{"code": "import time; print('going'); time.sleep(0.3); 7"})
			run := uuidPattern.FindString(started)
			if run == "" || !strings.Contains(started, "python_run") {
				t.Fatalf("python_start: %q", started)
			}
			var polled string
			testwait.Until(t, 30*time.Second, "the background run's result", func() bool {
				polled, _ = w.textCall(t, "python_run", map[string]any{"run_id": run})
				return !strings.HasPrefix(footerOf(polled), "[running;") && !strings.HasPrefix(footerOf(polled), "[starting;")
			})
			if polled != "going\n7\n[ok; generation 2; run "+run+`; code: "import time; print('going'); time.sleep(0.3); 7"]` {
				t.Errorf("python_run of a finished background run: %q", polled)
			}
			if got, isError := w.textCall(t, "python_run", map[string]any{"run_id": "no-such-run"}); isError != flagged || !strings.HasPrefix(got, "Error: Run not found") {
				t.Errorf("python_run of an unknown run (isError %v): %q", isError, got)
			}
			if got, _ := w.textCall(t, "python_session_inspect", map[string]any{"include_namespace": true}); !strings.Contains(got, "\nx: int") {
				t.Errorf("inspect: %q", got)
			}
		})
	}
}

// TestStructuredFormKeepsTheContract: a client not known to need the text form gets
// structuredContent with every field and the outputSchemas, and a text block of
// the same parts without the footer.
func TestStructuredFormKeepsTheContract(t *testing.T) {
	w := startWireAs(t, wireClient{name: "some-other-client", protocol: "2025-06-18"})
	if len(w.schemas) != len(w.srv.tools()) {
		t.Fatalf("%d output schemas published, want %d", len(w.schemas), len(w.srv.tools()))
	}
	reply := w.request("tools/call", map[string]any{"name": "execute_python", "arguments": map[string]any{"code": `print("hello"); 6*7`}})
	res := reply.result()
	sc, _ := res["structuredContent"].(map[string]any)
	if sc["stdout"] != "hello\n" || sc["value"] != 42.0 || sc["generation"] != 1.0 || sc["run_id"] == nil {
		t.Fatalf("structuredContent: %v", sc)
	}
	if got := res["content"].([]any)[0].(map[string]any)["text"]; got != "hello\n42" {
		t.Errorf("text beside structuredContent: %q", got)
	}
}

// TestResultFormatOverride: --result-format text gives every client the text form,
// structured gives it to none.
func TestResultFormatOverride(t *testing.T) {
	w := startWireAs(t, wireClient{name: "some-other-client", format: FormatText})
	if len(w.schemas) != 0 {
		t.Errorf("--result-format text published %d output schemas", len(w.schemas))
	}
	if got, _ := w.textCall(t, "execute_python", map[string]any{"code": "1 + 1"}); got != "2\n[ok; generation 1; run "+uuidPattern.FindString(got)+"]" {
		t.Errorf("--result-format text: %q", got)
	}
	w = startWireAs(t, wireClient{name: "claude-code", format: FormatStructured})
	if len(w.schemas) != len(w.srv.tools()) {
		t.Errorf("--result-format structured published %d output schemas to claude-code", len(w.schemas))
	}
	if sc := w.succeed(t, "execute_python", map[string]any{"code": "1 + 1"}); sc["value"] != 2.0 {
		t.Errorf("--result-format structured: %v", sc)
	}
}

// syntheticTool is a tool of the test's own whose value is the execution result
// raw, as the tools that run code return one: it shows what the real server does
// with fields that real cells fill in elsewhere (threads, images, output
// artifacts).
func syntheticTool(raw *string) func(*Server) {
	return func(s *Server) {
		s.register(tool{
			name: "synthetic_result", description: "test", output: executionOutput(),
			annotations: annotations(true, false, true, false),
			handler: handle(func(context.Context, *repl.Session, noParams) (any, error) {
				var r repl.Result
				if err := json.Unmarshal([]byte(*raw), &r); err != nil {
					return nil, err
				}
				return executed(&r), nil
			}),
		})
	}
}

// TestNewResultFieldsOverTheServer: each field of this round's threads and images,
// in a result, reaches a text-form client's footer and a structured client's
// structuredContent.
func TestNewResultFieldsOverTheServer(t *testing.T) {
	var raw string
	text := startWireAs(t, wireClient{name: "codex-mcp-client", protocol: "2025-06-18", register: syntheticTool(&raw)})
	structured := startWireAs(t, wireClient{name: "some-other-client", register: syntheticTool(&raw)})
	base := `"run_id":"R","stdout":"","stderr":"","return_value":null,"error":null,"elapsed_ms":1,"truncated":{"stdout":false,"stderr":false,"return":false},"state":"preserved","server_id":"V","session_id":"S","generation":3`
	for _, c := range []struct{ field, json, footer string }{
		{"background_threads", `"background_threads":["tqdm_monitor"]`, "[ok; generation 3; run R; threads still running: tqdm_monitor]"},
		{"background_output", `"background_output":{"stdout":"tick\n","stderr":"","truncated":false}`, "[ok; generation 3; run R]"},
		{"output_artifacts", `"output_artifacts":{"stdout":{"id":"O","size":900000,"format":"text","sha256":"x","lifetime":"server","eviction":"oldest-first"}}`,
			"[ok; generation 3; run R; complete stdout: artifact O (900,000 bytes); session S]"},
		{"images", `"images":[{"mime":"image/png","bytes":2048,"width":64,"height":32}]`, "[ok; generation 3; run R; image: png 64x32]"},
		{"image_artifacts", `"image_artifacts":[{"id":"I","size":5000000,"format":"binary","sha256":"x","lifetime":"server","eviction":"oldest-first","reason":"past the 512 KiB of images one run shows inline"}]`,
			"[ok; generation 3; run R; 1 image not shown (past the 512 KiB of images one run shows inline), kept as artifact: artifact I (5,000,000 bytes); session S]"},
	} {
		raw = `{"success":true,` + base + `,` + c.json + `}`
		got, isError := text.textCall(t, "synthetic_result", map[string]any{})
		if isError || footerOf(got) != c.footer {
			t.Errorf("%s: text %q, want the footer %q", c.field, got, c.footer)
		}
		if c.field == "background_output" && got != "[background stdout]\ntick\n[ok; generation 3; run R]" {
			t.Errorf("background output: %q", got)
		}
		sc := structured.succeed(t, "synthetic_result", map[string]any{})
		if sc[c.field] == nil {
			t.Errorf("%s: not in structuredContent: %v", c.field, sc)
		}
	}
}

// TestTextFormBound: a result larger than a client keeps inline is cut to
// modelTextLimit with every part present; what only the result held is saved whole
// as an artifact the footer names, the same one each time the run is read again.
func TestTextFormBound(t *testing.T) {
	w := startWireAs(t, wireClient{name: "claude-code", protocol: "2026-07-28"})
	got, isError := w.textCall(t, "execute_python", map[string]any{"code": "print('first')\nprint('y' * 45000)\nprint('last')\nraise ValueError('the end')"})
	if !isError || !strings.HasPrefix(got, "first\n") || !strings.Contains(got, "bytes of stdout left out") ||
		!strings.Contains(got, "ValueError: the end") || !strings.Contains(got, "last\n") {
		t.Fatalf("the bounded text (%d bytes) lost a part:\n%s...%s", len(got), got[:200], got[len(got)-600:])
	}
	foot := footerOf(got)
	m := regexp.MustCompile(`complete text: artifact (\S+) \(([\d,]+) bytes\); session (\S+)\]$`).FindStringSubmatch(foot)
	if m == nil {
		t.Fatalf("the footer names no artifact: %q", foot)
	}
	// The artifact is the whole text: output and traceback, nothing cut.
	content, _ := w.textCall(t, "artifact_read", map[string]any{"session_id": m[3], "id": m[1], "offset": 45000, "length": 2000})
	if !strings.Contains(content, "yyyy\nlast\nTraceback") || !strings.Contains(content, "ValueError: the end") {
		t.Errorf("the saved text's end: %q", content)
	}
	// python_run of the same run names the same artifact.
	run := strings.TrimPrefix(regexp.MustCompile(`<repl:[^>]+>`).FindString(got), "<repl:")
	again, _ := w.textCall(t, "python_run", map[string]any{"run_id": strings.TrimSuffix(run, ">")})
	if !strings.Contains(footerOf(again), "artifact "+m[1]) {
		t.Errorf("python_run made another artifact: %q, first %q", footerOf(again), foot)
	}
	// Bytes the worker cut are kept whole as an artifact, and the footer names it.
	got, _ = w.textCall(t, "execute_python", map[string]any{"code": "print('z' * 2_000_000)"})
	if !regexp.MustCompile(`complete stdout: artifact \S+ \(2,000,001 bytes\)`).MatchString(footerOf(got)) {
		t.Errorf("a stream the worker cut: %q", footerOf(got))
	}
}

// TestTextFormOfEveryTool: in the text form every tool answers with a text of its
// own that says what happened and what to use next, never its JSON, in success and
// in failure.
func TestTextFormOfEveryTool(t *testing.T) {
	w := startWireAs(t, wireClient{name: "claude-code", protocol: "2025-11-25"})
	sid := w.srv.repl.Default().ID()
	check := func(tool string, args map[string]any, wantError bool, wants ...string) string {
		t.Helper()
		got, isError := w.textCall(t, tool, args)
		if isError != wantError || strings.HasPrefix(got, "{") {
			t.Errorf("%s %v (isError %v): %q", tool, args, isError, got)
		}
		for _, want := range wants {
			if !strings.Contains(got, want) {
				t.Errorf("%s %v: no %q in %q", tool, args, want, got)
			}
		}
		return got
	}
	opened := check("python_session_open", map[string]any{"name": "other", "project": w.project}, false,
		"Opened session other, session_id ", "generation 0", "no worker yet", "project "+w.project)
	other := uuidPattern.FindString(opened)
	check("python_session_open", map[string]any{"name": "nowhere", "project": w.project + "/missing"}, true, "Error: Project directory does not exist")
	check("python_session_list", map[string]any{}, false, "2 sessions (at most 32):\n- default, session_id "+sid, "\n- other, session_id "+other)
	check("python_session_inspect", map[string]any{"session_id": other}, false, "other, session_id "+other)
	check("python_session_close", map[string]any{"session_id": other}, false, "Closed session "+other+" at generation 0.")
	check("python_session_close", map[string]any{"session_id": sid}, true, "Error: The legacy default session cannot be closed")

	w.write("data.txt", "0123456789")
	created := check("artifact_create", map[string]any{"session_id": sid, "path": "data.txt", "format": "text"}, false,
		"(10 bytes): text, sha256 84d89877f0d4041efb6bf91a16f0248f2fd573e6af05c19f96bedb9f882f7882; session "+sid)
	aid := uuidPattern.FindString(created)
	check("artifact_read", map[string]any{"session_id": sid, "id": aid, "offset": 2, "length": 3}, false,
		"234[artifact "+aid+", bytes 2 to 5 of 10 (text); more from offset 5]")
	check("artifact_read", map[string]any{"session_id": sid, "id": aid, "offset": 8, "encoding": "hex"}, false,
		"3839[artifact "+aid+", bytes 8 to 10 of 10 (hex); the end]")
	check("artifact_save", map[string]any{"session_id": sid, "id": aid, "path": "copy.txt"}, false, "Saved artifact "+aid, w.project+"/copy.txt")
	check("artifact_save", map[string]any{"session_id": sid, "id": aid, "path": "copy.txt"}, true, "Error: ")
	check("artifact_forward", map[string]any{"session_id": sid, "id": aid, "server": "fx", "tool": "echo", "argument": "text", "format": "text"}, false,
		"0123456789\n[forwarded; the downstream tool succeeded]")
	check("artifact_delete", map[string]any{"session_id": sid, "id": aid}, false, "Deleted artifact "+aid+".")
	check("artifact_delete", map[string]any{"session_id": sid, "id": aid}, true, "Error: ")
	check("python_cancel", map[string]any{}, true, "Error: No matching active run")
}

// TestTextFormArtifactRangeFits: a 64 KiB range is more than a text-form result may
// hold; the text shows what fits and where to read on, losing nothing.
func TestTextFormArtifactRangeFits(t *testing.T) {
	w := startWireAs(t, wireClient{name: "codex-mcp-client", protocol: "2025-06-18"})
	sid := w.srv.repl.Default().ID()
	w.write("big.txt", strings.Repeat("Ж", 40000))
	created, _ := w.textCall(t, "artifact_create", map[string]any{"session_id": sid, "path": "big.txt", "format": "text"})
	aid := uuidPattern.FindString(created)
	got, _ := w.textCall(t, "artifact_read", map[string]any{"session_id": sid, "id": aid})
	m := regexp.MustCompile(`\[artifact \S+, bytes 0 to (\d+) of 80,000 \(text\); more from offset (\d+)\]$`).FindStringSubmatch(got)
	if m == nil || m[1] != m[2] {
		t.Fatalf("a range that does not fit: %d bytes, ends %q", len(got), got[max(0, len(got)-120):])
	}
	if shown, _ := strconv.Atoi(m[1]); len(got)-len(m[0]) != shown || shown%2 != 0 {
		t.Errorf("the text shows %d bytes and says it showed %d", len(got)-len(m[0]), shown)
	}

	// Another tool's text over the bound is cut in its middle, and kept whole.
	got, _ = w.textCall(t, "artifact_forward", map[string]any{"session_id": sid, "id": aid, "server": "fx", "tool": "echo", "argument": "text", "format": "text"})
	m = regexp.MustCompile(`\n\[complete text: artifact (\S+) \(80,0\d\d bytes\); session ` + sid + `\]$`).FindStringSubmatch(got)
	if m == nil || !strings.HasPrefix(got, "ЖЖЖ") || !strings.Contains(got, "bytes of the text left out") {
		t.Fatalf("a forward over the bound: %d bytes, ends %q", len(got), got[max(0, len(got)-160):])
	}
	tail, _ := w.textCall(t, "artifact_read", map[string]any{"session_id": sid, "id": m[1], "offset": 79980, "length": 1000})
	if !strings.Contains(tail, "ЖЖ\n[forwarded; the downstream tool succeeded]") {
		t.Errorf("the kept text's end: %q", tail)
	}
}

// TestTextFormOverHTTP: over HTTP each request is judged by its own clientInfo, so
// Claude Code and a structured client share one server and each gets its form; and
// there, where clients share sessions, a 2026-07-28 call must still name its session.
func TestTextFormOverHTTP(t *testing.T) {
	url := startHTTP(t, "")
	call := func(id int, client, tool string, args map[string]any) map[string]any {
		t.Helper()
		h, body := statelessCall(id, tool, args)
		body = strings.Replace(body, `"name":"raw"`, `"name":"`+client+`"`, 1)
		// go-sdk answers a stateless request's JSON-RPC error with status 400.
		status, _, msgs, err := rawPost(t, t.Context(), url, h, body)
		if err != nil || (status != 200 && status != 400) || len(msgs) != 1 {
			t.Fatalf("%s as %s: status %d, %v, %v", tool, client, status, msgs, err)
		}
		return msgs[0]
	}
	health := call(1, "some-other-client", "python_health", map[string]any{})["result"].(map[string]any)
	sid := health["structuredContent"].(map[string]any)["server"].(map[string]any)["session_id"].(string)
	res := call(2, "claude-code", "execute_python", map[string]any{"code": "print('over http')", "session_id": sid})["result"].(map[string]any)
	if content, _ := res["content"].([]any); res["structuredContent"] != nil || len(content) != 2 ||
		content[0].(map[string]any)["text"] != "over http\n" || !strings.HasPrefix(content[1].(map[string]any)["text"].(string), "[ok; generation 1; run ") {
		t.Errorf("claude-code over HTTP: %v", res)
	}
	res = call(3, "some-other-client", "execute_python", map[string]any{"code": "1", "session_id": sid})["result"].(map[string]any)
	if sc, _ := res["structuredContent"].(map[string]any); sc["value"] != 1.0 {
		t.Errorf("a structured client over HTTP: %v", res)
	}
	e, _ := call(4, "claude-code", "execute_python", map[string]any{"code": "1"})["error"].(map[string]any)
	if e["code"] != -32602.0 || !strings.Contains(e["message"].(string), "Pass session_id") {
		t.Errorf("over HTTP under 2026-07-28 without session_id: %v, want -32602", e)
	}
}

// TestTextFormCutCountsTheWholeStream: a stream the worker cut, cut again for the text
// form, reads with one marker that counts against the complete stream, in lines and
// bytes, and names the artifact that holds all of it; stderr with native output
// after it counts both. Every byte and newline of the streams is shown or counted.
func TestTextFormCutCountsTheWholeStream(t *testing.T) {
	w := startWireAs(t, wireClient{name: "claude-code", protocol: "2025-11-25"})
	const rows = 3000
	row := func(i int) string { return fmt.Sprintf("row %06d %s\n", i, strings.Repeat("x", 50)) }
	total := 0
	for i := range rows {
		total += len(row(i))
	}
	code := fmt.Sprintf(`import os, sys
print("\n".join(f"row {i:06d} " + "x" * 50 for i in range(%d)))
sys.stderr.write("e" * 60000 + "\n")
sys.stderr.flush()
_ = os.write(2, b"native\n" * 10000)
`, rows)
	got, _ := w.textCall(t, "execute_python", map[string]any{"code": code})
	body := checkStdoutCut(t, got, row(0), row(rows-1), total, rows)
	// python_run read from offsets counts the same way.
	run := uuidPattern.FindString(footerOf(got))
	polled, _ := w.textCall(t, "python_run", map[string]any{"run_id": run, "stdout_offset": 0, "stderr_offset": 0})
	checkStdoutCut(t, polled, row(0), row(rows-1), total, rows)

	// stderr: 60,001 bytes from Python (cut by the worker) then 70,000 native bytes.
	errPart := got[len(body)+len("\n[stderr]\n"):]
	errPart = errPart[:strings.LastIndex(errPart, "\n[ok;")+1]
	all := 0
	shownErr := errPart
	for _, m := range regexp.MustCompile(`\n\[\.\.\. (?:([\d,]+) lines?, )?([\d,]+) bytes of stderr left out[^\]]*\]\n`).FindAllStringSubmatch(errPart, -1) {
		all += number(t, m[2])
		shownErr = strings.Replace(shownErr, m[0], "", 1)
	}
	if want := 60001 + 70000; len(shownErr)+all != want {
		t.Errorf("stderr shows %d bytes and says %d left out; it was %d:\n%s", len(shownErr), all, want, clipMiddle(errPart))
	}
}

// checkStdoutCut checks that the stdout part of a text-form result (the text before
// [stderr]) shows the first and the last row around one marker, and that what it
// shows and what the marker counts are the whole stream; it returns the part.
func checkStdoutCut(t *testing.T, got, first, last string, total, rows int) string {
	t.Helper()
	body, _, ok := strings.Cut(got, "\n[stderr]\n")
	if !ok {
		t.Fatalf("no stderr part: %q", got[:200])
	}
	marker := regexp.MustCompile(`\n\[\.\.\. ([\d,]+) lines, ([\d,]+) bytes of stdout left out; all of it: artifact (\S+) \.\.\.\]\n`)
	ms := marker.FindAllStringSubmatchIndex(body, -1)
	if len(ms) != 1 || !strings.HasPrefix(body, first[:20]) || !strings.HasSuffix(body+"\n", last) {
		t.Fatalf("stdout: %d markers; head %q, tail %q", len(ms), body[:40], body[len(body)-80:])
	}
	m := ms[0]
	// The marker's first newline ends the row shown before it (the cut keeps whole
	// rows); the part's own last newline ends the line before [stderr].
	shown := body[:m[0]] + "\n" + body[m[1]:] + "\n"
	lines, bytes := number(t, body[m[2]:m[3]]), number(t, body[m[4]:m[5]])
	if len(shown)+bytes != total || strings.Count(shown, "\n")+lines != rows {
		t.Errorf("stdout shows %d bytes, %d lines and says %d bytes, %d lines left out; the stream is %d bytes, %d lines",
			len(shown), strings.Count(shown, "\n"), bytes, lines, total, rows)
	}
	return body
}

func number(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(strings.ReplaceAll(s, ",", ""))
	if err != nil {
		t.Fatalf("not a count: %q", s)
	}
	return n
}

func clipMiddle(s string) string {
	if len(s) < 600 {
		return s
	}
	return s[:300] + " ... " + s[len(s)-300:]
}

// TestTextFormBackgroundCutCountsTheWholeStream: what a thread of an earlier cell
// printed, cut by the worker, reads with a marker that counts the lines and bytes of
// all it printed.
func TestTextFormBackgroundCutCountsTheWholeStream(t *testing.T) {
	w := startWireAs(t, wireClient{name: "claude-code", protocol: "2025-11-25"})
	w.textCall(t, "execute_python", map[string]any{"code": `import threading
go, done = threading.Event(), threading.Event()
def chatter():
    go.wait()
    for i in range(2000):
        print(f"tick {i:05d} " + "y" * 20)
    done.set()
threading.Thread(target=chatter, daemon=True).start()`})
	got, _ := w.textCall(t, "execute_python", map[string]any{"code": "go.set(); done.wait(30)"})
	_, bg, ok := strings.Cut(got, "[background stdout]\n")
	if !ok {
		t.Fatalf("no background stdout: %q", clipMiddle(got))
	}
	bg = bg[:strings.LastIndex(bg, "\n[ok;")+1]
	m := regexp.MustCompile(`\n\[\.\.\. ([\d,]+) lines, ([\d,]+) bytes of background stdout left out \.\.\.\]\n`).FindStringSubmatchIndex(bg)
	if m == nil {
		t.Fatalf("no marker of background stdout in %q", clipMiddle(bg))
	}
	shown := bg[:m[0]] + bg[m[1]:]
	if lines, bytes := number(t, bg[m[2]:m[3]]), number(t, bg[m[4]:m[5]]); len(shown)+bytes != 2000*32 || strings.Count(shown, "\n")+lines != 2000 {
		t.Errorf("background stdout shows %d bytes, %d lines and says %d lines, %d bytes left out; it printed 64,000 bytes in 2,000 lines",
			len(shown), strings.Count(shown, "\n"), lines, bytes)
	}
}
