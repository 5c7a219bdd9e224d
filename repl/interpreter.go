package repl

import (
	"os"
	"path/filepath"
	"strings"
)

// How the default interpreter was chosen (docs/contract.md §1.5).
const (
	ChosenByFlag   = "--python"
	ChosenByEnv    = "REPL_MCP_PYTHON"
	ChosenBeside   = "beside the repl-mcp executable"
	ChosenFromPath = "python3 on PATH"
)

// DefaultInterpreter picks the server's default interpreter: the flag, then the
// environment variable, then a python or python3 beside the executable (so that an
// installed wheel uses its own venv), then python3 on PATH. A relative path with
// more than one component is taken against project.
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
