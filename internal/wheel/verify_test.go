package wheel

import (
	"archive/zip"
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// rewrite copies the wheel at src to dir/name, passing each entry through edit, which
// may change its name, mode and data or drop it (keep false).
func rewrite(t *testing.T, src, name string, edit func(h *zip.FileHeader, data []byte) (out []byte, keep bool)) string {
	t.Helper()
	files, data := readZip(t, src)
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range files {
		h := f.FileHeader
		out, keep := edit(&h, data[f.Name])
		if !keep {
			continue
		}
		w, err := zw.CreateHeader(&h)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(out); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if name == "" {
		name = filepath.Base(src)
	}
	dst := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(dst, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

// editEntry returns an edit that applies f to the entry whose name ends with suffix.
func editEntry(suffix string, f func(h *zip.FileHeader, data []byte) []byte) func(*zip.FileHeader, []byte) ([]byte, bool) {
	return func(h *zip.FileHeader, data []byte) ([]byte, bool) {
		if strings.HasSuffix(h.Name, suffix) {
			return f(h, data), true
		}
		return data, true
	}
}

func replace(old, new string) func(*zip.FileHeader, []byte) []byte {
	return func(_ *zip.FileHeader, data []byte) []byte {
		return bytes.Replace(data, []byte(old), []byte(new), 1)
	}
}

func keepAll(_ *zip.FileHeader, data []byte) ([]byte, bool) { return data, true }

// TestVerifyBadInput: each way a wheel can be wrong is caught, with the kind of problem
// (errors.Is) and words that say what is wrong.
func TestVerifyBadInput(t *testing.T) {
	good := buildFor(t, "linux/amd64", "")
	if err := Verify(good); err != nil {
		t.Fatalf("a good wheel fails: %v", err)
	}
	if err := Verify(rewrite(t, good, "", keepAll)); err != nil {
		t.Fatalf("a good wheel rewritten unchanged fails: %v", err)
	}
	_, data := readZip(t, good)
	record := string(data["repl_mcp-0.1.0.dist-info/RECORD"])
	scriptHash := strings.Split(strings.Split(record, "\n")[0], ",")[1]
	corrupt := []byte(scriptHash)
	corrupt[len(corrupt)-1] ^= 1 // still base64, another digest
	wheelName := filepath.Base(good)
	armName := strings.ReplaceAll(wheelName, "x86_64", "aarch64")

	for _, tc := range []struct {
		name string
		path func() string
		kind error
		want string
	}{
		{"corrupted RECORD hash", func() string {
			return rewrite(t, good, "", editEntry("/RECORD", replace(scriptHash, string(corrupt))))
		}, ErrRecord, "repl_mcp-0.1.0.data/scripts/repl-mcp: recorded " + string(corrupt)},
		{"file changed after RECORD", func() string {
			return rewrite(t, good, "", editEntry("/WHEEL", replace("Root-Is-Purelib: false", "Root-Is-Purelib: false\nX: y")))
		}, ErrRecord, "repl_mcp-0.1.0.dist-info/WHEEL: recorded sha256="},
		{"wrong RECORD size", func() string {
			return rewrite(t, good, "", editEntry("/RECORD", func(_ *zip.FileHeader, d []byte) []byte {
				return []byte(strings.Replace(string(d), "/WHEEL,"+strings.Split(strings.Split(record, "/WHEEL,")[1], "\n")[0],
					"/WHEEL,"+strings.Split(strings.Split(strings.Split(record, "/WHEEL,")[1], "\n")[0], ",")[0]+",1", 1))
			}))
		}, ErrRecord, "recorded size 1"},
		{"missing RECORD row", func() string {
			return rewrite(t, good, "", editEntry("/RECORD", func(_ *zip.FileHeader, d []byte) []byte {
				lines := strings.SplitAfter(string(d), "\n")
				return []byte(strings.Join(lines[1:], ""))
			}))
		}, ErrRecord, "repl_mcp-0.1.0.data/scripts/repl-mcp is not listed"},
		{"RECORD row for a missing file", func() string {
			return rewrite(t, good, "", func(h *zip.FileHeader, d []byte) ([]byte, bool) {
				return d, !strings.HasSuffix(h.Name, "/WHEEL")
			})
		}, ErrRecord, "repl_mcp-0.1.0.dist-info/WHEEL is listed but not in the archive"},
		{"no RECORD", func() string {
			return rewrite(t, good, "", func(h *zip.FileHeader, d []byte) ([]byte, bool) {
				return d, !strings.HasSuffix(h.Name, "/RECORD")
			})
		}, ErrLayout, "no repl_mcp-0.1.0.dist-info/RECORD"},
		{"weak RECORD hash", func() string {
			return rewrite(t, good, "", editEntry("/RECORD", replace(scriptHash, "md5=abc")))
		}, ErrRecord, `hash "md5=abc" is not sha256`},
		{"wrong tag in the file name", func() string {
			return rewrite(t, good, armName, keepAll)
		}, ErrTag, "the file name says py3-none-manylinux_2_17_aarch64 py3-none-musllinux_1_1_aarch64, WHEEL says py3-none-manylinux_2_17_x86_64 py3-none-musllinux_1_1_x86_64"},
		{"WHEEL lacks a tag", func() string {
			return rewrite(t, good, "", editEntry("/WHEEL", replace("Tag: py3-none-musllinux_1_1_x86_64\n", "")))
		}, ErrTag, "WHEEL says py3-none-manylinux_2_17_x86_64"},
		{"not py3-none", func() string {
			return rewrite(t, good, strings.Replace(wheelName, "py3-none", "cp312-cp312", 1), keepAll)
		}, ErrTag, "the file name's tags are cp312-cp312"},
		{"unknown platform tag", func() string {
			return rewrite(t, good, strings.Replace(wheelName, "musllinux_1_1_x86_64", "win_amd64", 1), keepAll)
		}, ErrTag, `platform tag "win_amd64"`},
		{"script not 0755", func() string {
			return rewrite(t, good, "", editEntry("/scripts/repl-mcp", func(h *zip.FileHeader, d []byte) []byte {
				h.SetMode(0o644)
				return d
			}))
		}, ErrMode, "has mode -rw-r--r--, want -rwxr-xr-x (0755)"},
		{"script a symlink", func() string {
			return rewrite(t, good, "", editEntry("/scripts/repl-mcp", func(h *zip.FileHeader, d []byte) []byte {
				h.SetMode(fs.ModeSymlink | 0o755)
				return d
			}))
		}, ErrMode, "has mode L"},
		{"METADATA names another version", func() string {
			return rewrite(t, good, "", editEntry("/METADATA", replace("Version: 0.1.0\n", "Version: 0.2.0\n")))
		}, ErrMetadata, `Version is "0.2.0", the file name says 0.1.0`},
		{"METADATA names another project", func() string {
			return rewrite(t, good, "", editEntry("/METADATA", replace("Name: repl-mcp\n", "Name: other\n")))
		}, ErrMetadata, `Name is "other"`},
		{"file name version not normalized", func() string {
			return rewrite(t, good, strings.Replace(wheelName, "0.1.0", "v0.1.0", 1), keepAll)
		}, ErrLayout, `the file name's version "v0.1.0" is not a normalized PEP 440 version`},
		{"tag-style version in the file name", func() string {
			return rewrite(t, good, strings.Replace(wheelName, "0.1.0", "0.1.0-rc.1", 1), keepAll)
		}, ErrLayout, `the file name's build tag "rc.1" does not start with a digit`},
		{"entry outside the wheel's directories", func() string {
			return rewrite(t, good, "", editEntry("/WHEEL", func(h *zip.FileHeader, d []byte) []byte {
				h.Name = "repl_mcp/evil.py"
				return d
			}))
		}, ErrLayout, "repl_mcp/evil.py is outside"},
		{"unsafe entry name", func() string {
			return rewrite(t, good, "", editEntry("/WHEEL", func(h *zip.FileHeader, d []byte) []byte {
				h.Name = "repl_mcp-0.1.0.data/../../x"
				return d
			}))
		}, ErrLayout, `unsafe entry name "repl_mcp-0.1.0.data/../../x"`},
		{"no script", func() string {
			return rewrite(t, good, "", editEntry("/scripts/repl-mcp", func(h *zip.FileHeader, d []byte) []byte {
				h.Name = strings.Replace(h.Name, "repl-mcp", "other", 1)
				return d
			}))
		}, ErrLayout, "no repl_mcp-0.1.0.data/scripts/repl-mcp"},
		{"not a zip", func() string {
			p := filepath.Join(t.TempDir(), wheelName)
			if err := os.WriteFile(p, []byte("not a zip"), 0o644); err != nil {
				t.Fatal(err)
			}
			return p
		}, ErrLayout, "not a zip file"},
		{"not a wheel name", func() string {
			return rewrite(t, good, "repl_mcp-0.1.0.zip", keepAll)
		}, ErrLayout, "name-version-py-abi-platform.whl"},
		{"binary for another architecture", func() string {
			w, err := Build(Config{Binary: testBins["linux/arm64"], Platform: platforms["linux/amd64"], OutDir: t.TempDir(), Pyproject: repoPyproject})
			if err != nil {
				t.Fatal(err)
			}
			return w
		}, ErrTag, "tagged manylinux_2_17_x86_64 but the binary is for linux/arm64"},
		{"Mach-O binary tagged linux", func() string {
			w, err := Build(Config{Binary: testBins["darwin/amd64"], Platform: platforms["linux/amd64"], OutDir: t.TempDir(), Pyproject: repoPyproject})
			if err != nil {
				t.Fatal(err)
			}
			return w
		}, ErrTag, "the binary is for darwin/amd64"},
		{"macOS tag older than the binary", func() string {
			w, err := Build(Config{Binary: testBins["darwin/arm64"], Platform: "macosx_11_0_arm64", OutDir: t.TempDir(), Pyproject: repoPyproject})
			if err != nil {
				t.Fatal(err)
			}
			return w
		}, ErrTag, "tagged macosx_11_0_arm64 but the binary needs macOS 12.0"},
		{"dynamically linked binary tagged musllinux", func() string {
			w, err := Build(Config{Binary: dynamicELF(t), Platform: platforms["linux/amd64"], OutDir: t.TempDir(), Pyproject: repoPyproject})
			if err != nil {
				t.Fatal(err)
			}
			return w
		}, ErrTag, "the binary is dynamically linked (interpreter /"},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			err := Verify(tc.path())
			if err == nil {
				t.Fatal("Verify passed")
			}
			if !errors.Is(err, tc.kind) {
				t.Errorf("Verify: %v\nis not %v", err, tc.kind)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Verify: %v\ndoes not say %q", err, tc.want)
			}
		})
	}
}

// dynamicELF returns a dynamically linked x86-64 executable of this machine: /bin/sh's
// target. The tests run on Linux x86-64 (CI's machine).
func dynamicELF(t *testing.T) string {
	t.Helper()
	p, err := filepath.EvalSymlinks("/bin/sh")
	if err != nil {
		t.Fatalf("a dynamically linked ELF file to test with: %v", err)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	info, ok, err := inspectExec(data)
	if err != nil || !ok || info.interp == "" || info.goarch != "amd64" {
		t.Fatalf("%s is not a dynamically linked x86-64 ELF file (%+v, %v, %v): these tests need Linux x86-64", p, info, ok, err)
	}
	return p
}
