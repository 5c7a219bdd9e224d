package server

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The last client's file is private (a 0600 file in a 0700 directory), replaced
// whole, and read only as a small regular file: never through a symbolic link.
func TestLastClientFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache", "repl-mcp")
	path := filepath.Join(dir, "last-client.json")
	if _, err := ReadLastClient(path); !errors.Is(err, ErrNoLastClient) {
		t.Fatalf("before any client: %v, want ErrNoLastClient", err)
	}
	want := LastClient{Name: "opencode", Version: "1.18.33", Protocol: "2025-11-25", Form: "text", At: time.Date(2026, 12, 5, 9, 30, 0, 0, time.UTC)}
	for _, rec := range []LastClient{{Name: "claude-code"}, want} {
		if err := writeLastClient(path, rec); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ReadLastClient(path)
	if err != nil || got != want {
		t.Fatalf("read %+v, %v; want %+v", got, err, want)
	}
	for p, mode := range map[string]os.FileMode{dir: 0o700 | os.ModeDir, path: 0o600} {
		if fi, err := os.Stat(p); err != nil || fi.Mode() != mode {
			t.Errorf("%s: mode %v (%v), want %v", p, fi.Mode(), err, mode)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the directory holds %d entries, want the file alone (no temp file left)", len(entries))
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadLastClient(link); err == nil {
		t.Errorf("read through a symbolic link")
	}
}
