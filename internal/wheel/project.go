package wheel

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Project is the [project] table of a pyproject.toml, the part that becomes METADATA.
type Project struct {
	Name           string
	Version        string // as written; Build converts it with PEP440
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
type Person struct{ Name, Email string }

// projectKeys are the [project] keys LoadProject understands; any other is an error,
// so that metadata is never silently dropped.
var projectKeys = map[string]bool{
	"name": true, "version": true, "description": true, "requires-python": true,
	"license": true, "readme": true, "authors": true,
	"keywords": true, "classifiers": true, "dependencies": true, "urls": true,
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
	doc, err := parseTOML(string(src))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	pt, ok := doc.vals["project"].(*tomlTable)
	if !ok {
		return nil, fmt.Errorf("%s: no [project] table", path)
	}
	p, err := projectFrom(pt)
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

func projectFrom(t *tomlTable) (*Project, error) {
	var unknown []string
	for _, k := range t.keys {
		if !projectKeys[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, fmt.Errorf("unsupported keys %s (internal/wheel does not turn them into METADATA)", strings.Join(unknown, ", "))
	}
	p := &Project{}
	var errs []error
	str := func(key string, dst *string, required bool) {
		switch v := t.vals[key].(type) {
		case string:
			*dst = v
		case nil:
			if required {
				errs = append(errs, fmt.Errorf("%s is required", key))
			}
		default:
			errs = append(errs, fmt.Errorf("%s must be a string", key))
		}
	}
	list := func(key string, dst *[]string) {
		v, ok := t.vals[key]
		if !ok {
			return
		}
		arr, ok := v.([]any)
		if !ok {
			errs = append(errs, fmt.Errorf("%s must be an array of strings", key))
			return
		}
		for _, e := range arr {
			s, ok := e.(string)
			if !ok {
				errs = append(errs, fmt.Errorf("%s must be an array of strings", key))
				return
			}
			*dst = append(*dst, s)
		}
	}
	str("name", &p.Name, true)
	str("version", &p.Version, true)
	str("description", &p.Description, false)
	str("requires-python", &p.RequiresPython, false)
	str("license", &p.License, false)
	str("readme", &p.Readme, false)
	list("keywords", &p.Keywords)
	list("classifiers", &p.Classifiers)
	list("dependencies", &p.Dependencies)
	if people, err := persons(t.vals["authors"]); err != nil {
		errs = append(errs, fmt.Errorf("authors: %w", err))
	} else {
		p.Authors = people
	}
	if u, ok := t.vals["urls"]; ok {
		ut, ok := u.(*tomlTable)
		if !ok {
			errs = append(errs, errors.New("urls must be a table"))
		} else {
			for _, k := range ut.keys {
				s, ok := ut.vals[k].(string)
				if !ok {
					errs = append(errs, fmt.Errorf("urls.%s must be a string", k))
					continue
				}
				p.URLs = append(p.URLs, [2]string{k, s})
			}
		}
	}
	if p.Name != "" && !nameRE.MatchString(p.Name) {
		errs = append(errs, fmt.Errorf("name %q is not a valid distribution name", p.Name))
	}
	if p.Version != "" {
		if _, err := PEP440(p.Version); err != nil {
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

func persons(v any) ([]Person, error) {
	if v == nil {
		return nil, nil
	}
	arr, ok := v.([]any)
	if !ok {
		return nil, errors.New("must be an array of tables")
	}
	var out []Person
	for _, e := range arr {
		t, ok := e.(*tomlTable)
		if !ok {
			return nil, errors.New("must be an array of tables")
		}
		var p Person
		for _, k := range t.keys {
			s, ok := t.vals[k].(string)
			switch {
			case !ok:
				return nil, fmt.Errorf("%s must be a string", k)
			case k == "name":
				p.Name = s
			case k == "email":
				p.Email = s
			default:
				return nil, fmt.Errorf("unknown key %q", k)
			}
		}
		out = append(out, p)
	}
	return out, nil
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
