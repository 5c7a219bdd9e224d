package server

import (
	"strings"
	"testing"

	"github.com/iota-uz/repl-mcp/repl"
	"github.com/iota-uz/repl-mcp/sandbox"
)

// TestSandboxFooter: the footer says what the run's sandbox note says, after the
// generation and before the run: a changed policy, what is not enforced, a refusal.
func TestSandboxFooter(t *testing.T) {
	for _, c := range []struct {
		name string
		note *repl.SandboxNote
		want string
	}{
		{"none", nil, "[ok; generation 2; run R]"},
		{"changed", &repl.SandboxNote{Policy: "Codex's workspace-write", Changed: "the sandbox changed from Codex's read-only to Codex's workspace-write: the worker restarted under it",
			NotEnforced: []string{"Codex keeps /p/.git read-only; it stays writable here"}},
			"[ok; generation 2; new worker: earlier variables are gone; the sandbox changed from Codex's read-only to Codex's workspace-write: the worker restarted under it; not enforced: Codex keeps /p/.git read-only; it stays writable here; run R]"},
		{"first policy", &repl.SandboxNote{Policy: "Codex's workspace-write", NotEnforced: []string{"x"}},
			"[ok; generation 2; new worker: earlier variables are gone; sandbox Codex's workspace-write; not enforced: x; run R]"},
		{"refused", &repl.SandboxNote{Policy: "read-only", Refused: "the sandbox (read-only) may have refused this"},
			"[ok; generation 2; the sandbox (read-only) may have refused this; run R]"},
	} {
		res := &repl.Result{RunID: "R", Success: true, State: repl.StatePreserved, Generation: 2, Sandbox: c.note}
		if c.note != nil && c.note.Refused == "" {
			reset := true
			res.StateReset, res.StateResetReason = &reset, repl.ResetLost // a policy change stops the worker as dead
		}
		if got := executed(res).footer(nil); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}

// TestSandboxHealthText: python_health's text says the sandbox in its first line,
// bounded however many roots there are, and says "not a sandbox" only without one.
func TestSandboxHealthText(t *testing.T) {
	if got := sandboxText(repl.SandboxHealth{Mode: "full-access", Policy: "full-access"}); !strings.Contains(got, "not a sandbox") {
		t.Errorf("full access: %q", got)
	}
	roots := make([]string, 50)
	for i := range roots {
		roots[i] = "/" + strings.Repeat("d", 200)
	}
	got := sandboxText(repl.SandboxHealth{Mode: "workspace-write", Policy: "workspace-write", WritableRoots: roots, Network: "off",
		NotEnforced: []string{strings.Repeat("n", 500)}})
	if len(got) > sandboxTextLimit || !strings.Contains(got, "--sandbox workspace-write") || !strings.Contains(got, "and 46 more") {
		t.Errorf("%d bytes: %q", len(got), got)
	}
	for _, mode := range sandbox.Modes[1:] {
		got := instructionsFor(mode)
		first, _, _ := strings.Cut(got, "\n")
		if strings.Contains(got, "not a sandbox") || !strings.Contains(first, "--sandbox "+string(mode)) || len(first) > 245 {
			t.Errorf("instructions under %s (first line %d characters): %q", mode, len(first), got)
		}
	}
}
