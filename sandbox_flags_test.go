package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/iota-uz/repl-mcp/sandbox"
	"github.com/iota-uz/repl-mcp/sandbox/proxy"
)

// TestSandboxAtStart: what the server does at start with a kernel that lacks what the
// sandbox needs (made up here, since this machine's kernel has it all): one line naming
// what is missing, or, where a weaker rule is still enforced, lines on stderr saying
// exactly what is left out, and health's enforcement filled in.
func TestSandboxAtStart(t *testing.T) {
	pypi, _ := proxy.Parse("pypi.org")
	ww := sandboxFlags{mode: sandbox.WorkspaceWrite}
	withDomain := sandboxFlags{mode: sandbox.WorkspaceWrite, domains: proxy.Patterns{pypi}}
	codex := sandboxFlags{mode: sandbox.InheritCodex, domains: proxy.Patterns{pypi}}
	for _, c := range []struct {
		flags  sandboxFlags
		kernel sandbox.Kernel
		want   string
	}{
		{ww, sandbox.Kernel{OS: "darwin"}, "--sandbox workspace-write: repl-mcp's sandbox needs Linux (Landlock and seccomp); on darwin there is none yet"},
		{ww, sandbox.Kernel{OS: "linux", Seccomp: true}, "--sandbox workspace-write: this kernel has no Landlock"},
		{ww, sandbox.Kernel{OS: "linux", LandlockABI: 7}, "this kernel has no seccomp filters"},
		{withDomain, sandbox.Kernel{OS: "linux", LandlockABI: 3, Seccomp: true}, "--allow-domain needs Landlock ABI 4 (Linux 6.7)"},
		{codex, sandbox.Kernel{OS: "linux", LandlockABI: 3, Seccomp: true}, "--allow-domain needs Landlock ABI 4"},
	} {
		var stderr bytes.Buffer
		_, err := sandboxSettings(c.flags, "/p", c.kernel, &stderr)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s on %+v: %v; want one line with %q", c.flags.mode, c.kernel, err, c.want)
		}
	}
	var stderr bytes.Buffer
	s, err := sandboxSettings(withDomain, "/p", sandbox.Kernel{OS: "linux", LandlockABI: 5, Seccomp: true}, &stderr)
	if err != nil || len(s.Enforcement.NotEnforced) != 1 || s.Enforcement.LandlockABI != 5 {
		t.Fatalf("ABI 5: %+v, %v", s.Enforcement, err)
	}
	if got := stderr.String(); got != "repl-mcp: --sandbox workspace-write: not enforced on this kernel: "+s.Enforcement.NotEnforced[0]+"\n" {
		t.Errorf("stderr at start on ABI 5: %q", got)
	}
	stderr.Reset()
	if s, err := sandboxSettings(sandboxFlags{mode: sandbox.FullAccess}, "/p", sandbox.Kernel{OS: "darwin"}, &stderr); err != nil || stderr.Len() > 0 || s.Sandboxed() {
		t.Errorf("full access needs nothing of the kernel: %v, %q", err, stderr.String())
	}
}
