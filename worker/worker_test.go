package worker_test

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/iota-uz/repl-mcp/cellops"
	"github.com/iota-uz/repl-mcp/internal/pythons"
	"github.com/iota-uz/repl-mcp/repl"
)

// librarySkip starts the reason of every skip harness.library_test makes; any other
// skip fails the run.
const librarySkip = "skipped 'library test:"

// TestWorkerUnit runs the worker's own unittest suite on every interpreter the
// project supports that this machine has. The library tests (Library* classes:
// previews of pandas, numpy, matplotlib, polars and xarray values) skip there, since they belong to
// the pinned libraries of the data venv, where TestWorkerLibraries runs them; no
// other test may skip.
func TestWorkerUnit(t *testing.T) {
	for _, py := range pythons.ForTest(t) {
		t.Run(py.Name, func(t *testing.T) {
			t.Parallel()
			out := runUnittest(t, py.Path, nil)
			skipped, library := countSkips(out)
			if skipped != library {
				t.Fatalf("%s: %d tests skipped, only %d of them library tests (a skip must say why and be accounted for):\n%s", py.Path, skipped, library, out)
			}
			if library > 0 {
				t.Logf("%s: %d library tests skipped (no data libraries here); TestWorkerLibraries runs them", py.Path, library)
			}
		})
	}
}

// TestWorkerLibraries runs the library tests on interop/.venv-data, the venv of
// the pinned data libraries: it fails when the venv is missing, when a library
// cannot be imported, when no library test ran and when any was skipped.
func TestWorkerLibraries(t *testing.T) {
	python := pythons.DataVenv(t)
	out := runUnittest(t, python, []string{"REPL_MCP_DATA_LIBS=required"}, "-k", "Library")
	ran := regexp.MustCompile(`(?m)^Ran (\d+) tests?`).FindSubmatch(out)
	if ran == nil {
		t.Fatalf("%s: no test count in the output:\n%s", python, out)
	}
	if n, _ := strconv.Atoi(string(ran[1])); n == 0 {
		t.Fatalf("%s: no library test ran:\n%s", python, out)
	}
	if skipped, _ := countSkips(out); skipped > 0 {
		t.Fatalf("%s: %d library tests skipped on the data venv:\n%s", python, skipped, out)
	}
}

// runUnittest runs the suite (or the tests args select) verbosely, so that every
// skip is listed with its reason, and fails the test when it fails.
func runUnittest(t *testing.T, python string, env []string, args ...string) []byte {
	t.Helper()
	argv := append([]string{"-B", "-m", "unittest", "discover", "-v", "-s", ".", "-p", "test_*.py"}, args...)
	cmd := exec.CommandContext(t.Context(), python, argv...)
	cmd.Env = append(testEnv(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: worker unit tests failed: %v\n%s", python, err, out)
	}
	// A suite that stops early with status 0 (a test thread calling os._exit) must not
	// pass: unittest's own summary has to be there.
	if !completeRun.Match(out) {
		t.Fatalf("%s: the worker unit tests stopped before unittest's summary (no \"Ran N tests\" then \"OK\"):\n%s", python, tail(out, 4000))
	}
	t.Logf("%s: %s", python, lastLine(out))
	return out
}

// testEnv is the environment of the worker's Python tests: this one, with the limits the
// server gives every worker (repl.WorkerLimitsEnv, with cellops.Limits), which the modules read as they load
// and harness.WorkerProcess hands on to the workers it starts.
func testEnv() []string { return append(os.Environ(), repl.WorkerLimitsEnv(cellops.Limits())) }

// completeRun is the end of a unittest run that got to its summary and passed.
var completeRun = regexp.MustCompile(`(?m)^Ran [1-9]\d* tests? in [\d.]+s\n\n(OK|OK \(.*\))\s*$`)

// tail is the last n bytes of out, for a failure message.
func tail(out []byte, n int) []byte {
	if len(out) > n {
		return out[len(out)-n:]
	}
	return out
}

// countSkips counts the skipped tests of a verbose unittest run, and those of them
// that are library tests.
func countSkips(out []byte) (skipped, library int) {
	text := string(out)
	return strings.Count(text, "... skipped '"), strings.Count(text, "... "+librarySkip)
}

// TestWorkerDataLibraries runs the worker's tests that need the libraries of real data
// work (matplotlib, PIL: data_test_*.py, which the suite above does not discover) on the
// data venv's interpreter, the only one that has them.
func TestWorkerDataLibraries(t *testing.T) {
	t.Parallel()
	python := pythons.DataVenv(t)
	cmd := exec.CommandContext(t.Context(), python, "-B", "-m", "unittest", "discover", "-s", ".", "-p", "data_test_*.py")
	cmd.Env = testEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: worker data-library tests failed: %v\n%s", python, err, out)
	}
	if !strings.Contains(string(out), "Ran ") || strings.Contains(string(out), "Ran 0 tests") {
		t.Fatalf("%s: no data-library test ran:\n%s", python, out)
	}
	t.Logf("%s: %s", python, lastLine(out))
}

func lastLine(out []byte) string {
	end := len(out)
	for end > 0 && (out[end-1] == '\n' || out[end-1] == ' ') {
		end--
	}
	start := end
	for start > 0 && out[start-1] != '\n' {
		start--
	}
	return string(out[start:end])
}
