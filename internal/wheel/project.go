package wheel

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/iota-uz/repl-mcp/internal/pep440"
)

// Project is the [project] table of a pyproject.toml, the part that becomes METADATA.
type Project struct {
	Name           string
	Version        string // as written; Build converts it with pep440.Normalize
	Description    string
	RequiresPython string
	License        string // an SPDX expression
	Readme         string // the readme file, relative to the pyproject's directory
	ReadmeText     string // its contents
	Authors        []Person
	Keywords       []string
	Classifiers    []string
	Dependencies   []string
	URLs           [][2]string // label, URL, in file order
}

// Person is an entry of [project].authors.
type Person struct {
	Name  string `toml:"name"`
	Email string `toml:"email"`
}

// pyproject is the part of a pyproject.toml that LoadProject decodes. The keys of
// [project] it knows are the fields of projectTable; any other is an error, so that
// metadata is never silently dropped.
type pyproject struct {
	Project projectTable `toml:"project"`
}

type projectTable struct {
	Name           string            `toml:"name"`
	Version        string            `toml:"version"`
	Description    string            `toml:"description"`
	RequiresPython string            `toml:"requires-python"`
	License        string            `toml:"license"`
	Readme         string            `toml:"readme"`
	Authors        []Person          `toml:"authors"`
	Keywords       []string          `toml:"keywords"`
	Classifiers    []string          `toml:"classifiers"`
	Dependencies   []string          `toml:"dependencies"`
	URLs           map[string]string `toml:"urls"`
}

// nameRE is a valid distribution name (PEP 508).
var nameRE = regexp.MustCompile(`^(?i)[a-z0-9]([a-z0-9._-]*[a-z0-9])?$`)

// LoadProject reads the [project] table of the pyproject.toml at path, and the readme
// file it names. Other tables ([build-system], [tool.*]) are parsed and ignored.
func LoadProject(path string) (*Project, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc pyproject
	md, err := toml.Decode(string(src), &doc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if !md.IsDefined("project") {
		return nil, fmt.Errorf("%s: no [project] table", path)
	}
	p, err := projectFrom(&doc.Project, md)
	if err != nil {
		return nil, fmt.Errorf("%s: [project]: %w", path, err)
	}
	if p.Readme != "" {
		text, err := os.ReadFile(filepath.Join(filepath.Dir(path), filepath.FromSlash(p.Readme)))
		if err != nil {
			return nil, fmt.Errorf("%s: readme: %w", path, err)
		}
		p.ReadmeText = string(text)
	}
	return p, nil
}

// projectFrom checks the decoded [project] table t, with md the decoding's metadata:
// which keys the file has, in file order, and which of them nothing decoded.
func projectFrom(t *projectTable, md toml.MetaData) (*Project, error) {
	var errs []error
	unknown := map[string]bool{}
	for _, k := range md.Undecoded() {
		if len(k) == 2 && k[0] == "project" {
			unknown[k[1]] = true
		}
	}
	if len(unknown) > 0 {
		keys := slices.Sorted(maps.Keys(unknown))
		errs = append(errs, fmt.Errorf("unsupported keys %s (internal/wheel does not turn them into METADATA)", strings.Join(keys, ", ")))
	}
	for _, k := range md.Undecoded() {
		if len(k) > 2 && k[0] == "project" && !unknown[k[1]] {
			errs = append(errs, fmt.Errorf("%s: unknown key %q", strings.Join(k[1:len(k)-1], "."), k[len(k)-1]))
		}
	}
	for _, key := range []string{"name", "version"} {
		if !md.IsDefined("project", key) {
			errs = append(errs, fmt.Errorf("%s is required", key))
		}
	}
	p := &Project{
		Name: t.Name, Version: t.Version, Description: t.Description,
		RequiresPython: t.RequiresPython, License: t.License, Readme: t.Readme,
		Authors: t.Authors, Keywords: t.Keywords, Classifiers: t.Classifiers, Dependencies: t.Dependencies,
	}
	// The TOML library leaves a map alone when the value is no table.
	if typ := md.Type("project", "urls"); typ != "" && typ != "Hash" {
		errs = append(errs, errors.New("urls must be a table"))
	}
	// Project-URL fields, in the order the file gives them.
	for _, k := range md.Keys() {
		if len(k) == 3 && k[0] == "project" && k[1] == "urls" {
			p.URLs = append(p.URLs, [2]string{k[2], t.URLs[k[2]]})
		}
	}
	if p.Name != "" && !nameRE.MatchString(p.Name) {
		errs = append(errs, fmt.Errorf("name %q is not a valid distribution name", p.Name))
	}
	if p.Version != "" {
		if _, err := pep440.Normalize(p.Version); err != nil {
			errs = append(errs, err)
		}
	}
	for _, s := range append(append([]string{p.Description, p.RequiresPython, p.License}, p.Classifiers...), p.Dependencies...) {
		if strings.ContainsAny(s, "\r\n") {
			errs = append(errs, fmt.Errorf("%q: a METADATA field cannot span lines", s))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return p, nil
}

// metadata renders the core metadata (METADATA) for version v.
func (p *Project) metadata(v string) []byte {
	var b strings.Builder
	field := func(k, v string) {
		if v != "" {
			fmt.Fprintf(&b, "%s: %s\n", k, v)
		}
	}
	field("Metadata-Version", "2.4")
	field("Name", p.Name)
	field("Version", v)
	field("Summary", p.Description)
	if len(p.Keywords) > 0 {
		field("Keywords", strings.Join(p.Keywords, ","))
	}
	var names, emails []string
	for _, a := range p.Authors {
		switch {
		case a.Email == "":
			names = append(names, a.Name)
		case a.Name == "":
			emails = append(emails, a.Email)
		default:
			emails = append(emails, fmt.Sprintf("%s <%s>", a.Name, a.Email))
		}
	}
	field("Author", strings.Join(names, ", "))
	field("Author-email", strings.Join(emails, ", "))
	field("License-Expression", p.License)
	for _, c := range p.Classifiers {
		field("Classifier", c)
	}
	for _, u := range p.URLs {
		field("Project-URL", u[0]+", "+u[1])
	}
	field("Requires-Python", p.RequiresPython)
	for _, d := range p.Dependencies {
		field("Requires-Dist", d)
	}
	if p.Readme != "" {
		field("Description-Content-Type", readmeType(p.Readme))
		b.WriteString("\n")
		b.WriteString(p.ReadmeText)
		if !strings.HasSuffix(p.ReadmeText, "\n") {
			b.WriteString("\n")
		}
	}
	return []byte(b.String())
}

func readmeType(name string) string {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".md", ".markdown":
		return "text/markdown"
	case ".rst":
		return "text/x-rst"
	default:
		return "text/plain"
	}
}
