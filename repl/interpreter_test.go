package repl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The default session takes its project's .venv unless a flag or variable named an
// interpreter, and says so in words; a .venv that exists at all counts, broken or not.
func TestDefaultEnvironment(t *testing.T) {
	withVenv := t.TempDir()
	if err := os.MkdirAll(filepath.Join(withVenv, ".venv", "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	dangling := t.TempDir()
	if err := os.Symlink(filepath.Join(dangling, "nowhere"), filepath.Join(dangling, ".venv")); err != nil {
		t.Fatal(err)
	}
	plain := t.TempDir()
	venvPy := filepath.Join(withVenv, ".venv", "bin", "python")
	for _, c := range []struct {
		name, project, rule      string
		python, source, chosenBy string
	}{
		{"venv", withVenv, ChosenBeside, venvPy, SourceProjectVenv, "the project's .venv at " + venvPy},
		{"venv over PATH", withVenv, ChosenFromPath, venvPy, SourceProjectVenv, "the project's .venv at " + venvPy},
		{"dangling venv", dangling, ChosenFromPath, filepath.Join(dangling, ".venv", "bin", "python"), SourceProjectVenv, "the project's .venv at "},
		{"flag over venv", withVenv, ChosenByFlag, "/opt/py", SourceServerDefault, "--python /opt/py"},
		{"variable over venv", withVenv, ChosenByEnv, "/opt/py", SourceServerDefault, "REPL_MCP_PYTHON=/opt/py"},
		{"no venv: beside", plain, ChosenBeside, "/opt/py", SourceServerDefault, "the python beside the repl-mcp executable, /opt/py"},
		{"no venv: PATH", plain, ChosenFromPath, "python3", SourceServerDefault, "python3 on PATH (no --python, REPL_MCP_PYTHON, project .venv"},
	} {
		t.Run(c.name, func(t *testing.T) {
			python := "/opt/py"
			if c.rule == ChosenFromPath {
				python = "python3"
			}
			env := defaultEnvironment(&Config{Python: python, PythonSource: c.rule, Project: c.project})
			if env.python != c.python || env.source != c.source || !strings.HasPrefix(env.chosenBy, c.chosenBy) {
				t.Fatalf("defaultEnvironment = python %q, source %q, chosen by %q; want %q, %q, %q...", env.python, env.source, env.chosenBy, c.python, c.source, c.chosenBy)
			}
			if (env.source == SourceProjectVenv) != (env.venvFix == msgVenvFixDefault) {
				t.Fatalf("venvFix = %q for source %s", env.venvFix, env.source)
			}
		})
	}
}

// checkVenv says what is wrong with a project .venv, and what to do.
func TestCheckVenv(t *testing.T) {
	realPy := realPython(t)
	newVenv := func(t *testing.T, setup func(venv string)) string {
		t.Helper()
		venv := filepath.Join(t.TempDir(), ".venv")
		setup(venv)
		return venvPython(venv)
	}
	mkdir := func(dir string) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name  string
		setup func(venv string)
		want  string // "" means healthy
	}{
		{"healthy", func(venv string) { mkdir(filepath.Join(venv, "bin")); os.Symlink(realPy, venvPython(venv)) }, ""},
		{"no bin/python", func(venv string) { mkdir(filepath.Join(venv, "bin")) }, "/.venv/bin/python does not exist"},
		{"no bin", func(venv string) { mkdir(venv) }, "/.venv/bin/python does not exist"},
		{"base interpreter gone", func(venv string) {
			mkdir(filepath.Join(venv, "bin"))
			os.Symlink("/nonexistent/python3.9", venvPython(venv))
		}, "is a symbolic link to /nonexistent/python3.9, which does not exist (the Python the venv was made from is gone)"},
		{"dangling .venv", func(venv string) { os.Symlink(filepath.Join(filepath.Dir(venv), "gone"), venv) }, "/.venv is a symbolic link to /"},
		{".venv removed", func(string) {}, "/.venv was removed after the session chose it"},
		{".venv is a file", func(venv string) { os.WriteFile(venv, nil, 0o644) }, "/.venv is not a directory"},
		{"not executable", func(venv string) {
			mkdir(filepath.Join(venv, "bin"))
			os.WriteFile(venvPython(venv), []byte("#!/bin/sh\n"), 0o644)
		}, "is not an executable file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			python := newVenv(t, c.setup)
			err := checkVenv(python, msgVenvFixOpened)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("a healthy venv: %v", err)
			case c.want == "":
				return
			case err == nil:
				t.Fatalf("checkVenv passed a venv with %s", c.name)
			}
			msg := err.Error()
			for _, part := range []string{"The project's .venv is broken: ", c.want, "python3 -m venv --clear " + filepath.Dir(filepath.Dir(python)), msgVenvFixOpened} {
				if !strings.Contains(msg, part) {
					t.Errorf("message %q lacks %q", msg, part)
				}
			}
		})
	}
}

// A default session on a broken .venv starts nothing and says why at each execution;
// repaired, the next execution runs on it.
func TestBrokenDefaultVenv(t *testing.T) {
	project := t.TempDir()
	if err := os.MkdirAll(filepath.Join(project, ".venv", "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	m := NewManager(t.Context(), Config{OpLimits: testOps, Python: realPython(t), PythonSource: ChosenFromPath, Project: project, Env: os.Environ(), Version: "test"})
	t.Cleanup(func() { m.Close(0) })
	s := m.Default()
	for range 2 {
		res := s.Execute(t.Context(), ExecRequest{Code: "1"})
		mustFail(t, res, "The project's .venv is broken: "+filepath.Join(project, ".venv", "bin", "python")+" does not exist", StateCleared)
		mustFail(t, res, msgVenvFixDefault, StateCleared)
	}
	if h := s.Health(); h.Python != nil || h.Generation != 0 || h.Environment.Source != SourceProjectVenv {
		t.Fatalf("health after the failures: %+v", h)
	}
	if err := os.Symlink(realPython(t), filepath.Join(project, ".venv", "bin", "python")); err != nil {
		t.Fatal(err)
	}
	if res := s.Execute(t.Context(), ExecRequest{Code: "6 * 7"}); !res.Success || string(res.Value) != "42" {
		t.Fatalf("after the repair: %+v", res)
	}
}
