package worker

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strings"
	"sync"
)

// Bootstrap is bootstrap.py, the program a worker starts as: python -u -c Bootstrap.
// It is small and holds no worker code: that arrives as the [Bundle].
//
//go:embed bootstrap.py
var Bootstrap string

// packageFS holds the worker's modules, replworker/*.py.
//
//go:embed replworker/*.py
var packageFS embed.FS

const packageDir = "replworker"

// moduleName is what a module's name may be: it becomes a file name and a bundle field.
// Compiled on first use, not at package init: every process of the binary (the
// guardian too) would pay for it at start.
var moduleName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z_][a-z0-9_]*$`) })

// Bundle is what the server writes to a new worker's command pipe before any frame, for
// the bootstrap to read: the header line "SIZE DIGEST\n", then SIZE bytes of payload.
// The payload is an index line, "NAME LENGTH" pairs separated by spaces (NAME is a
// module of replworker without ".py", in file-name order), then the sources, UTF-8,
// concatenated in the index's order. DIGEST names the payload in the code cache
// (see [Digest]). It is built once, on first use.
func Bundle() string { return bundled().data }

// Digest is 24 hex digits of the SHA-256 of the bundle's payload.
func Digest() string { return bundled().digest }

type bundle struct {
	data   string
	digest string
}

var bundled = sync.OnceValue(func() bundle {
	b, err := buildBundle(packageFS)
	if err != nil {
		// The embedded files are part of the binary: only a broken build gets here, and
		// TestBundle fails first.
		panic("worker: " + err.Error())
	}
	return b
})

func buildBundle(fsys fs.FS) (bundle, error) {
	entries, err := fs.ReadDir(fsys, packageDir) // sorted by file name
	if err != nil {
		return bundle{}, err
	}
	var index, sources strings.Builder
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".py")
		if !ok || e.IsDir() {
			continue
		}
		if !moduleName().MatchString(name) {
			return bundle{}, fmt.Errorf("module file %s: a name must match %s", e.Name(), moduleName())
		}
		src, err := fs.ReadFile(fsys, path.Join(packageDir, e.Name()))
		if err != nil {
			return bundle{}, err
		}
		if index.Len() > 0 {
			index.WriteByte(' ')
		}
		fmt.Fprintf(&index, "%s %d", name, len(src))
		sources.Write(src)
	}
	if index.Len() == 0 {
		return bundle{}, fmt.Errorf("no modules in %s", packageDir)
	}
	payload := index.String() + "\n" + sources.String()
	sum := sha256.Sum256([]byte(payload))
	digest := hex.EncodeToString(sum[:12])
	return bundle{data: fmt.Sprintf("%d %s\n%s", len(payload), digest, payload), digest: digest}, nil
}

// notAtStart reports the worker's modules that something else imports later: the
// matplotlib backend, which matplotlib imports when pyplot needs it (its imports are
// matplotlib's).
func notAtStart(file string) bool { return file == "mplbackend.py" }

// Imports are the import statements the worker runs before its ready frame: those of
// the bootstrap and of its modules that name a module of the standard library (every
// one at the start of a line outside triple-quoted strings; the relative ones, of the
// package's own modules, left out). The bench's cold-start floor runs exactly these,
// and TestImportsLoadWhatTheWorkerLoads checks that they load what a worker loads. A
// statement continued over several lines is an error: it would not survive being read
// line by line. The modules notAtStart names are left out: the worker never imports
// them itself.
func Imports() ([]string, error) {
	files := []string{"bootstrap.py"}
	entries, err := fs.ReadDir(packageFS, packageDir)
	if err != nil {
		return nil, err
	}
	sources := map[string]string{"bootstrap.py": Bootstrap}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".py") && !notAtStart(e.Name()) {
			data, err := fs.ReadFile(packageFS, path.Join(packageDir, e.Name()))
			if err != nil {
				return nil, err
			}
			files = append(files, e.Name())
			sources[e.Name()] = string(data)
		}
	}
	var imports []string
	seen := map[string]bool{}
	for _, file := range files {
		inString := false // inside a triple-quoted string, a docstring say
		for i, line := range strings.Split(sources[file], "\n") {
			if strings.Count(line, `"""`)%2 == 1 || strings.Count(line, "'''")%2 == 1 {
				inString = !inString
				continue
			}
			if inString || !strings.HasPrefix(line, "import ") && !strings.HasPrefix(line, "from ") {
				continue
			}
			if strings.HasPrefix(line, "from .") {
				continue
			}
			if strings.ContainsAny(line, "(\\") || strings.HasSuffix(strings.TrimSpace(line), ",") {
				return nil, fmt.Errorf("%s:%d: an import continued over several lines: %q", file, i+1, line)
			}
			if !seen[line] {
				seen[line] = true
				imports = append(imports, line)
			}
		}
	}
	return imports, nil
}
