package pep440

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// versionRE is PEP 440's permissive version pattern (as in the packaging library), less
// the local part (localRE), after an optional leading v: it takes tag-style versions such
// as 3.2.0-rc.1 and every spelling that PEP 440 normalizes.
var versionRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^v?` +
		`(?:(?P<epoch>[0-9]+)!)?` +
		`(?P<release>[0-9]+(?:\.[0-9]+)*)` +
		`(?:[-_.]?(?P<prel>alpha|a|beta|b|preview|pre|c|rc)[-_.]?(?P<pren>[0-9]+)?)?` +
		`(?:-(?P<postn1>[0-9]+)|[-_.]?(?:post|rev|r)[-_.]?(?P<postn2>[0-9]+)?(?P<post>))?` +
		`(?:[-_.]?(?P<dev>dev)[-_.]?(?P<devn>[0-9]+)?)?$`)
})

// localRE is a PEP 440 local version label, after the +: segments of letters and digits
// separated by dots, dashes or underscores.
var localRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9]+(?:[-_.][a-z0-9]+)*$`) })

// snapshotRE is goreleaser's default snapshot suffix, -SNAPSHOT-<commit>.
var snapshotRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(.+)-snapshot(?:-[0-9a-f]+)?$`) })

// Normalize returns the normalized PEP 440 form of a release version written either way:
// 3.2.0-rc.1 becomes 3.2.0rc1, 3.2.0-beta.2 3.2.0b2, 3.2.0-alpha.3 3.2.0a3, 0.1.0-dev
// and goreleaser's 0.1.0-SNAPSHOT-abc123 0.1.0.dev0, v1.02 1.2. A local version label is
// kept, its separators made dots: 0.1.0.dev20261201135254+ge0c66b0d7aaf.dirty, the form
// of a development build (internal/buildversion). Anything that is not PEP 440 is an
// error.
func Normalize(version string) (string, error) {
	v := strings.ToLower(strings.TrimSpace(version))
	v, local, hasLocal := strings.Cut(v, "+")
	if hasLocal && !localRE().MatchString(local) {
		return "", fmt.Errorf("version %q has a local part that is not PEP 440 (letters and digits separated by dots)", version)
	}
	snapshot := false
	if m := snapshotRE().FindStringSubmatch(v); m != nil {
		v, snapshot = m[1], true
	}
	re := versionRE()
	m := re.FindStringSubmatch(v)
	if m == nil {
		return "", fmt.Errorf("version %q is not a PEP 440 release version (like 3.2.0, 3.2.0-rc.1 or 3.2.0.dev0)", version)
	}
	g := func(name string) string { return m[re.SubexpIndex(name)] }
	num := func(s string) string { // strips leading zeros; an absent number is 0
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil && s != "" {
			return strings.TrimLeft(s, "0") // beyond uint64: keep the digits
		}
		return strconv.FormatUint(n, 10)
	}
	var b strings.Builder
	if e := g("epoch"); e != "" && num(e) != "0" {
		b.WriteString(num(e) + "!")
	}
	for i, part := range strings.Split(g("release"), ".") {
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(num(part))
	}
	if l := g("prel"); l != "" {
		switch l {
		case "alpha":
			l = "a"
		case "beta":
			l = "b"
		case "c", "pre", "preview":
			l = "rc"
		}
		b.WriteString(l + num(g("pren")))
	}
	postIdx := re.SubexpIndex("post")
	if n := g("postn1"); n != "" {
		b.WriteString(".post" + num(n))
	} else if loc := re.FindStringSubmatchIndex(v); loc[2*postIdx] >= 0 {
		b.WriteString(".post" + num(g("postn2")))
	}
	if g("dev") != "" {
		b.WriteString(".dev" + num(g("devn")))
	} else if snapshot {
		b.WriteString(".dev0")
	}
	if hasLocal {
		b.WriteString("+" + strings.NewReplacer("-", ".", "_", ".").Replace(local))
	}
	return b.String(), nil
}
