package worker

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/iota-uz/repl-mcp/internal/pythons"
)

// The Python tests start every worker with the bundle harness.py builds from the package
// directory; it must be the one the server sends, byte for byte, or they would test
// something that does not ship.
func TestBundleMatchesHarness(t *testing.T) {
	py := pythons.ForTest(t)[0]
	out, err := exec.CommandContext(t.Context(), py.Path, "-B", "harness.py", "bundle").Output()
	if err != nil {
		t.Fatalf("python harness.py bundle: %v", err)
	}
	if want := Bundle(); string(out) != want {
		i := 0
		for i < len(out) && i < len(want) && out[i] == want[i] {
			i++
		}
		t.Fatalf("harness.py builds a bundle of %d bytes that differs from the embedded one (%d bytes) at byte %d:\nharness  %q\nembedded %q",
			len(out), len(want), i, excerpt(string(out), i), excerpt(want, i))
	}
}

func excerpt(s string, at int) string {
	return s[max(at-40, 0):min(at+40, len(s))]
}

// The bundle is laid out as PROTOCOL.md says: the header, the index, then every module of
// replworker/ in file-name order, exactly as the files are.
func TestBundleLayout(t *testing.T) {
	header, payload, ok := strings.Cut(Bundle(), "\n")
	if !ok {
		t.Fatal("no header line")
	}
	size, digest, _ := strings.Cut(header, " ")
	if n, err := strconv.Atoi(size); err != nil || n != len(payload) {
		t.Fatalf("header %q: the payload has %d bytes", header, len(payload))
	}
	sum := sha256.Sum256([]byte(payload))
	if digest != hex.EncodeToString(sum[:12]) || digest != Digest() {
		t.Fatalf("header digest %q, Digest() %q, payload's %x", digest, Digest(), sum[:12])
	}
	index, sources, _ := strings.Cut(payload, "\n")
	fields := strings.Fields(index)
	var names []string
	for i := 0; i+1 < len(fields); i += 2 {
		n, err := strconv.Atoi(fields[i+1])
		if err != nil || n > len(sources) {
			t.Fatalf("index entry %q %q", fields[i], fields[i+1])
		}
		want, err := os.ReadFile(filepath.Join(packageDir, fields[i]+".py"))
		if err != nil || sources[:n] != string(want) {
			t.Fatalf("module %s in the bundle is not replworker/%s.py (%v)", fields[i], fields[i], err)
		}
		names, sources = append(names, fields[i]), sources[n:]
	}
	if len(fields)%2 != 0 || sources != "" {
		t.Fatalf("index %q leaves %d bytes of sources undescribed", index, len(sources))
	}
	files, _ := filepath.Glob(filepath.Join(packageDir, "*.py"))
	if len(files) != len(names) || !sort.StringsAreSorted(names) {
		t.Fatalf("bundle modules %v, package files %v", names, files)
	}
}

func TestBuildBundleRefusesBadModuleNames(t *testing.T) {
	for _, fsys := range []fstest.MapFS{
		{"replworker/Main.py": {Data: []byte("")}},
		{"replworker/two words.py": {Data: []byte("")}},
		{"replworker/notes.txt": {Data: []byte("")}},
	} {
		if b, err := buildBundle(fsys); err == nil {
			t.Errorf("%v: built %q", fsys, b.data)
		}
	}
	b, err := buildBundle(fstest.MapFS{"replworker/a.py": {Data: []byte("x = 1\n")}, "replworker/notes.txt": {}})
	if err != nil || b.data != "10 "+b.digest+"\na 6\nx = 1\n" {
		t.Fatalf("built %q, %v", b.data, err)
	}
}

// The bootstrap must compile on any Python so that an old one gets the one-line refusal
// (exit 3) rather than a SyntaxError. The interpreters older than 3.10 that pyenv has
// run it; without any, a supported one checks its syntax against Python 3.4's grammar
// and runs it as if it were 3.9, and the test says so.
func TestBootstrapRefusesOldPython(t *testing.T) {
	old := oldInterpreters(t)
	if len(old) == 0 {
		py := pythons.ForTest(t)[0].Path
		t.Logf("MISSING: no interpreter older than 3.10 here; checking the bootstrap with %s instead", py)
		check := `import ast, sys; ast.parse(sys.argv[1], feature_version=(3, 4))`
		if out, err := exec.CommandContext(t.Context(), py, "-c", check, Bootstrap).CombinedOutput(); err != nil {
			t.Fatalf("the bootstrap uses syntax newer than Python 3.4: %v\n%s", err, out)
		}
		fake := `import sys; sys.version_info = (3, 9, 0); sys.version = "3.9.0 (fake)"; exec(sys.argv[1])`
		old = map[string][]string{"3.9 (faked)": {py, "-c", fake, Bootstrap}}
	}
	for name, argv := range old {
		cmd := exec.CommandContext(t.Context(), argv[0], argv[1:]...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		exit, _ := err.(*exec.ExitError)
		if exit == nil || exit.ExitCode() != 3 || !strings.HasPrefix(stderr.String(), "repl-mcp needs Python 3.10 or newer; this is Python ") {
			t.Errorf("Python %s: %v, stderr %q; want exit status 3 and the refusal", name, err, stderr.String())
		}
	}
}

// oldInterpreters are pyenv's interpreters older than 3.10, by version, each as the argv
// that runs the bootstrap.
func oldInterpreters(t *testing.T) map[string][]string {
	root, err := exec.Command("pyenv", "root").Output()
	if err != nil {
		return nil
	}
	paths, _ := filepath.Glob(filepath.Join(strings.TrimSpace(string(root)), "versions", "*", "bin", "python"))
	old := map[string][]string{}
	for _, path := range paths {
		version := filepath.Base(filepath.Dir(filepath.Dir(path)))
		major, minor, ok := majorMinor(version)
		if ok && (major < 3 || major == 3 && minor < 10) {
			old[version] = []string{path, "-u", "-c", Bootstrap}
			t.Logf("old interpreter %s: %s", version, path)
		}
	}
	return old
}

func majorMinor(version string) (int, int, bool) {
	parts := strings.SplitN(version, ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	return major, minor, err1 == nil && err2 == nil
}
