package pythons

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/iota-uz/repl-mcp/internal/tier"
)

// Interpreter is one usable CPython.
type Interpreter struct {
	Name    string // e.g. py3.12.1
	Path    string
	Version string
}

// Find returns the interpreters to test on and a line for each expected one that
// could not be used, so a caller can name what is missing rather than skip it.
func Find() (found []Interpreter, missing []string) {
	seen := map[string]bool{}
	add := func(path string) {
		version, real, err := identify(path)
		if err != nil {
			missing = append(missing, fmt.Sprintf("%s: %v", path, err))
			return
		}
		if seen[real] || !atLeast310(version) {
			return
		}
		seen[real] = true
		found = append(found, Interpreter{Name: "py" + version, Path: path, Version: version})
	}
	for _, path := range pyenvInterpreters(&missing) {
		add(path)
	}
	if p, err := exec.LookPath("python3"); err == nil {
		add(p)
	} else {
		missing = append(missing, "python3 on PATH: "+err.Error())
	}
	sort.Slice(found, func(i, j int) bool { return found[i].Name < found[j].Name })
	return found, missing
}

func pyenvInterpreters(missing *[]string) []string {
	root := os.Getenv("PYENV_ROOT")
	if root == "" {
		out, err := exec.Command("pyenv", "root").Output()
		if err != nil {
			*missing = append(*missing, "pyenv: "+err.Error())
			return nil
		}
		root = strings.TrimSpace(string(out))
	}
	out, err := exec.Command("pyenv", "versions", "--bare").Output()
	if err != nil {
		*missing = append(*missing, "pyenv versions: "+err.Error())
		return nil
	}
	var paths []string
	for _, v := range strings.Fields(string(out)) {
		if atLeast310(v) {
			paths = append(paths, filepath.Join(root, "versions", v, "bin", "python"))
		}
	}
	return paths
}

// identify runs python for its version and the real path of its executable: shims
// such as pyenv's python3 resolve to the interpreter they run.
func identify(python string) (version, real string, err error) {
	out, err := exec.Command(python, "-c", "import os, platform, sys; print(platform.python_version()); print(os.path.realpath(sys.executable))").Output()
	if err != nil {
		return "", "", err
	}
	fields := strings.Fields(string(out))
	if len(fields) != 2 {
		return "", "", fmt.Errorf("unexpected answer %q", out)
	}
	return fields[0], fields[1], nil
}

// atLeast310 reports a version string of CPython 3.10 or newer.
func atLeast310(version string) bool {
	parts := strings.SplitN(version, ".", 3)
	if len(parts) < 2 {
		return false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(strings.TrimRightFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' }))
	return err1 == nil && err2 == nil && (major > 3 || (major == 3 && minor >= 10))
}

// ForTest returns the interpreters for a test, logging each one and naming every
// expected interpreter it could not use; with none at all the test fails.
func ForTest(t testing.TB) []Interpreter {
	t.Helper()
	found, missing := Find()
	for _, m := range missing {
		t.Logf("MISSING interpreter: %s", m)
	}
	if len(found) == 0 {
		t.Fatal("no CPython 3.10 or newer found (neither pyenv versions nor python3 on PATH); these tests need a real interpreter")
	}
	if tier.Fast() && len(found) > 1 {
		t.Logf("make check (-short) runs on %s alone; make test runs on each interpreter found", found[0].Name)
		found = found[:1]
	}
	for _, py := range found {
		t.Logf("interpreter %s: %s", py.Version, py.Path)
	}
	return found
}
