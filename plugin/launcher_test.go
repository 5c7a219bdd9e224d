package plugin

import (
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/iota-uz/repl-mcp/internal/wheel"
	"github.com/iota-uz/repl-mcp/repl"
)

// defaultBase is where the launcher fetches wheels from unless REPL_MCP_WHEEL_BASE_URL
// says otherwise.
const defaultBase = "https://github.com/iota-uz/repl-mcp/releases/download/v"

// passedArgs are awkward arguments the launcher must pass through untouched.
var passedArgs = []string{"--transport", "stdio", "a b", `it's "quoted"`, "", "$HOME", "*", "-x=\\n;`id`"}

// supportedHosts are the uname answers the launcher maps to a wheel, with the Go
// platform whose wheel that is.
var supportedHosts = []struct{ os, arch, goos, goarch string }{
	{"Linux", "x86_64", "linux", "amd64"},
	{"Linux", "aarch64", "linux", "arm64"},
	{"Linux", "arm64", "linux", "arm64"},
	{"Darwin", "arm64", "darwin", "arm64"},
	{"Darwin", "x86_64", "darwin", "amd64"},
}

// stubDir makes a directory for PATH holding a stub uname that answers unameS and
// unameM (none when both are empty) and, if uvx is set, a stub uvx: this test binary,
// which prints its arguments and cwd as JSON when stubEnv=uvx.
func stubDir(t *testing.T, unameS, unameM string, uvx bool) string {
	t.Helper()
	dir := t.TempDir()
	if unameS != "" || unameM != "" {
		script := "#!/bin/sh\ncase \"$1\" in\n-s) echo '" + unameS + "' ;;\n-m) echo '" + unameM + "' ;;\n" +
			"*) echo \"stub uname: unexpected arguments: $*\" >&2; exit 2 ;;\nesac\n"
		if err := os.WriteFile(filepath.Join(dir, "uname"), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if uvx {
		self, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(self, filepath.Join(dir, "uvx")); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// shells are the POSIX shells the launcher is run with: sh, and dash and bash when
// they are installed and are not what sh already is (the /bin/sh of Debian and macOS).
func shells(t *testing.T) []string {
	t.Helper()
	sh := lookPath(t, "sh")
	list := []string{sh}
	real := func(p string) string {
		r, err := filepath.EvalSymlinks(p)
		if err != nil {
			return p
		}
		return r
	}
	for _, name := range []string{"dash", "bash"} {
		if p, err := lookPathQuiet(name); err == nil && real(p) != real(sh) {
			list = append(list, p)
		}
	}
	t.Logf("shells: %v", list)
	return list
}

// launcherPath is the launcher's absolute path: the tests run it from elsewhere.
func launcherPath(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs(launcherFile)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// workDir is a fresh working directory whose name has a space in it.
func workDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "work dir")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// decodeCall reads the stub uvx's report.
func decodeCall(t *testing.T, stdout string) stubCall {
	t.Helper()
	var c stubCall
	if err := json.Unmarshal([]byte(stdout), &c); err != nil {
		t.Fatalf("stub uvx output %q: %v", stdout, err)
	}
	return c
}

// expectedWheel is the file name wheel.Build gives the launcher's version for a Go
// platform, found by building that wheel from a placeholder binary.
func expectedWheel(t *testing.T, goos, goarch string) string {
	t.Helper()
	platform, err := wheel.PlatformFor(goos, goarch)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "repl-mcp")
	if err := os.WriteFile(bin, []byte("placeholder"), 0o755); err != nil {
		t.Fatal(err)
	}
	version, _ := launcherVersions(t)
	whl, err := wheel.Build(wheel.Config{Binary: bin, Version: version, Platform: platform, OutDir: filepath.Join(dir, "out"), Pyproject: pyprojectFile})
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Base(whl)
}

// TestLauncherHosts: on each supported host the launcher execs uvx with the release
// wheel of that host (named exactly as wheel.Build names it), then repl-mcp and every
// argument verbatim, in the caller's working directory, and prints nothing itself.
func TestLauncherHosts(t *testing.T) {
	version, _ := launcherVersions(t)
	launcher := launcherPath(t)
	for _, sh := range shells(t) {
		for _, h := range supportedHosts {
			t.Run(filepath.Base(sh)+"/"+h.os+"/"+h.arch, func(t *testing.T) {
				want := defaultBase + version + "/" + expectedWheel(t, h.goos, h.goarch)
				dir := workDir(t)
				env := environ("PATH="+stubDir(t, h.os, h.arch, true), stubEnv+"=uvx")
				stdout, stderr, code := run(t, dir, env, "", sh, append([]string{launcher}, passedArgs...)...)
				if code != 0 || stderr != "" {
					t.Fatalf("exit %d, stderr %q", code, stderr)
				}
				c := decodeCall(t, stdout)
				wantArgs := append([]string{"--from", want, "repl-mcp"}, passedArgs...)
				if !slices.Equal(c.Args, wantArgs) {
					t.Errorf("uvx got %q\nwant %q", c.Args, wantArgs)
				}
				if c.Cwd != dir {
					t.Errorf("uvx ran in %q, want the caller's %q", c.Cwd, dir)
				}
			})
		}
	}
}

// TestLauncherThisHost: with the real uname, the launcher picks the wheel wheel.HostPlatform
// names for this machine.
func TestLauncherThisHost(t *testing.T) {
	host, err := wheel.HostPlatform()
	if err != nil {
		t.Fatal(err)
	}
	_, wheelVersion := launcherVersions(t)
	uname := lookPath(t, "uname")
	env := environ("PATH="+stubDir(t, "", "", true)+string(os.PathListSeparator)+filepath.Dir(uname), stubEnv+"=uvx")
	stdout, stderr, code := run(t, t.TempDir(), env, "", lookPath(t, "sh"), launcherPath(t))
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	c := decodeCall(t, stdout)
	want := "repl_mcp-" + wheelVersion + "-py3-none-" + host + ".whl"
	if len(c.Args) != 3 || path.Base(c.Args[1]) != want {
		t.Errorf("uvx got %q, want --from .../%s repl-mcp", c.Args, want)
	}
}

// TestLauncherBaseURL: REPL_MCP_WHEEL_BASE_URL replaces the release URL (a trailing slash
// is dropped); set but empty, it is ignored.
func TestLauncherBaseURL(t *testing.T) {
	version, wheelVersion := launcherVersions(t)
	name := "repl_mcp-" + wheelVersion + "-py3-none-manylinux_2_17_x86_64.musllinux_1_1_x86_64.whl"
	for _, tc := range []struct{ base, want string }{
		{"https://mirror.example/repl-mcp/", "https://mirror.example/repl-mcp/" + name},
		{"file:///srv/wheels", "file:///srv/wheels/" + name},
		{"/srv/wheels dir", "/srv/wheels dir/" + name},
		{"", defaultBase + version + "/" + name},
	} {
		env := environ("PATH="+stubDir(t, "Linux", "x86_64", true), stubEnv+"=uvx", "REPL_MCP_WHEEL_BASE_URL="+tc.base)
		stdout, stderr, code := run(t, t.TempDir(), env, "", lookPath(t, "sh"), launcherPath(t), "--version")
		if code != 0 || stderr != "" {
			t.Fatalf("base %q: exit %d, stderr %q", tc.base, code, stderr)
		}
		want := []string{"--from", tc.want, "repl-mcp", "--version"}
		if got := decodeCall(t, stdout).Args; !slices.Equal(got, want) {
			t.Errorf("base %q: uvx got %q, want %q", tc.base, got, want)
		}
	}
}

// oneLine fails unless s is exactly one newline-terminated line.
func oneLine(t *testing.T, s string) string {
	t.Helper()
	line, rest, ok := strings.Cut(s, "\n")
	if !ok || rest != "" || line == "" {
		t.Errorf("stderr %q is not one line", s)
	}
	return line
}

// TestLauncherUnsupportedHost: an unknown host gets one stderr line, exit 1 and nothing
// on stdout; uvx is never run.
func TestLauncherUnsupportedHost(t *testing.T) {
	for _, sh := range shells(t) {
		for _, h := range [][2]string{{"Windows_NT", "x86_64"}, {"Linux", "riscv64"}, {"Darwin", "i386"}, {"FreeBSD", "amd64"}} {
			env := environ("PATH="+stubDir(t, h[0], h[1], true), stubEnv+"=uvx")
			stdout, stderr, code := run(t, t.TempDir(), env, "", sh, launcherPath(t), "--transport", "stdio")
			line := oneLine(t, stderr)
			if code != 1 || stdout != "" || !strings.HasPrefix(line, "repl-mcp: unsupported host "+h[0]+"/"+h[1]+"; ") || !strings.Contains(line, "Linux x86_64") {
				t.Errorf("%s %s/%s: exit %d, stdout %q, stderr %q; want exit 1, no stdout, one unsupported-host line", sh, h[0], h[1], code, stdout, stderr)
			}
		}
	}
}

// TestLauncherWithoutUvx: without uvx on PATH, one stderr line and exit 1.
func TestLauncherWithoutUvx(t *testing.T) {
	for _, sh := range shells(t) {
		env := environ("PATH=" + stubDir(t, "Linux", "x86_64", false))
		stdout, stderr, code := run(t, t.TempDir(), env, "", sh, launcherPath(t), "--transport", "stdio")
		line := oneLine(t, stderr)
		if code != 1 || stdout != "" || !strings.HasPrefix(line, "repl-mcp: uvx is required;") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 1, no stdout, one uvx-is-required line", sh, code, stdout, stderr)
		}
	}
}

// TestManifestLaunch: the manifest's command, as Claude Code runs it and without
// CLAUDE_PLUGIN_ROOT, reaches uvx with the wheel, repl-mcp and --transport stdio.
func TestManifestLaunch(t *testing.T) {
	version, _ := launcherVersions(t)
	srv := readManifest(t).MCPServers[serverName]
	command := lookPath(t, srv.Command) // before PATH holds only the stubs
	dir := workDir(t)
	env := environ("PATH="+stubDir(t, "Darwin", "arm64", true), stubEnv+"=uvx")
	stdout, stderr, code := run(t, dir, env, "", command, srv.Args...)
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	c := decodeCall(t, stdout)
	want := []string{"--from", defaultBase + version + "/" + expectedWheel(t, "darwin", "arm64"), "repl-mcp", "--transport", "stdio"}
	if !slices.Equal(c.Args, want) || c.Cwd != dir {
		t.Errorf("uvx got %q in %q\nwant %q in %q", c.Args, c.Cwd, want, dir)
	}
}

// TestLauncherEndToEnd runs the launcher with the pinned real uvx against a wheel of
// this checkout for this host, served from a local directory through
// REPL_MCP_WHEEL_BASE_URL, once as a file:// URL and once as a plain path. uv resolves
// the wheel's pinned dependencies from PyPI into a cache private to the test.
func TestLauncherEndToEnd(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	uvBin := filepath.Join(root, "interop", ".venv-uv", "bin")
	uvx := filepath.Join(uvBin, "uvx")
	if info, err := os.Stat(uvx); err != nil || info.Mode()&0o111 == 0 {
		t.Fatalf("the pinned uvx is missing at %s (%v): run `make interop-deps` at the repository root", uvx, err)
	}
	stdout, _, _ := run(t, root, environ("PATH="+os.Getenv("PATH")), "", uvx, "--version")
	t.Logf("%s: %s", uvx, strings.TrimSpace(stdout))

	version, _ := launcherVersions(t)
	work := t.TempDir()
	bin := filepath.Join(work, "repl-mcp")
	start := time.Now()
	_, stderr, code := runFor(t, 5*time.Minute, root, environ("PATH="+os.Getenv("PATH"), "CGO_ENABLED=0"), "",
		lookPath(t, "go"), "build", "-trimpath", "-ldflags", "-X main.version="+version, "-o", bin, ".")
	if code != 0 {
		t.Fatalf("go build: exit %d\n%s", code, stderr)
	}
	t.Logf("built %s in %v", bin, time.Since(start).Round(time.Millisecond))

	host, err := wheel.HostPlatform()
	if err != nil {
		t.Fatal(err)
	}
	wheels := filepath.Join(work, "wheels")
	whl, err := wheel.Build(wheel.Config{Binary: bin, Version: version, Platform: host, OutDir: wheels, Pyproject: filepath.Join(root, "pyproject.toml")})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("wheel %s", whl)

	// Each case has its own uv cache, so each one resolves and installs on its own.
	// "offline" is the air-gapped recipe of the README: the dependency wheels beside
	// repl-mcp's (fetched here with pip from PyPI, without their dependencies, which
	// also proves the pinned closure complete), UV_FIND_LINKS to them and UV_OFFLINE=1.
	for _, tc := range []struct {
		name, base string
		env        []string
	}{
		{"file URL", "file://" + wheels, nil},
		{"plain path", wheels, nil},
		{"offline", wheels, []string{"UV_OFFLINE=1", "UV_FIND_LINKS=" + wheels}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "offline" {
				downloadDependencies(t, root, wheels)
			}
			env := environ(append([]string{
				"PATH=" + uvBin + string(os.PathListSeparator) + os.Getenv("PATH"),
				"REPL_MCP_WHEEL_BASE_URL=" + tc.base,
				"UV_CACHE_DIR=" + t.TempDir(),
				"UV_PYTHON_DOWNLOADS=never",
				"UV_NO_PROGRESS=1",
			}, tc.env...)...)
			start := time.Now()
			stdout, stderr, code := runFor(t, 5*time.Minute, workDir(t), env, "", lookPath(t, "sh"), filepath.Join(root, "plugin", launcherFile), "--version")
			t.Logf("%v; uv said:\n%s", time.Since(start).Round(time.Millisecond), stderr)
			if want := "repl-mcp " + version + "\n"; code != 0 || stdout != want {
				t.Fatalf("exit %d, stdout %q; want exit 0 and %q", code, stdout, want)
			}
			// The same environment runs a real cell, with the Python uvx installed
			// beside repl-mcp (the one that has the pinned dependencies).
			stdout, stderr, code = runFor(t, 2*time.Minute, workDir(t), env, "", lookPath(t, "sh"), filepath.Join(root, "plugin", launcherFile), "doctor")
			if code != 0 || !strings.Contains(stdout, "\npython:   the python "+repl.ChosenBeside+", ") || !strings.HasSuffix(stdout, "\nhealthy\n") {
				t.Errorf("doctor: exit %d, want 0, the interpreter beside repl-mcp, healthy\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
		})
	}
}

// downloadDependencies puts the wheels of pyproject.toml's pinned dependencies into dir,
// with the pip of the pinned uv's venv, from PyPI.
func downloadDependencies(t *testing.T, root, dir string) {
	t.Helper()
	p, err := wheel.LoadProject(filepath.Join(root, "pyproject.toml"))
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"download", "--quiet", "--disable-pip-version-check", "--no-cache-dir", "--no-deps", "--only-binary", ":all:", "--dest", dir}
	for _, dep := range p.Dependencies {
		req, _, _ := strings.Cut(dep, ";") // every pin, whatever its marker
		args = append(args, strings.TrimSpace(req))
	}
	pip := filepath.Join(root, "interop", ".venv-uv", "bin", "pip")
	_, stderr, code := runFor(t, 5*time.Minute, root, environ("PATH="+os.Getenv("PATH")), "", pip, args...)
	if code != 0 {
		t.Fatalf("%s %s: exit %d\n%s", pip, strings.Join(args, " "), code, stderr)
	}
}
