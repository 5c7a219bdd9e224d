package buildversion

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/iota-uz/repl-mcp/internal/pep440"
)

// CommitDigits is how many hex digits of the commit a development version keeps, as a
// Go pseudo-version does.
const CommitDigits = 12

// timeLayout is the commit time in a development version, as in a Go pseudo-version.
const timeLayout = "20060102150405"

// Dev is the development version of base at a commit made at t.
func Dev(base string, t time.Time, commit string, dirty bool) string {
	if len(commit) > CommitDigits {
		commit = commit[:CommitDigits]
	}
	v := base + ".dev" + t.UTC().Format(timeLayout) + "+g" + strings.ToLower(commit)
	if dirty {
		v += ".dirty"
	}
	return v
}

// Release is the PEP 440 form of a release tag (v0.1.0, v3.2.0-rc.1), or an error when
// the tag is not a release tag.
func Release(tag string) (string, error) {
	if !releaseTagRE().MatchString(tag) {
		return "", fmt.Errorf("%q is not a release tag (vX.Y.Z, or vX.Y.Z-rc.N and the like)", tag)
	}
	return pep440.Normalize(tag)
}

// releaseTagRE is a semantic-version tag without build metadata, the form Go reports as
// a module version; its prerelease part (if any) must be one PEP 440 knows.
var releaseTagRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+(-(alpha|beta|rc)(\.?[0-9]+)?)?$`)
})

// pseudoRE is the tail of a Go pseudo-version: the commit time and 12 hex digits, maybe
// followed by +dirty (a local build of a modified tree).
var pseudoRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[-.]([0-9]{14})-([0-9a-f]{12})(\+dirty)?$`) })

// FromBuildInfo is the version of a binary that no one stamped, from Go's build
// information: a release tag as the main module's version, or the commit of the
// version-control settings (a local build) or of a pseudo-version (the module proxy).
func FromBuildInfo(base string, bi *debug.BuildInfo) string {
	if bi == nil {
		return base + ".dev0"
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if v, err := Release(bi.Main.Version); err == nil && settings["vcs.modified"] != "true" {
		return v
	}
	if rev, when := settings["vcs.revision"], settings["vcs.time"]; rev != "" && when != "" {
		if t, err := time.Parse(time.RFC3339, when); err == nil {
			return Dev(base, t, rev, settings["vcs.modified"] == "true")
		}
	}
	if m := pseudoRE().FindStringSubmatch(bi.Main.Version); m != nil {
		if t, err := time.Parse(timeLayout, m[1]); err == nil {
			return Dev(base, t, m[2], m[3] != "")
		}
	}
	return base + ".dev0"
}

// Checkout is the version a build of the git checkout at dir reports, base being its
// pyproject.toml's version: the release when HEAD carries a release tag and the tree is
// clean, otherwise the development version of its commit. Untracked files that git
// ignores do not count as changes; others do, as Go counts them.
func Checkout(dir, base string) (string, error) {
	git := func(args ...string) (string, error) {
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
		}
		return strings.TrimSpace(string(out)), nil
	}
	head, err := git("log", "-1", "--format=%H %ct")
	if err != nil {
		return "", err
	}
	rev, unix, ok := strings.Cut(head, " ")
	var secs int64
	if _, err := fmt.Sscan(unix, &secs); !ok || err != nil {
		return "", fmt.Errorf("git log: unexpected %q", head)
	}
	status, err := git("status", "--porcelain")
	if err != nil {
		return "", err
	}
	dirty := status != ""
	tags, err := git("tag", "--points-at", "HEAD", "--list", "v*")
	if err != nil {
		return "", err
	}
	if !dirty {
		var found []string
		for _, tag := range strings.Fields(tags) {
			if v, err := Release(tag); err == nil {
				found = append(found, v)
			}
		}
		switch len(found) {
		case 1:
			return found[0], nil
		case 0:
		default:
			return "", errors.New("HEAD carries more than one release tag: " + strings.Join(found, ", "))
		}
	}
	return Dev(base, time.Unix(secs, 0), rev, dirty), nil
}
