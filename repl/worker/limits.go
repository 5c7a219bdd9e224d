package worker

import (
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strconv"
	"strings"
)

// Limit is one limit of the worker, a line of replworker/limits.py.
type Limit struct {
	Name    string
	Value   float64
	IsInt   bool // written as an int literal
	Comment string
}

// limitLine is the one form a limit takes: NAME = LITERAL  # what it bounds, with a
// decimal int or float literal (underscores between digits allowed).
var limitLine = regexp.MustCompile(`^([A-Z][A-Z0-9_]*) = ([0-9](?:_?[0-9])*)(\.[0-9](?:_?[0-9])*)?  # (\S.*)$`)

// Limits reads the worker's limits table, replworker/limits.py, by name, for the tests
// that pin each limit to its twin on the Go side. The file is parsed strictly: a line
// that is neither blank, nor a comment, nor a limit is an error, so the table cannot
// hold anything those tests would miss.
func Limits() (map[string]Limit, error) {
	src, err := fs.ReadFile(packageFS, path.Join(packageDir, "limits.py"))
	if err != nil {
		return nil, err
	}
	return parseLimits(string(src))
}

func parseLimits(src string) (map[string]Limit, error) {
	limits := map[string]Limit{}
	for i, line := range strings.Split(strings.TrimSuffix(src, "\n"), "\n") {
		if line == "" || line == "#" || strings.HasPrefix(line, "# ") {
			continue
		}
		m := limitLine.FindStringSubmatch(line)
		if m == nil {
			return nil, fmt.Errorf("limits.py:%d: %q is not NAME = <int or float literal>  # comment", i+1, line)
		}
		if _, dup := limits[m[1]]; dup {
			return nil, fmt.Errorf("limits.py:%d: %s is defined twice", i+1, m[1])
		}
		value, err := strconv.ParseFloat(strings.ReplaceAll(m[2]+m[3], "_", ""), 64)
		if err != nil {
			return nil, fmt.Errorf("limits.py:%d: %w", i+1, err)
		}
		limits[m[1]] = Limit{Name: m[1], Value: value, IsInt: m[3] == "", Comment: m[4]}
	}
	return limits, nil
}
