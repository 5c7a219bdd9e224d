package packaging

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/iota-uz/repl-mcp/internal/pythons"
)

// TestInstalledWheel installs the host's wheel with its pinned dependencies into a
// fresh venv on every CPython here (with uv) and once with plain venv and pip, then
// runs the installed repl-mcp as an MCP server from outside the checkout.
func TestInstalledWheel(t *testing.T) {
	r := newRepo(t)
	uv := r.uv(t)
	interpreters := pythons.ForTest(t)
	py3 := python3(t)
	whl := r.hostWheel(t)
	// uv's cache is the interop suite's (gitignored), so a rerun downloads nothing. Each
	// run's repl-mcp wheel is a new cache entry (its path and bytes change), so the
	// entries are removed when the subtests are done, keeping the cache bounded.
	uvEnv := environ(append([]string{"UV_PYTHON"}, interpreterEnv...),
		"UV_CACHE_DIR="+filepath.Join(r.root, "interop", ".cache", "uv"),
		"UV_PYTHON_DOWNLOADS=never", "UV_NO_CONFIG=1")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), 30*time.Second)
		defer cancel()
		if _, stderr, err := runGroup(ctx, "", uvEnv, uv, "cache", "clean", r.project.Name); err != nil {
			t.Errorf("uv cache clean %s: %v\n%s", r.project.Name, err, stderr)
		}
	})

	for _, py := range interpreters {
		t.Run("uv-"+py.Name, func(t *testing.T) {
			t.Parallel()
			venv := filepath.Join(t.TempDir(), "venv")
			start := time.Now()
			run(t, time.Minute, "", uvEnv, uv, "venv", "--quiet", "--python", py.Path, venv)
			run(t, 2*time.Minute, "", uvEnv, uv, "pip", "install", "--quiet", "--python", filepath.Join(venv, "bin", "python"), whl)
			t.Logf("uv installed the wheel on %s %s in %v", py.Name, py.Path, time.Since(start).Round(time.Millisecond))
			smoke(t, r, venv)
		})
	}
	t.Run("pip-python3", func(t *testing.T) {
		t.Parallel()
		venv := filepath.Join(t.TempDir(), "venv")
		env := environ(interpreterEnv)
		start := time.Now()
		run(t, time.Minute, "", env, py3, "-m", "venv", venv)
		run(t, 2*time.Minute, "", env, filepath.Join(venv, "bin", "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", whl)
		t.Logf("pip installed the wheel in %v", time.Since(start).Round(time.Millisecond))
		smoke(t, r, venv)
	})
}
