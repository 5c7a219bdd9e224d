package interop

import (
	"path/filepath"
	"strings"
	"testing"
)

// The broker-only registry against the real Claude Code CLI (docs/contract.md §8.2):
// Claude Code, registered with repl-mcp and reading the project's .mcp.json as a user
// who trusts the project, starts .mcp.json's servers itself and shows its model their
// tools, allowedTools or not; <project>/.repl-mcp/mcp.json it never reads, while
// repl-mcp's broker reads both, so a cell reaches the server only cells should reach
// and the model is never offered it.
func TestBrokerOnlyRegistryHiddenFromClaudeCode(t *testing.T) {
	s := newSuite(t)
	const (
		widened = "mcp__widened__"   // a tool name of .mcp.json's server, as Claude Code names it
		hidden  = "mcp__cellsonly__" // the same for the broker-only registry's
	)
	cell := "print(sorted(mcp.servers()))\n" +
		"print(mcp.call('cellsonly', 'echo', message='only cells reach me').text)\n" +
		"print(mcp.explain('widened')['warnings'][0])\n"
	steps := []step{{id: "cell", server: "repl", tool: "execute_python", args: map[string]any{"code": cell, "timeout": cellTimeout}}}
	servers := func(marker, project string) (map[string]agentServer, error) {
		env := map[string]string{"INTEROP_MARKER": marker}
		everything := func(extra map[string]any) map[string]any {
			e := map[string]any{"command": s.node, "args": []string{s.everythingEntry(), "stdio"}, "env": env}
			for k, v := range extra {
				e[k] = v
			}
			return e
		}
		if err := mkdirs(filepath.Join(project, ".repl-mcp")); err != nil {
			return nil, err
		}
		if err := writeJSONFile(filepath.Join(project, ".mcp.json"), map[string]any{"mcpServers": map[string]any{
			"widened": everything(map[string]any{"allowedTools": []string{"echo"}}),
		}}); err != nil {
			return nil, err
		}
		if err := writeJSONFile(filepath.Join(project, ".repl-mcp", "mcp.json"), map[string]any{"mcpServers": map[string]any{
			"cellsonly": everything(nil),
		}}); err != nil {
			return nil, err
		}
		return map[string]agentServer{"repl": {command: s.replMCP, args: []string{"--python", s.python}, env: env}}, nil
	}
	run := s.runClaudeCodeOpts(t, steps, claudeCode, servers, claudeOpts{projectMCP: true, watch: []string{widened, hidden}})
	t.Run("Harness", func(t *testing.T) { run.checkHarness(t, steps) })

	if run.recs.watched[widened] == 0 {
		t.Errorf("Claude Code never showed its model a tool of .mcp.json's server (%s*): it did not read the project's .mcp.json, so the absence of the broker-only server proves nothing", widened)
	}
	if n := run.recs.watched[hidden]; n > 0 {
		t.Errorf("Claude Code showed its model the broker-only registry's server (%s*) in %d requests", hidden, n)
	}
	g, ok := run.recs.given["cell"]
	if !ok {
		t.Fatal("the cell's result never reached the model")
	}
	text := g.Text()
	for _, want := range []string{"['cellsonly', 'widened']", "only cells reach me", "narrows this server with allowedTools"} {
		if !strings.Contains(text, want) {
			t.Errorf("the cell's result does not show %q:\n%s", want, clip(text, 1500))
		}
	}
}
