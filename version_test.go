package main

import (
	"testing"

	"github.com/iota-uz/repl-mcp/internal/wheel"
)

// TestVersionMatchesPyproject pins the one source of truth: the binary's default
// version is pyproject.toml's, already in PEP 440 form, so an unstamped build and the
// wheel it goes into agree.
func TestVersionMatchesPyproject(t *testing.T) {
	p, err := wheel.LoadProject("pyproject.toml")
	if err != nil {
		t.Fatal(err)
	}
	if version != p.Version {
		t.Errorf("main.go's version is %q, pyproject.toml's is %q: change both together", version, p.Version)
	}
	if v, err := wheel.PEP440(version); err != nil || v != version {
		t.Errorf("version %q is not normalized PEP 440 (PEP440 gives %q, %v)", version, v, err)
	}
}
