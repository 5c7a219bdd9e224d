package worker_test

import (
	"flag"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// benchMicro makes TestWorkerBenchMicro run bench_micro.py's full rounds and print its
// table (`make bench-micro`), instead of the one tiny round every test run makes.
var benchMicro = flag.Bool("bench-micro", false, "run bench_micro.py's full rounds and print its table")

// TestWorkerBenchMicro runs bench_micro.py, the worker's fast paths against their plain
// paths, on this machine's default python3, with the limits a server gives every worker:
// by default one operation of every pair (so the script cannot rot unnoticed), with
// -bench-micro its whole measurement, whose table goes to stdout.
func TestWorkerBenchMicro(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("no python3 on PATH to run bench_micro.py: %v", err)
	}
	args := []string{"-B", "bench_micro.py"}
	if !*benchMicro {
		args = append(args, "--quick")
	}
	cmd := exec.CommandContext(t.Context(), python, args...)
	cmd.Env = testEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", python, strings.Join(args, " "), err, out)
	}
	// A header line, the column names, then one row per pair.
	if rows := strings.Count(string(out), "x  "); rows < 8 {
		t.Fatalf("bench_micro.py printed %d pairs, want every one of its 8:\n%s", rows, out)
	}
	if *benchMicro {
		os.Stdout.Write(out)
	}
}
