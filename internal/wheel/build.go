package wheel

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/csv"
	"errors"
	"fmt"
	"github.com/iota-uz/repl-mcp/internal/atomicfile"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/iota-uz/repl-mcp/internal/pep440"
)

// Config says what Build makes.
type Config struct {
	Binary    string // the repl-mcp executable to ship
	Version   string // any form pep440.Normalize takes; empty means the pyproject's version
	Platform  string // a wheel platform tag, or several joined by dots
	OutDir    string // where the wheel goes; created if missing
	Pyproject string // the pyproject.toml whose [project] table becomes METADATA
}

// ScriptName is the command the wheel installs into the environment's bin directory.
const ScriptName = "repl-mcp"

// generator names this package in WHEEL. It carries no version, so a wheel depends only
// on its inputs.
const generator = "repl-mcp internal/wheel"

// zipTime is every entry's timestamp: the earliest a zip file can hold.
var zipTime = time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)

// platformListRE is one or more platform tags joined by dots.
var platformListRE = regexp.MustCompile(`^[a-z0-9_]+(\.[a-z0-9_]+)*$`)

// file is one archive entry.
type file struct {
	name string
	data []byte
	mode fs.FileMode
}

// Build writes repl_mcp-<version>-py3-none-<platform>.whl into cfg.OutDir and returns
// its path. The same inputs always give the same bytes.
func Build(cfg Config) (string, error) {
	if cfg.Binary == "" || cfg.Platform == "" || cfg.OutDir == "" || cfg.Pyproject == "" {
		return "", errors.New("wheel.Build: Binary, Platform, OutDir and Pyproject are required")
	}
	if !platformListRE.MatchString(cfg.Platform) {
		return "", fmt.Errorf("platform %q is not a wheel platform tag (like %s)", cfg.Platform, platforms["linux/amd64"])
	}
	for _, tag := range strings.Split(cfg.Platform, ".") {
		if _, err := parsePlatformTag(tag); err != nil {
			return "", err
		}
	}
	proj, err := LoadProject(cfg.Pyproject)
	if err != nil {
		return "", err
	}
	v := cfg.Version
	if v == "" {
		v = proj.Version
	}
	if v, err = pep440.Normalize(v); err != nil {
		return "", err
	}
	bin, err := os.ReadFile(cfg.Binary)
	if err != nil {
		return "", err
	}
	if len(bin) == 0 {
		return "", fmt.Errorf("%s is empty", cfg.Binary)
	}

	dist := distName(proj.Name)
	distInfo := dist + "-" + v + ".dist-info/"
	files := []file{
		{dist + "-" + v + ".data/scripts/" + ScriptName, bin, 0o755},
		{distInfo + "METADATA", proj.metadata(v), 0o644},
		{distInfo + "WHEEL", wheelFile(cfg.Platform), 0o644},
	}
	sort.Slice(files, func(i, j int) bool { return files[i].name < files[j].name })
	record, err := recordFile(files, distInfo+"RECORD")
	if err != nil {
		return "", err
	}
	files = append(files, file{distInfo + "RECORD", record, 0o644})

	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range files {
		h := &zip.FileHeader{Name: f.name, Method: zip.Deflate, Modified: zipTime}
		h.SetMode(f.mode)
		w, err := zw.CreateHeader(h)
		if err != nil {
			return "", err
		}
		if _, err := w.Write(f.data); err != nil {
			return "", err
		}
	}
	if err := zw.Close(); err != nil {
		return "", err
	}

	if err := os.MkdirAll(cfg.OutDir, 0o755); err != nil {
		return "", err
	}
	out := filepath.Join(cfg.OutDir, fmt.Sprintf("%s-%s-py3-none-%s.whl", dist, v, cfg.Platform))
	if err := atomicfile.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		return "", err
	}
	return out, nil
}

// separatorRE is a run of the characters PEP 503 treats as one separator.
var separatorRE = regexp.MustCompile(`[-_.]+`)

// distName is a project name as it appears in wheel file and directory names.
func distName(name string) string {
	return separatorRE.ReplaceAllString(strings.ToLower(name), "_")
}

func wheelFile(platform string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "Wheel-Version: 1.0\nGenerator: %s\nRoot-Is-Purelib: false\n", generator)
	for _, t := range expandTags("py3", "none", platform) {
		fmt.Fprintf(&b, "Tag: %s\n", t)
	}
	return []byte(b.String())
}

// recordFile renders RECORD: path, sha256 and size of each file, and a row for RECORD
// itself with neither.
func recordFile(files []file, self string) ([]byte, error) {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	for _, f := range files {
		if err := w.Write([]string{f.name, "sha256=" + digest(f.data), strconv.Itoa(len(f.data))}); err != nil {
			return nil, err
		}
	}
	if err := w.Write([]string{self, "", ""}); err != nil {
		return nil, err
	}
	w.Flush()
	return buf.Bytes(), w.Error()
}

// digest is the RECORD form of a sha256: urlsafe base64 without padding.
func digest(data []byte) string {
	sum := sha256.Sum256(data)
	return base64.RawURLEncoding.EncodeToString(sum[:])
}
