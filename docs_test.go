package main

import (
	"bufio"
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Citations of the contract: "§8.6" (written "docs/contract.md §8.6" outside the
// docs), and the forms that cited a spec the repository does not have.
var (
	sectionCitation = regexp.MustCompile(`§(\d+(?:\.\d+)*)`)
	outsideCitation = regexp.MustCompile(`(?i)\b(?:contract|reference section)s?(?:\.md)? (?:section )?\d+\.\d+|\breference (?:[0-24-9]|3\.[2-9])\d*\.\d+|\.\./shared\b`)
	// commentLead is what opens a continued line of a comment or a quote ("// ", "# ",
	// " * ", "> "): a citation broken across two lines is read with it taken away.
	commentLead = regexp.MustCompile(`^\s*(?://+|#+|\*|>|--)?\s*`)
	// A section is a heading (## 8., ### 8.6) or a numbered bold paragraph
	// (**5.4.1 The namespace**).
	contractHeading = regexp.MustCompile(`^(?:#{2,3} |\*\*)(\d+(?:\.\d+)*)\.? `)
)

// TestDocsCitations: every section a file of the repository cites exists in
// docs/contract.md, and no file cites a spec outside the repository (the
// reference's own section numbers, or the workplace folder beside the checkout,
// which a clone does not have).
func TestDocsCitations(t *testing.T) {
	sections := contractSections(t)
	cited := 0
	prevPath, prev := "", ""
	eachLine(t, func(path string, line int, text string) {
		for _, m := range sectionCitation.FindAllStringSubmatch(text, -1) {
			cited++
			if !sections[m[1]] {
				t.Errorf("%s:%d cites §%s, which docs/contract.md does not have", path, line, m[1])
			}
		}
		if m := outsideCitation.FindString(text); m != "" {
			t.Errorf("%s:%d cites %q: cite docs/contract.md §N or state the rule", path, line, m)
		}
		if path != prevPath {
			prevPath, prev = path, ""
		}
		if m := spanningMatch(outsideCitation, prev, text); m != "" {
			t.Errorf("%s:%d cites %q across a line break: cite docs/contract.md §N or state the rule", path, line, m)
		}
		prev = text
	})
	if cited < 50 {
		t.Fatalf("only %d citations found: is the walk looking at the repository?", cited)
	}
}

// spanningMatch is a match of re that starts on line prev and ends on line next once
// both lose their comment leads and join with a space, so a citation a comment wraps
// ("(contract" / "// 11.9)") is found; matches within one line are the caller's.
func spanningMatch(re *regexp.Regexp, prev, next string) string {
	a := commentLead.ReplaceAllString(prev, "")
	b := commentLead.ReplaceAllString(next, "")
	joined := a + " " + b
	for _, loc := range re.FindAllStringIndex(joined, -1) {
		if loc[0] < len(a) && loc[1] > len(a)+1 {
			return joined[loc[0]:loc[1]]
		}
	}
	return ""
}

// contractSections are the numbers of docs/contract.md's sections ("8", "8.6").
func contractSections(t *testing.T) map[string]bool {
	t.Helper()
	data, err := os.ReadFile("docs/contract.md")
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		if m := contractHeading.FindStringSubmatch(line); m != nil {
			sections[m[1]] = true
		}
	}
	if !sections["8.6"] || !sections["13.2"] {
		t.Fatalf("docs/contract.md's headings were not understood (found %d)", len(sections))
	}
	return sections
}

// trackedFiles are the repository's files: the ones git tracks (venvs, node_modules
// and build output are not ours and cite what they like), less those deleted in the
// working tree and not yet in the index.
func trackedFiles(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("git", "ls-files", "-z").Output()
	if err != nil {
		t.Fatalf("list the repository's files with git ls-files: %v", err)
	}
	var files []string
	for _, path := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if _, err := os.Stat(path); err == nil {
			files = append(files, path)
		}
	}
	return files
}

// eachLine calls f on every line of every tracked text file but this one (whose
// patterns would cite themselves).
func eachLine(t *testing.T, f func(path string, line int, text string)) {
	t.Helper()
	for _, path := range trackedFiles(t) {
		if path == "docs_test.go" {
			continue
		}
		data, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if bytes.IndexByte(data, 0) >= 0 {
			continue // binary files cite nothing
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
		for line := 1; sc.Scan(); line++ {
			f(path, line, sc.Text())
		}
		if err := sc.Err(); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
}

var (
	// docMention is a markdown file named anywhere: "docs/design.md", "PROTOCOL.md",
	// "skills/python-repl/SKILL.md".
	docMention = regexp.MustCompile(`(?:[\w.-]+/)*[\w-]+\.md\b`)
	// quotedSection cites a section of a doc by its heading: docs/design.md ("Tests"),
	// docs/design.md, "Tests", design.md's "Performance targets".
	quotedSection = regexp.MustCompile(`((?:[\w.-]+/)*[\w-]+\.md)(?:'s)?,? \(?"([^"]+)"`)
	// protocolSection cites a section of the worker protocol without quotes:
	// (PROTOCOL.md, Images), PROTOCOL.md (The bundle).
	protocolSection = regexp.MustCompile(`PROTOCOL\.md(?:, | \()([A-Z][^),.:;]*)`)
	// mdHeading is a markdown heading.
	mdHeading = regexp.MustCompile(`^#{1,6} (.+?)\s*$`)
)

// notDocs are .md names the repository mentions that are not its docs: a test's
// missing readme and a license file the sdist would take if there were one.
var notDocs = map[string]bool{"MISSING.md": true, "LICENSE.md": true}

// resolveDoc finds the tracked file a mention in the file from names: a path
// relative to from's directory ("../worker/PROTOCOL.md"), the path itself, or the
// only tracked file whose path ends with it ("worker/PROTOCOL.md", "SKILL.md").
func resolveDoc(files []string, from, mention string) (string, bool) {
	if strings.HasPrefix(mention, "../") || strings.HasPrefix(mention, "./") {
		mention = filepath.ToSlash(filepath.Join(filepath.Dir(from), mention))
		return mention, slices.Contains(files, mention)
	}
	var found []string
	for _, f := range files {
		if f == mention || strings.HasSuffix(f, "/"+mention) {
			found = append(found, f)
		}
	}
	if len(found) != 1 {
		return "", false
	}
	return found[0], true
}

// headings are the headings of the markdown file path.
func headings(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var hs []string
	inFence := false
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
		}
		if m := mdHeading.FindStringSubmatch(line); m != nil && !inFence {
			hs = append(hs, m[1])
		}
	}
	return hs
}

// hasHeading reports whether a heading is name, or starts with it and a colon
// ("The supervisor" for "The supervisor: a worker's states").
func hasHeading(hs []string, name string) bool {
	for _, h := range hs {
		if h == name || strings.HasPrefix(h, name+":") {
			return true
		}
	}
	return false
}

// TestDocsMentionsResolve: every markdown file a tracked file names exists, and every
// section cited by its heading (docs/design.md ("Tests"), PROTOCOL.md, Images) is a
// heading of that file, so moving or renaming a doc or a section breaks no citation
// silently.
func TestDocsMentionsResolve(t *testing.T) {
	files := trackedFiles(t)
	heads := map[string][]string{}
	headingsOf := func(path string) []string {
		if _, ok := heads[path]; !ok {
			heads[path] = headings(t, path)
		}
		return heads[path]
	}
	mentions, sections := 0, 0
	eachLine(t, func(path string, line int, text string) {
		if strings.HasSuffix(path, "package-lock.json") {
			return // npm's metadata of other people's packages
		}
		for _, loc := range docMention.FindAllStringIndex(text, -1) {
			m := text[loc[0]:loc[1]]
			word := text[:loc[0]]
			if i := strings.LastIndexAny(word, " \t(`'\"["); i >= 0 {
				word = word[i+1:]
			}
			if strings.Contains(word, "://") || strings.Contains(word, ".com/") || notDocs[m] {
				continue // a URL's path, or a name that is no doc
			}
			mentions++
			if _, ok := resolveDoc(files, path, m); !ok {
				t.Errorf("%s:%d names %s, which is not one file of the repository", path, line, m)
			}
		}
		check := func(doc, name string) {
			sections++
			file, ok := resolveDoc(files, path, doc)
			if !ok {
				return // reported above
			}
			if !hasHeading(headingsOf(file), name) {
				t.Errorf("%s:%d cites %s, section %q, which %s has no heading for", path, line, doc, name, file)
			}
		}
		for _, m := range quotedSection.FindAllStringSubmatch(text, -1) {
			check(m[1], m[2])
		}
		for _, m := range protocolSection.FindAllStringSubmatch(text, -1) {
			check("PROTOCOL.md", strings.TrimSpace(m[1]))
		}
	})
	if mentions < 50 || sections < 10 {
		t.Fatalf("only %d doc mentions and %d section citations found: is the walk looking at the repository?", mentions, sections)
	}
}

// TestEveryPackageLinksItsDoc: every Go package of the repository opens with a doc.go
// (STYLE: what it owns, what it does not, who starts and stops what), and that doc.go
// names a doc of the repository that it belongs to (docs/design.md, docs/contract.md,
// PROTOCOL.md, ...), which exists.
func TestEveryPackageLinksItsDoc(t *testing.T) {
	files := trackedFiles(t)
	dirs := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, ".go") && !strings.Contains(f, "testdata/") {
			dirs[filepath.Dir(f)] = true
		}
	}
	for dir := range dirs {
		path := filepath.Join(dir, "doc.go")
		data, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%s: the package has no doc.go (%v)", dir, err)
			continue
		}
		linked := false
		for _, m := range docMention.FindAllString(string(data), -1) {
			if _, ok := resolveDoc(files, path, m); ok {
				linked = true
			}
		}
		if !linked {
			t.Errorf("%s names no doc of the repository: say which doc it belongs to (docs/design.md (\"Layout\"), docs/contract.md §N, ...)", path)
		}
	}
	if len(dirs) < 20 {
		t.Fatalf("only %d package directories found", len(dirs))
	}
}
