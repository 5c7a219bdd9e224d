package plugintest

// The plugin as a newcomer meets it, in the real Claude Code CLI (pinned in
// interop/package.json, installed by make interop-deps): validate, add the checkout as
// a marketplace, install, look at the details, and list the MCP servers: with uvx and a
// local wheelhouse (the server connects), without uvx, and with a mirror that lacks the
// wheel (the CLI says why, each time).
// The CLI runs with HOME in a scratch directory, an environment made from nothing, and
// inside a network namespace whose only interface is loopback (unshare -n): none of
// these commands needs the network, and uv installs from the wheelhouse offline.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/iota-uz/repl-mcp/internal/buildversion"
	"github.com/iota-uz/repl-mcp/internal/pythons"
	"github.com/iota-uz/repl-mcp/internal/testproc"
	"github.com/iota-uz/repl-mcp/internal/tier"
	"github.com/iota-uz/repl-mcp/internal/wheel"
)

const (
	claudeCodePackage = "@anthropic-ai/claude-code"
	pluginID          = "python-repl@repl-mcp"
	// mcpListName is how `claude mcp list` names a plugin's server: plugin:PLUGIN:SERVER.
	mcpListName = "plugin:python-repl:python-repl"
)

// mcpListLineRE is the plugin's line of `claude mcp list`: its name, the command line
// (sh, the launcher under the plugin's root, --transport stdio), and the status.
var mcpListLineRE = regexp.MustCompile(`^` + regexp.QuoteMeta(mcpListName) + `: sh (\S+)/scripts/repl-mcp-launch\.sh --transport stdio - (.+)$`)

// claudeCLI is the pinned Claude Code binary, or the test fails saying how to get it.
func claudeCLI(t *testing.T, root string) string {
	t.Helper()
	tier.Full(t, "it needs the pinned Claude Code CLI from npm (make interop-deps)")
	var pins struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	readJSON(t, filepath.Join(root, "interop", "package.json"), &pins)
	want := pins.Dependencies[claudeCodePackage]
	if want == "" {
		t.Fatalf("interop/package.json does not pin %s", claudeCodePackage)
	}
	pkg := filepath.Join(root, "interop", "node_modules", "@anthropic-ai", "claude-code")
	var installed struct {
		Version string `json:"version"`
	}
	data, err := os.ReadFile(filepath.Join(pkg, "package.json"))
	if err == nil {
		err = json.Unmarshal(data, &installed)
	}
	if err != nil || installed.Version != want {
		t.Fatalf("interop/node_modules has %s %q (%v), package.json pins %s: run `make interop-deps` at the repository root", claudeCodePackage, installed.Version, err, want)
	}
	// bin/claude.exe is a placeholder until the package's postinstall puts the native
	// binary (hundreds of MB) there.
	bin := filepath.Join(pkg, "bin", "claude.exe")
	if fi, err := os.Stat(bin); err != nil || fi.Size() < 1<<20 {
		t.Fatalf("%s is not Claude Code's native binary (%v): run `make interop-deps` (npm ci must run the package's postinstall)", bin, err)
	}
	return bin
}

// isolated returns the argv prefix that runs a command in a network namespace of its
// own with only loopback; without one the CLI is never run: the test fails in CI and
// is skipped elsewhere.
func isolated(t *testing.T) []string {
	t.Helper()
	unshare, err := exec.LookPath("unshare")
	if err == nil {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		var out []byte
		if out, err = exec.CommandContext(ctx, unshare, "-n", "true").CombinedOutput(); err != nil {
			err = fmt.Errorf("unshare -n true: %v: %s", err, bytes.TrimSpace(out))
		}
	}
	if err != nil {
		msg := "no network namespace of its own for Claude Code (" + err.Error() + "): it runs only with loopback as its one interface, which needs unshare(1) and CAP_SYS_ADMIN (root)"
		if os.Getenv("CI") != "" {
			t.Fatal(msg + ", which CI must provide")
		}
		t.Skip(msg + "; outside CI it is skipped, never run with network access")
	}
	return []string{unshare, "-n"}
}

// cliEnv is the CLI's whole environment: PATH, the scratch HOME, nothing of the
// user's, no update checks, telemetry or other traffic, and extra.
func cliEnv(path, home string, extra ...string) []string {
	return append([]string{
		"PATH=" + path,
		"HOME=" + home,
		"LANG=C.UTF-8",
		"TERM=dumb",
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
	}, extra...)
}

// toolsDir is a directory for PATH with what the launcher needs besides uvx (sh and
// uname), linked from the test's PATH: PATH without uvx.
func toolsDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, tool := range append([]string{"sh", "uname"}, launcherTools...) {
		if err := os.Symlink(lookPath(t, tool), filepath.Join(dir, tool)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// devWheelhouse fills dir as `make wheelhouse DIR=dir` does: this host's wheel of the
// checkout, as the development build the checkout is (or the release, on a clean
// release tag), and the dependency wheels. It returns the wheel's version.
func devWheelhouse(t *testing.T, root, dir string) string {
	t.Helper()
	p, err := wheel.LoadProject(filepath.Join(root, "pyproject.toml"))
	if err != nil {
		t.Fatal(err)
	}
	version, err := buildversion.Checkout(root, p.Version)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "repl-mcp")
	_, stderr, code := runFor(t, 5*time.Minute, root, environ("PATH="+os.Getenv("PATH"), "CGO_ENABLED=0"), "",
		lookPath(t, "go"), "build", "-trimpath", "-ldflags", "-s -w -X main.version="+version, "-o", bin, ".")
	if code != 0 {
		t.Fatalf("go build: exit %d\n%s", code, stderr)
	}
	host, err := wheel.HostPlatform()
	if err != nil {
		t.Fatal(err)
	}
	whl, err := wheel.Build(wheel.Config{Binary: bin, Version: version, Platform: host, OutDir: dir, Pyproject: filepath.Join(root, "pyproject.toml")})
	if err != nil {
		t.Fatal(err)
	}
	copyDependencies(t, root, dir)
	t.Logf("wheelhouse %s: %s and the dependencies", dir, filepath.Base(whl))
	return version
}

func TestClaudeCodePlugin(t *testing.T) {
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	claude := claudeCLI(t, root)
	prefix := isolated(t)
	uvBin := filepath.Join(root, "interop", ".venv-uv", "bin")
	if _, err := os.Stat(filepath.Join(uvBin, "uvx")); err != nil {
		t.Fatalf("the pinned uvx is missing in %s (%v): run `make interop-deps` at the repository root", uvBin, err)
	}
	python := pythons.ForTest(t)[0].Path

	house := filepath.Join(t.TempDir(), "wheel house")
	if err := os.Mkdir(house, 0o755); err != nil {
		t.Fatal(err)
	}
	version := devWheelhouse(t, root, house)

	scratch := t.TempDir()
	home, project := filepath.Join(scratch, "home"), filepath.Join(scratch, "project")
	for _, d := range []string{home, project} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tools := toolsDir(t)
	withoutUvx := cliEnv(tools, home)
	withUvx := cliEnv(uvBin+string(os.PathListSeparator)+tools, home,
		"REPL_MCP_WHEEL_BASE_URL="+house, "UV_FIND_LINKS="+house, "UV_OFFLINE=1",
		"UV_CACHE_DIR="+filepath.Join(scratch, "uv-cache"), "UV_PYTHON="+python,
		"UV_PYTHON_DOWNLOADS=never", "UV_NO_PROGRESS=1")

	// claude runs the CLI in the project directory and returns its stdout; a failure
	// exit fails the test.
	claudeRun := func(env []string, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), timeout(t, 90*time.Second))
		defer cancel()
		start := time.Now()
		stdout, stderr, err := testproc.Run(ctx, project, env, prefix[0], append(append(prefix[1:], claude), args...)...)
		t.Logf("claude %s (%v):\n%s%s", strings.Join(args, " "), time.Since(start).Round(time.Millisecond), stdout, stderr)
		if err != nil {
			t.Fatalf("claude %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout, stderr)
		}
		return stdout
	}
	has := func(out, what, want string) {
		t.Helper()
		if !strings.Contains(out, want) {
			t.Errorf("%s does not say %q", what, want)
		}
	}

	pluginDir := filepath.Join(root, "plugin")
	out := claudeRun(withoutUvx, "plugin", "validate", pluginDir)
	has(out, "plugin validate", "✔ Validation passed")
	has(out, "plugin validate", `mcpServers: python-repl stdio sh ["${CLAUDE_PLUGIN_ROOT}/scripts/repl-mcp-launch.sh","--transport","stdio"]`)
	out = claudeRun(withoutUvx, "plugin", "validate", root)
	has(out, "plugin validate of the marketplace", "✔ Validation passed")

	out = claudeRun(withoutUvx, "plugin", "marketplace", "add", root)
	has(out, "plugin marketplace add", "Successfully added marketplace: repl-mcp")
	out = claudeRun(withoutUvx, "plugin", "install", pluginID)
	has(out, "plugin install", "Successfully installed plugin: "+pluginID)
	out = claudeRun(withoutUvx, "plugin", "details", pluginID)
	if !regexp.MustCompile(`(?m)^\s*MCP servers \(1\)\s+python-repl\b`).MatchString(out) {
		t.Errorf("plugin details does not count the one MCP server python-repl")
	}

	// With uvx and the wheelhouse: one short line, connected, to the wheelhouse's build.
	connected := mcpListLine(t, claudeRun(withUvx, "mcp", "list"))
	if m := mcpListLineRE.FindStringSubmatch(connected); m == nil || m[2] != "✔ Connected" {
		t.Errorf("claude mcp list shows %q, want sh <plugin root>/scripts/repl-mcp-launch.sh --transport stdio - ✔ Connected", connected)
	} else if m[1] != pluginDir {
		// The README says so: a plugin from a local marketplace runs from the checkout.
		t.Errorf("claude mcp list runs the plugin from %s, want the checkout's %s", m[1], pluginDir)
	}
	if got := serverVersions(t, home); !slices.Contains(got, version) {
		t.Errorf("Claude Code's MCP log names server versions %q, want the wheelhouse's %s", got, version)
	}

	// Without uvx: the launcher's reason, in the list and in mcp get.
	reason := "repl-mcp: uvx is required; install uv (https://docs.astral.sh/uv/) or register an installed repl-mcp executable."
	failed := mcpListLine(t, claudeRun(withoutUvx, "mcp", "list"))
	if m := mcpListLineRE.FindStringSubmatch(failed); m == nil || !strings.HasPrefix(m[2], "✘ Failed to connect") || !strings.HasSuffix(m[2], reason) {
		t.Errorf("claude mcp list shows %q, want ✘ Failed to connect with the reason %q", failed, reason)
	}
	out = claudeRun(withoutUvx, "mcp", "get", mcpListName)
	has(out, "claude mcp get", reason)

	// With uvx but a mirror that has no wheel: uv's own reason, in one line.
	empty := filepath.Join(scratch, "empty mirror")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	noWheel := append(slices.Clone(withUvx), "REPL_MCP_WHEEL_BASE_URL="+empty) // the later value wins
	uvFailed := mcpListLine(t, claudeRun(noWheel, "mcp", "list"))
	if m := mcpListLineRE.FindStringSubmatch(uvFailed); m == nil || !strings.HasPrefix(m[2], "✘ Failed to connect — -32000: repl-mcp: uvx could not run "+empty+"/repl_mcp-") ||
		!strings.Contains(m[2], "Distribution not found") {
		t.Errorf("claude mcp list shows %q, want ✘ Failed to connect with uv's reason for %s", uvFailed, empty)
	}

	readmeShows(t, connected, failed)
}

// mcpListLine is the plugin's one line in `claude mcp list`.
func mcpListLine(t *testing.T, out string) string {
	t.Helper()
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, mcpListName+":") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 {
		t.Fatalf("claude mcp list has %d lines for %s, want one:\n%s", len(lines), mcpListName, out)
	}
	return lines[0]
}

// serverVersions are the versions of repl-mcp that Claude Code's MCP log for the
// plugin's server says it connected to.
func serverVersions(t *testing.T, home string) []string {
	t.Helper()
	logs, err := filepath.Glob(filepath.Join(home, ".cache", "claude-cli-nodejs", "*", "mcp-logs-plugin-python-repl-python-repl", "*.jsonl"))
	if err != nil || len(logs) == 0 {
		t.Fatalf("no MCP log of the plugin's server under %s (%v)", home, err)
	}
	re := regexp.MustCompile(`"serverVersion":\{"name":"repl-mcp","version":"([^"]+)"\}`)
	var found []string
	for _, l := range logs {
		for _, line := range strings.Split(string(readFile(t, l)), "\n") {
			var entry struct {
				Debug string `json:"debug"`
			}
			if json.Unmarshal([]byte(line), &entry) == nil {
				for _, m := range re.FindAllStringSubmatch(entry.Debug, -1) {
					found = append(found, m[1])
				}
			}
		}
	}
	return found
}

// readmeShows fails unless the README's plugin section shows each line as the CLI
// showed it, up to the plugin's root and the version in it.
func readmeShows(t *testing.T, lines ...string) {
	t.Helper()
	text := string(readFile(t, readmeFile))
	_, section, ok := strings.Cut(text, "\n### The Claude Code plugin\n")
	if !ok {
		t.Fatal("README.md has no ### The Claude Code plugin section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	norm := func(l string) string {
		if m := mcpListLineRE.FindStringSubmatchIndex(l); m != nil {
			return l[:m[2]] + "ROOT" + l[m[3]:]
		}
		return l
	}
	shown := map[string]bool{}
	for _, l := range strings.Split(section, "\n") {
		shown[norm(l)] = true
	}
	for _, l := range lines {
		if !shown[norm(l)] {
			t.Errorf("README.md's plugin section does not show what claude mcp list shows:\n%s", l)
		}
	}
}
