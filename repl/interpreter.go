package repl

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// The rules that choose a default interpreter (docs/contract.md §1.5), by the names
// health's chosen_by and doctor put first in their words.
const (
	ChosenByFlag   = "--python"
	ChosenByEnv    = "REPL_MCP_PYTHON"
	ChosenByVenv   = "the project's .venv"
	ChosenBeside   = "beside the repl-mcp executable"
	ChosenFromPath = "python3 on PATH"
)

// DefaultInterpreter picks the server's default interpreter, the one opened sessions
// without a .venv of their own use: the flag, then the environment variable, then a
// python or python3 beside the executable (so that an installed wheel uses its own
// venv), then python3 on PATH. A relative path with more than one component is taken
// against project. The default session puts its project's .venv before the last two
// (defaultEnvironment).
func DefaultInterpreter(flagValue, envValue, executable, project string) (path, chosenBy string) {
	switch {
	case flagValue != "":
		return relativeTo(flagValue, project), ChosenByFlag
	case envValue != "":
		return relativeTo(envValue, project), ChosenByEnv
	}
	if executable != "" {
		dir := filepath.Dir(executable)
		for _, name := range []string{"python", "python3"} {
			candidate := filepath.Join(dir, name)
			if info, err := os.Stat(candidate); err == nil && !info.IsDir() && info.Mode()&0o111 != 0 {
				return candidate, ChosenBeside
			}
		}
	}
	return "python3", ChosenFromPath
}

func relativeTo(p, project string) string {
	if filepath.IsAbs(p) || !strings.ContainsRune(p, filepath.Separator) {
		return p
	}
	return filepath.Join(project, p)
}

// defaultEnvironment is the default session's interpreter. What the user named
// (--python, REPL_MCP_PYTHON) wins; otherwise the launch project's .venv is used
// when it exists at all, by the rule of opened sessions, so that a project's own
// packages import; otherwise the server default. The .venv is not validated here:
// the server must start and answer health even when it is broken, and the first
// execution says what is wrong (checkVenv). Like an opened session, the default one
// never falls back from a broken .venv to another interpreter.
func defaultEnvironment(cfg *Config) sessionEnv {
	env := sessionEnv{python: cfg.Python, source: SourceServerDefault, project: cfg.Project}
	rule := cfg.PythonSource
	if rule != ChosenByFlag && rule != ChosenByEnv {
		venv := filepath.Join(cfg.Project, ".venv")
		// lstat: a dangling symbolic link is a .venv too, a broken one.
		if _, err := os.Lstat(venv); !errors.Is(err, fs.ErrNotExist) {
			env.python, env.source, rule = venvPython(venv), SourceProjectVenv, ChosenByVenv
			env.venvFix = msgVenvFixDefault
		}
	}
	env.chosenBy = choiceWords(rule, env.python)
	return env
}

// venvPython is the interpreter of the venv at dir.
func venvPython(dir string) string { return filepath.Join(dir, "bin", "python") }

// checkVenv says what is wrong with the project .venv whose interpreter is python, in
// words that tell the user what to do (fix names how to choose another interpreter for
// this session), or returns nil when python exists and is executable.
func checkVenv(python, fix string) error {
	problem := venvProblem(python)
	if problem == "" {
		return nil
	}
	return fmt.Errorf(msgBrokenVenv, problem, filepath.Dir(filepath.Dir(python)), fix)
}

// venvProblem is what is wrong with the venv of python, or "".
func venvProblem(python string) string {
	venv := filepath.Dir(filepath.Dir(python))
	if _, err := os.Lstat(venv); errors.Is(err, fs.ErrNotExist) {
		return venv + " was removed after the session chose it (a new session, or a restart of repl-mcp, chooses again)"
	} else if err != nil {
		return fmt.Sprintf("%s: %v", msgVenvUninspectable, err)
	}
	switch info, err := os.Stat(venv); {
	case errors.Is(err, fs.ErrNotExist):
		target, _ := os.Readlink(venv)
		return fmt.Sprintf("%s is a symbolic link to %s, which does not exist", venv, target)
	case err != nil:
		return fmt.Sprintf("%s: %v", msgVenvUninspectable, err)
	case !info.IsDir():
		return venv + " is not a directory"
	}
	switch info, err := os.Stat(python); {
	case errors.Is(err, fs.ErrNotExist):
		if target, lerr := os.Readlink(python); lerr == nil {
			return fmt.Sprintf("%s is a symbolic link to %s, which does not exist (the Python the venv was made from is gone)", python, target)
		}
		return python + " does not exist"
	case err != nil:
		return fmt.Sprintf("%s: %v", msgVenvUninspectable, err)
	case !info.Mode().IsRegular() || info.Mode()&0o111 == 0:
		return python + " is not an executable file"
	}
	return ""
}
