package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"github.com/iota-uz/repl-mcp/internal/atomicfile"
	"io"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/iota-uz/repl-mcp/internal/pep440"
	"github.com/iota-uz/repl-mcp/internal/wheel"
)

// Config says what Write makes.
type Config struct {
	Root    string    // the module root, holding go.mod and pyproject.toml
	OutDir  string    // where the archive goes; created if missing
	ModTime time.Time // every entry's modification time
	// Version is the version the sdist is of, PEP 440: the checkout's
	// (buildversion.Checkout), which is a development version except on a clean
	// release tag. Empty is pyproject.toml's. It is written into the sdist's
	// pyproject.toml, so the backend builds and names the same version.
	Version string
}

// The in-tree PEP 517 backend: its module, and its directory relative to the sdist root.
const (
	backendModule = "repl_mcp_build"
	backendDir    = "packaging/backend"
)

// buildSystem is the sdist's [build-system] table, which withBackend appends.
const buildSystem = `
# Written by make sdist: pip builds this sdist with the in-tree backend, which runs
# go build on the installing machine (Go 1.26 or newer on PATH).
[build-system]
requires = []
build-backend = "` + backendModule + `"
backend-path = ["` + backendDir + `"]
`

// licenseFiles are the names a license file may have at the root; each present is shipped.
var licenseFiles = []string{"LICENSE", "LICENSE.md", "LICENSE.txt", "COPYING"}

// entry is one file of the archive, named relative to its top directory.
type entry struct {
	name string // slash-separated
	data []byte
}

// Write assembles repl_mcp-<pep440 version>.tar.gz in cfg.OutDir and returns its path.
func Write(ctx context.Context, cfg Config) (string, error) {
	pyproject := filepath.Join(cfg.Root, "pyproject.toml")
	proj, err := wheel.LoadProject(pyproject)
	if err != nil {
		return "", err
	}
	src, err := os.ReadFile(pyproject)
	if err != nil {
		return "", err
	}
	sdistPyproject := withBackend(src)
	if v, ok := plainVersion(sdistPyproject); !ok || v != proj.Version {
		return "", fmt.Errorf("%s: the backend reads [project].version from a line of the form version = \"X\"; write it so", pyproject)
	}
	if cfg.Version != "" && cfg.Version != proj.Version {
		sdistPyproject = withVersion(sdistPyproject, cfg.Version)
		described := *proj
		described.Version = cfg.Version
		proj = &described
	}
	version, err := pep440.Normalize(proj.Version)
	if err != nil {
		return "", err
	}

	var names []string
	goFiles, err := sourceFiles(ctx, cfg.Root)
	if err != nil {
		return "", err
	}
	names = append(names, goFiles...)
	names = append(names, backendDir+"/"+backendModule+".py")
	readme := proj.Readme
	if readme == "" {
		readme = "README.md"
	}
	names = append(names, readme)
	for _, l := range licenseFiles {
		if _, err := os.Stat(filepath.Join(cfg.Root, l)); err == nil {
			names = append(names, l)
		}
	}

	files := []entry{{"pyproject.toml", sdistPyproject}}
	for _, n := range names {
		data, err := readRegular(filepath.Join(cfg.Root, filepath.FromSlash(n)))
		if err != nil {
			return "", err
		}
		files = append(files, entry{n, data})
	}
	pkgInfo, err := metadata(files, proj)
	if err != nil {
		return "", err
	}
	files = append(files, entry{"PKG-INFO", pkgInfo})
	sort.Slice(files, func(i, j int) bool { return files[i].name < files[j].name })
	for i := 1; i < len(files); i++ {
		if files[i].name == files[i-1].name {
			return "", fmt.Errorf("%s listed twice", files[i].name)
		}
	}

	base := distName(proj.Name) + "-" + version
	if err := os.MkdirAll(cfg.OutDir, 0o755); err != nil {
		return "", err
	}
	out := filepath.Join(cfg.OutDir, base+".tar.gz")
	if err := writeArchive(out, base, files, cfg.ModTime); err != nil {
		return "", err
	}
	return out, nil
}

// headerRE is a TOML table or array-of-tables header line.
var headerRE = regexp.MustCompile(`^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$`)

// withBackend returns pyproject.toml with its [build-system] table, if any, dropped and
// buildSystem appended.
func withBackend(src []byte) []byte {
	var b bytes.Buffer
	skipping := false
	lines := strings.SplitAfter(strings.ReplaceAll(string(src), "\r\n", "\n"), "\n")
	for _, line := range lines {
		if m := headerRE.FindStringSubmatch(strings.TrimRight(line, "\n")); m != nil {
			skipping = m[1] == "build-system"
		}
		if !skipping {
			b.WriteString(line)
		}
	}
	if b.Len() > 0 && !bytes.HasSuffix(b.Bytes(), []byte("\n")) {
		b.WriteByte('\n')
	}
	b.WriteString(buildSystem)
	return b.Bytes()
}

// versionLineRE is the form of [project].version that the backend, which has no TOML
// parser on Python 3.10, reads (repl_mcp_build._pyproject_version).
var versionLineRE = regexp.MustCompile(`^version\s*=\s*"([^"\\]+)"\s*(#.*)?$`)

// withVersion is src with the [project].version line (plainVersion's) saying
// version instead.
func withVersion(src []byte, version string) []byte {
	var b bytes.Buffer
	table := ""
	for _, line := range strings.SplitAfter(string(src), "\n") {
		trimmed := strings.TrimSpace(line)
		if m := headerRE.FindStringSubmatch(trimmed); m != nil {
			table = m[1]
		} else if table == "project" && versionLineRE.MatchString(trimmed) {
			line = "version = \"" + version + "\"\n"
		}
		b.WriteString(line)
	}
	return b.Bytes()
}

// plainVersion reads [project].version the way the backend does.
func plainVersion(src []byte) (string, bool) {
	table := ""
	for _, line := range strings.Split(string(src), "\n") {
		line = strings.TrimSpace(line)
		if m := headerRE.FindStringSubmatch(line); m != nil {
			table = m[1]
			continue
		}
		if m := versionLineRE.FindStringSubmatch(line); m != nil && table == "project" {
			return m[1], true
		}
	}
	return "", false
}

// metadata is the sdist's PKG-INFO: the METADATA that internal/wheel writes for the
// sdist's own pyproject.toml, taken from a wheel built around a placeholder (the
// package renders METADATA only into wheels). It also checks that the sdist's
// pyproject.toml describes the same project as the checkout's.
func metadata(files []entry, want *wheel.Project) ([]byte, error) {
	dir, err := os.MkdirTemp("", "repl-mcp-sdist-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	for _, f := range files {
		if f.name != "pyproject.toml" && f.name != want.Readme {
			continue
		}
		p := filepath.Join(dir, filepath.FromSlash(f.name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p, f.data, 0o644); err != nil {
			return nil, err
		}
	}
	pyproject := filepath.Join(dir, "pyproject.toml")
	got, err := wheel.LoadProject(pyproject)
	if err != nil {
		return nil, fmt.Errorf("the sdist's pyproject.toml: %w", err)
	}
	if !reflect.DeepEqual(got, want) {
		return nil, errors.New("replacing [build-system] changed the [project] table; keep [build-system] a plain table of its own")
	}
	placeholder := filepath.Join(dir, "placeholder")
	if err := os.WriteFile(placeholder, []byte("placeholder\n"), 0o755); err != nil {
		return nil, err
	}
	platform, err := wheel.PlatformFor("linux", "amd64") // any: METADATA does not depend on it
	if err != nil {
		return nil, err
	}
	whl, err := wheel.Build(wheel.Config{Binary: placeholder, Platform: platform, OutDir: dir, Pyproject: pyproject})
	if err != nil {
		return nil, err
	}
	zr, err := zip.OpenReader(whl)
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	for _, f := range zr.File {
		if path.Base(f.Name) == "METADATA" && strings.HasSuffix(path.Dir(f.Name), ".dist-info") {
			rc, err := f.Open()
			if err != nil {
				return nil, err
			}
			defer rc.Close()
			return io.ReadAll(rc)
		}
	}
	return nil, fmt.Errorf("%s has no METADATA", whl)
}

// separatorRE is a run of the characters PEP 503 treats as one separator.
var separatorRE = regexp.MustCompile(`[-_.]+`)

// distName is a project name as sdist and wheel file names spell it (PEP 625).
func distName(name string) string {
	return separatorRE.ReplaceAllString(strings.ToLower(name), "_")
}

// readRegular reads a regular file; anything else is an error.
func readRegular(p string) ([]byte, error) {
	info, err := os.Lstat(p)
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", p)
	}
	return os.ReadFile(p)
}

// writeArchive writes files under base/ as a gzipped tar at out, atomically.
func writeArchive(out, base string, files []entry, mtime time.Time) error {
	return atomicfile.Write(out, 0o644, func(w io.Writer) error {
		gz := gzip.NewWriter(w)
		tw := tar.NewWriter(gz)
		for _, f := range files {
			hdr := &tar.Header{
				Typeflag: tar.TypeReg,
				Name:     base + "/" + f.name,
				Mode:     0o644,
				Size:     int64(len(f.data)),
				ModTime:  mtime,
			}
			if err := tw.WriteHeader(hdr); err != nil {
				return err
			}
			if _, err := tw.Write(f.data); err != nil {
				return err
			}
		}
		if err := tw.Close(); err != nil {
			return err
		}
		return gz.Close()
	})
}
