package interop

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/iota-uz/repl-mcp/internal/pythons"
)

// continuePrompt is the second turn's prompt: Claude Code continues the conversation
// in a new process, whose MCP servers are new too.
const continuePrompt = "repl-mcp model-view script, continued: go on from where the conversation stopped."

var claudeCodeContinue = agentKind{name: "ClaudeCodeContinue", errorFlag: true}

// restoreCall is the python_session_restore call a result offers.
var restoreCall = regexp.MustCompile(`python_session_restore (\{[^}\n]*\})`)

// TestClaudeCodeContinueAfterRestart (issues 31 point 10, 32): Claude Code binds
// variables in a cell and exits, and its MCP server with it; `claude --continue` in a
// new process continues the conversation with a new server in the same project. The
// model's first cell uses a variable: it reads that the server restarted, that the
// earlier variables are gone and what a restore brings back, with the call to make;
// it makes that call, reads that the variables came back, and its cell runs.
func TestClaudeCodeContinueAfterRestart(t *testing.T) {
	s := newSuite(t)
	python := pythons.DataVenv(t)
	steps := []step{
		{id: "bind", server: "repl", tool: "execute_python", args: map[string]any{"code": "rows = [1, 2, 3]\ntotal = sum(rows)\nprint('bound')", "timeout": 30}},
		{id: "use", turn: 1, server: "repl", tool: "execute_python", args: map[string]any{"code": "total + 1", "timeout": 30}},
		{id: "restore", turn: 1, server: "repl", tool: "python_session_restore", derive: func(g map[string]*given) (map[string]any, string) {
			use, ok := g["use"]
			if !ok || use.Skipped != "" {
				return nil, "the first cell after the restart did not run"
			}
			m := restoreCall.FindStringSubmatch(use.Text())
			if m == nil {
				return nil, "the first cell's result offers no python_session_restore call"
			}
			var args map[string]any
			if err := json.Unmarshal([]byte(m[1]), &args); err != nil {
				return nil, "the offered python_session_restore call is not JSON: " + err.Error()
			}
			return args, ""
		}},
		{id: "again", turn: 1, server: "repl", tool: "execute_python", args: map[string]any{"code": "total + 1", "timeout": 30}},
	}
	run := runAgent(t, s.claudeSetup(t, steps, claudeCodeContinue, s.modelViewServers(python), claudeOpts{later: continuePrompt}), steps)
	t.Run("Harness", func(t *testing.T) { run.checkHarness(t, steps) })
	t.Run("RestartIsSaidWithTheRestoreOffer", func(t *testing.T) {
		reportCheck(t, func(c *checker) {
			g := stepGiven(c, run.recs, "use")
			text := g.Text()
			for _, want := range []string{"NameError", "the server restarted at", "earlier variables are gone", "can be restored: python_session_restore"} {
				if !strings.Contains(text, want) {
					c.errorf("the first result after the restart does not say %q:\n%s", want, text)
				}
			}
			if g.IsError == nil || !*g.IsError {
				c.errorf("the NameError is not flagged as an error")
			}
		})
	})
	t.Run("RestoreBringsTheVariablesBack", func(t *testing.T) {
		reportCheck(t, func(c *checker) {
			g := stepGiven(c, run.recs, "restore")
			if text := g.Text(); !strings.Contains(text, "Restored 2 of 2 variables") || !strings.Contains(text, "total (int)") {
				c.errorf("the restore's answer does not say that rows and total came back:\n%s", text)
			}
			again := stepGiven(c, run.recs, "again")
			if !strings.HasPrefix(again.Text(), "7\n") || (again.IsError != nil && *again.IsError) {
				c.errorf("the cell after the restore does not read 7:\n%s", again.Text())
			}
		})
	})
}
