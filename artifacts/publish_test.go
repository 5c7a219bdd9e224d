package artifacts_test

import (
	"context"
	"testing"

	"github.com/iota-uz/repl-mcp/artifacts"
)

// An import whose owner closes, or whose run ends, while it is being checked
// publishes nothing and evicts nothing.
func TestImportOutlivedByOwnerOrRun(t *testing.T) {
	ctx := context.Background()
	t.Run("create, owner dropped", func(t *testing.T) {
		s, _ := newSmallStore(t, 1, 1<<20, 1<<20)
		old := createBytes(t, s, ownerA, []byte("old"), artifacts.FormatText)
		src := writeFile(t, t.TempDir(), "src", []byte("new"))
		s.SetHook(func(stage string) {
			if stage == "publish" {
				s.DropOwner(ownerB)
			}
		})
		_, err := s.Create(ctx, ownerB, src, artifacts.FormatText)
		wantErr(t, err, artifacts.ErrOwnerClosed)
		if err.Error() != "Artifact owner session closed before import completed" {
			t.Errorf("message = %q", err)
		}
		if st := s.Stats(); st.Entries != 1 || st.Evictions != 0 {
			t.Errorf("stats = %+v", st)
		}
		if _, err := s.Read(ctx, ownerA, old.ID, 0, 3, "text"); err != nil {
			t.Error(err)
		}
	})
	t.Run("create, owner dropped and registered again", func(t *testing.T) {
		s, _ := newStore(t)
		src := writeFile(t, t.TempDir(), "src", []byte("new"))
		s.SetHook(func(stage string) {
			if stage == "publish" {
				s.DropOwner(ownerB)
				s.Register(ownerB)
			}
		})
		_, err := s.Create(ctx, ownerB, src, artifacts.FormatText)
		wantErr(t, err, artifacts.ErrOwnerClosed)
	})
	t.Run("commit, owner dropped", func(t *testing.T) {
		s, _ := newStore(t)
		startRun(t, s, ownerA, "run")
		s.SetHook(func(stage string) {
			if stage == "publish" {
				s.DropOwner(ownerA)
			}
		})
		_, err := upload(t, s, ownerA, "run", artifacts.FormatJSON, []byte(`[1]`))
		wantErr(t, err, artifacts.ErrOwnerClosed)
		if st := s.Stats(); st.Entries != 0 || st.Uploads != 0 {
			t.Errorf("stats = %+v", st)
		}
	})
	t.Run("commit, run ended", func(t *testing.T) {
		s, _ := newStore(t)
		startRun(t, s, ownerA, "run")
		s.SetHook(func(stage string) {
			if stage == "publish" {
				s.EndRun(ownerA, "run")
			}
		})
		_, err := upload(t, s, ownerA, "run", artifacts.FormatText, []byte(`abc`))
		wantErr(t, err, artifacts.ErrRunFinished)
		if err.Error() != "Artifact originating run is finished or cancelled" {
			t.Errorf("message = %q", err)
		}
		if st := s.Stats(); st.Entries != 0 || st.Uploads != 0 {
			t.Errorf("stats = %+v", st)
		}
	})
	t.Run("commit, store closed", func(t *testing.T) {
		s, dir := newStore(t)
		startRun(t, s, ownerA, "run")
		s.SetHook(func(stage string) {
			if stage == "publish" {
				s.Close()
			}
		})
		_, err := upload(t, s, ownerA, "run", artifacts.FormatText, []byte(`abc`))
		wantErr(t, err, artifacts.ErrClosed)
		noTemps(t, dir)
	})
}
