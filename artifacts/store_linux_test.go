package artifacts_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iota-uz/repl-mcp/artifacts"
)

// TestCreateBoundWhileCopying copies a regular file that reports size 0 but has
// content (a /proc file), so only the bound on the copy itself can stop it.
func TestCreateBoundWhileCopying(t *testing.T) {
	s, _ := newSmallStore(t, 64, 1<<20, 16)
	_, err := s.Create(context.Background(), ownerA, "/proc/self/maps", artifacts.FormatBinary)
	wantErr(t, err, artifacts.ErrTooLarge)
	if st := s.Stats(); st.Entries != 0 || st.IOJobs != 0 {
		t.Errorf("stats = %+v", st)
	}
}

// openContentFiles counts this process's descriptors on content files in dir.
func openContentFiles(t *testing.T, dir string) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err == nil && strings.HasPrefix(target, filepath.Join(dir, "repl-mcp-artifact-")) {
			if !strings.HasSuffix(target, " (deleted)") {
				t.Errorf("content file not unlinked: %s", target)
			}
			n++
		}
	}
	return n
}

// TestDescriptorsReleased checks that eviction, deletion, aborts, failed imports,
// DropOwner and Close each close the content file they release.
func TestDescriptorsReleased(t *testing.T) {
	s, dir := newSmallStore(t, 5, 1<<20, 1<<20)
	ctx := context.Background()
	src := writeFile(t, t.TempDir(), "src", []byte("data"))
	var refs []artifacts.Ref
	for range 8 { // three evicted
		refs = append(refs, mustCreate(t, s, ownerA, src, artifacts.FormatText))
	}
	if err := s.Delete(ownerA, refs[7].ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, ownerA, writeFile(t, t.TempDir(), "bad", []byte("{")), artifacts.FormatJSON); err == nil {
		t.Fatal("bad JSON accepted")
	}
	startRun(t, s, ownerB, "run")
	u1, _ := s.Begin(ownerB, "run", artifacts.FormatText)
	u2, _ := s.Begin(ownerB, "run", artifacts.FormatJSON)
	u3, _ := s.Begin(ownerB, "run", artifacts.FormatJSON)
	s.Append(ownerB, u2.UploadID, 0, []byte("{"))
	if err := s.Abort(ownerB, u1.UploadID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Commit(ctx, ownerB, u2.UploadID); err == nil {
		t.Fatal("bad JSON committed")
	}
	_ = u3
	if got := openContentFiles(t, dir); got != 4+1 { // four live entries, one upload
		t.Errorf("%d content files open, want 5 (stats %+v)", got, s.Stats())
	}
	s.DropOwner(ownerB)
	if got := openContentFiles(t, dir); got != 4 {
		t.Errorf("%d content files open after DropOwner, want 4", got)
	}
	s.Close()
	if got := openContentFiles(t, dir); got != 0 {
		t.Errorf("%d content files open after Close", got)
	}
}
