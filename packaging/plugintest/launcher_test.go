package plugintest

import (
	"encoding/json"
	"net"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/iota-uz/repl-mcp/internal/tier"
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

// launcherTools are the POSIX utilities the launcher runs besides uname and uvx:
// none. Its failure path too runs only shell builtins, so that on a PATH without sed
// or awk it still says why and exits 1, not 127; the stub PATHs hold nothing else.
var launcherTools = []string{}

// stubDir makes a directory for PATH holding a stub uname that answers unameS and
// unameM (none when both are empty), links to the launcherTools and, if uvx is set, a
// stub uvx: this test binary, which acts as stubEnv says.
func stubDir(t *testing.T, unameS, unameM string, uvx bool) string {
	t.Helper()
	dir := t.TempDir()
	for _, tool := range launcherTools {
		if err := os.Symlink(lookPath(t, tool), filepath.Join(dir, tool)); err != nil {
			t.Fatal(err)
		}
	}
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
	p, err := filepath.Abs(pluginPath(launcherFile))
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

// TestManifestLaunch: the .mcp.json command, run as Claude Code runs it (with
// ${CLAUDE_PLUGIN_ROOT} the plugin's directory), reaches uvx with the wheel, repl-mcp
// and --transport stdio.
func TestManifestLaunch(t *testing.T) {
	version, _ := launcherVersions(t)
	root, err := filepath.Abs(pluginDir)
	if err != nil {
		t.Fatal(err)
	}
	name, args := launchArgs(t, root)
	command := lookPath(t, name) // before PATH holds only the stubs
	dir := workDir(t)
	env := environ("PATH="+stubDir(t, "Darwin", "arm64", true), stubEnv+"=uvx")
	stdout, stderr, code := run(t, dir, env, "", command, args...)
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	c := decodeCall(t, stdout)
	want := []string{"--from", defaultBase + version + "/" + expectedWheel(t, "darwin", "arm64"), "repl-mcp", "--transport", "stdio"}
	if !slices.Equal(c.Args, want) || c.Cwd != dir {
		t.Errorf("uvx got %q in %q\nwant %q in %q", c.Args, c.Cwd, want, dir)
	}
}

// handshake is what Claude Code 2.1.332 sends a new stdio server first: a
// server/discover probe (string id), then initialize (number id), with a notification
// between them that needs no answer.
const handshake = `{"jsonrpc":"2.0","id":"server-discover-probe-1","method":"server/discover","params":{"_meta":{}}}
{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"x"}}
{"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}},"jsonrpc":"2.0","id":0}
`

// rpcErrors decodes the launcher's stdout as JSON-RPC error responses and returns their
// ids and messages.
func rpcErrors(t *testing.T, stdout string) (ids []string, messages []string) {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSuffix(stdout, "\n"), "\n") {
		var r struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Error   struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil || r.JSONRPC != "2.0" || r.Error.Code == 0 {
			t.Fatalf("stdout line %q is not a JSON-RPC error response (%v)", line, err)
		}
		ids = append(ids, string(r.ID))
		messages = append(messages, r.Error.Message)
	}
	return ids, messages
}

// TestLauncherTellsTheClient: when the server cannot start and a client is talking on
// stdin, the launcher's one stderr line also answers each request of the handshake as a
// JSON-RPC error (which Claude Code shows in `claude mcp list`), notifications get
// nothing, and it exits 1. With --version it only writes the line.
func TestLauncherTellsTheClient(t *testing.T) {
	for _, sh := range shells(t) {
		for _, tc := range []struct {
			name, uname string
			uvx         bool
			prefix      string
		}{
			{"no uvx", "Linux", false, "repl-mcp: uvx is required;"},
			{"unsupported host", "FreeBSD", true, "repl-mcp: unsupported host FreeBSD/x86_64; "},
		} {
			env := environ("PATH="+stubDir(t, tc.uname, "x86_64", tc.uvx), stubEnv+"=uvx")
			stdout, stderr, code := run(t, t.TempDir(), env, handshake, sh, launcherPath(t), "--transport", "stdio")
			line := oneLine(t, stderr)
			if code != 1 || !strings.HasPrefix(line, tc.prefix) {
				t.Errorf("%s, %s: exit %d, stderr %q; want 1 and %q...", sh, tc.name, code, stderr, tc.prefix)
			}
			ids, messages := rpcErrors(t, stdout)
			if !slices.Equal(ids, []string{`"server-discover-probe-1"`, "0"}) {
				t.Errorf("%s, %s: answered ids %q, want the discover probe's and initialize's", sh, tc.name, ids)
			}
			for _, m := range messages {
				if m != line {
					t.Errorf("%s, %s: error message %q, want the stderr line %q", sh, tc.name, m, line)
				}
			}
			stdout, _, code = run(t, t.TempDir(), env, handshake, sh, launcherPath(t), "--version")
			if code != 1 || stdout != "" {
				t.Errorf("%s, %s, --version: exit %d, stdout %q; want 1 and nothing", sh, tc.name, code, stdout)
			}
		}
	}
}

// TestLauncherUvxFails: when uvx cannot install the wheel, a client is told uv's reason
// in one line (uv's several lines joined), instead of a closed connection.
func TestLauncherUvxFails(t *testing.T) {
	env := environ("PATH="+stubDir(t, "Linux", "x86_64", true), stubEnv+"=uvx-fails", "REPL_MCP_WHEEL_BASE_URL=/nowhere")
	stdout, stderr, code := run(t, t.TempDir(), env, handshake, lookPath(t, "sh"), launcherPath(t), "--transport", "stdio")
	line := oneLine(t, stderr)
	_, wheelVersion := launcherVersions(t)
	want := "repl-mcp: uvx could not run /nowhere/repl_mcp-" + wheelVersion + "-py3-none-manylinux_2_17_x86_64.musllinux_1_1_x86_64.whl: " +
		"Failed to resolve tool requirement: Distribution not found at: file:///nowhere/repl_mcp.whl"
	if code != 1 || line != want {
		t.Errorf("exit %d, stderr %q\nwant exit 1 and %q", code, line, want)
	}
	if _, messages := rpcErrors(t, stdout); len(messages) != 2 || messages[1] != want {
		t.Errorf("client was told %q, want %q twice", messages, want)
	}
}

// offlineAdvice starts the line a client is shown when uvx cannot download the wheel:
// what to set, before anything a cut-off line could lose.
const offlineAdvice = "repl-mcp: uvx cannot download the repl-mcp wheel (offline?): set REPL_MCP_WHEEL_BASE_URL and UV_FIND_LINKS " +
	"to a wheelhouse directory (make wheelhouse DIR=...) and UV_OFFLINE=1, or UV_OFFLINE=1 alone once uv's cache holds this version; uv said for "

// TestLauncherOffline: when uvx cannot download the wheel for want of a network, the
// line the client is shown says which variables to set, then uv's innermost cause;
// uv is told not to retry (unless the user says otherwise), so it fails at once.
func TestLauncherOffline(t *testing.T) {
	for _, tc := range []struct{ setting, want string }{{"", "0"}, {"UV_HTTP_RETRIES=5", "5"}} {
		record := filepath.Join(t.TempDir(), "retries")
		env := environ("PATH="+stubDir(t, "Linux", "x86_64", true), stubEnv+"=uvx-offline", stubRecordEnv+"="+record)
		if tc.setting != "" {
			env = append(env, tc.setting)
		}
		stdout, stderr, code := run(t, t.TempDir(), env, handshake, lookPath(t, "sh"), launcherPath(t), "--transport", "stdio")
		line := oneLine(t, stderr)
		if code != 1 || !strings.HasPrefix(line, offlineAdvice) ||
			!strings.HasSuffix(line, ": failed to lookup address information: Temporary failure in name resolution") {
			t.Errorf("exit %d, stderr %q\nwant exit 1, %q... and uv's last cause", code, line, offlineAdvice)
		}
		if _, messages := rpcErrors(t, stdout); len(messages) != 2 || messages[1] != line {
			t.Errorf("client was told %q, want %q twice", messages, line)
		}
		if got, _ := os.ReadFile(record); string(got) != tc.want {
			t.Errorf("with %q uvx got UV_HTTP_RETRIES %q, want %q", tc.setting, got, tc.want)
		}
	}
}

// TestLauncherOfflineRealUvx: the pinned uvx, pointed at a mirror that refuses the
// connection, gives the same advice with its own cause.
func TestLauncherOfflineRealUvx(t *testing.T) {
	tier.Full(t, "it needs the pinned uvx (make interop-deps)")
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	uvBin := filepath.Join(root, "interop", ".venv-uv", "bin")
	if _, err := os.Stat(filepath.Join(uvBin, "uvx")); err != nil {
		t.Fatalf("the pinned uvx is missing in %s (%v): run `make interop-deps` at the repository root", uvBin, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String() + "/wheels"
	ln.Close() // nothing listens there now: the connection is refused
	env := environ("PATH="+uvBin+string(os.PathListSeparator)+os.Getenv("PATH"), "REPL_MCP_WHEEL_BASE_URL="+base,
		"UV_CACHE_DIR="+t.TempDir(), "UV_PYTHON_DOWNLOADS=never", "UV_NO_PROGRESS=1")
	stdout, stderr, code := runFor(t, 2*time.Minute, t.TempDir(), env, handshake, lookPath(t, "sh"), launcherPath(t), "--transport", "stdio")
	line := oneLine(t, stderr)
	if code != 1 || !strings.HasPrefix(line, offlineAdvice+base+"/") || !strings.Contains(line, "Connection refused") {
		t.Errorf("exit %d, stderr %q\nwant exit 1, %q... and uv's cause", code, line, offlineAdvice+base)
	}
	if _, messages := rpcErrors(t, stdout); len(messages) != 2 || messages[1] != line {
		t.Errorf("client was told %q, want %q twice", messages, line)
	}
}

// TestLauncherSnapshot: a mirror directory without the release's wheel gives the newest
// development build of the plugin's version for this host (make wheel, make wheelhouse);
// with the release's wheel there, the release; a URL mirror, which cannot be listed, the
// release's name.
func TestLauncherSnapshot(t *testing.T) {
	version, wheelVersion := launcherVersions(t)
	platform := "manylinux_2_17_x86_64.musllinux_1_1_x86_64"
	name := func(v, plat string) string { return "repl_mcp-" + v + "-py3-none-" + plat + ".whl" }
	dir := filepath.Join(t.TempDir(), "mirror dir")
	newest := name(wheelVersion+".dev20261201135254+ge0c66b0d7aaf", platform)
	for _, f := range []string{
		name(wheelVersion+".dev0", platform),
		name(wheelVersion+".dev20251231235959+g0123456789ab", platform),
		newest,
		name(wheelVersion+".dev20271231235959+g0123456789ab", "macosx_12_0_arm64"), // another host
		name(wheelVersion+"1.dev20271231235959+g0123456789ab", platform),           // another version
	} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	from := func(base string) string {
		t.Helper()
		env := environ("PATH="+stubDir(t, "Linux", "x86_64", true), stubEnv+"=uvx", "REPL_MCP_WHEEL_BASE_URL="+base)
		stdout, stderr, code := run(t, t.TempDir(), env, "", lookPath(t, "sh"), launcherPath(t), "--version")
		if code != 0 || stderr != "" {
			t.Fatalf("base %q: exit %d, stderr %q", base, code, stderr)
		}
		return decodeCall(t, stdout).Args[1]
	}
	if got := from(dir); got != dir+"/"+newest {
		t.Errorf("directory mirror: uvx got %q, want the newest snapshot %q", got, newest)
	}
	if got := from("file://" + dir + "/"); got != "file://"+dir+"/"+newest {
		t.Errorf("file:// mirror: uvx got %q, want the newest snapshot %q", got, newest)
	}
	if got := from("https://mirror.example/x"); got != "https://mirror.example/x/"+name(wheelVersion, platform) {
		t.Errorf("URL mirror: uvx got %q, want the release's wheel", got)
	}
	release := name(wheelVersion, platform)
	if err := os.WriteFile(filepath.Join(dir, release), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := from(dir); got != dir+"/"+release {
		t.Errorf("directory mirror with release %s: uvx got %q, want the release's wheel", version, got)
	}
}

// TestLauncherEndToEnd runs the launcher with the pinned real uvx against a wheel of
// this checkout for this host, served from a local directory through
// REPL_MCP_WHEEL_BASE_URL, as a file:// URL and as a plain path. It is the README's
// offline recipe: the dependency wheels beside repl-mcp's (from interop/.wheelhouse,
// which make interop-deps fills), UV_FIND_LINKS to them and UV_OFFLINE=1, with a uv
// cache private to each case, so nothing is fetched.
func TestLauncherEndToEnd(t *testing.T) {
	tier.Full(t, "it needs the pinned uvx and the dependency wheels (make interop-deps)")
	root, err := filepath.Abs(repoRoot)
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

	copyDependencies(t, root, wheels)
	offline := []string{"UV_OFFLINE=1", "UV_FIND_LINKS=" + wheels}
	for _, tc := range []struct {
		name, base string
		env        []string
	}{
		{"file URL", "file://" + wheels, offline},
		{"plain path", wheels, offline},
	} {
		t.Run(tc.name, func(t *testing.T) {
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

// copyDependencies copies the wheels of pyproject.toml's pinned dependencies from
// interop/.wheelhouse (make wheelhouse-deps, part of make interop-deps) into dir.
func copyDependencies(t *testing.T, root, dir string) {
	t.Helper()
	src := filepath.Join(root, "interop", ".wheelhouse")
	if _, err := os.Stat(filepath.Join(src, ".stamp")); err != nil {
		t.Fatalf("the dependency wheels are missing in %s (%v): run `make interop-deps` at the repository root", src, err)
	}
	p, err := wheel.LoadProject(filepath.Join(root, "pyproject.toml"))
	if err != nil {
		t.Fatal(err)
	}
	whls, err := filepath.Glob(filepath.Join(src, "*.whl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(whls) != len(p.Dependencies) {
		t.Fatalf("%s holds %d wheels, pyproject.toml pins %d dependencies: run `make interop-deps`", src, len(whls), len(p.Dependencies))
	}
	for _, w := range whls {
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(w)), readFile(t, w), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
