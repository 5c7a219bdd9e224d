package wheel

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// testBins holds a small static Go program built for each shipped GOOS/GOARCH, by
// TestMain: real ELF and Mach-O files for Build and Verify, cheaper than repl-mcp.
var testBins = map[string]string{}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "wheel-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	err = buildTestBins(dir)
	code := 1
	if err == nil {
		code = m.Run()
	} else {
		fmt.Fprintln(os.Stderr, "building the test binaries:", err)
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

func buildTestBins(dir string) error {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("the tests cross-compile a small program and need the go command on PATH: %w", err)
	}
	src := filepath.Join(dir, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte("module hello\n\ngo 1.26\n"), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(src, "main.go"), []byte("package main\n\nfunc main() { println(\"hello\") }\n"), 0o644); err != nil {
		return err
	}
	for target := range platforms {
		goos, goarch, _ := strings.Cut(target, "/")
		out := filepath.Join(dir, goos+"_"+goarch, "hello")
		cmd := exec.Command(goCmd, "build", "-trimpath", "-ldflags=-s -w", "-o", out, ".")
		cmd.Dir = src
		cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0", "GOFLAGS=-mod=mod", "GOWORK=off")
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build for %s: %v\n%s", target, err, b)
		}
		testBins[target] = out
	}
	return nil
}
