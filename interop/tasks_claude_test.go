package interop

// Long cells as MCP tasks with the real Claude Code CLI, interactive (issue 34,
// docs/contract.md §2.8). Claude Code declares the tasks extension on every request of
// its interactive CLI only (never under -p: TestModelView's long cell, on a server
// whose --task-after is under the cell, still yields there and is fetched with
// python_run). So this test runs it in a terminal that tmux drives, against a fake
// Messages API of its own whose script is a function of the conversation Claude Code
// sends, and reads what the model was given.
//
// The 70 s cell is scaled down by flags, keeping its orderings: the threshold
// (--task-after 1, the default 10) is under each long cell, the poll interval
// (--task-poll-interval 0.2, the default 1) under the rest of it, and the cells end
// long before any deadline.
//
// The script: a long cell on a stdio repl-mcp becomes a task (the model reads Claude
// Code's backgrounded notice, and the completion notification with the cell's output
// and footer starts a turn of its own); a second one is stopped with TaskStop, and the
// session keeps its variables; then a long cell on an HTTP repl-mcp, behind a proxy
// that records what Claude Code sends, becomes a task that Claude Code polls at the
// poll interval, and Claude Code exits while it runs: it sends no cancel, and a later
// python_run gets the run's result.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/iota-uz/repl-mcp/internal/testwait"
)

const (
	tasksPrompt        = "repl-mcp tasks script: make the tool calls the script makes."
	tasksTaskAfter     = "1"
	tasksPollInterval  = 200 * time.Millisecond
	tasksRunBound      = 3 * time.Minute
	tasksAPIKey        = "sk-ant-repl-mcp-interop-0123456789"
	tasksLongCell      = "x = 42\nimport time\nprint('task started', flush=True)\ntime.sleep(4)\nprint('task done')\n'task value'"
	tasksStopCell      = "import time\nprint('stop me', flush=True)\ntime.sleep(120)"
	tasksHTTPCell      = "import time\nprint('http cell', flush=True)\ntime.sleep(8)\nprint('http done')\n7 * 6"
	tasksFinalAnswer   = "Leaving the HTTP cell to run."
	tasksWaitingAnswer = "Waiting for the task."
)

// What Claude Code 2.1.332 tells its model of a call answered with a task, and how a
// task's end reaches it (measured).
var (
	claudeTaskNotice          = regexp.MustCompile(`MCP tool "([^"]+)" started server-side task (\S+)\. It was moved to the background as task (\w+)`)
	claudeMCPTaskNotification = regexp.MustCompile(`(?s)<task-notification>\s*<task-id>(\w+)</task-id>\s*<status>(\w+)</status>\s*<summary>(.*?)</summary>(?:\s*<result>\n?(.*?)\n?</result>)?`)
)

func TestClaudeCodeTasks(t *testing.T) {
	s := newSuite(t)
	claude := s.claudeCode(t)
	tmux := findTmux(t)
	t.Parallel()
	scratch := t.TempDir()
	home, project := filepath.Join(scratch, "home"), filepath.Join(scratch, "project")
	if err := mkdirs(home, project); err != nil {
		t.Fatal(err)
	}
	marker := markerFor(t)
	flags := []string{"--python", s.python, "--task-after", tasksTaskAfter, "--task-poll-interval", strconv.FormatFloat(tasksPollInterval.Seconds(), 'f', -1, 64)}

	// The HTTP repl-mcp listens here; Claude Code, in its namespace, reaches it
	// through the recording proxy only.
	httpURL, httpErr := startReplHTTP(t, s.replMCP, s.python, flags[2:]...)
	upstream, err := url.Parse(httpURL)
	if err != nil {
		t.Fatal(err)
	}
	rec := &mcpRecorder{}
	// The path is the request's own; SSE replies pass as they come.
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: upstream.Scheme, Host: upstream.Host})
	proxy.FlushInterval = -1
	proxy.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
		t.Logf("proxy: %v", err)
		w.WriteHeader(http.StatusBadGateway)
	}

	writeJSON := func(name string, v any) string {
		path := filepath.Join(scratch, name)
		if err := writeJSONFile(path, v); err != nil {
			t.Fatal(err)
		}
		return path
	}
	// Onboarding, the folder's trust dialog and the API key's approval are settled
	// beforehand, as a user who has run Claude Code before has them.
	writeJSON("home/.claude.json", map[string]any{
		"hasCompletedOnboarding": true, "theme": "dark", "numStartups": 5,
		"customApiKeyResponses": map[string]any{"approved": []string{tasksAPIKey[len(tasksAPIKey)-20:]}, "rejected": []string{}},
		"projects":              map[string]any{project: map[string]any{"hasTrustDialogAccepted": true, "allowedTools": []string{}}},
	})

	model := newTasksModel()
	var term *terminal
	ls, err := startIsolated(2, func(ls []net.Listener) error {
		config := writeJSON("mcp.json", map[string]any{"mcpServers": map[string]any{
			"repl":     map[string]any{"type": "stdio", "command": s.replMCP, "args": flags, "env": map[string]string{"INTEROP_MARKER": marker}},
			"replhttp": map[string]any{"type": "http", "url": "http://" + ls[1].Addr().String() + "/mcp"},
		}})
		var err error
		term, err = startTerminal(t, tmux, agentEnv(home,
			"TERM=xterm-256color",
			"ANTHROPIC_BASE_URL=http://"+ls[0].Addr().String(),
			"ANTHROPIC_API_KEY="+tasksAPIKey,
			"DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1",
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		), []string{"sh", "-c", `cd "$0" && exec "$@"`, project, claude,
			"--mcp-config", config, "--strict-mcp-config", "--permission-mode", "default",
			"--allowedTools", "mcp__repl__execute_python,mcp__repl__python_run,mcp__replhttp__execute_python,mcp__replhttp__python_health"})
		return err
	})
	if err != nil {
		skipOrFailNetns(t, err)
		t.Fatalf("starting Claude Code in tmux: %v", err)
	}
	api := &http.Server{Handler: model, ReadHeaderTimeout: 10 * time.Second}
	front := &http.Server{Handler: rec.wrap(proxy), ReadHeaderTimeout: 10 * time.Second}
	var serving sync.WaitGroup
	serving.Go(func() { api.Serve(ls[0]) })
	serving.Go(func() { front.Serve(ls[1]) })
	t.Cleanup(func() {
		api.Close()
		front.Close()
		serving.Wait()
		for _, pid := range markedProcesses(marker) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	defer func() {
		if t.Failed() {
			t.Logf("the terminal shows:\n%s", term.screen())
			t.Logf("requests outside the script: %q\nrequests through the proxy: %v\nthe HTTP repl-mcp's stderr:\n%s", model.others(), rec.list(), httpErr)
		}
	}()
	pid, err := term.pid()
	if err != nil {
		t.Fatal(err)
	}
	if ns, own := netnsOfPid(pid); ns == own {
		t.Fatalf("Claude Code runs in this test's network namespace (%s): its isolation is not shown", ns)
	}

	// Ready: the prompt is up and the HTTP server has listed its tools.
	if err := term.waitScreen(t, "for shortcuts", time.Minute); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, time.Minute, "Claude Code listing the HTTP repl-mcp's tools", func() bool { return rec.count("tools/list", "") > 0 })
	if err := term.typeLine(t, tasksPrompt, model.started, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, tasksRunBound, "the fake model's script to reach its end", func() bool { return model.finished() || len(model.problemList()) > 0 })
	for _, p := range model.problemList() {
		t.Errorf("the scripted conversation went wrong: %s", p)
	}
	c := model.conversation()
	if t.Failed() {
		t.FailNow()
	}

	// The long cell became a task: the model reads Claude Code's notice at once, and
	// the task's end in a notification with the cell's output and footer.
	long := c.notice(t, "long", "repl/execute_python")
	note := c.notification(t, "long", long)
	if note.status != "completed" || !strings.Contains(note.result, "task started\ntask done\n'task value'") ||
		!strings.Contains(note.result, "[ok; generation 1; run "+long.runID+"]") {
		t.Errorf("the completion notification reads:\n%+v\nwant status completed, the cell's output and the footer naming run %s", note, long.runID)
	}
	// TaskStop interrupts the cell; the session keeps its variables, in the same worker.
	stop := c.notice(t, "stop", "repl/execute_python")
	if got := c.result("taskstop"); !strings.Contains(got, "is stopped") {
		t.Errorf("TaskStop answered %q", got)
	}
	if got := c.result("x"); !strings.HasPrefix(got, "42\n") || !strings.Contains(got, "[ok; generation 1;") {
		t.Errorf("x after TaskStop reads %q, want 42 from generation 1", got)
	}
	if got := c.result("stopped"); !strings.Contains(got, "stop me") || !strings.Contains(got, "Execution cancelled") || strings.Contains(got, "state cleared") {
		t.Errorf("python_run of the stopped run %s reads %q, want its output and the cancel, its state kept", stop.runID, got)
	}
	for _, n := range c.notes {
		if n.bgID == stop.bgID {
			t.Errorf("the stopped task still sent the model a notification: %+v", n)
		}
	}

	// The HTTP cell: Claude Code polls tasks/get for it at the poll interval.
	httpTask := c.notice(t, "http", "replhttp/execute_python")
	testwait.Until(t, 30*time.Second, "two tasks/get of the HTTP task", func() bool { return rec.count("tasks/get", httpTask.runID) >= 2 })
	if gap := rec.shortestGap("tasks/get", httpTask.runID); gap < tasksPollInterval/2 {
		t.Errorf("Claude Code polled the HTTP task %v apart, under the poll interval %v", gap, tasksPollInterval)
	}
	// Claude Code exits while it runs: no cancel, and the run goes on to its result.
	if err := term.keys("C-c"); err != nil {
		t.Fatal(err)
	}
	if err := term.waitScreen(t, "again to exit", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := term.keys("C-c"); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 30*time.Second, "Claude Code to exit", func() bool { return syscall.Kill(pid, 0) != nil })
	if n := rec.count("tasks/cancel", ""); n > 0 {
		t.Errorf("Claude Code sent %d tasks/cancel on exit", n)
	}
	res := httpToolCall(t, httpURL, "python_run", map[string]any{"session_id": c.httpSession, "run_id": httpTask.runID, "wait": 30})
	if sc, _ := res["structuredContent"].(map[string]any); sc["success"] != true || sc["stdout"] != "http cell\nhttp done\n" || sc["value"] != 42.0 {
		t.Errorf("python_run of the HTTP task's run after Claude Code exited: %v", res)
	}
	testwait.Until(t, agentLeftoverWait, "the stdio repl-mcp to be gone with Claude Code", func() bool { return len(markedProcesses(marker)) == 0 })
}

// netnsOfPid is the network namespace of pid and of this test's thread.
func netnsOfPid(pid int) (ns, own string) {
	ns, err := netnsOf(pid)
	if err != nil {
		ns = "unknown: " + err.Error()
	}
	own, _ = netnsOf(0)
	return ns, own
}

// httpToolCall is a stateless 2026-07-28 tools/call to a repl-mcp over HTTP, as a
// client of the test's own: its CallToolResult.
func httpToolCall(t *testing.T, endpoint, tool string, args map[string]any) map[string]any {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{
		"name": tool, "arguments": args, "_meta": map[string]any{
			"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "interop", "version": "1"},
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		}}})
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, endpoint, strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": tool} {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(data), "\n") {
		payload := strings.TrimPrefix(line, "data: ")
		var msg struct {
			Result map[string]any `json:"result"`
		}
		if json.Unmarshal([]byte(payload), &msg) == nil && msg.Result != nil {
			return msg.Result
		}
	}
	t.Fatalf("%s over HTTP: status %d, no result in %s", tool, resp.StatusCode, clip(string(data), 2000))
	return nil
}

// mcpRecorder records the MCP requests that pass the proxy: method, name, time.
type mcpRecorder struct {
	mu   sync.Mutex
	seen []mcpSeen
}

type mcpSeen struct {
	method, name string
	at           time.Time
}

func (r *mcpRecorder) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodPost {
			body, _ := io.ReadAll(io.LimitReader(req.Body, maxAPIBody))
			req.Body = io.NopCloser(bytes.NewReader(body))
			var msg struct {
				Method string `json:"method"`
			}
			json.Unmarshal(body, &msg)
			r.mu.Lock()
			r.seen = append(r.seen, mcpSeen{msg.Method, req.Header.Get("Mcp-Name"), time.Now()})
			r.mu.Unlock()
		}
		next.ServeHTTP(w, req)
	})
}

func (r *mcpRecorder) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, s := range r.seen {
		out = append(out, s.method+" "+s.name)
	}
	return out
}

// count is how many requests of method (and name, unless "") passed.
func (r *mcpRecorder) count(method, name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, s := range r.seen {
		if s.method == method && (name == "" || s.name == name) {
			n++
		}
	}
	return n
}

// shortestGap is the shortest time between two requests of method for name.
func (r *mcpRecorder) shortestGap(method, name string) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	gap, last := time.Duration(1<<62), time.Time{}
	for _, s := range r.seen {
		if s.method != method || s.name != name {
			continue
		}
		if !last.IsZero() {
			gap = min(gap, s.at.Sub(last))
		}
		last = s.at
	}
	return gap
}

// tasksModel is the fake Messages API of this test. Claude Code sends the whole
// conversation with every request, so the next move is a function of it (decide);
// the model ends its turn while a task runs, and a task's notification starts the
// next one.
type tasksModel struct {
	mu       sync.Mutex
	last     tasksConversation
	done     bool
	problems []string
	other    []string
}

func newTasksModel() *tasksModel { return &tasksModel{} }

// tasksConversation is what the model has been given so far.
type tasksConversation struct {
	results     map[string]string // tool_use id → the text of its result
	notes       []tasksNote
	offered     map[string]bool
	httpSession string
}

type tasksNote struct{ bgID, status, summary, result string }

// tasksNoticeOf is a task notice the model read: the server's task id, which is the
// run's, and Claude Code's background task id.
type tasksNoticeOf struct{ tool, runID, bgID string }

// started reports that the scripted conversation has begun.
func (m *tasksModel) started() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.last.results != nil
}

func (m *tasksModel) finished() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.done
}

func (m *tasksModel) problemList() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.problems)
}

func (m *tasksModel) others() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.other)
}

func (m *tasksModel) conversation() tasksConversation {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.last
}

func (m *tasksModel) problemf(format string, args ...any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.problems = append(m.problems, fmt.Sprintf(format, args...))
}

// tasksToolUse is the tool_use id of a step.
func tasksToolUse(step string) string { return "toolu_tk_" + step }

func (m *tasksModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/v1/messages/count_tokens" {
		io.Copy(io.Discard, io.LimitReader(r.Body, maxAPIBody))
		writeJSON(w, http.StatusOK, map[string]any{"input_tokens": 1})
		return
	}
	var req struct {
		Model string `json:"model"`
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if r.URL.Path != "/v1/messages" || json.NewDecoder(io.LimitReader(r.Body, maxAPIBody)).Decode(&req) != nil {
		m.mu.Lock()
		m.other = append(m.other, r.Method+" "+r.URL.Path)
		m.mu.Unlock()
		http.NotFound(w, r)
		return
	}
	c := tasksConversation{results: map[string]string{}, offered: map[string]bool{}}
	for _, tool := range req.Tools {
		c.offered[tool.Name] = true
	}
	scripted := false
	for _, msg := range req.Messages {
		blocks, _ := anthropicBlocks(msg.Content)
		for _, b := range blocks {
			switch {
			case b.Type == "text" && strings.Contains(b.Text, tasksPrompt):
				scripted = true
			case b.Type == "text":
				for _, n := range claudeMCPTaskNotification.FindAllStringSubmatch(b.Text, -1) {
					c.notes = append(c.notes, tasksNote{n[1], n[2], n[3], n[4]})
				}
			case b.Type == "tool_result":
				inner, _ := anthropicBlocks(b.Content)
				var texts []string
				for _, ib := range inner {
					texts = append(texts, ib.Text)
				}
				c.results[b.ToolUseID] = strings.Join(texts, "")
			}
		}
	}
	if !scripted {
		// A side request (a title, a summary): not what this test drives.
		m.mu.Lock()
		m.other = append(m.other, "a Messages request outside the script, model "+req.Model)
		m.mu.Unlock()
		writeSSEAnswer(w, req.Model, nil, "Nothing to do.")
		return
	}
	m.mu.Lock()
	m.last = c
	m.mu.Unlock()
	call, answer := m.decide(c)
	writeSSEAnswer(w, req.Model, call, answer)
}

// tasksCall is a tool_use the fake makes.
type tasksCall struct {
	id, name string
	input    map[string]any
}

// decide is the script: the first step whose result the conversation lacks is
// made (its tool loaded with ToolSearch first when Claude Code defers it); while a
// task runs that the script waits for, the turn ends.
func (m *tasksModel) decide(c tasksConversation) (*tasksCall, string) {
	step := func(id, tool string, input map[string]any) *tasksCall {
		if _, ok := c.results[tasksToolUse(id)]; ok {
			return nil
		}
		if !c.offered[tool] {
			search := "toolu_tksearch_" + id
			if _, ok := c.results[search]; ok {
				m.problemf("step %s: Claude Code offers no %s after ToolSearch loaded it", id, tool)
				return &tasksCall{}
			}
			return &tasksCall{search, "ToolSearch", map[string]any{"query": "select:" + tool, "max_results": 5}}
		}
		return &tasksCall{tasksToolUse(id), tool, input}
	}
	noticeOf := func(id string) (tasksNoticeOf, bool) {
		mm := claudeTaskNotice.FindStringSubmatch(c.results[tasksToolUse(id)])
		if mm == nil {
			return tasksNoticeOf{}, false
		}
		return tasksNoticeOf{mm[1], mm[2], mm[3]}, true
	}
	fail := func(format string, args ...any) (*tasksCall, string) {
		m.problemf(format, args...)
		return nil, "The script failed."
	}
	if call := step("long", "mcp__repl__execute_python", map[string]any{"code": tasksLongCell}); call != nil {
		return call, ""
	}
	long, ok := noticeOf("long")
	if !ok {
		return fail("the long cell's call did not become a task; the model read %q", c.results[tasksToolUse("long")])
	}
	if !slices.ContainsFunc(c.notes, func(n tasksNote) bool { return n.bgID == long.bgID }) {
		return nil, tasksWaitingAnswer
	}
	if call := step("stop", "mcp__repl__execute_python", map[string]any{"code": tasksStopCell}); call != nil {
		return call, ""
	}
	stop, ok := noticeOf("stop")
	if !ok {
		return fail("the cell to stop did not become a task; the model read %q", c.results[tasksToolUse("stop")])
	}
	for _, s := range []struct {
		id, tool string
		input    map[string]any
	}{
		{"taskstop", "TaskStop", map[string]any{"task_id": stop.bgID}},
		{"x", "mcp__repl__execute_python", map[string]any{"code": "x"}},
		{"stopped", "mcp__repl__python_run", map[string]any{"run_id": stop.runID, "stdout_offset": 0, "wait": 10}},
		{"health", "mcp__replhttp__python_health", map[string]any{}},
	} {
		if call := step(s.id, s.tool, s.input); call != nil {
			return call, ""
		}
	}
	sid := regexp.MustCompile(`session_id ([0-9a-f-]{36})`).FindStringSubmatch(c.results[tasksToolUse("health")])
	if sid == nil {
		return fail("python_health over HTTP names no session_id: %q", c.results[tasksToolUse("health")])
	}
	c.httpSession = sid[1]
	m.mu.Lock()
	m.last.httpSession = sid[1]
	m.mu.Unlock()
	if call := step("http", "mcp__replhttp__execute_python", map[string]any{"session_id": sid[1], "code": tasksHTTPCell}); call != nil {
		return call, ""
	}
	m.mu.Lock()
	m.done = true
	m.mu.Unlock()
	return nil, tasksFinalAnswer
}

// writeSSEAnswer answers a Messages request with one tool_use, or with text that
// ends the turn.
func writeSSEAnswer(w http.ResponseWriter, model string, call *tasksCall, text string) {
	sse := newSSE(w)
	sse.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": fmt.Sprintf("msg_tk_%d", time.Now().UnixNano()), "type": "message", "role": "assistant", "model": model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 1, "output_tokens": 1},
	}})
	stop := "end_turn"
	if call != nil && call.id != "" {
		stop = "tool_use"
		input, _ := json.Marshal(call.input)
		sse.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{
			"type": "tool_use", "id": call.id, "name": call.name, "input": map[string]any{},
		}})
		sse.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{
			"type": "input_json_delta", "partial_json": string(input),
		}})
	} else {
		if text == "" {
			text = "The script failed."
		}
		sse.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
		sse.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": text}})
	}
	sse.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	sse.event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 1}})
	sse.event("message_stop", map[string]any{"type": "message_stop"})
}

// result is the text the model read for a step.
func (c tasksConversation) result(step string) string { return c.results[tasksToolUse(step)] }

// notice is the task notice the model read for a step, of tool.
func (c tasksConversation) notice(t *testing.T, step, tool string) tasksNoticeOf {
	t.Helper()
	mm := claudeTaskNotice.FindStringSubmatch(c.result(step))
	if mm == nil || mm[1] != tool {
		t.Fatalf("for step %s the model read %q, not Claude Code's notice that %s started a server-side task", step, c.result(step), tool)
	}
	if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`).MatchString(mm[2]) {
		t.Errorf("step %s: the server's task id %q is not a run id", step, mm[2])
	}
	return tasksNoticeOf{mm[1], mm[2], mm[3]}
}

// notification is the notification of a step's task.
func (c tasksConversation) notification(t *testing.T, step string, n tasksNoticeOf) tasksNote {
	t.Helper()
	for _, note := range c.notes {
		if note.bgID == n.bgID {
			return note
		}
	}
	t.Fatalf("no task notification for step %s (background task %s) reached the model", step, n.bgID)
	return tasksNote{}
}
