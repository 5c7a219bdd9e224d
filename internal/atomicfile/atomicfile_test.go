package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteReplacesWholeOrNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := WriteFile(path, []byte("one"), 0o640); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v, want 0640", fi.Mode().Perm())
	}
	boom := errors.New("boom")
	err := Write(path, 0o644, func(w io.Writer) error {
		w.Write([]byte("half"))
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if data, _ := os.ReadFile(path); string(data) != "one" {
		t.Fatalf("a failed write left %q", data)
	}
	if names, _ := os.ReadDir(dir); len(names) != 1 {
		t.Fatalf("temporary files left: %v", names)
	}
	if err := WriteFile(filepath.Join(dir, "missing", "f"), nil, 0o644); err == nil {
		t.Fatal("a write into a missing directory succeeded")
	}
}
