package plugintest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/iota-uz/repl-mcp/internal/pep440"
	"github.com/iota-uz/repl-mcp/internal/wheel"
)

// stubEnv makes this test binary act as a stub command instead of running tests: with
// stubEnv=uvx it prints its arguments and working directory as JSON and exits 0; with
// stubEnv=uvx-fails it writes uv's kind of error to stderr and exits 2, as uv does when it
// cannot install the wheel. The launcher tests put a symlink named uvx to this binary
// first on PATH.
const stubEnv = "REPL_MCP_PLUGIN_TEST_STUB"

// stubFailure is what the failing stub uvx writes to stderr.
const stubFailure = "error: Failed to resolve tool requirement\n  Caused by: Distribution not found at: file:///nowhere/repl_mcp.whl\n"

// stubOffline is what the stub uvx writes with stubEnv=uvx-offline: uv 0.13's words
// for a wheel it cannot download without a network. The stub also writes the
// UV_HTTP_RETRIES it was given to the file stubRecordEnv names.
const stubOffline = "error: Failed to resolve tool requirement\n" +
	"  cause: Failed to download `repl-mcp @ https://example.invalid/repl_mcp.whl`\n" +
	"  cause: Failed to fetch: https://example.invalid/repl_mcp.whl\n" +
	"  cause: error sending request for url (https://example.invalid/repl_mcp.whl)\n" +
	"  cause: client error (Connect)\n  cause: dns error\n  cause: error resolving DNS\n" +
	"  cause: failed to lookup address information: Temporary failure in name resolution\n"

const stubRecordEnv = "REPL_MCP_PLUGIN_TEST_RECORD"

// stubCall is what the stub uvx prints.
type stubCall struct {
	Args []string `json:"args"`
	Cwd  string   `json:"cwd"`
}

func TestMain(m *testing.M) {
	if os.Getenv(stubEnv) == "uvx-fails" {
		fmt.Fprint(os.Stderr, stubFailure)
		os.Exit(2)
	}
	if os.Getenv(stubEnv) == "uvx-offline" {
		// What it was told about retries, for the test to read.
		retries, set := os.LookupEnv("UV_HTTP_RETRIES")
		if !set {
			retries = "unset"
		}
		os.WriteFile(os.Getenv(stubRecordEnv), []byte(retries), 0o600)
		fmt.Fprint(os.Stderr, stubOffline)
		os.Exit(2)
	}
	if os.Getenv(stubEnv) == "uvx" {
		cwd, err := os.Getwd()
		if err != nil {
			fmt.Fprintln(os.Stderr, "stub uvx:", err)
			os.Exit(3)
		}
		if err := json.NewEncoder(os.Stdout).Encode(stubCall{Args: os.Args[1:], Cwd: cwd}); err != nil {
			os.Exit(3)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// The repository's root and the plugin's directory, relative to this package's
// directory.
const (
	repoRoot        = "../.."
	pluginDir       = repoRoot + "/plugin"
	marketplaceFile = repoRoot + "/.claude-plugin/marketplace.json"
	pyprojectFile   = repoRoot + "/pyproject.toml"
	readmeFile      = repoRoot + "/README.md"
)

// The plugin's files, relative to its directory (pluginPath makes them paths here), as
// ${CLAUDE_PLUGIN_ROOT}/... names them.
const (
	launcherFile = "scripts/repl-mcp-launch.sh"
	manifestFile = ".claude-plugin/plugin.json"
	mcpFile      = ".mcp.json"
	hooksFile    = "hooks/hooks.json"
	hookScript   = "hooks/nudge-python-repl.sh"
	skillFile    = "skills/python-repl/SKILL.md"
)

// serverName is the plugin's name and its MCP server's.
const serverName = "python-repl"

// pluginPath is the path from this package's directory of the plugin's file rel.
func pluginPath(rel string) string { return filepath.Join(pluginDir, filepath.FromSlash(rel)) }

// manifest is the part of plugin.json the tests read.
type manifest struct {
	Name        string `json:"name"`
	DisplayName string `json:"displayName"`
	Version     string `json:"version"`
	Description string `json:"description"`
	Author      struct{ Name string }
	Repository  string   `json:"repository"`
	License     string   `json:"license"`
	Keywords    []string `json:"keywords"`
	MCPServers  any      `json:"mcpServers"`
}

// mcpServer is a server of the plugin's .mcp.json.
type mcpServer struct {
	Type    string   `json:"type"`
	Command string   `json:"command"`
	Args    []string `json:"args"`
}

// readServers is the mcpServers of the plugin's .mcp.json.
func readServers(t *testing.T) map[string]mcpServer {
	t.Helper()
	var f struct {
		MCPServers map[string]mcpServer `json:"mcpServers"`
	}
	readJSON(t, pluginPath(mcpFile), &f)
	return f.MCPServers
}

// launchArgs are the server's command and arguments as Claude Code runs them, with
// ${CLAUDE_PLUGIN_ROOT} replaced by root.
func launchArgs(t *testing.T, root string) (string, []string) {
	t.Helper()
	srv := readServers(t)[serverName]
	args := make([]string, len(srv.Args))
	for i, a := range srv.Args {
		args[i] = strings.ReplaceAll(a, "${CLAUDE_PLUGIN_ROOT}", root)
	}
	return srv.Command, args
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// readJSON decodes a whole file into v; trailing data is an error.
func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(readFile(t, path)))
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if dec.More() {
		t.Fatalf("%s: data after the JSON value", path)
	}
}

func readManifest(t *testing.T) manifest {
	t.Helper()
	var m manifest
	readJSON(t, pluginPath(manifestFile), &m)
	return m
}

// launcherVersions reads the version= and wheel_version= lines of the launcher.
func launcherVersions(t *testing.T) (version, wheelVersion string) {
	t.Helper()
	text := string(readFile(t, pluginPath(launcherFile)))
	get := func(name string) string {
		m := regexp.MustCompile(`(?m)^` + name + `=([0-9A-Za-z.+!_-]+)$`).FindStringSubmatch(text)
		if m == nil {
			t.Fatalf("%s has no %s= line", launcherFile, name)
		}
		return m[1]
	}
	return get("version"), get("wheel_version")
}

// projectVersion is [project].version of the repository's pyproject.toml.
func projectVersion(t *testing.T) string {
	t.Helper()
	p, err := wheel.LoadProject(pyprojectFile)
	if err != nil {
		t.Fatalf("reading the release version: %v", err)
	}
	return p.Version
}

// TestVersionsAgree: the launcher fetches the release of the version in pyproject.toml,
// under the file name the wheel builder gives it, and the manifest says the same version.
func TestVersionsAgree(t *testing.T) {
	version, wheelVersion := launcherVersions(t)
	if want := projectVersion(t); version != want {
		t.Errorf("%s: version=%s, but pyproject.toml's [project].version is %s: upgrade the plugin and the release together", launcherFile, version, want)
	}
	pep, err := pep440.Normalize(version)
	if err != nil {
		t.Fatal(err)
	}
	if wheelVersion != pep {
		t.Errorf("%s: wheel_version=%s, want %s (the PEP 440 form of %s, as in the wheel's file name)", launcherFile, wheelVersion, pep, version)
	}
	if m := readManifest(t); m.Version != version {
		t.Errorf("%s: version %q, want the launcher's %q", manifestFile, m.Version, version)
	}
}

// TestManifest: plugin.json names the plugin and declares no server itself; .mcp.json
// at the plugin's root declares the one server, python-repl, as sh running the launcher
// file under ${CLAUDE_PLUGIN_ROOT} with --transport stdio: one short command line in
// `claude mcp list`, and no text of the launcher in a place where Claude Code expands
// ${VAR:-default} itself (it did, in the inlined form this replaces).
func TestManifest(t *testing.T) {
	m := readManifest(t)
	for field, got := range map[string]string{
		"name": m.Name, "displayName": m.DisplayName, "version": m.Version, "description": m.Description,
		"author.name": m.Author.Name, "repository": m.Repository, "license": m.License,
	} {
		if got == "" {
			t.Errorf("%s: %s is missing", manifestFile, field)
		}
	}
	if m.Name != serverName || m.License != "MIT" {
		t.Errorf("%s: name %q, license %q; want %q, MIT", manifestFile, m.Name, m.License, serverName)
	}
	if m.MCPServers != nil {
		t.Errorf("%s declares mcpServers; the server is declared once, in %s", manifestFile, mcpFile)
	}
	servers := readServers(t)
	srv, ok := servers[serverName]
	if !ok || len(servers) != 1 {
		t.Fatalf("%s: mcpServers must hold exactly %q, has %v", mcpFile, serverName, servers)
	}
	want := []string{"${CLAUDE_PLUGIN_ROOT}/" + launcherFile, "--transport", "stdio"}
	if srv.Type != "stdio" || srv.Command != "sh" || !slices.Equal(srv.Args, want) {
		t.Errorf("%s: %s is %+v; want type stdio, command sh, args %q", mcpFile, serverName, srv, want)
	}
	if info, err := os.Stat(pluginPath(launcherFile)); err != nil || info.Mode()&0o111 == 0 {
		t.Errorf("%s must exist and be executable (%v)", launcherFile, err)
	}
}

// TestMarketplace: the repository root is a marketplace whose one plugin entry resolves
// to this directory.
func TestMarketplace(t *testing.T) {
	var mp struct {
		Name  string `json:"name"`
		Owner struct {
			Name string `json:"name"`
		} `json:"owner"`
		Plugins []struct {
			Name        string   `json:"name"`
			Source      string   `json:"source"`
			Description string   `json:"description"`
			Category    string   `json:"category"`
			Tags        []string `json:"tags"`
		} `json:"plugins"`
	}
	readJSON(t, marketplaceFile, &mp)
	if mp.Name != "repl-mcp" || mp.Owner.Name == "" || len(mp.Plugins) != 1 {
		t.Fatalf("%s: name %q, owner %q, %d plugins; want repl-mcp, an owner, one plugin", marketplaceFile, mp.Name, mp.Owner.Name, len(mp.Plugins))
	}
	p := mp.Plugins[0]
	if p.Name != readManifest(t).Name || p.Description == "" || p.Category == "" {
		t.Errorf("%s: plugin %q (description %q, category %q); want %q with a description and category", marketplaceFile, p.Name, p.Description, p.Category, serverName)
	}
	// Sources are relative to the directory that holds .claude-plugin/ and start with ./.
	if !strings.HasPrefix(p.Source, "./") {
		t.Fatalf("%s: source %q must start with ./", marketplaceFile, p.Source)
	}
	dir := filepath.Join(repoRoot, filepath.FromSlash(p.Source))
	same, err := sameFile(dir, pluginDir)
	if err != nil || !same {
		t.Errorf("%s: source %q is not the plugin directory (%v)", marketplaceFile, p.Source, err)
	}
}

func sameFile(a, b string) (bool, error) {
	ia, err := os.Stat(a)
	if err != nil {
		return false, err
	}
	ib, err := os.Stat(b)
	if err != nil {
		return false, err
	}
	return os.SameFile(ia, ib), nil
}

// hookCommand is the one PostToolUse command of hooks.json.
func hookCommand(t *testing.T) string {
	t.Helper()
	type handler struct {
		Type    string `json:"type"`
		Command string `json:"command"`
	}
	var h struct {
		Hooks map[string][]struct {
			Matcher string    `json:"matcher"`
			Hooks   []handler `json:"hooks"`
		} `json:"hooks"`
	}
	readJSON(t, pluginPath(hooksFile), &h)
	post := h.Hooks["PostToolUse"]
	if len(h.Hooks) != 1 || len(post) != 1 || post[0].Matcher != "Bash" || len(post[0].Hooks) != 1 {
		t.Fatalf("%s: want one PostToolUse entry matching Bash with one hook, have %+v", hooksFile, h.Hooks)
	}
	hk := post[0].Hooks[0]
	if hk.Type != "command" || !strings.Contains(hk.Command, "${CLAUDE_PLUGIN_ROOT}/"+hookScript) {
		t.Fatalf("%s: hook %+v must be a command running ${CLAUDE_PLUGIN_ROOT}/%s", hooksFile, hk, hookScript)
	}
	return hk.Command
}

// TestPluginHoldsOnlyItsFiles: Claude Code copies the whole plugin directory into its
// cache, so it holds the plugin's files and nothing else: no Go package, no tests (they
// live here), no stray file.
func TestPluginHoldsOnlyItsFiles(t *testing.T) {
	want := []string{launcherFile, manifestFile, mcpFile, hooksFile, hookScript, skillFile}
	var have []string
	err := filepath.WalkDir(pluginDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(pluginDir, path)
		have = append(have, filepath.ToSlash(rel))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(want)
	if !slices.Equal(have, want) {
		t.Errorf("%s holds %q; want only the plugin's files %q (Go code and tests belong in packaging/plugintest)", pluginDir, have, want)
	}
}

func TestHooksFile(t *testing.T) {
	hookCommand(t)
	if _, err := os.Stat(pluginPath(hookScript)); err != nil {
		t.Fatal(err)
	}
}

// TestSkill: the skill has its frontmatter, names every tool the server registers, and
// covers the topics an agent needs (docs/contract.md §10.5 as this implementation has them).
func TestSkill(t *testing.T) {
	text := string(readFile(t, pluginPath(skillFile)))
	front, body, ok := strings.Cut(strings.TrimPrefix(text, "---\n"), "\n---\n")
	if !strings.HasPrefix(text, "---\n") || !ok {
		t.Fatalf("%s: no --- frontmatter --- block", skillFile)
	}
	fields := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(front))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok {
			fields[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	if fields["name"] != serverName || len(fields["description"]) < 40 {
		t.Errorf("%s: frontmatter name %q, description %q; want %q and a real description", skillFile, fields["name"], fields["description"], serverName)
	}
	tools, err := filepath.Glob(repoRoot + "/server/tool_*.go")
	if err != nil || len(tools) == 0 {
		t.Fatalf("no %s/server/tool_*.go files (%v)", repoRoot, err)
	}
	for _, f := range tools {
		if strings.HasSuffix(f, "_test.go") {
			continue // a tool's tests, not a tool
		}
		name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "tool_"), ".go")
		if !strings.Contains(body, "`"+name) {
			t.Errorf("%s does not mention the tool %s", skillFile, name)
		}
	}
	for _, topic := range []string{
		"session_id", "python_health", "expected_generation", "STATE_CHANGED", "include_namespace",
		`mode: "fresh"`, "asyncio.run()", "expanduser", "reset=true", "checkpoint(", "repl_history()",
		"sh(", "check=False", ".returncode", ".truncated", "uv pip install --python",
		"mcp.call(", "mcp.acall(", "mcp.text(", "arguments=", "ToolError", "mcp.explain(",
		"mcp.search(", ".acall(", "ToolResult", ".data", "only the summary", `mcp["files-writer"]`,
		"mcp.journal()", "outcome_unknown", "mcp.refresh()", ".mcp.json",
		"50,000", "20,000", "artifact(", "--transport http", "not a sandbox",
	} {
		if !strings.Contains(body, topic) {
			t.Errorf("%s does not cover %q", skillFile, topic)
		}
	}
}

// run runs a command with the given environment and stdin in dir, bounded by the
// test's deadline, and returns its stdout, stderr and exit status.
func run(t *testing.T, dir string, env []string, stdin string, name string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runFor(t, 30*time.Second, dir, env, stdin, name, args...)
}

// runFor is run with a bound of d instead of 30 s.
func runFor(t *testing.T, d time.Duration, dir string, env []string, stdin string, name string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout(t, d))
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env, cmd.Stdin = dir, env, strings.NewReader(stdin)
	cmd.WaitDelay = 5 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit) && ctx.Err() == nil:
		code = exit.ExitCode()
	default:
		t.Fatalf("%s %q: %v\nstdout:\n%s\nstderr:\n%s", name, args, err, out.String(), errb.String())
	}
	return out.String(), errb.String(), code
}

// timeout is d, or less when the test's deadline comes sooner.
func timeout(t *testing.T, d time.Duration) time.Duration {
	if dl, ok := t.Deadline(); ok {
		if left := time.Until(dl) - 5*time.Second; left < d {
			return max(left, time.Second)
		}
	}
	return d
}

// environ is the test's environment without the variables the launcher and the hook
// read, with extra appended.
func environ(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "PATH", "REPL_MCP_WHEEL_BASE_URL", "CLAUDE_PLUGIN_ROOT", stubEnv, "UV_HTTP_RETRIES", "UV_OFFLINE", "UV_FIND_LINKS":
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// lookPathQuiet finds a command the tests can do without.
func lookPathQuiet(name string) (string, error) { return exec.LookPath(name) }

// lookPath finds a command the tests need on the test's own PATH, or fails.
func lookPath(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s not found on PATH: the plugin tests need it (%v)", name, err)
	}
	return p
}

// TestReadmeLocalCheckout: the README's plugin section says how to install the plugin
// from a local checkout, that it then runs from the checkout (TestClaudeCodePlugin
// checks that it does), how to get uv, and that make wheelhouse needs the package
// index once and then serves offline machines.
func TestReadmeLocalCheckout(t *testing.T) {
	text := string(readFile(t, readmeFile))
	_, section, ok := strings.Cut(text, "\n### The Claude Code plugin\n")
	if !ok {
		t.Fatal("README.md has no ### The Claude Code plugin section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	flat := strings.Join(strings.Fields(section), " ")
	for _, want := range []string{
		"claude plugin marketplace add /path/to/checkout",
		"claude plugin install python-repl@repl-mcp",
		"The plugin then runs from the checkout itself",
		"sh /path/to/checkout/plugin/scripts/repl-mcp-launch.sh --transport stdio",
		"curl -LsSf https://astral.sh/uv/install.sh | sh",
		"`make wheelhouse` needs the package index once",
		"After that the directory serves any machine offline",
	} {
		if !strings.Contains(flat, want) {
			t.Errorf("README.md's plugin section does not say %q", want)
		}
	}
}

// TestReadmeInstall: the README's Install section names exactly the wheels the launcher
// fetches, of the launcher's release.
func TestReadmeInstall(t *testing.T) {
	text := string(readFile(t, readmeFile))
	_, section, ok := strings.Cut(text, "\n## Install\n")
	if !ok {
		t.Fatal("README.md has no ## Install section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	version, _ := launcherVersions(t)
	want := map[string]bool{}
	for _, h := range supportedHosts {
		want[expectedWheel(t, h.goos, h.goarch)] = true
	}
	seen := map[string]bool{}
	for _, name := range regexp.MustCompile(`repl_mcp-[^\s/`+"`"+`]*\.whl`).FindAllString(section, -1) {
		if !want[name] {
			t.Errorf("README.md Install names %s, which is not a wheel of release %s", name, version)
		}
		seen[name] = true
	}
	for name := range want {
		if !seen[name] {
			t.Errorf("README.md Install does not list %s", name)
		}
	}
	for _, tag := range regexp.MustCompile(`releases/download/v([^/\s]+)/`).FindAllStringSubmatch(section, -1) {
		if tag[1] != version {
			t.Errorf("README.md Install downloads release v%s, want v%s", tag[1], version)
		}
	}
	for _, must := range []string{"claude mcp add", "[mcp_servers.python-repl]", "/plugin marketplace add iota-uz/repl-mcp", "/plugin install python-repl@repl-mcp", "repl-mcp-launch.sh --help", "REPL_MCP_WHEEL_BASE_URL", "make wheelhouse DIR=", "UV_FIND_LINKS=", "UV_OFFLINE=1"} {
		if !strings.Contains(section, must) {
			t.Errorf("README.md Install does not say %q", must)
		}
	}
}
