package wheel

import (
	"archive/zip"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var repoPyproject = filepath.Join("..", "..", "pyproject.toml")

// buildFor builds a wheel of the test binary for target into a fresh directory.
func buildFor(t *testing.T, target, version string) string {
	t.Helper()
	goos, goarch, _ := strings.Cut(target, "/")
	plat, err := PlatformFor(goos, goarch)
	if err != nil {
		t.Fatal(err)
	}
	w, err := Build(Config{Binary: testBins[target], Version: version, Platform: plat, OutDir: t.TempDir(), Pyproject: repoPyproject})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// readZip returns a wheel's entries in archive order and their contents.
func readZip(t *testing.T, path string) ([]*zip.File, map[string][]byte) {
	t.Helper()
	zr, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { zr.Close() })
	data := map[string][]byte{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		data[f.Name] = b
	}
	return zr.File, data
}

func TestPlatforms(t *testing.T) {
	for target, want := range map[string]string{
		"linux/amd64":  "manylinux_2_17_x86_64.musllinux_1_1_x86_64",
		"linux/arm64":  "manylinux_2_17_aarch64.musllinux_1_1_aarch64",
		"darwin/amd64": "macosx_12_0_x86_64",
		"darwin/arm64": "macosx_12_0_arm64",
	} {
		goos, goarch, _ := strings.Cut(target, "/")
		if got, err := PlatformFor(goos, goarch); err != nil || got != want {
			t.Errorf("PlatformFor(%s) = %q, %v; want %q", target, got, err, want)
		}
		if got, err := BinaryPlatform(testBins[target]); err != nil || got != want {
			t.Errorf("BinaryPlatform(%s binary) = %q, %v; want %q", target, got, err, want)
		}
	}
	for _, target := range [][2]string{{"windows", "amd64"}, {"linux", "386"}, {"freebsd", "arm64"}} {
		if got, err := PlatformFor(target[0], target[1]); err == nil || !strings.Contains(err.Error(), "repl-mcp ships") {
			t.Errorf("PlatformFor(%v) = %q, %v; want an error naming what ships", target, got, err)
		}
	}
	host, err := HostPlatform()
	if err != nil {
		t.Fatalf("HostPlatform on %s/%s: %v", runtime.GOOS, runtime.GOARCH, err)
	}
	if want := platforms[runtime.GOOS+"/"+runtime.GOARCH]; host != want {
		t.Errorf("HostPlatform() = %q, want %q", host, want)
	}
	script := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := BinaryPlatform(script); err == nil || !strings.Contains(err.Error(), "neither an ELF nor a Mach-O") {
		t.Errorf("BinaryPlatform(a shell script) = %v, want an error", err)
	}
}

// TestBuildLayout pins the wheel for every shipped platform: its name, the entries in
// order with their modes, WHEEL's tags, RECORD, and that Verify accepts it.
func TestBuildLayout(t *testing.T) {
	for target := range platforms {
		t.Run(strings.ReplaceAll(target, "/", "_"), func(t *testing.T) {
			w := buildFor(t, target, "")
			goos, goarch, _ := strings.Cut(target, "/")
			plat, _ := PlatformFor(goos, goarch)
			if want := "repl_mcp-0.1.0-py3-none-" + plat + ".whl"; filepath.Base(w) != want {
				t.Errorf("wheel %s, want %s", filepath.Base(w), want)
			}
			if err := Verify(w); err != nil {
				t.Fatalf("Verify: %v", err)
			}
			files, data := readZip(t, w)
			var names []string
			for _, f := range files {
				names = append(names, f.Name)
				want := os.FileMode(0o644)
				if strings.Contains(f.Name, ".data/scripts/") {
					want = 0o755
				}
				if f.Mode() != want {
					t.Errorf("%s: mode %v, want %v", f.Name, f.Mode(), want)
				}
				if !f.Modified.Equal(zipTime) {
					t.Errorf("%s: modified %v, want %v", f.Name, f.Modified, zipTime)
				}
			}
			wantNames := []string{
				"repl_mcp-0.1.0.data/scripts/repl-mcp",
				"repl_mcp-0.1.0.dist-info/METADATA",
				"repl_mcp-0.1.0.dist-info/WHEEL",
				"repl_mcp-0.1.0.dist-info/RECORD",
			}
			if !slices.Equal(names, wantNames) {
				t.Errorf("entries %v, want %v", names, wantNames)
			}
			bin, err := os.ReadFile(testBins[target])
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(data[wantNames[0]], bin) {
				t.Error("the script is not the binary")
			}
			wheelText := string(data[wantNames[2]])
			for _, tag := range strings.Split(plat, ".") {
				if !strings.Contains(wheelText, "\nTag: py3-none-"+tag+"\n") {
					t.Errorf("WHEEL lacks the tag py3-none-%s:\n%s", tag, wheelText)
				}
			}
			if !strings.Contains(wheelText, "Root-Is-Purelib: false\n") {
				t.Errorf("WHEEL:\n%s", wheelText)
			}
			record := string(data[wantNames[3]])
			wantRow := wantNames[0] + ",sha256=" + digest(bin) + "," + strconv.Itoa(len(bin)) + "\n"
			if !strings.HasPrefix(record, wantRow) || !strings.HasSuffix(record, "\nrepl_mcp-0.1.0.dist-info/RECORD,,\n") {
				t.Errorf("RECORD:\n%s\nwant it to start with %q", record, wantRow)
			}
			meta := string(data[wantNames[1]])
			for _, line := range []string{"Name: repl-mcp\n", "Version: 0.1.0\n", "Requires-Python: >=3.10\n", "License-Expression: MIT\n",
				"Requires-Dist: httpx==0.28.1\n", "Requires-Dist: exceptiongroup==1.3.1; python_version < \"3.11\"\n"} {
				if !strings.Contains(meta, line) {
					t.Errorf("METADATA lacks %q", line)
				}
			}
		})
	}
}

// TestBuildDeterministic: two builds of the same binary are byte-identical, whatever
// the files' own timestamps and modes.
func TestBuildDeterministic(t *testing.T) {
	a := buildFor(t, "linux/amd64", "")
	bin := filepath.Join(t.TempDir(), "copy")
	src, err := os.ReadFile(testBins["linux/amd64"])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, src, 0o600); err != nil {
		t.Fatal(err)
	}
	plat, _ := PlatformFor("linux", "amd64")
	out := t.TempDir()
	for range 2 { // the second build overwrites the first in place
		b, err := Build(Config{Binary: bin, Platform: plat, OutDir: out, Pyproject: repoPyproject})
		if err != nil {
			t.Fatal(err)
		}
		ab, _ := os.ReadFile(a)
		bb, _ := os.ReadFile(b)
		if !bytes.Equal(ab, bb) {
			t.Fatalf("two builds differ: %s (%d bytes) and %s (%d bytes)", a, len(ab), b, len(bb))
		}
		if entries, _ := os.ReadDir(out); len(entries) != 1 {
			t.Errorf("out dir holds %d entries, want just the wheel", len(entries))
		}
	}
}

func TestBuildVersion(t *testing.T) {
	for in, want := range map[string]string{"v3.2.0-rc.1": "3.2.0rc1", "0.1.1.dev0": "0.1.1.dev0", "3.2.0-beta.2": "3.2.0b2",
		"0.1.0.dev20261201135254+ge0c66b0d7aaf.dirty": "0.1.0.dev20261201135254+ge0c66b0d7aaf.dirty"} {
		w := buildFor(t, "darwin/arm64", in)
		if !strings.HasPrefix(filepath.Base(w), "repl_mcp-"+want+"-py3-none-macosx_12_0_arm64.whl") {
			t.Errorf("version %q: wheel %s", in, filepath.Base(w))
		}
		if err := Verify(w); err != nil {
			t.Error(err)
		}
		_, data := readZip(t, w)
		if !strings.Contains(string(data["repl_mcp-"+want+".dist-info/METADATA"]), "\nVersion: "+want+"\n") {
			t.Errorf("version %q: METADATA does not say Version: %s", in, want)
		}
	}
}

func TestBuildRejects(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	good := Config{Binary: testBins["linux/amd64"], Platform: platforms["linux/amd64"], OutDir: dir, Pyproject: repoPyproject}
	for want, mutate := range map[string]func(*Config){
		"are required":                 func(c *Config) { c.Binary = "" },
		"not a wheel platform tag":     func(c *Config) { c.Platform = "linux/amd64" },
		"is not a manylinux":           func(c *Config) { c.Platform = "win_amd64" },
		"aarch64 is not spelled":       func(c *Config) { c.Platform = "macosx_12_0_aarch64" },
		"not a PEP 440":                func(c *Config) { c.Version = "0.1.0-3-gabcdef0" },
		"no such file":                 func(c *Config) { c.Binary = filepath.Join(dir, "missing") },
		"is empty":                     func(c *Config) { c.Binary = empty },
		"pyproject.toml: no such file": func(c *Config) { c.Pyproject = filepath.Join(dir, "pyproject.toml") },
	} {
		cfg := good
		mutate(&cfg)
		if w, err := Build(cfg); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Build(%+v) = %q, %v; want an error containing %q", cfg, w, err, want)
		}
	}
}
