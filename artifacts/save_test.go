package artifacts_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/iota-uz/repl-mcp/artifacts"
)

func TestSaveNewAndRefuseExisting(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	data := bytes.Repeat([]byte("saved content\n"), 5000)
	ref := createBytes(t, s, ownerA, data, artifacts.FormatText)
	dir := t.TempDir()
	dst := filepath.Join(dir, "new.txt")

	got, err := s.Save(ctx, ownerA, ref.ID, dst, false)
	if err != nil {
		t.Fatal(err)
	}
	if got != (artifacts.Saved{Artifact: ref, Saved: true, Path: dst}) {
		t.Errorf("saved = %+v", got)
	}
	checkFile(t, dst, data, ref.SHA256)
	noTemps(t, dir)

	// An existing destination is refused without overwrite, and left alone.
	old := writeFile(t, dir, "old.txt", []byte("old"))
	_, err = s.Save(ctx, ownerA, ref.ID, old, false)
	wantErr(t, err, artifacts.ErrSaveExists)
	if err.Error() != "Artifact destination exists or cannot be linked; overwrite requires explicit true" {
		t.Errorf("message = %q", err)
	}
	if b, _ := os.ReadFile(old); string(b) != "old" {
		t.Errorf("refused target changed to %q", b)
	}
	noTemps(t, dir)
	_, err = s.Save(ctx, ownerA, ref.ID, dst, false) // also the one just saved
	wantErr(t, err, artifacts.ErrSaveExists)
	noTemps(t, dir)
}

func TestSaveOverwrite(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	data := []byte(`{"new": [1, 2, 3]}`)
	ref := createBytes(t, s, ownerA, data, artifacts.FormatJSON)
	dir := t.TempDir()
	dst := writeFile(t, dir, "out.json", []byte("previous content that is longer than the new one"))

	// A reader that opened the old file keeps the old bytes: the new ones arrive
	// by rename, never by rewriting the file in place.
	before, err := os.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer before.Close()
	if _, err := s.Save(ctx, ownerA, ref.ID, dst, true); err != nil {
		t.Fatal(err)
	}
	checkFile(t, dst, data, ref.SHA256)
	var old bytes.Buffer
	if _, err := old.ReadFrom(before); err != nil || old.String() != "previous content that is longer than the new one" {
		t.Errorf("old inode now holds %q (%v)", old.String(), err)
	}
	noTemps(t, dir)
	// Saving again over itself works too.
	if _, err := s.Save(ctx, ownerA, ref.ID, dst, true); err != nil {
		t.Fatal(err)
	}
	checkFile(t, dst, data, ref.SHA256)
	noTemps(t, dir)
}

func TestSaveBadDestinations(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	ref := createBytes(t, s, ownerA, []byte("x"), artifacts.FormatText)
	dir := t.TempDir()
	file := writeFile(t, dir, "file", []byte("f"))

	_, err := s.Save(ctx, ownerA, ref.ID, "relative/out", true)
	wantErr(t, err, artifacts.ErrSavePath)
	for _, p := range []string{dir, dir + "/", "/", filepath.Join(dir, "sub") + "/"} {
		for _, overwrite := range []bool{false, true} {
			_, err = s.Save(ctx, ownerA, ref.ID, p, overwrite)
			wantErr(t, err, artifacts.ErrSaveDir)
		}
	}
	// A missing parent is said to be missing, with or without a trailing slash.
	for _, p := range []string{filepath.Join(dir, "missing", "out"), filepath.Join(dir, "missing", "sub") + "/"} {
		_, err = s.Save(ctx, ownerA, ref.ID, p, false)
		if want := "Artifact destination directory does not exist or is not a directory: no such file or directory"; err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %q", p, err, want)
		}
	}
	// A name no file can have says why, whether or not overwrite is set.
	for p, want := range map[string]string{
		filepath.Join(dir, "nul\x00name"):            "Artifact destination cannot be a file name: the path contains a NUL byte",
		filepath.Join(dir, "sub\x00dir", "out"):      "Artifact destination cannot be a file name: the path contains a NUL byte",
		filepath.Join(dir, strings.Repeat("n", 256)): "Artifact destination cannot be a file name: a name in the path has 256 bytes, more than the 255 a file name may have",
		dir + strings.Repeat("/d", 2100):             "Artifact destination cannot be a file name: the path has",
	} {
		for _, overwrite := range []bool{false, true} {
			_, err = s.Save(ctx, ownerA, ref.ID, p, overwrite)
			if err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Errorf("%.60q (overwrite %v): %v, want %q", p, overwrite, err, want)
			}
		}
	}
	_, err = s.Save(ctx, ownerA, ref.ID, filepath.Join(dir, "missing", "out"), true)
	wantErr(t, err, artifacts.ErrSaveParent)
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing parent: %v", err)
	}
	_, err = s.Save(ctx, ownerA, ref.ID, filepath.Join(file, "out"), true)
	wantErr(t, err, artifacts.ErrSaveParent)
	if _, err := os.Stat(filepath.Join(dir, "sub")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("sub/ created: %v", err)
	}
	noTemps(t, dir)

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = s.Save(cctx, ownerA, ref.ID, filepath.Join(dir, "cancelled"), false)
	wantErr(t, err, context.Canceled)
	if _, err := os.Stat(filepath.Join(dir, "cancelled")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("cancelled save wrote its destination: %v", err)
	}
	noTemps(t, dir)
}

func TestTamperingDetected(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	data := []byte(`{"amount": 100}`)
	ref := createBytes(t, s, ownerA, data, artifacts.FormatJSON)
	short := createBytes(t, s, ownerA, []byte("some text"), artifacts.FormatText)
	if _, err := s.EntryFile(ref.ID).WriteAt([]byte("9"), 11); err != nil {
		t.Fatal(err)
	}
	if err := s.EntryFile(short.ID).Truncate(4); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, r := range []artifacts.Ref{ref, short} {
		dst := filepath.Join(dir, "out")
		for _, overwrite := range []bool{false, true} {
			_, err := s.Save(ctx, ownerA, r.ID, dst, overwrite)
			wantErr(t, err, artifacts.ErrSHA256)
			if err.Error() != "Artifact content failed SHA256 verification" {
				t.Errorf("message = %q", err)
			}
			if _, err := os.Stat(dst); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("tampered save reached the destination: %v", err)
			}
			noTemps(t, dir)
		}
		_, err := s.ForwardValue(ctx, ownerA, r.ID, "text")
		wantErr(t, err, artifacts.ErrSHA256)
	}
	// Reads do not re-hash: they serve what is there.
	rg, err := s.Read(ctx, ownerA, ref.ID, 0, 100, "text")
	if err != nil || rg.Content != `{"amount": 900}` {
		t.Errorf("read = %+v, %v", rg, err)
	}
}

// TestSlowSaveBlocksNothing holds a save between its copy and its rename and checks
// that reads, creates, and even deleting the artifact being saved go on meanwhile.
func TestSlowSaveBlocksNothing(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	data := bytes.Repeat([]byte("slow"), 10000)
	ref := createBytes(t, s, ownerA, data, artifacts.FormatText)
	other := createBytes(t, s, ownerA, []byte("other"), artifacts.FormatText)
	copied, resume := make(chan struct{}), make(chan struct{})
	var once sync.Once
	s.SetHook(func(stage string) {
		if stage != "save-copied" {
			return
		}
		once.Do(func() {
			close(copied)
			<-resume
		})
	})
	dst := filepath.Join(t.TempDir(), "slow.txt")
	saved := make(chan error, 1)
	go func() {
		_, err := s.Save(ctx, ownerA, ref.ID, dst, false)
		saved <- err
	}()
	<-copied
	within(t, "work during a save", func() {
		if r, err := s.Read(ctx, ownerA, other.ID, 0, 5, "text"); err != nil || r.Content != "other" {
			t.Errorf("read other: %+v, %v", r, err)
		}
		if _, err := s.Read(ctx, ownerA, ref.ID, 0, 4, "text"); err != nil {
			t.Errorf("read same: %v", err)
		}
		createBytes(t, s, ownerA, []byte("more"), artifacts.FormatText)
		if err := s.Delete(ownerA, ref.ID); err != nil {
			t.Errorf("delete: %v", err)
		}
		s.Stats()
	})
	close(resume)
	if err := <-saved; err != nil {
		t.Fatalf("save after delete of its artifact: %v", err)
	}
	checkFile(t, dst, data, ref.SHA256)
	if st := s.Stats(); st.Entries != 2 || st.IOJobs != 0 {
		t.Errorf("stats = %+v", st)
	}
}

func checkFile(t *testing.T, path string, want []byte, sum string) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) || sha(got) != sum {
		t.Errorf("%s: %d bytes, sha256 %s; want %d bytes, %s", path, len(got), sha(got), len(want), sum)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("%s: mode %v, want 0600", path, st.Mode().Perm())
	}
}

// TestSaveOverwriteReplacesOnlyRegularFiles: overwrite=true replaced a FIFO or a
// symlink with a regular file; it is refused with a message that says what is there.
func TestSaveOverwriteReplacesOnlyRegularFiles(t *testing.T) {
	s, _ := newStore(t)
	ref := createBytes(t, s, ownerA, []byte("x"), artifacts.FormatText)
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(filepath.Join(dir, "elsewhere"), link); err != nil {
		t.Fatal(err)
	}
	for path, what := range map[string]string{fifo: "a FIFO", link: "a symlink"} {
		_, err := s.Save(context.Background(), ownerA, ref.ID, path, true)
		want := "Artifact destination is not a regular file; overwrite replaces only a regular file (it is " + what + ")"
		if !errors.Is(err, artifacts.ErrSaveNotFile) || err.Error() != want {
			t.Errorf("overwrite of %s: %v, want %q", what, err, want)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "elsewhere")); !errors.Is(err, os.ErrNotExist) {
		t.Error("the save wrote through the symlink")
	}
	noTemps(t, dir)
}
