package interop

// Two sub-agents in one project (docs/contract.md §5.6, §6.2). Claude Code's sub-agents
// share the parent's MCP connection, so the default session: the fake model makes the
// parent start two sub-agents at once (two Agent tool_uses in one turn, run in the
// foreground), and plays each sub-agent's model. A runs a cell that waits for B; B's
// execute_python lands while A's runs, is refused, reads A's run with python_run, opens
// a session of its own with python_session_open (no project: the server's), and runs
// there, which lets A finish. What each model reads is checked: the refusal says that
// another call started the run (A's id and first code line), that parallel agents each
// open their own session, and names no run of its own; python_run names the run's code;
// each agent's variables stay its own.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// The prompts: the parent's, and each sub-agent's (what the parent's Agent call gives
// it, the first user message of its own conversation).
const (
	subAgentPromptA = "repl-mcp sub-agent A: make the tool calls your script makes."
	subAgentPromptB = "repl-mcp sub-agent B: make the tool calls your script makes."
	// subAgentWait bounds A's wait for B, and B's for A's cell to start.
	subAgentWait = 60 * time.Second
)

// subAgentCellA is A's cell: it says it started, then waits for B's cell in B's own
// session (b-done, in the project both share).
const subAgentCellA = `import pathlib, time
pathlib.Path('a-started').touch()
deadline = time.monotonic() + 60
while not pathlib.Path('b-done').exists() and time.monotonic() < deadline:
    time.sleep(0.05)
owner = 'A'
print('A done' if pathlib.Path('b-done').exists() else 'A gave up waiting for B')`

var (
	runIDIn     = regexp.MustCompile(`run (` + uuidPattern + `)`)
	sessionIDIn = regexp.MustCompile(`session_id (` + uuidPattern + `)`)
)

// subAgentSteps are A's and B's scripts. B's first call waits until A's cell has
// started (its a-started file), so that it lands while A's cell runs.
func subAgentSteps(project *string) (a, b []step) {
	a = []step{
		{id: "a_cell", server: "repl", tool: "execute_python", args: map[string]any{"code": subAgentCellA}},
		{id: "a_owner", server: "repl", tool: "execute_python", args: map[string]any{"code": "owner"}},
	}
	b = []step{
		{id: "b_busy", server: "repl", tool: "execute_python", args: map[string]any{"code": "owner = 'B'\nprint('B ran')"},
			derive: func(map[string]*given) (map[string]any, string) {
				if !waitForFile(filepath.Join(*project, "a-started"), subAgentWait) {
					return nil, "A's cell never started"
				}
				return nil, ""
			}},
		{id: "b_poll", server: "repl", tool: "python_run", derive: func(g map[string]*given) (map[string]any, string) {
			if m := runIDIn.FindStringSubmatch(g["b_busy"].Text()); m != nil {
				return map[string]any{"run_id": m[1]}, ""
			}
			return nil, "the refusal names no run"
		}},
		{id: "b_open", server: "repl", tool: "python_session_open", args: map[string]any{"name": "agent-b"}},
		{id: "b_own", server: "repl", tool: "execute_python", derive: func(g map[string]*given) (map[string]any, string) {
			if m := sessionIDIn.FindStringSubmatch(g["b_open"].Text()); m != nil {
				return map[string]any{"session_id": m[1], "code": "import pathlib\nowner = 'B'\npathlib.Path('b-done').touch()\nprint('B ran in', owner)"}, ""
			}
			return nil, "python_session_open named no session_id"
		}},
		{id: "b_owner", server: "repl", tool: "execute_python", derive: func(g map[string]*given) (map[string]any, string) {
			if m := sessionIDIn.FindStringSubmatch(g["b_open"].Text()); m != nil {
				return map[string]any{"session_id": m[1], "code": "owner"}, ""
			}
			return nil, "python_session_open named no session_id"
		}},
	}
	return a, b
}

// waitForFile waits, at most bound, for path to exist.
func waitForFile(path string, bound time.Duration) bool {
	for end := time.Now().Add(bound); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return true
		}
	}
	return false
}

// subAgentsAPI is the fake Messages API of a run with sub-agents: each request goes to
// the conversation its first user message opens, the parent's (parent) or a sub-agent's,
// whose fake model follows its own script (anthropicAPI).
type subAgentsAPI struct {
	parent *fakeModel
	agents map[string]*fakeModel // by prompt

	mu      sync.Mutex
	reports map[string]string // what each sub-agent reported to the parent, by tool_use id
}

func (api *subAgentsAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		anthropicAPI{api.parent}.ServeHTTP(w, r) // token counts; the rest is refused
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxAPIBody))
	if err != nil {
		anthropicAPI{api.parent}.refuse(w, r, "unreadable body: "+err.Error())
		return
	}
	var req struct {
		Model    string `json:"model"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil || len(req.Messages) == 0 {
		anthropicAPI{api.parent}.refuse(w, r, fmt.Sprintf("undecodable body or no messages (%v)", err))
		return
	}
	opening := string(req.Messages[0].Content)
	for prompt, m := range api.agents {
		if strings.Contains(opening, jsonFragment(prompt)) {
			r.Body = io.NopCloser(bytes.NewReader(body))
			anthropicAPI{m}.ServeHTTP(w, r)
			return
		}
	}
	if !strings.Contains(opening, jsonFragment(api.parent.prompt)) {
		anthropicAPI{api.parent}.refuse(w, r, "a Messages request outside the scripted conversations")
		return
	}
	api.parent.countRequest()
	// The parent: start both sub-agents in one turn; once both reported, end.
	done := map[string]string{}
	for _, msg := range req.Messages {
		blocks, _ := anthropicBlocks(msg.Content)
		for _, b := range blocks {
			if msg.Role == "user" && b.Type == "tool_result" && strings.HasPrefix(b.ToolUseID, "toolu_agent_") {
				done[b.ToolUseID] = string(b.Content)
			}
		}
	}
	sse := newSSE(w)
	sse.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": fmt.Sprintf("msg_parent_%d", len(done)), "type": "message", "role": "assistant", "model": req.Model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": 1, "output_tokens": 1},
	}})
	stop := "tool_use"
	switch {
	case len(done) == 0:
		for i, who := range []string{"A", "B"} {
			prompt := map[string]string{"A": subAgentPromptA, "B": subAgentPromptB}[who]
			input, _ := json.Marshal(map[string]any{"description": "sub-agent " + who, "prompt": prompt,
				"subagent_type": "general-purpose", "run_in_background": false})
			sse.event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{
				"type": "tool_use", "id": "toolu_agent_" + who, "name": "Agent", "input": map[string]any{}}})
			sse.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{
				"type": "input_json_delta", "partial_json": string(input)}})
			sse.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
		}
	default:
		api.mu.Lock()
		api.reports = done
		api.mu.Unlock()
		if len(done) < 2 {
			api.parent.problemf("the parent was asked to go on with %d of its 2 sub-agents' reports", len(done))
		}
		api.parent.finish()
		stop = "end_turn"
		sse.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
		sse.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": "The script is done."}})
		sse.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	}
	sse.event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 1}})
	sse.event("message_stop", map[string]any{"type": "message_stop"})
}

// finish records that the conversation's final answer was sent.
func (m *fakeModel) finish() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.finished = true
}

func TestModelViewSubAgents(t *testing.T) {
	s := newSuite(t)
	var project string
	stepsA, stepsB := subAgentSteps(&project)
	a := newFakeModel("ClaudeCode sub-agent A", subAgentPromptA, stepsA)
	b := newFakeModel("ClaudeCode sub-agent B", subAgentPromptB, stepsB)
	api := &subAgentsAPI{agents: map[string]*fakeModel{subAgentPromptA: a, subAgentPromptB: b}}
	servers := func(marker, dir string) (map[string]agentServer, error) {
		project = dir
		return map[string]agentServer{"repl": s.agentServers(s.python, marker)["repl"]}, nil
	}
	run := s.runClaudeCodeAPI(t, append(append([]step(nil), stepsA...), stepsB...), claudeCode, servers,
		func(m *fakeModel) http.Handler { api.parent = m; return api }, []string{"Agent"})
	ra, rb := a.records(), b.records()
	for name, r := range map[string]records{"A": ra, "B": rb} {
		for _, id := range r.order {
			t.Logf("sub-agent %s's model was given, for %s", name, r.given[id].summary())
		}
	}

	t.Run("Harness", func(t *testing.T) {
		run.checkHarness(t, nil)
		for name, r := range map[string]records{"A": ra, "B": rb} {
			for _, p := range append(r.unexpected, r.problems...) {
				t.Errorf("sub-agent %s: %s", name, p)
			}
			if !r.finished {
				t.Errorf("sub-agent %s never sent its final answer", name)
			}
		}
		if missing := append(ra.missing(stepsA), rb.missing(stepsB)...); len(missing) > 0 {
			t.Errorf("steps %v were never called or their results never came back", missing)
		}
		for _, r := range []records{ra, rb} {
			for id, g := range r.given {
				if g.Skipped != "" {
					t.Errorf("step %s was skipped: %s", id, g.Skipped)
				}
			}
		}
		api.mu.Lock()
		reports := len(api.reports)
		api.mu.Unlock()
		if reports != 2 {
			t.Errorf("the parent read %d sub-agent reports, want 2", reports)
		}
	})
	t.Run("RefusalSaysAnotherAgentSharesTheSession", func(t *testing.T) {
		reportCheck(t, func(c *checker) { checkSubAgents(c, ra, rb) })
	})
}

// checkSubAgents: what A's and B's models read.
func checkSubAgents(c *checker, ra, rb records) {
	cell, busy := stepGiven(c, ra, "a_cell"), stepGiven(c, rb, "b_busy")
	runA := ""
	if m := regexp.MustCompile(`\[ok; generation 1; run (` + uuidPattern + `)\]$`).FindStringSubmatch(strings.TrimSpace(cell.Text())); m != nil {
		runA = m[1]
	} else {
		c.errorf("A's cell did not read as done in generation 1:\n%s", cell.Text())
	}
	if !strings.Contains(cell.Text(), "A done\n") {
		c.errorf("A's cell never saw B's cell, in B's own session:\n%s", cell.Text())
	}
	text := busy.Text()
	for _, want := range []string{
		"A cell is already running in this session, started by another call: run " + runA + ", for ",
		"code: import pathlib, time.",
		"If you did not start it, another agent shares this session",
		`python_session_open {"name": "<your task>"}`,
	} {
		if runA == "" || !strings.Contains(text, want) {
			c.errorf("B's refusal does not say %q:\n%s", want, text)
		}
	}
	if busy.IsError == nil || !*busy.IsError {
		c.errorf("B's refusal has no error flag")
	}
	for _, id := range runIDIn.FindAllStringSubmatch(text, -1) {
		if id[1] != runA {
			c.errorf("B's refusal names run %s, which is not A's (%s): a run that does not exist", id[1], runA)
		}
	}
	if !strings.HasSuffix(strings.TrimSpace(text), "[failed; generation 1; nothing ran]") {
		c.errorf("B's refusal does not end with a footer saying nothing ran:\n%s", text)
	}
	poll := stepGiven(c, rb, "b_poll").Text()
	if !strings.Contains(poll, "[running; run "+runA+"; code: 'import pathlib, time'; ") {
		c.errorf("python_run of A's run does not name its code, for B to tell it is not its own:\n%s", poll)
	}
	opened := stepGiven(c, rb, "b_open").Text()
	if !strings.HasPrefix(opened, "Opened session agent-b, session_id ") {
		c.errorf("python_session_open {\"name\": \"agent-b\"} (no project):\n%s", opened)
	}
	for _, want := range []struct{ agent, step, body, what string }{
		{"B", "b_own", "B ran in B\n", "B's cell in its own session"},
		{"B", "b_owner", "'B'\n", "B's owner, in its own session"},
		{"A", "a_owner", "'A'\n", "A's owner, in the default session after B's calls"},
	} {
		g := stepGiven(c, map[string]records{"A": ra, "B": rb}[want.agent], want.step)
		if len(g.Texts) != 2 || g.Texts[0] != want.body || !strings.HasPrefix(g.Texts[1], "[ok; generation 1; run ") {
			c.errorf("%s reads %q, want %q then its footer", want.what, g.Texts, want.body)
		}
	}
}
