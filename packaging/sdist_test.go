package packaging

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/iota-uz/repl-mcp/internal/wheel"
)

// goMissing is the one line the backend prints when go is not on PATH
// (packaging/backend/repl_mcp_build.py).
const goMissing = "repl-mcp: building from source needs the Go toolchain (go 1.26+) on PATH; install it or use a release wheel"

// The sdist's [build-system]: the in-tree backend and where it lives.
const (
	backendModule = "repl_mcp_build"
	backendPath   = "packaging/backend"
)

// pipNoIndex are the pip options of every install from the sdist: no index (so pip
// must resolve nothing, hence --no-deps: the runtime dependencies are not installed),
// no build isolation (the backend needs nothing), and no wheel cache, so every run
// really builds.
var pipNoIndex = []string{"--no-index", "--no-build-isolation", "--no-deps", "--no-cache-dir", "--disable-pip-version-check"}

// TestSdist makes the source distribution as `make sdist` does, checks what it holds,
// and builds and installs it with pip into a fresh venv, with and without Go on PATH.
// It is of the checkout's version, as `go run ./pywheel version` names it (a
// development version but on a clean release tag), not of pyproject.toml's release.
func TestSdist(t *testing.T) {
	r := newRepo(t)
	r.version = strings.TrimSpace(run(t, time.Minute, r.root, nil, goTool(t), "run", "./pywheel", "version"))
	r.pep440 = r.version // pywheel prints the PEP 440 form
	py3 := python3(t)
	dist := t.TempDir()
	start := time.Now()
	sdist := strings.TrimSpace(run(t, 2*time.Minute, r.root, nil, goTool(t), "run", "./packaging/sdist", "-out", dist))
	base := "repl_mcp-" + r.pep440
	if want := filepath.Join(dist, base+".tar.gz"); sdist != want {
		t.Fatalf("go run ./packaging/sdist printed %q, want %q", sdist, want)
	}
	files := readSdist(t, sdist, base)
	if info, err := os.Stat(sdist); err == nil {
		t.Logf("made %s (%d files, %d KiB) in %v", filepath.Base(sdist), len(files), info.Size()>>10, time.Since(start).Round(time.Millisecond))
	}
	t.Run("contents", func(t *testing.T) { checkSdistFiles(t, r, files) })
	t.Run("backend-hooks", func(t *testing.T) { checkHooks(t, py3, base, files) })

	venv := filepath.Join(t.TempDir(), "venv")
	env := environ(interpreterEnv)
	run(t, time.Minute, "", env, py3, "-m", "venv", venv)
	python := filepath.Join(venv, "bin", "python")
	pip := func(args ...string) []string { return append([]string{"-m", "pip"}, append(args, pipNoIndex...)...) }

	t.Run("without-go", func(t *testing.T) {
		noGo := environ(interpreterEnv, "PATH="+pathWithout(t, "go"))
		ctx, cancel := boundedContext(t, 2*time.Minute)
		defer cancel()
		stdout, stderr, err := runGroup(ctx, t.TempDir(), noGo, python, pip("install", sdist)...)
		output := stdout + stderr
		if err == nil {
			t.Fatalf("pip install of the sdist succeeded without go on PATH:\n%s", output)
		}
		if n := strings.Count(output, goMissing); n != 1 {
			t.Errorf("the install's output holds the backend's line %d times, want once:\n%s", n, output)
		}
		if strings.Contains(output, "Traceback") {
			t.Errorf("the backend failed with a traceback, want its one line only:\n%s", output)
		}
		if _, err := os.Stat(filepath.Join(venv, "bin", "repl-mcp")); err == nil {
			t.Errorf("the failed install left %s/bin/repl-mcp", venv)
		}
		t.Logf("pip install failed as it should (%v), with: %s", err, goMissing)
	})

	t.Run("wheel", func(t *testing.T) {
		out := t.TempDir()
		start := time.Now()
		run(t, 3*time.Minute, t.TempDir(), env, python, pip("wheel", "--quiet", "--wheel-dir", out, sdist)...)
		built, err := filepath.Glob(filepath.Join(out, "*.whl"))
		if err != nil || len(built) != 1 {
			t.Fatalf("pip wheel wrote %v, want one wheel", built)
		}
		t.Logf("the backend built %s in %v", filepath.Base(built[0]), time.Since(start).Round(time.Millisecond))
		if err := wheel.Verify(built[0]); err != nil {
			t.Fatalf("wheel.Verify of the wheel built from the sdist: %v", err)
		}
		compareWithInternalWheel(t, r, built[0], files["PKG-INFO"])
	})

	t.Run("install", func(t *testing.T) {
		start := time.Now()
		run(t, 3*time.Minute, t.TempDir(), env, python, pip("install", "--quiet", sdist)...)
		t.Logf("pip built and installed the sdist in %v", time.Since(start).Round(time.Millisecond))
		got := strings.TrimSpace(run(t, 10*time.Second, t.TempDir(), env, filepath.Join(venv, "bin", "repl-mcp"), "--version"))
		if want := "repl-mcp " + r.version; got != want {
			t.Errorf("the installed repl-mcp --version printed %q, want %q", got, want)
		}
	})
}

// readSdist returns the sdist's files by their names under base/, checking that every
// entry is a regular file there.
func readSdist(t *testing.T, sdist, base string) map[string][]byte {
	t.Helper()
	f, err := os.Open(sdist)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	files := map[string][]byte{}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatalf("reading %s: %v", sdist, err)
		}
		name, ok := strings.CutPrefix(hdr.Name, base+"/")
		if !ok || hdr.Typeflag != tar.TypeReg || name == "" || path.Clean(name) != name || strings.HasPrefix(name, "../") {
			t.Errorf("entry %q (type %c) is not a regular file under %s/", hdr.Name, hdr.Typeflag, base)
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if _, dup := files[name]; dup {
			t.Errorf("%s is in the sdist twice", name)
		}
		files[name] = data
	}
}

// checkSdistFiles checks that the sdist holds what go build and pip need and nothing
// of the tests, testscripts, interop suite or node_modules.
func checkSdistFiles(t *testing.T, r *repo, files map[string][]byte) {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	t.Logf("sdist files: %s", strings.Join(names, " "))

	need := []string{"PKG-INFO", "pyproject.toml", "go.mod", "go.sum", "main.go", "README.md", backendPath + "/" + backendModule + ".py"}
	// Every Go file and embedded file of the command's packages on this machine.
	list := run(t, time.Minute, r.root, environ(nil, "CGO_ENABLED=0"), goTool(t), "list", "-deps",
		"-f", `{{if .Module}}{{if .Module.Main}}{{range .GoFiles}}{{$.Dir}}/{{.}}{{"\n"}}{{end}}{{range .EmbedFiles}}{{$.Dir}}/{{.}}{{"\n"}}{{end}}{{end}}{{end}}`, ".")
	for _, abs := range strings.Fields(list) {
		rel, err := filepath.Rel(r.root, abs)
		if err != nil {
			t.Fatal(err)
		}
		need = append(need, filepath.ToSlash(rel))
	}
	for _, embedded := range []string{"worker/bootstrap.py", "worker/replworker/main.py"} {
		if !slices.Contains(need, embedded) {
			t.Errorf("go list names no %s among the embedded files: %s", embedded, list)
		}
	}
	for _, n := range need {
		if _, ok := files[n]; !ok {
			t.Errorf("the sdist lacks %s", n)
		}
	}
	for _, n := range names {
		switch {
		case strings.HasSuffix(n, "_test.go"), strings.HasPrefix(n, "testscripts/"), strings.HasPrefix(n, "interop/"),
			strings.Contains(n, "node_modules/"), strings.HasPrefix(n, "bench/"), strings.HasPrefix(n, ".git"),
			strings.Contains(n, "testdata/"), strings.Contains(n, "__pycache__/"), strings.HasPrefix(n, "dist/"):
			t.Errorf("the sdist holds %s, which building does not need", n)
		}
	}
	if !bytes.Equal(files["README.md"], mustRead(t, filepath.Join(r.root, "README.md"))) {
		t.Errorf("the sdist's README.md differs from the checkout's")
	}

	py := string(files["pyproject.toml"])
	if n := len(regexp.MustCompile(`(?m)^\[build-system\]`).FindAllString(py, -1)); n != 1 {
		t.Errorf("the sdist's pyproject.toml has %d [build-system] tables, want 1:\n%s", n, py)
	}
	for _, line := range []string{`requires = []`, `build-backend = "` + backendModule + `"`, `backend-path = ["` + backendPath + `"]`} {
		if !regexp.MustCompile(`(?ms)^\[build-system\]\n(?:[^\[].*\n)*?` + regexp.QuoteMeta(line) + `$`).MatchString(py) {
			t.Errorf("the sdist's [build-system] lacks %s:\n%s", line, py)
		}
	}
	// The [project] table is the checkout's.
	dir := t.TempDir()
	for _, n := range []string{"pyproject.toml", "README.md"} {
		if err := os.WriteFile(filepath.Join(dir, n), files[n], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if p, err := wheel.LoadProject(filepath.Join(dir, "pyproject.toml")); err != nil {
		t.Errorf("the sdist's pyproject.toml: %v", err)
	} else if p.Version != r.version || p.Name != r.project.Name || !slices.Equal(p.Dependencies, r.project.Dependencies) {
		// The version is the checkout's (TestSdist), the rest pyproject.toml's.
		t.Errorf("the sdist's [project] is %s %s %v, want the checkout's %s %s %v", p.Name, p.Version, p.Dependencies, r.project.Name, r.version, r.project.Dependencies)
	}
}

// checkHooks calls the backend's other hooks in an unpacked copy of the sdist:
// get_requires_for_build_wheel asks for nothing, prepare_metadata_for_build_wheel
// writes PKG-INFO as METADATA without needing Go, and build_sdist repacks the same files.
func checkHooks(t *testing.T, py3, base string, files map[string][]byte) {
	src := filepath.Join(t.TempDir(), base)
	for name, data := range files {
		p := filepath.Join(src, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, meta := t.TempDir(), t.TempDir()
	script := `import sys
sys.path.insert(0, "` + backendPath + `")
import ` + backendModule + ` as b
print(b.get_requires_for_build_wheel(), b.get_requires_for_build_sdist())
print(b.prepare_metadata_for_build_wheel(sys.argv[2]))
print(b.build_sdist(sys.argv[1]))
`
	noGo := environ(interpreterEnv, "PATH="+pathWithout(t, "go"))
	lines := strings.Split(strings.TrimSpace(run(t, time.Minute, src, noGo, py3, "-c", script, out, meta)), "\n")
	if len(lines) != 3 || lines[0] != "[] []" {
		t.Fatalf("the hooks printed %q, want the requirements [] [], a dist-info name and an sdist name", lines)
	}
	distInfo := base + ".dist-info"
	if lines[1] != distInfo {
		t.Errorf("prepare_metadata_for_build_wheel returned %q, want %q", lines[1], distInfo)
	}
	if got := mustRead(t, filepath.Join(meta, distInfo, "METADATA")); !bytes.Equal(got, files["PKG-INFO"]) {
		t.Errorf("prepare_metadata_for_build_wheel wrote a METADATA that is not PKG-INFO")
	}
	if lines[2] != base+".tar.gz" {
		t.Fatalf("build_sdist returned %q, want %q", lines[2], base+".tar.gz")
	}
	again := readSdist(t, filepath.Join(out, lines[2]), base)
	if len(again) != len(files) {
		t.Errorf("build_sdist repacked %d files, want the sdist's %d", len(again), len(files))
	}
	for name, data := range files {
		if !bytes.Equal(again[name], data) {
			t.Errorf("build_sdist changed or dropped %s", name)
		}
	}
}

// zipEntry is one wheel entry.
type zipEntry struct {
	name   string
	mode   os.FileMode
	method uint16
	data   []byte
}

func readWheel(t *testing.T, whl string) []zipEntry {
	t.Helper()
	zr, err := zip.OpenReader(whl)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	var out []zipEntry
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, zipEntry{f.Name, f.Mode(), f.Method, data})
	}
	return out
}

// compareWithInternalWheel checks that the backend wrote the wheel internal/wheel
// writes for the same binary: the same entries in the same order, modes and
// compression, the same bytes (WHEEL's Generator line, and so RECORD's WHEEL row,
// aside), and the sdist's PKG-INFO as METADATA.
func compareWithInternalWheel(t *testing.T, r *repo, built string, pkgInfo []byte) {
	t.Helper()
	got := readWheel(t, built)
	var binary []byte
	for _, e := range got {
		if strings.HasSuffix(e.name, ".data/scripts/"+wheel.ScriptName) {
			binary = e.data
		}
	}
	if binary == nil {
		t.Fatalf("%s has no %s script", filepath.Base(built), wheel.ScriptName)
	}
	bin := filepath.Join(t.TempDir(), wheel.ScriptName)
	if err := os.WriteFile(bin, binary, 0o755); err != nil {
		t.Fatal(err)
	}
	platform, err := wheel.HostPlatform()
	if err != nil {
		t.Fatal(err)
	}
	ref, err := wheel.Build(wheel.Config{Binary: bin, Version: r.version, Platform: platform, OutDir: t.TempDir(), Pyproject: r.pyproject})
	if err != nil {
		t.Fatalf("wheel.Build: %v", err)
	}
	if filepath.Base(built) != filepath.Base(ref) {
		t.Errorf("the backend named its wheel %s, internal/wheel %s", filepath.Base(built), filepath.Base(ref))
	}
	want := readWheel(t, ref)
	if len(got) != len(want) {
		t.Fatalf("the backend's wheel has %d entries, internal/wheel's %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.name != w.name || g.mode != w.mode || g.method != w.method {
			t.Errorf("entry %d: the backend wrote %s (%v, method %d), internal/wheel %s (%v, method %d)", i, g.name, g.mode, g.method, w.name, w.mode, w.method)
			continue
		}
		gd, wd := g.data, w.data
		switch path.Base(w.name) {
		case "WHEEL":
			gd, wd = dropLines(gd, "Generator: "), dropLines(wd, "Generator: ")
		case "RECORD":
			gd, wd = dropLines(gd, path.Dir(w.name)+"/WHEEL,"), dropLines(wd, path.Dir(w.name)+"/WHEEL,")
		case "METADATA":
			if !bytes.Equal(g.data, pkgInfo) {
				t.Errorf("the backend's METADATA is not the sdist's PKG-INFO")
			}
		}
		if !bytes.Equal(gd, wd) {
			t.Errorf("%s differs:\nbackend:\n%.2000s\ninternal/wheel:\n%.2000s", w.name, gd, wd)
		}
	}
}

// dropLines returns data without the lines that start with prefix.
func dropLines(data []byte, prefix string) []byte {
	var out []byte
	for _, line := range bytes.SplitAfter(data, []byte("\n")) {
		if !bytes.HasPrefix(line, []byte(prefix)) {
			out = append(out, line...)
		}
	}
	return out
}

// pathWithout is $PATH less every directory that holds an executable named tool.
func pathWithout(t *testing.T, tool string) string {
	t.Helper()
	var keep, dropped []string
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if info, err := os.Stat(filepath.Join(dir, tool)); err == nil && !info.IsDir() && info.Mode()&0o111 != 0 {
			if !slices.Contains(dropped, dir) {
				dropped = append(dropped, dir)
			}
			continue
		}
		keep = append(keep, dir)
	}
	if len(dropped) == 0 {
		t.Fatalf("no %s on PATH to take away", tool)
	}
	t.Logf("PATH without %s: dropped %s", tool, strings.Join(dropped, ", "))
	return strings.Join(keep, string(filepath.ListSeparator))
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
