package worker_test

import (
	"os/exec"
	"sort"
	"strings"
	"testing"

	"github.com/iota-uz/repl-mcp/internal/pythons"
	"github.com/iota-uz/repl-mcp/worker"
)

// The bench's cold-start floor runs Imports() in a bare Python and compares the worker's
// start with it; it is honest only if those statements load every module a worker has
// loaded by its first cell, besides the worker's own, and nothing more.
func TestImportsLoadWhatTheWorkerLoads(t *testing.T) {
	imports, err := worker.Imports()
	if err != nil {
		t.Fatal(err)
	}
	for _, py := range pythons.ForTest(t) {
		t.Run(py.Name, func(t *testing.T) {
			t.Parallel()
			floor := modules(t, py.Path, "-B", "-c", strings.Join(imports, "\n")+"\nprint('\\n'.join(sorted(sys.modules)))")
			worker := modules(t, py.Path, "-B", "harness.py", "modules")
			var onlyWorker, onlyFloor []string
			for name := range worker {
				if !floor[name] && name != "<repl-mcp worker>" && !strings.HasPrefix(name, "<repl-mcp worker>.") {
					onlyWorker = append(onlyWorker, name)
				}
			}
			for name := range floor {
				if !worker[name] {
					onlyFloor = append(onlyFloor, name)
				}
			}
			sort.Strings(onlyWorker)
			sort.Strings(onlyFloor)
			if len(onlyWorker) > 0 || len(onlyFloor) > 0 {
				t.Errorf("the floor's imports %q\nmiss what the worker loads: %v\nload what it does not: %v", imports, onlyWorker, onlyFloor)
			}
		})
	}
}

func modules(t *testing.T, python string, args ...string) map[string]bool {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), python, args...)
	cmd.Env = testEnv() // the worker harness.py starts needs its limits
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v", python, args[len(args)-1], err)
	}
	names := map[string]bool{}
	for _, name := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		names[name] = true
	}
	return names
}
