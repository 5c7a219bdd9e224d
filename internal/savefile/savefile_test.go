package savefile

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var (
	errNotAbs = errors.New("not absolute")
	errIsDir  = errors.New("a directory")
	errParent = errors.New("no parent")
	errExists = errors.New("exists")
	errWrite  = errors.New("cannot write")
	errName   = errors.New("bad name")
)

func rules() Rules {
	return Rules{TempPrefix: ".test-save-", NotAbs: errNotAbs, IsDir: errIsDir, Parent: errParent, Exists: errExists, Write: errWrite, BadName: errName}
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
