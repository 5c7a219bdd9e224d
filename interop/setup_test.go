package interop

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iota-uz/repl-mcp/internal/tier"
)

// setupStep is what a reader must run when the third-party software is missing or
// stale; every setup failure names it.
const setupStep = "run `make interop-deps` at the repository root"

// interopNeeds is why the suite is make test's alone (internal/tier).
const interopNeeds = "it needs the interop suite's npm packages and uv venv (make interop-deps)"

// The npm packages the tests run, each checked against the version package.json pins.
var npmPackages = []string{
	"@modelcontextprotocol/client",
	"@modelcontextprotocol/inspector-cli",
	"@modelcontextprotocol/server-everything",
}

// suite is what every interop test needs: found, checked or built once per run.
type suite struct {
	dir        string // interop/, absolute
	replMCP    string // repl-mcp built for this run
	python     string // the interpreter of repl-mcp's default session
	node       string // the machine's node
	venvPython string // interop/.venv/bin/python, holding the pinned Python MCP SDK
}

func newSuite(t *testing.T) *suite {
	t.Helper()
	tier.Full(t, interopNeeds)
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	s := &suite{dir: dir}
	s.node = findNode(t)
	s.checkNodeModules(t)
	s.venvPython = s.checkVenv(t)
	s.python = workerPython(t)
	s.replMCP = buildReplMCP(t, filepath.Dir(dir))
	return s
}

// path is a file under interop/.
func (s *suite) path(elem ...string) string {
	return filepath.Join(append([]string{s.dir}, elem...)...)
}

// findNode returns the machine's node (20 or newer), which runs every npm package here.
func findNode(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node not found on PATH (%v): the interop suite needs Node.js 20 or newer with npm; install it, then %s", err, setupStep)
	}
	out := output(t, 10*time.Second, "", node, "--version")
	var major int
	if _, err := fmt.Sscanf(out, "v%d.", &major); err != nil || major < 20 {
		t.Fatalf("%s is Node.js %q: the interop suite needs 20 or newer", node, strings.TrimSpace(out))
	}
	t.Logf("node %s: %s", strings.TrimSpace(out), node)
	return node
}

// checkNodeModules fails unless npm ci installed exactly what package.json pins.
func (s *suite) checkNodeModules(t *testing.T) {
	t.Helper()
	for _, name := range npmPackages {
		t.Logf("npm %s %s", name, s.checkNpmPackage(t, name))
	}
}

// checkNpmPackage fails unless npm ci installed the version of name that
// interop/package.json pins, and returns it.
func (s *suite) checkNpmPackage(t *testing.T, name string) string {
	t.Helper()
	var pins struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	readJSON(t, s.path("package.json"), &pins)
	want := pins.Dependencies[name]
	if want == "" {
		t.Fatalf("interop/package.json does not pin %s", name)
	}
	var installed struct {
		Version string `json:"version"`
	}
	data, err := os.ReadFile(s.path("node_modules", name, "package.json"))
	if err == nil {
		err = json.Unmarshal(data, &installed)
	}
	if err != nil {
		t.Fatalf("%s is not installed in interop/node_modules (%v): %s (npm ci in interop/)", name, err, setupStep)
	}
	if installed.Version != want {
		t.Fatalf("interop/node_modules has %s %s but package.json pins %s: %s (npm ci in interop/)", name, installed.Version, want, setupStep)
	}
	return installed.Version
}

// checkVenv fails unless interop/.venv holds the mcp version requirements.in pins.
func (s *suite) checkVenv(t *testing.T) string {
	t.Helper()
	python := s.path(".venv", "bin", "python")
	if _, err := os.Stat(python); err != nil {
		t.Fatalf("the Python MCP SDK venv is missing (%v): %s (it creates interop/.venv with uv and installs interop/requirements.txt)", err, setupStep)
	}
	want := pinnedMCP(t, s.path("requirements.in"))
	got := strings.TrimSpace(output(t, 30*time.Second, "", python, "-c", "import importlib.metadata as m; print(m.version('mcp'))"))
	if got != want {
		t.Fatalf("interop/.venv has mcp %s but requirements.in pins %s: %s", got, want, setupStep)
	}
	t.Logf("pypi mcp %s: %s", got, python)
	return python
}

// pinnedMCP reads the mcp==VERSION line of requirements.in.
func pinnedMCP(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "mcp=="); ok {
			return v
		}
	}
	t.Fatalf("%s pins no mcp==VERSION", path)
	return ""
}

// workerPython is python3 on PATH, resolved to its real executable, for repl-mcp's
// default session.
func workerPython(t *testing.T) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 not found on PATH (%v): repl-mcp needs CPython 3.10 or newer", err)
	}
	out := output(t, 30*time.Second, "", py, "-c", "import sys; print(sys.executable); print(sys.version_info >= (3, 10))")
	lines := strings.Fields(out)
	if len(lines) != 2 || lines[1] != "True" {
		t.Fatalf("%s is not CPython 3.10 or newer: %q", py, out)
	}
	return lines[0]
}

// buildReplMCP builds the module at root into a temporary directory.
func buildReplMCP(t *testing.T, root string) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go not found on PATH: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "repl-mcp")
	start := time.Now()
	output(t, 5*time.Minute, root, goTool, "build", "-o", bin, ".")
	t.Logf("built repl-mcp in %v", time.Since(start).Round(time.Millisecond))
	return bin
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(data, v)
	}
	if err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
}

// output runs a short command in its own process group, bounded by d, and returns
// its stdout; any failure fails the test with the command's output.
func output(t *testing.T, d time.Duration, dir, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	stdout, stderr, err := runGroup(ctx, dir, nil, name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\nstdout:\n%s\nstderr:\n%s", name, strings.Join(args, " "), err, stdout, stderr)
	}
	return stdout
}
