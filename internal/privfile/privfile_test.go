package privfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestOpenAndCheckRefuseWhatIsNotPrivate: a private file passes; a link, a FIFO (at
// once, never blocking), a directory and a file open to others are each refused
// with a reason that says which.
func TestOpenAndCheckRefuseWhatIsNotPrivate(t *testing.T) {
	dir := t.TempDir()
	private := filepath.Join(dir, "private")
	open := filepath.Join(dir, "open")
	link := filepath.Join(dir, "link")
	fifo := filepath.Join(dir, "fifo")
	for _, f := range []struct {
		path string
		mode os.FileMode
	}{{private, 0o600}, {open, 0o644}} {
		if err := os.WriteFile(f.path, []byte("x"), f.mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(f.path, f.mode) // past the umask
	}
	if err := os.Symlink(private, link); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	check := func(path string) error {
		f, err := Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		return Check(f)
	}
	if err := check(private); err != nil {
		t.Fatalf("a private file is refused: %v", err)
	}
	for path, want := range map[string]string{
		link: "is a symbolic link",
		fifo: "is a named pipe (FIFO), not a regular file",
		dir:  "is a directory, not a regular file",
		open: "has mode 0644, open to group or others",
	} {
		done := make(chan error, 1)
		go func() { done <- check(path) }()
		select {
		case err := <-done:
			var np *NotPrivateError
			if !errors.As(err, &np) || !errors.Is(err, ErrNotPrivate) || !strings.Contains(np.Reason, want) {
				t.Errorf("%s: %v, want a NotPrivateError saying %q", filepath.Base(path), err, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: Open blocked", filepath.Base(path))
		}
	}
	if _, err := Open(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a missing file: %v, want ErrNotExist", err)
	}
}

func TestLockPath(t *testing.T) {
	for path, want := range map[string]string{"/j/journal.json": "/j/journal.lock", "/j/journal": "/j/journal.lock", "/j/x.lock": "/j/x.lock.lock"} {
		if got := LockPath(path); got != want {
			t.Errorf("LockPath(%s) = %s, want %s", path, got, want)
		}
	}
}
