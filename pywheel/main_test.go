package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/iota-uz/repl-mcp/internal/pep440"
	"github.com/iota-uz/repl-mcp/internal/wheel"
)

// hello builds a small static linux/amd64 program: a real ELF file for pywheel to wrap.
func hello(t *testing.T) string {
	t.Helper()
	return helloFor(t, "linux", "amd64", "package main\n\nfunc main() { println(\"hello\") }\n")
}

// helloFor builds the program main for goos/goarch.
func helloFor(t *testing.T, goos, goarch, main string) string {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("this test cross-compiles a small program and needs the go command on PATH: %v", err)
	}
	src := t.TempDir()
	for name, text := range map[string]string{
		"go.mod":  "module hello\n\ngo 1.26\n",
		"main.go": main,
	} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(t.TempDir(), "repl-mcp")
	cmd := exec.Command(goCmd, "build", "-trimpath", "-o", out, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0", "GOWORK=off")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	return out
}

func TestBuildAndVerify(t *testing.T) {
	bin := hello(t)
	out := t.TempDir()
	const linuxAmd64 = "repl_mcp-3.2.0rc1-py3-none-manylinux_2_17_x86_64.musllinux_1_1_x86_64.whl"
	for _, platform := range []string{"", "linux/amd64", "manylinux_2_17_x86_64.musllinux_1_1_x86_64"} {
		var stdout bytes.Buffer
		args := []string{"build", "--binary", bin, "--version", "v3.2.0-rc.1", "--out", out, "--pyproject", "../pyproject.toml"}
		if platform != "" {
			args = append(args, "--platform", platform)
		}
		if err := run(args, &stdout); err != nil {
			t.Fatalf("--platform %q: %v", platform, err)
		}
		want := filepath.Join(out, linuxAmd64) + "\t"
		if !strings.HasPrefix(stdout.String(), want) || !strings.HasSuffix(stdout.String(), " MiB\n") {
			t.Errorf("--platform %q: build printed %q, want %q and a size", platform, stdout.String(), want)
		}
	}
	var stdout bytes.Buffer
	w := filepath.Join(out, linuxAmd64)
	if err := run([]string{"verify", w}, &stdout); err != nil {
		t.Fatal(err)
	}
	if stdout.String() != "ok\t"+w+"\n" {
		t.Errorf("verify printed %q", stdout.String())
	}

	// A wheel whose tag lies about the binary fails, named, and the good one still passes.
	stdout.Reset()
	if err := run([]string{"build", "--binary", bin, "--platform", "linux/arm64", "--version", "3.2.0rc1", "--out", out, "--pyproject", "../pyproject.toml"}, &stdout); err != nil {
		t.Fatal(err)
	}
	bad := strings.Split(stdout.String(), "\t")[0]
	stdout.Reset()
	err := run([]string{"verify", w, bad}, &stdout)
	if err == nil || !strings.Contains(err.Error(), "1 of 2 wheels failed") || !strings.Contains(err.Error(), "but the binary is for linux/amd64") {
		t.Errorf("verify of a mistagged wheel: %v", err)
	}
	if stdout.String() != "ok\t"+w+"\n" {
		t.Errorf("verify printed %q", stdout.String())
	}
}

func TestPEP440Command(t *testing.T) {
	var stdout bytes.Buffer
	if err := run([]string{"pep440", "v3.2.0-beta.2"}, &stdout); err != nil || stdout.String() != "3.2.0b2\n" {
		t.Errorf("pep440 v3.2.0-beta.2 printed %q, %v", stdout.String(), err)
	}
	if err := run([]string{"pep440", "latest"}, &stdout); err == nil || errors.Is(err, errUsage) {
		t.Errorf("pep440 latest: %v, want a version error", err)
	}
}

// TestVersionCommand: the checkout's version is pyproject.toml's, as a release or as a
// development build of it, and is what Checkout computes (its own tests cover the forms).
func TestVersionCommand(t *testing.T) {
	var stdout bytes.Buffer
	if err := run([]string{"version", "--dir", "..", "--pyproject", "../pyproject.toml"}, &stdout); err != nil {
		t.Fatal(err)
	}
	p, err := wheel.LoadProject("../pyproject.toml")
	if err != nil {
		t.Fatal(err)
	}
	got := strings.TrimSpace(stdout.String())
	if got != p.Version && !strings.HasPrefix(got, p.Version+".dev") {
		t.Errorf("version printed %q, want %s or %s.dev...", got, p.Version, p.Version)
	}
	if v, err := pep440.Normalize(got); err != nil || v != got {
		t.Errorf("version printed %q, not normalized PEP 440 (%q, %v)", got, v, err)
	}
}

// TestDepsCommand: every pinned dependency, markers dropped.
func TestDepsCommand(t *testing.T) {
	var stdout bytes.Buffer
	if err := run([]string{"deps", "--pyproject", "../pyproject.toml"}, &stdout); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	p, err := wheel.LoadProject("../pyproject.toml")
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != len(p.Dependencies) {
		t.Fatalf("deps printed %d lines, pyproject.toml has %d dependencies", len(lines), len(p.Dependencies))
	}
	for _, l := range lines {
		if !strings.Contains(l, "==") || strings.ContainsAny(l, "; ") {
			t.Errorf("deps line %q is not a bare pin", l)
		}
	}
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{"frobnicate"},
		{"build"},
		{"build", "--binary", "x", "extra"},
		{"build", "--nope"},
		{"verify"},
		{"pep440"},
		{"version", "extra"},
		{"deps", "--nope"},
	} {
		if err := run(args, &bytes.Buffer{}); !errors.Is(err, errUsage) {
			t.Errorf("run(%q) = %v, want a usage error", args, err)
		}
	}
	bin := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := run([]string{"build", "--binary", bin, "--pyproject", "../pyproject.toml", "--out", t.TempDir()}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "name its platform") {
		t.Errorf("build of a script without --platform: %v", err)
	}
	if err := run([]string{"build", "--binary", bin, "--platform", "windows/amd64", "--out", t.TempDir()}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "no wheel platform for windows/amd64") {
		t.Errorf("build for windows: %v", err)
	}
}

// TestBuildNamesTheBinarysVersion: without --version the wheel carries the version its
// binary says it is (repl-mcp --version), never pyproject.toml's bare release for a
// development build; a binary that cannot run here needs --version.
func TestBuildNamesTheBinarysVersion(t *testing.T) {
	const dev = "0.1.0.dev20261201135254+ge0c66b0d7aaf"
	says := "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"repl-mcp " + dev + "\") }\n"
	goarch := map[string]string{"amd64": "amd64", "arm64": "arm64"}[runtime.GOARCH]
	if runtime.GOOS != "linux" || goarch == "" {
		t.Skipf("the test runs a linux binary; this is %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	out := t.TempDir()
	var stdout bytes.Buffer
	if err := run([]string{"build", "--binary", helloFor(t, "linux", goarch, says), "--out", out, "--pyproject", "../pyproject.toml"}, &stdout); err != nil {
		t.Fatal(err)
	}
	if name := filepath.Base(strings.Split(stdout.String(), "\t")[0]); !strings.HasPrefix(name, "repl_mcp-"+dev+"-py3-none-") {
		t.Errorf("wheel %s, want version %s", name, dev)
	}
	other := map[string]string{"amd64": "arm64", "arm64": "amd64"}[goarch]
	err := run([]string{"build", "--binary", helloFor(t, "linux", other, says), "--out", out, "--pyproject", "../pyproject.toml"}, &stdout)
	if err == nil || !strings.Contains(err.Error(), "pass --version") {
		t.Errorf("a linux/%s binary without --version: %v", other, err)
	}
	err = run([]string{"build", "--binary", hello(t), "--out", out, "--pyproject", "../pyproject.toml"}, &stdout)
	if goarch == "amd64" && (err == nil || !strings.Contains(err.Error(), `not "repl-mcp VERSION"`)) {
		t.Errorf("a binary that does not say its version: %v", err)
	}
}
