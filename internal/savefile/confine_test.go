package savefile

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestConfine: Confine is asked about the real directory a save would write in
// (a symbolic link on the way resolved), its refusal writes nothing, and a save it
// allows lands.
func TestConfine(t *testing.T) {
	allowed, outside := t.TempDir(), t.TempDir()
	allowed, _ = filepath.EvalSymlinks(allowed)
	outside, _ = filepath.EvalSymlinks(outside)
	link := filepath.Join(allowed, "link")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	errOutside := errors.New("outside the writable roots")
	var asked []string
	r := rules()
	r.Confine = func(dir string) error {
		asked = append(asked, dir)
		if dir != allowed {
			return errOutside
		}
		return nil
	}
	if _, err := Save(context.Background(), filepath.Join(link, "f"), false, r, text("x")); !errors.Is(err, errOutside) {
		t.Errorf("a save through a link to outside: %v", err)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("the refused save wrote %v", entries)
	}
	if _, err := Save(context.Background(), filepath.Join(allowed, "f"), false, r, text("x")); err != nil {
		t.Errorf("an allowed save: %v", err)
	}
	if len(asked) != 2 || asked[0] != outside || asked[1] != allowed {
		t.Errorf("Confine was asked about %q, want the real directories %q then %q", asked, outside, allowed)
	}
}
