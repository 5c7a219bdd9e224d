package wheel

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseTOML(t *testing.T) {
	doc, err := parseTOML(`# a comment
top = "x" # trailing comment
[a]
basic = "tab\there \"q\" \u00e9 \\"
literal = 'C:\path'
multi = """
line one
line two \
    joined"""
multiLiteral = '''
raw \n ''quoted'' '''
num = 42
flag = true
arr = [
  "one",  # comment inside
  'two',
]
nested = [[1, 2], ["x"]]
inline = { name = "n", email = "e@x", sub.key = "dotted" }
dotted.key = "v"
"quoted key" = "q"

[a.child]
k = "c"

[[list]]
i = 1
[[list]]
i = 2
`)
	if err != nil {
		t.Fatal(err)
	}
	a := doc.vals["a"].(*tomlTable)
	for key, want := range map[string]any{
		"basic":        "tab\there \"q\" é \\",
		"literal":      `C:\path`,
		"multi":        "line one\nline two joined",
		"multiLiteral": "raw \\n ''quoted'' ",
		"num":          scalar("42"),
		"flag":         scalar("true"),
		"arr":          []any{"one", "two"},
		"quoted key":   "q",
	} {
		if got := a.vals[key]; !reflect.DeepEqual(got, want) {
			t.Errorf("a.%s = %#v, want %#v", key, got, want)
		}
	}
	if got := doc.vals["top"]; got != "x" {
		t.Errorf("top = %#v", got)
	}
	if got := a.vals["dotted"].(*tomlTable).vals["key"]; got != "v" {
		t.Errorf("a.dotted.key = %#v", got)
	}
	in := a.vals["inline"].(*tomlTable)
	if in.vals["name"] != "n" || in.vals["sub"].(*tomlTable).vals["key"] != "dotted" {
		t.Errorf("inline table = %#v", in.vals)
	}
	if got := a.vals["child"].(*tomlTable).vals["k"]; got != "c" {
		t.Errorf("a.child.k = %#v", got)
	}
	if l := doc.vals["list"].(*tomlArrayOfTables).tables; len(l) != 2 || l[1].vals["i"] != scalar("2") {
		t.Errorf("[[list]] = %#v", l)
	}
	if !reflect.DeepEqual(a.keys[:3], []string{"basic", "literal", "multi"}) {
		t.Errorf("key order = %v", a.keys)
	}
}

func TestParseTOMLErrors(t *testing.T) {
	for src, want := range map[string]string{
		"a = 1\na = 2":                  "line 2: key \"a\" defined twice",
		"[t]\n[t]":                      "table [t] defined twice",
		"a = \"open":                    "unterminated string",
		"a = [1, 2":                     "unterminated array",
		"a = \"x\" b = 1":               "unexpected 'b'",
		"a = 1979-05-27 07:32:00Z":      "unexpected '0'",
		"a = {x = 1}\n[a]":              "cannot be extended",
		"a = \"bad \\q\"":               "bad escape",
		"= 1":                           "expected a key",
		"a = \"line\nbreak\"":           "newline in a single-line string",
		"a = \"x\"\n[a]":                "not a table",
		"a = [1 2]":                     "expected ',' or ']'",
		"a = $":                         "unsupported value",
		"a = '''never closed":           "unterminated string",
		"a = \"\\uD800\"":               "bad unicode escape",
		"a = {x = 1\n}":                 "expected ',' or '}'",
		"[a\nb]":                        "expected ']'",
		"a = \"\xff\"":                  "not UTF-8",
		"a.b = 1\na = 2":                "defined twice",
		"a = \"ok\"\n  # fine\nb = @no": "line 3: unsupported value",
	} {
		_, err := parseTOML(src)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parseTOML(%q) = %v, want an error containing %q", src, err, want)
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
	if _, err := PEP440(p.Version); err != nil {
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
		"[project]\nname = \"x\"\nversion = \"1\"\ndependencies = \"httpx\"":            "dependencies must be an array",
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
