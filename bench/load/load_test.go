package main

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iota-uz/repl-mcp/internal/pythons"
)

func str(s string) *string { return &s }

// TestCheckTellsWrongAnswers: each kind's right answer passes, and an answer that is
// another client's, another cell's or incomplete is wrong.
func TestCheckTellsWrongAnswers(t *testing.T) {
	right := map[kind]answer{
		kindValue:  {Success: true, ReturnValue: str("21")},
		kindStart:  {Success: true, ReturnValue: str("3"), Done: true},
		kindString: {Success: true, ReturnValue: str(`"c1-3"`)},
		kindPrint:  {Success: true, Stdout: "c1-3\n"},
		kindError:  {IsError: true, Error: str("Traceback ...\nValueError: c1-3")},
		kindImage:  {Success: true, Images: 1},
	}
	var art answer
	art.Success, art.Truncated.Stdout, art.Stdout = true, true, "xx[... cut ...]\nxxc1-3\n"
	art.OutputArtifacts.Stdout.ID = "a1"
	right[kindArtifact] = art
	for k, a := range right {
		if got := check(k, 3, "c1-3", a); got != "" {
			t.Errorf("%s: the right answer is wrong: %s", kindNames[k], got)
		}
	}
	wrong := map[kind]answer{
		kindValue:  {Success: true, ReturnValue: str("28")},
		kindStart:  {Success: false, ReturnValue: str("3")},
		kindString: {Success: true, ReturnValue: str(`"c2-3"`)},
		kindPrint:  {Success: true, Stdout: "c1-3\nc2-3\n"},
		kindError:  {IsError: true, Error: str("ValueError: c2-3")},
		kindImage:  {Success: true},
	}
	art.OutputArtifacts.Stdout.ID = ""
	wrong[kindArtifact] = art
	for k, a := range wrong {
		if got := check(k, 3, "c1-3", a); got == "" {
			t.Errorf("%s: a wrong answer passed: %+v", kindNames[k], a)
		}
	}
}

// TestLoadRunsOnThisMachine builds the binary and runs the harness small: every
// scenario kind (clients with sessions of their own and two clients to a session),
// the soak, no wrong answer, and the report's tables.
func TestLoadRunsOnThisMachine(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and starts servers: not in -short")
	}
	bin := filepath.Join(t.TempDir(), "repl-mcp")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "github.com/iota-uz/repl-mcp")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	python := pythons.ForTest(t)[0].Path
	out := filepath.Join(t.TempDir(), "report.txt")
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	err := run(ctx, []string{"-binary", bin, "-python", python, "-clients", "2,34", "-cells", "10", "-soak", "30", "-out", out}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("load: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	report := stdout.String()
	for _, want := range []string{"| 2 | 2 | 20 |", "| 34 | 17 | 340 |", "stdio soak: 30 mixed cells", "| 30 |"} {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %q:\n%s", want, report)
		}
	}
}
