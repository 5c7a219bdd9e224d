package pythons

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/iota-uz/repl-mcp/internal/tier"
)

// DataVenv is the interpreter of interop/.venv-data, the venv `make data-deps` makes
// with the pinned libraries of real data work (pandas, numpy, matplotlib, pillow,
// tqdm, Dask; interop/requirements-data.txt). A test that needs them fails, naming
// the make target, when the venv is missing: it never passes without them.
func DataVenv(t testing.TB) string {
	t.Helper()
	tier.Full(t, "it needs interop/.venv-data, the data libraries from PyPI (make data-deps)")
	root, err := moduleRoot()
	if err != nil {
		t.Fatalf("find the repository root for interop/.venv-data: %v", err)
	}
	python := filepath.Join(root, "interop", ".venv-data", "bin", "python")
	if _, err := os.Stat(filepath.Join(root, "interop", ".venv-data", ".interop-stamp")); err != nil {
		t.Fatalf("the data-work venv is missing or stale (%v): run `make data-deps`", err)
	}
	return python
}

// moduleRoot is the nearest directory above the working directory with a go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}
