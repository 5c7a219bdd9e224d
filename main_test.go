package main

import (
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iota-uz/repl-mcp/internal/mcpc"
	"github.com/iota-uz/repl-mcp/internal/mcpfixture"
	"github.com/iota-uz/repl-mcp/internal/pythons"
	"github.com/rogpeppe/go-internal/testscript"
)

var update = flag.Bool("update", false, "update golden files embedded in testscripts/*.txtar")

// TestMain makes the test binary double as the two commands the scripts run:
// repl-mcp itself (which re-executes its own binary as the guardian, so it must
// be called repl-mcp on PATH) and mcpc, the scripts' MCP client (internal/mcpc).
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"repl-mcp": func() { os.Exit(mainExit()) },
		"mcpc":     func() { os.Exit(mcpc.Main()) },
		// A downstream MCP server for broker scripts (internal/mcpfixture).
		"mcp-fixture": func() { os.Exit(mcpfixture.Main()) },
	})
}

// TestScripts runs testscripts/*.txtar once per Python interpreter found here.
// Each script sees $PYTHON and $REPL_MCP_PYTHON (the interpreter) and
// $PYVERSION (its version).
func TestScripts(t *testing.T) {
	fixtureBin := fixtureWrapper(t)
	for _, py := range pythons.ForTest(t) {
		t.Run(py.Name, func(t *testing.T) {
			t.Parallel()
			testscript.Run(t, scriptParams(t, "testscripts", py.Path, py.Version, fixtureBin))
		})
	}
}

// TestServerScripts runs testscripts/server/*.txtar once, on the python3 on PATH
// (else the first interpreter found): the scripts whose subject is the server itself
// (the protocol, the CLI, health, presentation, the broker's registry and limits,
// shutdown), where Python runs only trivial cells. What differs between CPythons is
// the worker's, and testscripts/*.txtar and the worker's own suite run it on each.
func TestServerScripts(t *testing.T) {
	py := defaultInterpreter(t)
	t.Logf("server scripts on %s (%s)", py.Version, py.Path)
	testscript.Run(t, scriptParams(t, filepath.Join("testscripts", "server"), py.Path, py.Version, fixtureWrapper(t)))
}

// defaultInterpreter is the interpreter found whose version is that of python3 on PATH
// (often a pyenv shim, so compared by version, not by path), or the first found.
func defaultInterpreter(t *testing.T) pythons.Interpreter {
	found := pythons.ForTest(t)
	out, err := exec.Command("python3", "-c", "import platform; print(platform.python_version())").Output()
	if err == nil {
		for _, py := range found {
			if py.Version == strings.TrimSpace(string(out)) {
				return py
			}
		}
	}
	return found[0]
}

// TestDataScripts runs testscripts/data/*.txtar once, on the interpreter of
// interop/.venv-data (`make data-deps`): the contract with the libraries of real data
// work (pandas, numpy, matplotlib, tqdm, Dask). Each script also sees $DATA_PYTHON,
// the same interpreter as $PYTHON, to name in --python.
func TestDataScripts(t *testing.T) {
	python := pythons.DataVenv(t)
	out, err := exec.Command(python, "-c", "import platform; print(platform.python_version())").Output()
	if err != nil {
		t.Fatalf("%s: %v", python, err)
	}
	version := strings.TrimSpace(string(out))
	params := scriptParams(t, filepath.Join("testscripts", "data"), python, version, fixtureWrapper(t))
	setup := params.Setup
	params.Setup = func(e *testscript.Env) error {
		e.Setenv("DATA_PYTHON", python)
		return setup(e)
	}
	testscript.Run(t, params)
}

// scriptParams are the testscript parameters of the scripts in dir, run with the
// interpreter python.
func scriptParams(t *testing.T, dir, python, version, fixtureBin string) testscript.Params {
	return testscript.Params{
		Dir:                 dir,
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		UpdateScripts:       *update,
		Setup: func(e *testscript.Env) error {
			e.Setenv("PYTHON", python)
			e.Setenv("REPL_MCP_PYTHON", python)
			e.Setenv("PYVERSION", version)
			e.Setenv("PATH", fixtureBin+string(os.PathListSeparator)+e.Getenv("PATH"))
			if d, ok := t.Deadline(); ok {
				// mcpc gives up with its transcript before testscript kills it.
				e.Setenv("MCPC_DEADLINE", d.Add(-time.Until(d)/10-5*time.Second).Format(time.RFC3339Nano))
			}
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exitcode": cmdExitcode,
		},
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

// TestAfterFirstWrite: the start-up garbage is released once, only after the first
// reply has been written, and the writes pass through unchanged.
func TestAfterFirstWrite(t *testing.T) {
	var out strings.Builder
	ran := make(chan struct{}, 3)
	w := &afterFirstWrite{Writer: &out, then: func() { ran <- struct{}{} }}
	select {
	case <-ran:
		t.Fatal("ran before any write")
	default:
	}
	for _, line := range []string{"a\n", "b\n", "c\n"} {
		if n, err := w.Write([]byte(line)); n != len(line) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", line, n, err)
		}
	}
	<-ran // bounded by the test's deadline
	select {
	case <-ran:
		t.Error("ran more than once")
	default:
	}
	if out.String() != "a\nb\nc\n" {
		t.Errorf("written %q", out.String())
	}
}
