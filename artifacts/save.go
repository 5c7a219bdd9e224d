package artifacts

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"path/filepath"

	"github.com/iota-uz/repl-mcp/internal/savefile"
)

// Saved is the result of [Store.Save] (docs/contract.md §3.9, artifact_save).
type Saved struct {
	Artifact Ref    `json:"artifact"`
	Saved    bool   `json:"saved"`
	Path     string `json:"path"` // the cleaned absolute destination
}

// Save writes owner's artifact id to the absolute path under package savefile's
// rules. The bytes go to a temp file .repl-artifact-save-<uuid> (mode 0600) in the
// destination's directory and are hashed on the way; only when they match the
// artifact's SHA-256 and are fsynced does the temp file become the destination:
// renamed over it when overwrite is true, hard-linked to it otherwise, which fails
// if the destination exists. The temp name is always removed and the directory
// fsynced, so the destination is never half-written.
func (s *Store) Save(ctx context.Context, owner, id, path string, overwrite bool) (Saved, error) {
	if !filepath.IsAbs(path) {
		return Saved{}, ErrSavePath
	}
	e, err := s.acquire(owner, id)
	if err != nil {
		return Saved{}, err
	}
	defer s.release(e)
	done, err := s.tryIO()
	if err != nil {
		return Saved{}, err
	}
	defer done()
	rules := saveRules()
	rules.Copied = func() { s.testHook("save-copied") }
	if s.confine != nil {
		rules.Confine = func(dir string) error { return s.confine(owner, dir) }
	}
	rules.DirSyncFailed = func(err error) {
		s.log.Warn("artifact save: directory fsync failed", "dir", filepath.Dir(path), "err", err)
	}
	path, err = savefile.Save(ctx, path, overwrite, rules, func(w io.Writer) error { return s.copyOut(ctx, w, e) })
	if err != nil {
		return Saved{}, err
	}
	s.log.Debug("artifact saved", "id", id, "owner", owner, "path", path, "overwrite", overwrite)
	return Saved{Artifact: e.ref, Saved: true, Path: path}, nil
}

// saveRules are the path rules of package savefile (shared with every tool that
// writes where its caller says) with artifact_save's messages.
func saveRules() savefile.Rules {
	return savefile.Rules{
		TempPrefix: savePrefix,
		NotAbs:     ErrSavePath,
		IsDir:      ErrSaveDir,
		Parent:     ErrSaveParent,
		Exists:     ErrSaveExists,
		NotFile:    ErrSaveNotFile,
		BadName:    ErrSaveName,
		Write:      ErrSaveWrite,
	}
}

// copyOut writes e's content to dst and fails with ErrSHA256 unless the bytes
// written hash to e's SHA-256.
func (s *Store) copyOut(ctx context.Context, dst io.Writer, e *entry) error {
	h := sha256.New()
	buf := make([]byte, copyChunk)
	r := io.NewSectionReader(e.f, 0, e.ref.Size)
	var n int64
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		k, rerr := r.Read(buf)
		if k > 0 {
			n += int64(k)
			h.Write(buf[:k])
			if _, err := dst.Write(buf[:k]); err != nil {
				return fmt.Errorf("%w: %w", ErrSaveWrite, sysCause(err))
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return fmt.Errorf("%w: %w", ErrStorage, sysCause(rerr))
		}
	}
	if n != e.ref.Size || hex.EncodeToString(h.Sum(nil)) != e.ref.SHA256 {
		return ErrSHA256
	}
	return nil
}

// readVerified returns e's content after checking its SHA-256.
func readVerified(ctx context.Context, e *entry) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	buf := make([]byte, e.ref.Size)
	k, err := e.f.ReadAt(buf, 0)
	if err != nil && !(err == io.EOF && k == len(buf)) {
		if err == io.EOF {
			return nil, ErrSHA256 // shorter than published
		}
		return nil, fmt.Errorf("%w: %w", ErrStorage, sysCause(err))
	}
	sum := sha256.Sum256(buf)
	if hex.EncodeToString(sum[:]) != e.ref.SHA256 {
		return nil, ErrSHA256
	}
	return buf, nil
}
