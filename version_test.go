package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iota-uz/repl-mcp/internal/buildversion"
	"github.com/iota-uz/repl-mcp/internal/pep440"
	"github.com/iota-uz/repl-mcp/internal/wheel"
)

// TestVersionMatchesPyproject pins the one source of truth: the release this source
// becomes is pyproject.toml's version, already in PEP 440 form, so an unstamped build
// and the wheel it goes into agree on what they are a development build of.
func TestVersionMatchesPyproject(t *testing.T) {
	p, err := wheel.LoadProject("pyproject.toml")
	if err != nil {
		t.Fatal(err)
	}
	if releaseVersion != p.Version {
		t.Errorf("main.go's releaseVersion is %q, pyproject.toml's version is %q: change both together", releaseVersion, p.Version)
	}
	if v, err := pep440.Normalize(releaseVersion); err != nil || v != releaseVersion {
		t.Errorf("releaseVersion %q is not normalized PEP 440 (PEP440 gives %q, %v)", releaseVersion, v, err)
	}
}

// TestUnstampedVersion: a build that no one stamped (this test binary) reports what
// its build information says, never the bare release name: a test binary carries no
// tag, so it is a development version of the release.
func TestUnstampedVersion(t *testing.T) {
	if version != "" {
		t.Skipf("this test binary was stamped with version %q", version)
	}
	got := buildVersion()
	if got == releaseVersion {
		t.Errorf("an unstamped, untagged build reports the release %q", got)
	}
	if v, err := pep440.Normalize(got); err != nil || v != got {
		t.Errorf("buildVersion() = %q is not normalized PEP 440 (%q, %v)", got, v, err)
	}
	if _, err := buildversion.Release("v" + got); err == nil {
		t.Errorf("buildVersion() = %q looks like a release", got)
	}
}

// TestMakeBuildVersion: `make build` stamps the version internal/buildversion gives this
// checkout, the one `make wheel` names its wheels by and `go install` at the same commit
// reports (internal/buildversion's tests compare those forms).
func TestMakeBuildVersion(t *testing.T) {
	makeCmd, err := exec.LookPath("make")
	if err != nil {
		t.Fatalf("make not found: %v", err)
	}
	p, err := wheel.LoadProject("pyproject.toml")
	if err != nil {
		t.Fatal(err)
	}
	want, err := buildversion.Checkout(".", p.Version)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "repl-mcp")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, makeCmd, "-s", "build", "BIN="+bin).CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, out)
	}
	out, err := exec.CommandContext(ctx, bin, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); got != "repl-mcp "+want {
		t.Errorf("make build gives %q, want repl-mcp %s", got, want)
	}
}
