package plugintest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hookCases are Bash commands and whether the nudge fires after them: inline Python
// (-c, heredocs and here-strings, pipes into a bare interpreter) fires; scripts, modules,
// pytest and everything else stays silent.
var hookCases = []struct {
	command string
	fires   bool
}{
	{`python -c "print(1)"`, true},
	{`python3 -c 'import sys; print(sys.version)'`, true},
	{`python3.12 -c "x = 1"`, true},
	{`/usr/bin/python3 -I -c "pass"`, true},
	{`python3 -uc "print(2)"`, true},
	{`cd src && python3 -c "import json"`, true},
	{`uv run python -c "import httpx"`, true},
	{"python3 <<EOF\nprint(1)\nEOF", true},
	{"python3 - <<'EOF'\nprint(1)\nEOF", true},
	{"python - arg1 arg2 <<EOF\nimport sys\nEOF", true},
	{"python3 <<< 'print(1)'", true},
	{`echo 'print(1)' | python3`, true},
	{`cat cell.py | python3 -`, true},
	{`printf 'x=1\n' | python -u -`, true},
	{"echo 'print(1)' | python3\necho done", true},
	{`echo 'print(1)' | python3 && echo ok`, true},
	{`python script.py`, false},
	{`python3 script.py --flag`, false},
	{`python3 -m pytest -q`, false},
	{`python3 -m pytest -c pytest.ini`, false},
	{`pytest -x tests/`, false},
	{`curl -s https://example.com/x.json | python3 -m json.tool`, false},
	{`cat data | python3 tool.py`, false},
	{`python3 script.py <<EOF`, false},
	{`ipython -c "1"`, false},
	{`python3-config --includes`, false},
	{`ls -la`, false},
	{``, false},
}

// runHook runs the hooks.json command the way Claude Code does, with stdin as the hook
// input.
func runHook(t *testing.T, env []string, stdin string) (stdout, stderr string, code int) {
	t.Helper()
	root, err := filepath.Abs(pluginDir)
	if err != nil {
		t.Fatal(err)
	}
	return run(t, t.TempDir(), append(env, "CLAUDE_PLUGIN_ROOT="+root), stdin, lookPath(t, "sh"), "-c", hookCommand(t))
}

func hookInput(t *testing.T, tool, command string) string {
	t.Helper()
	data, err := json.Marshal(map[string]any{
		"session_id": "s", "hook_event_name": "PostToolUse", "tool_name": tool,
		"tool_input":    map[string]any{"command": command, "description": "d"},
		"tool_response": map[string]any{"stdout": "", "stderr": "", "interrupted": false},
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestHookFires: the nudge fires on inline Python and stays silent otherwise; when it
// fires it prints one PostToolUse hookSpecificOutput whose reminder names the tools.
func TestHookFires(t *testing.T) {
	lookPath(t, "python3") // the hook parses its input with python3
	env := environ("PATH=" + os.Getenv("PATH"))
	for _, tc := range hookCases {
		stdout, stderr, code := runHook(t, env, hookInput(t, "Bash", tc.command))
		if code != 0 || stderr != "" {
			t.Errorf("%q: exit %d, stderr %q; want 0 and nothing", tc.command, code, stderr)
			continue
		}
		if !tc.fires {
			if stdout != "" {
				t.Errorf("%q: fired (%q), want silence", tc.command, stdout)
			}
			continue
		}
		var out struct {
			HookSpecificOutput struct {
				HookEventName     string `json:"hookEventName"`
				AdditionalContext string `json:"additionalContext"`
			} `json:"hookSpecificOutput"`
		}
		if err := json.Unmarshal([]byte(stdout), &out); err != nil {
			t.Errorf("%q: output %q is not the hook JSON: %v", tc.command, stdout, err)
			continue
		}
		if out.HookSpecificOutput.HookEventName != "PostToolUse" {
			t.Errorf("%q: hookEventName %q", tc.command, out.HookSpecificOutput.HookEventName)
		}
		for _, word := range []string{"execute_python", "python_start", "python_run", "python_cancel", "sh(", "expanduser", "expected_generation", "ToolSearch"} {
			if !strings.Contains(out.HookSpecificOutput.AdditionalContext, word) {
				t.Errorf("%q: the reminder does not mention %s", tc.command, word)
			}
		}
	}
}

// TestHookSilent: bad input, another tool, or no python3 on PATH: exit 0, no output.
func TestHookSilent(t *testing.T) {
	env := environ("PATH=" + os.Getenv("PATH"))
	for _, stdin := range []string{
		"", "not json", "{", "[]", `{"tool_input": null}`, `{"tool_input": {"command": 7}}`,
		`{"tool_name": "Bash"}`, hookInput(t, "Write", `python -c "print(1)"`),
	} {
		stdout, stderr, code := runHook(t, env, stdin)
		if code != 0 || stdout != "" || stderr != "" {
			t.Errorf("input %q: exit %d, stdout %q, stderr %q; want 0 and nothing", stdin, code, stdout, stderr)
		}
	}
	noPython := t.TempDir() // holds sh, which the hook command starts with, and nothing else
	if err := os.Symlink(lookPath(t, "sh"), filepath.Join(noPython, "sh")); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runHook(t, environ("PATH="+noPython), hookInput(t, "Bash", `python3 -c 1`))
	if code != 0 || stdout != "" || stderr != "" {
		t.Errorf("without python3: exit %d, stdout %q, stderr %q; want 0 and nothing", code, stdout, stderr)
	}
}
