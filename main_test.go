package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iota-uz/repl-mcp/internal/mcpfixture"
	"github.com/iota-uz/repl-mcp/internal/pythons"
	"github.com/rogpeppe/go-internal/testscript"
)

var update = flag.Bool("update", false, "update golden files embedded in testscripts/*.txtar")

// TestMain makes the test binary double as the two commands the scripts run:
// repl-mcp itself (which re-executes its own binary as the guardian, so it must
// be called repl-mcp on PATH) and mcpc, the scripts' MCP client (mcpc_test.go).
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"repl-mcp": func() { os.Exit(mainExit()) },
		"mcpc":     func() { os.Exit(mcpcMain()) },
		// A downstream MCP server for broker scripts (internal/mcpfixture).
		"mcp-fixture": func() { os.Exit(mcpfixture.Main()) },
	})
}

// TestScripts runs testscripts/*.txtar once per Python interpreter found here.
// Each script sees $PYTHON and $REPL_MCP_PYTHON (the interpreter) and
// $PYVERSION (its version), and $DATA_PYTHON, the data venv's interpreter (pandas,
// numpy, matplotlib, pillow, ...; make data-deps). A script that needs those libraries
// starts with `[!data] skip`: the condition data holds in exactly one subtest, that of
// the interpreter the data venv was made from, so such a script runs once.
func TestScripts(t *testing.T) {
	fixtureBin := fixtureWrapper(t)
	dataPython := pythons.DataVenv(t)
	dataBase, err := filepath.EvalSymlinks(dataPython)
	if err != nil {
		t.Fatalf("resolve the data venv's interpreter: %v", err)
	}
	interpreters := pythons.ForTest(t)
	dataRuns := 0
	for _, py := range interpreters {
		base, err := filepath.EvalSymlinks(py.Path)
		isData := err == nil && base == dataBase && dataRuns == 0
		if isData {
			dataRuns++
		}
		t.Run(py.Name, func(t *testing.T) {
			t.Parallel()
			testscript.Run(t, testscript.Params{
				Dir:                 "testscripts",
				RequireExplicitExec: true,
				RequireUniqueNames:  true,
				UpdateScripts:       *update,
				Setup: func(e *testscript.Env) error {
					e.Setenv("PYTHON", py.Path)
					e.Setenv("REPL_MCP_PYTHON", py.Path)
					e.Setenv("PYVERSION", py.Version)
					e.Setenv("DATA_PYTHON", dataPython)
					e.Setenv("PATH", fixtureBin+string(os.PathListSeparator)+e.Getenv("PATH"))
					if d, ok := t.Deadline(); ok {
						// mcpc gives up with its transcript before testscript kills it.
						e.Setenv("MCPC_DEADLINE", d.Add(-time.Until(d)/10-5*time.Second).Format(time.RFC3339Nano))
					}
					return nil
				},
				Condition: func(cond string) (bool, error) {
					if cond == "data" {
						return isData, nil
					}
					return false, fmt.Errorf("unknown condition %q", cond)
				},
				Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
					"exitcode": cmdExitcode,
				},
			})
		})
	}
	if dataRuns == 0 {
		t.Errorf("no interpreter here is the one the data venv was made from (%s): its scripts would never run", dataBase)
	}
}

// fixtureWrapper makes a directory holding mcp-fixture-server, a shell script that
// execs the mcp-fixture command. Registries in scripts name the wrapper: the
// command itself is this test binary, the same file as repl-mcp, and the broker
// rightly refuses a registry entry that would launch repl-mcp itself.
func fixtureWrapper(t *testing.T) string {
	dir := t.TempDir()
	script := "#!/bin/sh\nexec mcp-fixture \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "mcp-fixture-server"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// cmdExitcode runs a program and checks its exact exit status:
//
//	exitcode N program [args...]
//
// Its stdout and stderr can be checked afterwards like exec's.
func cmdExitcode(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! exitcode")
	}
	if len(args) < 2 {
		ts.Fatalf("usage: exitcode N program [args...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exitcode: bad status %q", args[0])
	}
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("exitcode: %v", err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited with status %d, want %d", strings.Join(args[1:], " "), got, want)
	}
}
