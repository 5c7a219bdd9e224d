package artifacts_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iota-uz/repl-mcp/artifacts"
)

const (
	ownerA = "session-a"
	ownerB = "session-b"
)

// newStore returns a store whose content files go to a fresh directory, with ownerA
// and ownerB registered, and that directory.
func newStore(t *testing.T) (*artifacts.Store, string) {
	t.Helper()
	dir := t.TempDir()
	return register(t, artifacts.New(artifacts.Config{Dir: dir}), dir), dir
}

func newSmallStore(t *testing.T, entries int, total, artifact int64) (*artifacts.Store, string) {
	t.Helper()
	dir := t.TempDir()
	return register(t, artifacts.NewWithLimits(artifacts.Config{Dir: dir}, entries, total, artifact), dir), dir
}

func register(t *testing.T, s *artifacts.Store, dir string) *artifacts.Store {
	t.Helper()
	t.Cleanup(func() {
		s.Close()
		noTemps(t, dir)
	})
	for _, o := range []string{ownerA, ownerB} {
		if err := s.Register(o); err != nil {
			t.Fatalf("Register(%s): %v", o, err)
		}
	}
	return s
}

func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func mustCreate(t *testing.T, s *artifacts.Store, owner, path string, f artifacts.Format) artifacts.Ref {
	t.Helper()
	ref, err := s.Create(context.Background(), owner, path, f)
	if err != nil {
		t.Fatalf("Create(%s, %s): %v", path, f, err)
	}
	return ref
}

// createBytes writes data to a fresh source file and creates an artifact from it.
func createBytes(t *testing.T, s *artifacts.Store, owner string, data []byte, f artifacts.Format) artifacts.Ref {
	t.Helper()
	return mustCreate(t, s, owner, writeFile(t, t.TempDir(), "src", data), f)
}

func sha(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

// noTemps fails if dir holds a content file or a save temp file.
func noTemps(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "repl-mcp-artifact-") || strings.HasPrefix(e.Name(), ".repl-artifact-save-") {
			t.Errorf("temp file left in %s: %s", dir, e.Name())
		}
	}
}

func wantErr(t *testing.T, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("err = %v, want %v", err, want)
	}
}

// readAll reads a whole artifact as base64 in 64 KiB ranges and decodes it.
func readAll(t *testing.T, s *artifacts.Store, owner string, ref artifacts.Ref) []byte {
	t.Helper()
	var out []byte
	for off := int64(0); ; {
		r, err := s.Read(context.Background(), owner, ref.ID, off, artifacts.MaxReadLength, "hex")
		if err != nil {
			t.Fatalf("Read(%d): %v", off, err)
		}
		b, err := hex.DecodeString(r.Content)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b...)
		off += r.Length
		if !r.HasMore {
			return out
		}
	}
}

// bound is how long a call that should return at once may take: a few seconds, less
// if the test deadline is nearer.
func bound(t *testing.T) time.Duration {
	d := 5 * time.Second
	if dl, ok := t.Deadline(); ok {
		if left := time.Until(dl) / 2; left < d {
			d = left
		}
	}
	return d
}

// within runs fn and fails the test if it does not return within bound(t).
func within(t *testing.T, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(bound(t)):
		t.Fatalf("%s did not return within %v", what, bound(t))
	}
}
