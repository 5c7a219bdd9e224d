package worker_test

import (
	"os/exec"
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
