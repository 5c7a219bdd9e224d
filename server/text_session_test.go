package server

import (
	"testing"

	"github.com/iota-uz/repl-mcp/repl"
)

// TestShellTextSaysWhatTheShellFindsFirst: health's text names the directory the
// worker put first on PATH and the venv it set, once a worker said them (issue 31,
// point 4; docs/contract.md §1.4), and nothing before.
func TestShellTextSaysWhatTheShellFindsFirst(t *testing.T) {
	for _, c := range []struct {
		name string
		py   *repl.PythonState
		want string
	}{
		{"no worker yet", nil, ""},
		{"nothing on PATH", &repl.PythonState{}, ""},
		{"an interpreter", &repl.PythonState{Ready: repl.Ready{PathHead: "/usr/bin"}}, " Shell: PATH starts with /usr/bin."},
		{"a venv", &repl.PythonState{Ready: repl.Ready{PathHead: "/p/.venv/bin", VirtualEnv: "/p/.venv"}},
			" Shell: PATH starts with /p/.venv/bin, VIRTUAL_ENV /p/.venv."},
	} {
		if got := shellText(repl.Health{Python: c.py}); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
