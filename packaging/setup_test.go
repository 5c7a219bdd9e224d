package packaging

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/iota-uz/repl-mcp/internal/pep440"
	"github.com/iota-uz/repl-mcp/internal/tier"
	"github.com/iota-uz/repl-mcp/internal/wheel"
)

// setupStep is what a reader must run when the pinned uv is missing.
const setupStep = "run `make interop-deps` at the repository root (it creates interop/.venv-uv with the pinned uv)"

// checked names the runtime dependencies whose installed versions the smoke test
// compares with the pins.
var checked = []string{"httpx", "openpyxl"}

// repo is the checkout under test and what its pyproject.toml says.
type repo struct {
	root      string
	pyproject string
	project   *wheel.Project
	version   string            // [project].version as written: what the binary reports
	pep440    string            // its PEP 440 form: what file names and METADATA carry
	pins      map[string]string // normalized dependency name -> pinned version
}

func newRepo(t *testing.T) *repo {
	tier.Full(t, "it builds the binary and installs it into fresh venvs with pip and the pinned uv (minutes; make interop-deps)")
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	r := &repo{root: filepath.Dir(wd), pins: map[string]string{}}
	r.pyproject = filepath.Join(r.root, "pyproject.toml")
	if r.project, err = wheel.LoadProject(r.pyproject); err != nil {
		t.Fatalf("reading the project: %v", err)
	}
	r.version = r.project.Version
	if r.pep440, err = pep440.Normalize(r.version); err != nil {
		t.Fatal(err)
	}
	for _, d := range r.project.Dependencies {
		spec, _, _ := strings.Cut(d, ";")
		name, v, ok := strings.Cut(strings.TrimSpace(spec), "==")
		if !ok {
			t.Fatalf("pyproject.toml: dependency %q is not pinned with ==", d)
		}
		r.pins[normalize(name)] = strings.TrimSpace(v)
	}
	for _, name := range checked {
		if r.pins[name] == "" {
			t.Fatalf("pyproject.toml pins no %s", name)
		}
	}
	return r
}

var separatorRE = regexp.MustCompile(`[-_.]+`)

// normalize is a distribution name in PEP 503 form.
func normalize(name string) string {
	return separatorRE.ReplaceAllString(strings.ToLower(strings.TrimSpace(name)), "-")
}

// goTool is the go command on PATH.
func goTool(t *testing.T) string {
	t.Helper()
	g, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go not found on PATH: %v", err)
	}
	return g
}

// uv is the pinned uv that `make interop-deps` installs.
func (r *repo) uv(t *testing.T) string {
	t.Helper()
	uv := filepath.Join(r.root, "interop", ".venv-uv", "bin", "uv")
	if _, err := os.Stat(uv); err != nil {
		t.Fatalf("uv is missing (%v): %s", err, setupStep)
	}
	t.Logf("%s: %s", strings.TrimSpace(run(t, 30*time.Second, "", nil, uv, "--version")), uv)
	return uv
}

// python3 is python3 on PATH, which must be CPython 3.10 or newer.
func python3(t *testing.T) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 not found on PATH (%v): repl-mcp needs CPython 3.10 or newer", err)
	}
	out := run(t, 30*time.Second, "", nil, py, "-c", "import platform, sys; print(platform.python_version(), sys.version_info >= (3, 10))")
	f := strings.Fields(out)
	if len(f) != 2 || f[1] != "True" {
		t.Fatalf("%s is not CPython 3.10 or newer: %q", py, out)
	}
	t.Logf("python3 %s: %s", f[0], py)
	return py
}

// buildBinary builds repl-mcp for this machine the way a release does: static,
// trimmed, stamped with the pyproject version.
func (r *repo) buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "repl-mcp")
	start := time.Now()
	run(t, 5*time.Minute, r.root, environ(nil, "CGO_ENABLED=0"), goTool(t),
		"build", "-trimpath", "-ldflags", "-s -w -X main.version="+r.version, "-o", bin, ".")
	t.Logf("built repl-mcp %s in %v", r.version, time.Since(start).Round(time.Millisecond))
	return bin
}

// hostWheel builds the host binary and wraps it as internal/wheel does for a release,
// and verifies the wheel.
func (r *repo) hostWheel(t *testing.T) string {
	t.Helper()
	platform, err := wheel.HostPlatform()
	if err != nil {
		t.Fatal(err)
	}
	whl, err := wheel.Build(wheel.Config{Binary: r.buildBinary(t), Version: r.version, Platform: platform, OutDir: t.TempDir(), Pyproject: r.pyproject})
	if err != nil {
		t.Fatalf("wheel.Build: %v", err)
	}
	if err := wheel.Verify(whl); err != nil {
		t.Fatalf("wheel.Verify: %v", err)
	}
	info, err := os.Stat(whl)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("wheel %s (%.1f MiB)", filepath.Base(whl), float64(info.Size())/(1<<20))
	return whl
}
