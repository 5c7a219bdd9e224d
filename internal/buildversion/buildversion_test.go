package buildversion

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/iota-uz/repl-mcp/internal/pep440"
)

var commitTime = time.Date(2026, 12, 1, 13, 52, 54, 0, time.UTC)

const commit = "e0c66b0d7aafd281a1e1a8a28294b5af51a469c5"

func TestDev(t *testing.T) {
	got := Dev("0.1.0", commitTime.In(time.FixedZone("UTC+5", 5*3600)), commit, false)
	if want := "0.1.0.dev20261201135254+ge0c66b0d7aaf"; got != want {
		t.Errorf("Dev = %q, want %q", got, want)
	}
	if got := Dev("0.1.0", commitTime, commit, true); got != "0.1.0.dev20261201135254+ge0c66b0d7aaf.dirty" {
		t.Errorf("Dev dirty = %q", got)
	}
	// A development version is normalized PEP 440, so it names a wheel as it is.
	if v, err := pep440.Normalize(got); err != nil || v != got {
		t.Errorf("PEP440(%q) = %q, %v: not normalized", got, v, err)
	}
}

func info(version string, settings ...string) *debug.BuildInfo {
	bi := &debug.BuildInfo{Main: debug.Module{Path: "github.com/iota-uz/repl-mcp", Version: version}}
	for i := 0; i+1 < len(settings); i += 2 {
		bi.Settings = append(bi.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
	}
	return bi
}

// TestFromBuildInfo covers every way Go describes an unstamped build: go install from
// the module proxy at a tag or at a commit (pseudo-versions of each shape), a local build
// with version-control settings, and a build that knows nothing.
func TestFromBuildInfo(t *testing.T) {
	const dev = "0.1.0.dev20261201135254+ge0c66b0d7aaf"
	vcs := []string{"vcs", "git", "vcs.revision", commit, "vcs.time", "2026-12-01T13:52:54Z"}
	for _, tc := range []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"release tag", info("v0.1.0"), "0.1.0"},
		{"prerelease tag", info("v3.2.0-rc.1"), "3.2.0rc1"},
		{"pseudo-version without a tag", info("v0.0.0-20261201135254-e0c66b0d7aaf"), dev},
		{"pseudo-version after a release", info("v0.0.1-0.20261201135254-e0c66b0d7aaf"), dev},
		{"pseudo-version after a prerelease", info("v0.1.0-rc.1.0.20261201135254-e0c66b0d7aaf"), dev},
		{"local build, clean", info("v0.0.0-20261201135254-e0c66b0d7aaf", vcs...), dev},
		{"local build at a tag", info("v0.1.0", vcs...), "0.1.0"},
		{"local build at a tag, modified", info("v0.1.0+dirty", append(vcs, "vcs.modified", "true")...), dev + ".dirty"},
		{"local build, modified", info("v0.0.0-20261201135254-e0c66b0d7aaf+dirty", append(vcs, "vcs.modified", "true")...), dev + ".dirty"},
		{"devel with settings", info("(devel)", vcs...), dev},
		{"devel without settings", info("(devel)"), "0.1.0.dev0"},
		{"no build info", nil, "0.1.0.dev0"},
	} {
		if got := FromBuildInfo("0.1.0", tc.bi); got != tc.want {
			t.Errorf("%s: FromBuildInfo = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestReleaseRejects(t *testing.T) {
	for _, tag := range []string{"0.1.0", "v0.1", "v0.1.0+dirty", "v0.0.0-20261201135254-e0c66b0d7aaf", "(devel)", "v0.1.0-snapshot"} {
		if v, err := Release(tag); err == nil {
			t.Errorf("Release(%q) = %q, want an error", tag, v)
		}
	}
}

// TestCheckout builds a repository: a commit is a development version, a release tag
// on a clean tree the release, a change to a tracked or untracked file makes it dirty
// again, and Go's pseudo-version of the same commit gives the same string.
func TestCheckout(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("git not found: %v", err)
	}
	dir := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_DATE=2026-12-01T13:52:54Z", "GIT_COMMITTER_DATE=2026-12-01T13:52:54Z",
			"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.invalid")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("add", "f")
	git("commit", "-q", "-m", "one")
	rev := git("rev-parse", "HEAD")
	check := func(want string) {
		t.Helper()
		got, err := Checkout(dir, "0.1.0")
		if err != nil || got != want {
			t.Errorf("Checkout = %q, %v; want %q", got, err, want)
		}
	}
	dev := "0.1.0.dev20261201135254+g" + rev[:12]
	check(dev)
	pseudo := "v0.0.0-20261201135254-" + rev[:12]
	if got := FromBuildInfo("0.1.0", info(pseudo)); got != dev {
		t.Errorf("go install at the same commit (%s) reports %q, make build %q", pseudo, got, dev)
	}
	git("tag", "v0.1.0-not-a-release")
	check(dev)
	git("tag", "v0.1.0")
	check("0.1.0")
	if err := os.WriteFile(filepath.Join(dir, "new"), []byte("y"), 0o644); err != nil {
		t.Fatal(err)
	}
	check(dev + ".dirty")
}
