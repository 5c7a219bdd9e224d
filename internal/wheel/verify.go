package wheel

import (
	"archive/zip"
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/iota-uz/repl-mcp/internal/pep440"
)

// The kinds of problem Verify reports; each error it returns wraps one or more of them.
var (
	ErrLayout   = errors.New("bad wheel layout")
	ErrRecord   = errors.New("RECORD does not match the archive")
	ErrTag      = errors.New("bad wheel tag")
	ErrMode     = errors.New("bad script mode")
	ErrMetadata = errors.New("bad METADATA")
)

// buildTagRE is a wheel's optional build tag.
var buildTagRE = regexp.MustCompile(`^[0-9][0-9a-zA-Z_.]*$`)

// Verify checks a repl-mcp wheel as an installer should: the file name's parts, that
// RECORD lists every file with its right sha256 and size and nothing else, that WHEEL's
// Tag lines are exactly the file name's tags, that METADATA names the same project and
// version, that every script has mode 0755, and, when the repl-mcp script is an ELF or
// Mach-O executable, that it runs where the platform tags say. It returns every problem
// found, joined.
func Verify(wheelPath string) error {
	base := filepath.Base(wheelPath)
	var errs []error
	add := func(kind error, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %w: %s", base, kind, fmt.Sprintf(format, args...)))
	}
	done := func() error { return errors.Join(errs...) }

	// The file name: name-version(-build)?-py-abi-platform.whl.
	parts := strings.Split(strings.TrimSuffix(base, ".whl"), "-")
	if !strings.HasSuffix(base, ".whl") || (len(parts) != 5 && len(parts) != 6) {
		add(ErrLayout, "the file name is not name-version-py-abi-platform.whl")
		return done()
	}
	name, version := parts[0], parts[1]
	if len(parts) == 6 && !buildTagRE.MatchString(parts[2]) {
		add(ErrLayout, "the file name's build tag %q does not start with a digit", parts[2])
	}
	py, abi, plat := parts[len(parts)-3], parts[len(parts)-2], parts[len(parts)-1]
	if v, err := pep440.Normalize(version); err != nil || v != version {
		add(ErrLayout, "the file name's version %q is not a normalized PEP 440 version", version)
	}
	if py != "py3" || abi != "none" {
		add(ErrTag, "the file name's tags are %s-%s: a binary-only repl-mcp wheel is py3-none", py, abi)
	}
	var platTags []platformTag
	for _, t := range strings.Split(plat, ".") {
		pt, err := parsePlatformTag(t)
		if err != nil {
			add(ErrTag, "%v", err)
			continue
		}
		platTags = append(platTags, pt)
	}

	zr, err := zip.OpenReader(wheelPath)
	if err != nil {
		add(ErrLayout, "not a zip file: %v", err)
		return done()
	}
	defer zr.Close()

	distInfo := name + "-" + version + ".dist-info/"
	dataDir := name + "-" + version + ".data/"
	recordName := distInfo + "RECORD"
	contents := map[string][]byte{}
	entries := map[string]*zip.File{}
	var order []string
	for _, f := range zr.File {
		n := f.Name
		switch {
		case entries[n] != nil:
			add(ErrLayout, "%s is in the archive twice", n)
			continue
		case strings.Contains(n, `\`) || path.IsAbs(n) || slices.Contains(strings.Split(n, "/"), ".."):
			add(ErrLayout, "unsafe entry name %q", n)
			continue
		case !strings.HasPrefix(n, distInfo) && !strings.HasPrefix(n, dataDir):
			add(ErrLayout, "%s is outside %s and %s", n, distInfo, dataDir)
		}
		entries[n] = f
		if strings.HasSuffix(n, "/") {
			continue
		}
		data, err := readEntry(f)
		if err != nil {
			add(ErrLayout, "%s: %v", n, err)
			continue
		}
		contents[n] = data
		order = append(order, n)
	}
	for _, req := range []string{"METADATA", "WHEEL", "RECORD"} {
		if _, ok := contents[distInfo+req]; !ok {
			add(ErrLayout, "no %s%s", distInfo, req)
		}
	}

	// RECORD: every file, once, with its sha256 and size; RECORD itself without.
	if record, ok := contents[recordName]; ok {
		r := csv.NewReader(bytes.NewReader(record))
		r.FieldsPerRecord = 3
		listed := map[string]bool{}
		for {
			row, err := r.Read()
			if err == io.EOF {
				break
			}
			if err != nil {
				add(ErrRecord, "unreadable RECORD: %v", err)
				break
			}
			n, hash, size := row[0], row[1], row[2]
			if listed[n] {
				add(ErrRecord, "%s is listed twice", n)
				continue
			}
			listed[n] = true
			data, inArchive := contents[n]
			switch {
			case n == recordName:
				if hash != "" || size != "" {
					add(ErrRecord, "RECORD lists a hash or size for itself")
				}
			case !inArchive:
				add(ErrRecord, "%s is listed but not in the archive", n)
			case !strings.HasPrefix(hash, "sha256="):
				add(ErrRecord, "%s: hash %q is not sha256", n, hash)
			case hash != "sha256="+digest(data):
				add(ErrRecord, "%s: recorded %s, the file's is sha256=%s", n, hash, digest(data))
			case size != strconv.Itoa(len(data)):
				add(ErrRecord, "%s: recorded size %s, the file has %d bytes", n, size, len(data))
			}
		}
		for _, n := range order {
			if !listed[n] && n != recordName+".jws" && n != recordName+".p7s" {
				add(ErrRecord, "%s is not listed", n)
			}
		}
	}

	// WHEEL: its Tag lines are exactly the file name's tags.
	if w, ok := contents[distInfo+"WHEEL"]; ok {
		fields := headerFields(w)
		if v := first(fields["Wheel-Version"]); !strings.HasPrefix(v, "1.") {
			add(ErrLayout, "WHEEL: Wheel-Version is %q, want 1.x", v)
		}
		if v := first(fields["Root-Is-Purelib"]); v != "false" {
			add(ErrLayout, "WHEEL: Root-Is-Purelib is %q, want false for a platform wheel", v)
		}
		got := slices.Sorted(slices.Values(fields["Tag"]))
		want := slices.Sorted(slices.Values(expandTags(py, abi, plat)))
		if !slices.Equal(got, want) {
			add(ErrTag, "the file name says %s, WHEEL says %s", strings.Join(want, " "), orNone(got))
		}
	}

	// METADATA names the file name's project and version.
	if m, ok := contents[distInfo+"METADATA"]; ok {
		fields := headerFields(m)
		if first(fields["Metadata-Version"]) == "" {
			add(ErrMetadata, "no Metadata-Version")
		}
		if n := first(fields["Name"]); distName(n) != name {
			add(ErrMetadata, "Name is %q, the file name says %s", n, name)
		}
		if v := first(fields["Version"]); v != version {
			add(ErrMetadata, "Version is %q, the file name says %s", v, version)
		}
	}

	// Scripts: 0755 regular files; the repl-mcp one runs where the tags say.
	script := dataDir + "scripts/" + ScriptName
	if _, ok := entries[script]; !ok {
		add(ErrLayout, "no %s", script)
	}
	for _, n := range order {
		if strings.HasPrefix(n, dataDir+"scripts/") {
			if m := entries[n].Mode(); !m.IsRegular() || m.Perm() != 0o755 {
				add(ErrMode, "%s has mode %v, want -rwxr-xr-x (0755) or it installs without its execute bit", n, m)
			}
		}
	}
	if data, ok := contents[script]; ok {
		info, isExec, err := inspectExec(data)
		switch {
		case err != nil:
			add(ErrLayout, "%s: %v", script, err)
		case isExec:
			for _, pt := range platTags {
				if err := checkExec(info, pt); err != nil {
					add(ErrTag, "tagged %s but %v", pt.tag, err)
				}
			}
		}
	}
	return done()
}

// readEntry reads an archive entry whole; the zip reader checks its CRC-32 at the end.
func readEntry(f *zip.File) ([]byte, error) {
	rc, err := f.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// headerFields reads the "Key: value" lines of an email-style header, up to the first
// blank line.
func headerFields(data []byte) map[string][]string {
	out := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, len(data)+1)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			break
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			out[k] = append(out[k], strings.TrimSpace(v))
		}
	}
	return out
}

func first(vs []string) string {
	if len(vs) == 0 {
		return ""
	}
	return vs[0]
}

func orNone(tags []string) string {
	if len(tags) == 0 {
		return "no tags"
	}
	return strings.Join(tags, " ")
}
