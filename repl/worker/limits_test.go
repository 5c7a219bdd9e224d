package worker

import (
	"encoding/json"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/iota-uz/repl-mcp/internal/pythons"
)

func TestParseLimitsIsStrict(t *testing.T) {
	good := "# a comment\n#\n\nA = 1  # one\nB_2 = 1_048_576  # bytes\nC = 0.05  # seconds\n"
	limits, err := parseLimits(good)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Limit{
		"A":   {Name: "A", Value: 1, IsInt: true, Comment: "one"},
		"B_2": {Name: "B_2", Value: 1 << 20, IsInt: true, Comment: "bytes"},
		"C":   {Name: "C", Value: 0.05, Comment: "seconds"},
	}
	if len(limits) != len(want) {
		t.Fatalf("parsed %v", limits)
	}
	for name, l := range want {
		if limits[name] != l {
			t.Errorf("%s: %+v, want %+v", name, limits[name], l)
		}
	}
	for _, bad := range []string{
		"A = 1",                      // no comment
		"A = 1 # one",                // one space before the comment
		"A = 1 << 20  # shifted",     // an expression
		"A = -1  # negative",         // not a literal of the table
		"A = 1_  # trailing",         // not a Python literal
		"A = 1__0  # doubled",        // not a Python literal
		"A = 0x10  # hex",            // not decimal
		"A = 1e3  # exponent",        // not in the table's form
		"A = 'x'  # a string",        // not a number
		"a = 1  # lower case",        // not a constant's name
		"A, B = 1, 2  # two",         // two at once
		"A = 1  # one\nA = 2  # two", // defined twice
		"import os",                  // anything else
		`"""docstring"""`,            // anything else
		"    A = 1  # indented",      // anything else
		"#comment",                   // a comment without its space
	} {
		if limits, err := parseLimits(bad + "\n"); err == nil {
			t.Errorf("%q parsed as %v", bad, limits)
		}
	}
}

// The Go parse of the table and Python's import of it agree on every limit.
func TestLimitsAsPythonReadsThem(t *testing.T) {
	limits, err := Limits()
	if err != nil {
		t.Fatal(err)
	}
	py := pythons.ForTest(t)[0]
	script := `import json, sys; sys.path.insert(0, '.'); from replworker import limits
print(json.dumps({k: v for k, v in vars(limits).items() if k.isupper()}))`
	out, err := exec.CommandContext(t.Context(), py.Path, "-B", "-c", script).Output()
	if err != nil {
		t.Fatalf("import replworker.limits: %v", err)
	}
	var python map[string]json.RawMessage
	if err := json.Unmarshal(out, &python); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	if len(python) != len(limits) {
		t.Errorf("Python has %d limits, the Go parse %d", len(python), len(limits))
	}
	for name, value := range python {
		l, ok := limits[name]
		if !ok {
			t.Errorf("Python has %s, the Go parse has not", name)
		} else if got := formatPython(l); got != string(value) {
			t.Errorf("%s: Go reads %s, Python %s", name, got, value)
		}
	}
}

// formatPython writes a limit as Python's json.dumps does.
func formatPython(l Limit) string {
	if l.IsInt {
		return strconv.FormatInt(int64(l.Value), 10)
	}
	s := strconv.FormatFloat(l.Value, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}
