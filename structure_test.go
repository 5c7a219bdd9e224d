package main

// The tree's structural guards, together: no Go file past its length bound, and
// imports that point one way. The worker's own (modules' length, import cycles,
// private names across modules) are worker/test_unit_structure.py. They sit together
// so that a split made to meet the length bound must still keep the directions.

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// importRules are the directions the packages' imports keep (docs/design.md,
// "Dependencies point one way"): each package, with everything it imports however
// indirectly, reaches none of the packages named beside it ("x/..." is x and its
// subpackages, as go's patterns say). The supervisor, the worker and the guardian
// sit below what answers cell code's ops and below the MCP surface: repl declares
// what it needs of them (Services, OpLimits, artifactref.Ref) and main wires them
// in. The transports carry a server and know nothing of its tools or sessions.
var importRules = []struct {
	pkg       string
	forbidden []string
}{
	{"repl", []string{"broker/...", "artifacts/...", "server/...", "cellops", "notebook"}},
	{"worker", []string{"broker/...", "artifacts/...", "server/...", "cellops", "notebook", "repl"}},
	{"guardian", []string{"broker/...", "artifacts/...", "server/...", "cellops", "notebook", "repl"}},
	{"server/transport", []string{"server", "repl", "worker", "guardian", "broker/...", "artifacts/...", "cellops", "notebook"}},
}

// TestImportDirections: no package of importRules imports, directly or through
// another, a package it must not (go list's Deps, tests left out).
func TestImportDirections(t *testing.T) {
	const module = "github.com/iota-uz/repl-mcp/"
	args := []string{"list", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`}
	for _, rule := range importRules {
		args = append(args, "./"+rule.pkg)
	}
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		deps[strings.TrimPrefix(fields[0], module)] = fields[1:]
	}
	for _, rule := range importRules {
		imported, listed := deps[rule.pkg]
		if !listed {
			t.Errorf("go list did not list %s", rule.pkg)
			continue
		}
		for _, dep := range imported {
			dep, ours := strings.CutPrefix(dep, module)
			for _, pattern := range rule.forbidden {
				if ours && matchesPattern(pattern, dep) {
					t.Errorf("%s imports %s, directly or through another package: it must reach nothing of %s", rule.pkg, dep, pattern)
				}
			}
		}
	}
}

// matchesPattern reports whether the package path matches pattern: the path
// itself, or with "/..." the path and everything beneath it.
func matchesPattern(pattern, path string) bool {
	if base, tree := strings.CutSuffix(pattern, "/..."); tree {
		return path == base || strings.HasPrefix(path, base+"/")
	}
	return path == pattern
}

// goFileLinesBound is the most lines a Go file of the repository may have, tests
// included: past it a file holds more than one concern and is split by concern.
const goFileLinesBound = 900

// TestGoFilesWithinBound: no Go file is longer than goFileLinesBound lines.
func TestGoFilesWithinBound(t *testing.T) {
	checked := 0
	for _, path := range trackedFiles(t) {
		if !strings.HasSuffix(path, ".go") {
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		if n := bytes.Count(data, []byte("\n")); n > goFileLinesBound {
			t.Errorf("%s has %d lines, more than %d: split it by concern", path, n, goFileLinesBound)
		}
	}
	if checked < 100 {
		t.Fatalf("only %d Go files checked", checked)
	}
}
