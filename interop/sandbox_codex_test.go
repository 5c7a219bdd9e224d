package interop

// Codex's sandbox honoured (docs/contract.md §11.5): the real Codex CLI 0.171.0, in
// its read-only and workspace-write modes and with its sandbox bypassed, drives
// repl-mcp --sandbox inherit-codex; the server reads the policy Codex sends with each
// call and a cell is held to it. What the model reads is the cell's own record of
// what it could do, and the footer's word on the sandbox.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// codexSandboxCell tries what Codex's policies tell apart, and prints one JSON line:
// a write in the project (Codex's cwd), in its .git (read-only to Codex), in /tmp
// (Codex's slash_tmp), in a directory outside every policy (not beneath /tmp, where
// the scratch HOME is), and a TCP connection to the fake model API's port (the
// network). What it could not do it also names on stderr, as a program would.
const codexSandboxCell = `import json, os, socket, sys
r = {}
def attempt(name, f):
    try:
        f()
        r[name] = "ok"
    except Exception as e:
        r[name] = type(e).__name__
        print(name + ":", e, file=sys.stderr)
def write(path):
    with open(path, "w") as f:
        f.write("x")
    os.remove(path)
attempt("project", lambda: write("codex-probe.txt"))
attempt("git", lambda: write(os.path.join(".git", "codex-probe.txt")))
attempt("slash_tmp", lambda: write("/tmp/repl-mcp-codex-probe-%d.txt" % os.getpid()))
attempt("outside", lambda: write(os.path.join(os.environ["OUTSIDE_DIR"], "codex-probe.txt")))
attempt("network", lambda: socket.create_connection(("127.0.0.1", int(os.environ["PROBE_PORT"])), timeout=5).close())
print(json.dumps(r, sort_keys=True))
`

func TestCodexSandbox(t *testing.T) {
	t.Parallel() // three short Codex runs, mostly waiting: beside the suite's other tests
	s := newSuite(t)
	codexJS := s.codexBinary(t)
	refused := "PermissionError"
	modes := []struct {
		name, config string
		bypass       bool
		want         map[string]string
		footer       []string
	}{
		{name: "ReadOnly", config: "sandbox_mode = \"read-only\"\n",
			want:   map[string]string{"project": refused, "git": refused, "slash_tmp": refused, "outside": refused, "network": refused},
			footer: []string{"Codex's read-only sandbox, which repl-mcp applies to cells, may have refused this"}},
		{name: "WorkspaceWrite", config: "sandbox_mode = \"workspace-write\"\n",
			want:   map[string]string{"project": "ok", "git": "ok", "slash_tmp": "ok", "outside": refused, "network": refused},
			footer: []string{"sandbox Codex's workspace-write", "not enforced: Codex keeps ", "/.git read-only; it stays writable here"}},
		{name: "Bypassed", bypass: true,
			want: map[string]string{"project": "ok", "git": "ok", "slash_tmp": "ok", "outside": "ok", "network": "ok"}},
	}
	// Outside /tmp, which Codex's workspace-write makes writable.
	outside, err := os.MkdirTemp("/var/tmp", "repl-mcp-codex-outside-")
	if err != nil {
		t.Fatalf("a directory outside /tmp: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(outside) })
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			steps := []step{{id: "probe", server: "repl", tool: "execute_python", args: map[string]any{"code": codexSandboxCell, "timeout": 30}}}
			run := runAgent(t, agentSetup{kind: codex, handler: func(fm *fakeModel) http.Handler { return responsesAPI{fm} },
				command: func(ctx context.Context, port int, scratch, marker string) (*exec.Cmd, error) {
					home, project := filepath.Join(scratch, "home"), filepath.Join(scratch, "project")
					codexHome := filepath.Join(home, ".codex")
					if err := mkdirs(home, filepath.Join(project, ".git"), codexHome); err != nil {
						return nil, err
					}
					var b strings.Builder
					fmt.Fprintf(&b, "model = %s\nmodel_provider = \"modelview\"\napproval_policy = \"never\"\n%s", tomlString("gpt-5.5"), m.config)
					b.WriteString("\n[features]\ncode_mode = false\ncode_mode_only = false\n")
					fmt.Fprintf(&b, "\n[model_providers.modelview]\nname = \"repl-mcp sandbox fake\"\nbase_url = %s\n", tomlString(fmt.Sprintf("http://127.0.0.1:%d/v1", port)))
					b.WriteString("wire_api = \"responses\"\nenv_key = \"REPL_MCP_MODELVIEW_KEY\"\nrequest_max_retries = 0\nstream_max_retries = 0\n")
					// Outside the bypass, Codex asks before an MCP tool call; approve
					// repl-mcp's, as a user who registered it would.
					fmt.Fprintf(&b, "\n[mcp_servers.repl]\ncommand = %s\nargs = [%s, %s, \"--sandbox\", \"inherit-codex\", \"--no-spare-worker\"]\n",
						tomlString(s.replMCP), tomlString("--python"), tomlString(s.python))
					b.WriteString("startup_timeout_sec = 60\ndefault_tools_approval_mode = \"approve\"\n")
					fmt.Fprintf(&b, "[mcp_servers.repl.env]\nINTEROP_MARKER = %s\nPROBE_PORT = %s\nOUTSIDE_DIR = %s\n",
						tomlString(marker), tomlString(strconv.Itoa(port)), tomlString(outside))
					if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(b.String()), 0o600); err != nil {
						return nil, err
					}
					args := []string{codexJS, "exec", "--json", "--skip-git-repo-check"}
					if m.bypass {
						args = append(args, "--dangerously-bypass-approvals-and-sandbox")
					}
					cmd := exec.CommandContext(ctx, s.node, append(args, "-C", project, modelViewPrompt)...)
					cmd.Dir = project
					cmd.Env = agentEnv(home, "CODEX_HOME="+codexHome, "REPL_MCP_MODELVIEW_KEY=dummy")
					return cmd, nil
				}}, steps)
			run.checkHarness(t, steps)
			reportCheck(t, func(c *checker) {
				g := stepGiven(c, run.recs, "probe")
				if len(g.Texts) == 0 {
					c.fatalf("the model was given no text")
				}
				var got map[string]string
				if err := json.Unmarshal([]byte(strings.SplitN(g.Texts[0], "\n", 2)[0]), &got); err != nil {
					c.fatalf("the cell's line is not JSON: %q", g.Text())
				}
				for k, want := range m.want {
					if got[k] != want {
						c.errorf("%s: the cell got %q, want %q (all: %v)", k, got[k], want, got)
					}
				}
				footer := g.Texts[len(g.Texts)-1]
				for _, f := range m.footer {
					if !strings.Contains(footer, f) {
						c.errorf("the footer %q does not say %q", footer, f)
					}
				}
				if m.bypass && strings.Contains(footer, "sandbox") {
					c.errorf("with Codex's sandbox bypassed the footer speaks of one: %q", footer)
				}
			})
		})
	}
}

// codexBinary is Codex 0.171.0's codex.js, checked as runCodexMode checks it.
func (s *suite) codexBinary(t *testing.T) string {
	t.Helper()
	s.checkNpmPackage(t, codexPackage)
	native, _ := filepath.Glob(s.path("node_modules", "@openai", "codex-*", "package.json"))
	for _, p := range native {
		var pkg struct {
			Version string `json:"version"`
		}
		readJSON(t, p, &pkg)
		if strings.HasPrefix(pkg.Version, "0.171.0-") {
			return s.path("node_modules", "@openai", "codex", "bin", "codex.js")
		}
	}
	t.Fatalf("no platform package of Codex 0.171.0 in interop/node_modules/@openai (found %q): %s", native, setupStep)
	return ""
}
