package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/iota-uz/repl-mcp/internal/wheel"
)

// releaseTargets are the GOOS/GOARCH pairs that repl-mcp ships wheels for; the sdist
// carries the sources each of them builds from.
var releaseTargets = [][2]string{
	{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "amd64"}, {"darwin", "arm64"},
}

// listedPackage is the part of `go list -json` output that names files.
type listedPackage struct {
	ImportPath     string
	Dir            string
	Module         *struct{ Main bool }
	GoFiles        []string
	CgoFiles       []string
	IgnoredGoFiles []string // excluded by build constraints; test files among them are dropped
	SFiles         []string
	HFiles         []string
	EmbedFiles     []string
}

// sourceFiles returns, relative to root and slash-separated, go.mod, go.sum and the
// files of every package of the main module that the command at root imports on a
// release target: its Go files for every OS (tests excepted) and its embedded files.
func sourceFiles(ctx context.Context, root string) ([]string, error) {
	seen := map[string]bool{"go.mod": true, "go.sum": true}
	for _, t := range releaseTargets {
		if _, err := wheel.PlatformFor(t[0], t[1]); err != nil {
			return nil, err
		}
		pkgs, err := listDeps(ctx, root, t[0], t[1])
		if err != nil {
			return nil, err
		}
		for _, p := range pkgs {
			if p.Module == nil || !p.Module.Main {
				continue
			}
			rel, err := filepath.Rel(root, p.Dir)
			if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				return nil, fmt.Errorf("package %s is outside %s", p.ImportPath, root)
			}
			var names []string
			for _, list := range [][]string{p.GoFiles, p.CgoFiles, p.IgnoredGoFiles, p.SFiles, p.HFiles, p.EmbedFiles} {
				names = append(names, list...)
			}
			for _, n := range names {
				if strings.HasSuffix(n, "_test.go") {
					continue
				}
				seen[filepath.ToSlash(filepath.Join(rel, n))] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}

// listDeps runs go list -deps on the command at root for one target.
func listDeps(ctx context.Context, root, goos, goarch string) ([]listedPackage, error) {
	cmd := exec.CommandContext(ctx, "go", "list", "-deps",
		"-json=ImportPath,Dir,Module,GoFiles,CgoFiles,IgnoredGoFiles,SFiles,HFiles,EmbedFiles", ".")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list for %s/%s: %w\n%s", goos, goarch, err, stderr.Bytes())
	}
	var pkgs []listedPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		err := dec.Decode(&p)
		if errors.Is(err, io.EOF) {
			return pkgs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("go list for %s/%s: %w", goos, goarch, err)
		}
		pkgs = append(pkgs, p)
	}
}
