package main

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
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
// reference's own section numbers, or ../shared, which a clone does not have).
func TestDocsCitations(t *testing.T) {
	sections := contractSections(t)
	skip := map[string]bool{".git": true, "node_modules": true, ".venv": true, ".venv-uv": true, ".cache": true, "bin": true, "dist": true, "sdist": true, "__pycache__": true}
	cited := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if skip[d.Name()] {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || path == "docs_test.go" {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil || bytes.IndexByte(data, 0) >= 0 {
			return err // binary files cite nothing
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
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
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
