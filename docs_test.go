package main

import (
	"bufio"
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// Citations of the contract: "§8.6" (written "docs/contract.md §8.6" outside the
// docs), and the forms that cited a spec the repository does not have.
var (
	sectionCitation = regexp.MustCompile(`§(\d+(?:\.\d+)*)`)
	outsideCitation = regexp.MustCompile(`(?i)\b(?:contract|reference section)s? (?:section )?\d+\.\d+|\breference (?:[0-24-9]|3\.[2-9])\d*\.\d+|\.\./shared\b`)
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
	// The repository's files are the ones git tracks: venvs, node_modules and
	// build output are not ours and cite what they like.
	out, err := exec.Command("git", "ls-files", "-z").Output()
	if err != nil {
		t.Fatalf("list the repository's files with git ls-files: %v", err)
	}
	cited := 0
	for _, path := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if path == "docs_test.go" {
			continue
		}
		data, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted in the working tree, not yet in the index
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
			text := sc.Text()
			for _, m := range sectionCitation.FindAllStringSubmatch(text, -1) {
				cited++
				if !sections[m[1]] {
					t.Errorf("%s:%d cites §%s, which docs/contract.md does not have", path, line, m[1])
				}
			}
			if m := outsideCitation.FindString(text); m != "" {
				t.Errorf("%s:%d cites %q: cite docs/contract.md §N or state the rule", path, line, m)
			}
		}
		if err := sc.Err(); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	if cited < 50 {
		t.Fatalf("only %d citations found: is the walk looking at the repository?", cited)
	}
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
