package wheel

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/iota-uz/repl-mcp/internal/pep440"
)

// TestLoadProjectForms: the TOML forms a pyproject.toml may use all reach METADATA as
// written (the TOML library parses them; this checks what LoadProject makes of them),
// and the tables it does not read are parsed and ignored, whatever their values.
func TestLoadProjectForms(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "pyproject.toml")
	src := `# a comment
[build-system]
requires = ["x>=1"]

[project]
name = 'literal-name'   # trailing comment
"version" = "1.2.0rc1"
description = """
A summary \
    joined, with "quotes" and \u00e9"""
requires-python = '''>=3.10'''
license = "MIT"
keywords = [
  "one",  # comment inside
  'two',
]
dependencies = []

[[project.authors]]
name = "A"
[[project.authors]]
email = "b@x"

[project.urls]
Zebra = "https://z"
Apple = "https://a"

[tool.other]
n = 42
when = 1979-05-27 07:32:00Z
flag = true
nested = { deep.key = [1, 2.5] }
`
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := LoadProject(path)
	if err != nil {
		t.Fatal(err)
	}
	want := &Project{
		Name: "literal-name", Version: "1.2.0rc1", Description: `A summary joined, with "quotes" and é`,
		RequiresPython: ">=3.10", License: "MIT",
		Authors:      []Person{{Name: "A"}, {Email: "b@x"}},
		Keywords:     []string{"one", "two"},
		Dependencies: []string{},
		URLs:         [][2]string{{"Zebra", "https://z"}, {"Apple", "https://a"}},
	}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("LoadProject:\n%+v\nwant\n%+v", p, want)
	}
}

// TestLoadProjectSyntax: a file that is not TOML is an error naming the file and the
// line.
func TestLoadProjectSyntax(t *testing.T) {
	dir := t.TempDir()
	for src, want := range map[string]string{
		"[project]\nname = \"x\"\nname = \"y\"":         "line 3",
		"[project]\nname = \"open":                      "line 2",
		"[project]\nname = \"x\" version = \"1\"":       "line 2",
		"[project]\n[project]":                          "line 2",
		"[project]\nname = \"x\"\nversion = \"\xff\"":   "line 3",
		"[project]\nname = \"x\"\nversion = \"1\"\n= 1": "line 4",
	} {
		path := filepath.Join(dir, "pyproject.toml")
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := LoadProject(path)
		if err == nil || !strings.HasPrefix(err.Error(), path+": ") || !strings.Contains(err.Error(), want) {
			t.Errorf("LoadProject(%q) = %v, want an error naming %s and %q", src, err, path, want)
		}
	}
}

func TestLoadProjectRepo(t *testing.T) {
	p, err := LoadProject(filepath.Join("..", "..", "pyproject.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "repl-mcp" || p.RequiresPython != ">=3.10" || p.License != "MIT" {
		t.Errorf("name %q, requires-python %q, license %q", p.Name, p.RequiresPython, p.License)
	}
	if !strings.HasPrefix(p.ReadmeText, "# repl-mcp") {
		t.Errorf("readme text starts %.40q", p.ReadmeText)
	}
	// The pinned runtime closure of docs/contract.md §10.1: each pinned exactly, once.
	want := []string{"httpx", "openpyxl", "anyio", "certifi", "httpcore", "idna", "h11", "et-xmlfile", "exceptiongroup", "typing-extensions"}
	var got []string
	for _, d := range p.Dependencies {
		name, _, ok := strings.Cut(d, "==")
		if !ok {
			t.Errorf("dependency %q is not pinned with ==", d)
		}
		got = append(got, name)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("dependencies %v, want %v", got, want)
	}
	if _, err := pep440.Normalize(p.Version); err != nil {
		t.Error(err)
	}
}

func TestLoadProjectRejects(t *testing.T) {
	dir := t.TempDir()
	for src, want := range map[string]string{
		"[tool.x]\na = 1":                               "no [project] table",
		"[project]\nversion = \"1.0\"":                  "name is required",
		"[project]\nname = \"x\"":                       "version is required",
		"[project]\nname = \"x\"\nversion = \"latest\"": "not a PEP 440",
		"[project]\nname = \"-x\"\nversion = \"1\"":     "not a valid distribution name",
		"[project]\nname = \"x\"\nversion = \"1\"\nscripts = {a = \"b\"}\ndynamic = []": "unsupported keys dynamic, scripts",
		"[project]\nname = \"x\"\nversion = \"1\"\ndependencies = \"httpx\"":            `"project.dependencies"): incompatible types`,
		"[project]\nname = \"x\"\nversion = 1":                                          `"project.version"): incompatible types`,
		"[project]\nname = \"x\"\nversion = \"1\"\nurls = [\"u\"]":                      "urls must be a table",
		"[project]\nname = \"x\"\nversion = \"1\"\nreadme = \"MISSING.md\"":             "readme",
		"[project]\nname = \"x\"\nversion = \"1\"\nauthors = [{ nick = \"n\" }]":        "unknown key \"nick\"",
		"[project]\nname = \"x\"\nversion = \"1\"\ndescription = \"two\\nlines\"":       "cannot span lines",
	} {
		path := filepath.Join(dir, "pyproject.toml")
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := LoadProject(path)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("LoadProject(%q) = %v, want an error containing %q", src, err, want)
		}
	}
}

func TestMetadata(t *testing.T) {
	p := &Project{
		Name: "repl-mcp", Version: "1.0", Description: "d", RequiresPython: ">=3.10", License: "MIT",
		Authors:      []Person{{Name: "a"}, {Name: "b", Email: "b@x"}, {Email: "c@x"}},
		Keywords:     []string{"k1", "k2"},
		Classifiers:  []string{"C :: 1"},
		Dependencies: []string{"x==1", `y==2; python_version < "3.11"`},
		URLs:         [][2]string{{"Homepage", "https://h"}},
		Readme:       "README.md", ReadmeText: "# Title",
	}
	want := `Metadata-Version: 2.4
Name: repl-mcp
Version: 1.0rc1
Summary: d
Keywords: k1,k2
Author: a
Author-email: b <b@x>, c@x
License-Expression: MIT
Classifier: C :: 1
Project-URL: Homepage, https://h
Requires-Python: >=3.10
Requires-Dist: x==1
Requires-Dist: y==2; python_version < "3.11"
Description-Content-Type: text/markdown

# Title
`
	if got := string(p.metadata("1.0rc1")); got != want {
		t.Errorf("metadata:\n%s\nwant:\n%s", got, want)
	}
}
