package savefile

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

var (
	errNotAbs = errors.New("not absolute")
	errIsDir  = errors.New("a directory")
	errParent = errors.New("no parent")
	errExists = errors.New("exists")
	errWrite  = errors.New("cannot write")
	errName   = errors.New("bad name")
	errFile   = errors.New("not a regular file")
)

func rules() Rules {
	return Rules{TempPrefix: ".test-save-", NotAbs: errNotAbs, IsDir: errIsDir, Parent: errParent, Exists: errExists, NotFile: errFile, Write: errWrite, BadName: errName}
}

func text(s string) func(io.Writer) error {
	return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
}

// TestSaveRules: each rule fails with the caller's error, a write error is the
// writer's own, and nothing but the destination is left in its directory.
func TestSaveRules(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	dest := filepath.Join(dir, "out")
	copied := 0
	r := rules()
	r.Copied = func() { copied++ }
	if got, err := Save(ctx, dest+"/../out", false, r, text("one")); err != nil || got != dest {
		t.Fatalf("save: %q %v", got, err)
	}
	if data, _ := os.ReadFile(dest); string(data) != "one" || copied != 1 {
		t.Fatalf("content %q, Copied called %d times", data, copied)
	}
	if fi, _ := os.Stat(dest); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}
	if _, err := Save(ctx, dest, false, r, text("two")); !errors.Is(err, errExists) {
		t.Fatalf("no overwrite: %v", err)
	}
	if _, err := Save(ctx, dest, true, r, text("two")); err != nil {
		t.Fatalf("overwrite: %v", err)
	}
	boom := errors.New("boom")
	if _, err := Save(ctx, dest, true, r, func(io.Writer) error { return boom }); err != boom {
		t.Fatalf("the writer's error: %v", err)
	}
	if data, _ := os.ReadFile(dest); string(data) != "two" {
		t.Fatalf("a failed save changed the destination: %q", data)
	}
	for name, c := range map[string]struct {
		path string
		want error
	}{
		"relative":       {"out", errNotAbs},
		"directory":      {dir, errIsDir},
		"trailing slash": {dest + "/", errIsDir},
		"no parent":      {filepath.Join(dir, "none", "out"), errParent},
		"file parent":    {filepath.Join(dest, "out"), errParent},
	} {
		if _, err := Save(ctx, c.path, true, r, text("x")); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".test-save-") {
			t.Errorf("a temp file was left: %s", e.Name())
		}
	}
}

// TestOverwriteReplacesOnlyRegularFiles: overwrite replaced a symlink (its target
// untouched, the link gone), a FIFO, a socket and a device node with a regular file;
// each is refused, says what it is, and is left as it was. A regular file, and a
// hard link to one, are replaced.
func TestOverwriteReplacesOnlyRegularFiles(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("kept"), 0o600); err != nil {
		t.Fatal(err)
	}
	nodes := map[string]string{"symlink": "a symlink", "dangling": "a symlink", "fifo": "a FIFO", "socket": "a socket"}
	if err := os.Symlink(target, filepath.Join(dir, "symlink")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "missing"), filepath.Join(dir, "dangling")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", filepath.Join(dir, "socket"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// /dev/null's own numbers (1, 3); making a device node needs root.
	switch err := syscall.Mknod(filepath.Join(dir, "null"), syscall.S_IFCHR|0o600, 1<<8|3); {
	case err == nil:
		nodes["null"] = "a character device"
	case errors.Is(err, syscall.EPERM):
		t.Logf("no device node: mknod needs root here (%v); the other kinds are still tested", err)
	default:
		t.Fatal(err)
	}
	for name, what := range nodes {
		path := filepath.Join(dir, name)
		before, _ := os.Lstat(path)
		_, err := Save(ctx, path, true, rules(), text("x"))
		if !errors.Is(err, errFile) || !strings.Contains(err.Error(), "(it is "+what+")") {
			t.Errorf("overwrite of %s: %v, want %v naming %s", name, err, errFile, what)
		}
		if after, _ := os.Lstat(path); after == nil || after.Mode() != before.Mode() || !os.SameFile(before, after) {
			t.Errorf("overwrite of %s changed it: %v", name, after)
		}
	}
	if data, _ := os.ReadFile(target); string(data) != "kept" {
		t.Errorf("the symlink's target now holds %q", data)
	}
	hard := filepath.Join(dir, "hard")
	if err := os.Link(target, hard); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{target, hard} {
		if _, err := Save(ctx, path, true, rules(), text("new")); err != nil {
			t.Errorf("overwrite of the regular file %s: %v", path, err)
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".test-save-") {
			t.Errorf("a temp file was left: %s", e.Name())
		}
	}
}

// TestCancelledSaveLeavesNothing: a context cancelled once the bytes are written
// stops the save before the destination is touched.
func TestCancelledSaveLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	r := rules()
	r.Copied = cancel
	if _, err := Save(ctx, filepath.Join(dir, "out"), false, r, text("x")); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled save: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("a cancelled save left %v", entries)
	}
}
