package worker_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/iota-uz/repl-mcp/internal/pythons"
)

// TestWorkerUnit runs the worker's own unittest suite on every interpreter the
// project supports that this machine has.
func TestWorkerUnit(t *testing.T) {
	for _, py := range pythons.ForTest(t) {
		t.Run(py.Name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.CommandContext(t.Context(), py.Path, "-B", "-m", "unittest", "discover", "-s", ".", "-p", "test_*.py")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s: worker unit tests failed: %v\n%s", py.Path, err, out)
			}
			t.Logf("%s: %s", py.Path, lastLine(out))
		})
	}
}

// TestWorkerDataLibraries runs the worker's tests that need the libraries of real data
// work (matplotlib, PIL: data_test_*.py, which the suite above does not discover) on the
// data venv's interpreter, the only one that has them.
func TestWorkerDataLibraries(t *testing.T) {
	t.Parallel()
	python := pythons.DataVenv(t)
	cmd := exec.CommandContext(t.Context(), python, "-B", "-m", "unittest", "discover", "-s", ".", "-p", "data_test_*.py")
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
