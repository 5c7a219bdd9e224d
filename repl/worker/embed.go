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
var moduleName = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

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
		panic("repl/worker: " + err.Error())
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
		if !moduleName.MatchString(name) {
			return bundle{}, fmt.Errorf("module file %s: a name must match %s", e.Name(), moduleName)
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
