package artifacts

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/iota-uz/repl-mcp/internal/ids"
)

// Saved is the result of [Store.Save] (docs/contract.md §3.9, artifact_save).
type Saved struct {
	Artifact Ref    `json:"artifact"`
	Saved    bool   `json:"saved"`
	Path     string `json:"path"` // the cleaned absolute destination
}

// Save writes owner's artifact id to the absolute path. The bytes go to a temp file
// .repl-artifact-save-<uuid> (mode 0600) in the destination's directory and are
// hashed on the way; only when they match the artifact's SHA-256 and are fsynced does
// the temp file become the destination: renamed over it when overwrite is true,
// hard-linked to it otherwise, which fails if the destination exists. The temp name
// is always removed and the directory fsynced, so the destination is never
// half-written.
func (s *Store) Save(ctx context.Context, owner, id, path string, overwrite bool) (Saved, error) {
	if !filepath.IsAbs(path) {
		return Saved{}, ErrSavePath
	}
	if err := checkSaveName(path); err != nil {
		return Saved{}, err
	}
	trailingSlash := strings.HasSuffix(path, string(filepath.Separator))
	path = filepath.Clean(path)
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

	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return Saved{}, ErrSaveDir
	}
	// The parent is checked before a trailing slash is judged: a missing parent
	// is what the caller must fix first.
	dir := filepath.Dir(path)
	if st, err := os.Stat(dir); err != nil {
		return Saved{}, fmt.Errorf("%w: %w", ErrSaveParent, sysCause(err))
	} else if !st.IsDir() {
		return Saved{}, ErrSaveParent
	}
	if trailingSlash {
		return Saved{}, fmt.Errorf("%w: the path ends in %c, which names a directory; give the file's name", ErrSaveDir, filepath.Separator)
	}

	tmp := filepath.Join(dir, savePrefix+ids.UUID())
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return Saved{}, fmt.Errorf("%w: %w", ErrSaveWrite, sysCause(err))
	}
	defer os.Remove(tmp) // already gone after a rename; removed here after a link or a failure
	err = s.copyOut(ctx, f, e)
	if err == nil {
		if serr := f.Sync(); serr != nil {
			err = fmt.Errorf("%w: %w", ErrSaveWrite, sysCause(serr))
		}
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("%w: %w", ErrSaveWrite, sysCause(cerr))
	}
	if err != nil {
		return Saved{}, err
	}
	s.testHook("save-copied")
	if err := ctx.Err(); err != nil {
		return Saved{}, err
	}

	if overwrite {
		if err := os.Rename(tmp, path); err != nil {
			return Saved{}, fmt.Errorf("%w: %w", ErrSaveWrite, sysCause(err))
		}
	} else {
		if err := os.Link(tmp, path); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return Saved{}, ErrSaveExists
			}
			return Saved{}, fmt.Errorf("%w: %w", ErrSaveExists, sysCause(err))
		}
		os.Remove(tmp)
	}
	if err := syncDir(dir); err != nil {
		// The destination is complete; only its durability across a power loss is
		// in doubt, which is not worth failing a save that did happen.
		s.log.Warn("artifact save: directory fsync failed", "dir", dir, "err", err)
	}
	s.log.Debug("artifact saved", "id", id, "owner", owner, "path", path, "overwrite", overwrite)
	return Saved{Artifact: e.ref, Saved: true, Path: path}, nil
}

// The bounds of a name on Linux (NAME_MAX, and PATH_MAX less its NUL).
const (
	maxNameBytes = 255
	maxPathBytes = 4095
)

// checkSaveName refuses a path no file can have, saying why, before anything is
// written: a NUL byte, a name over 255 bytes, a path over 4095 bytes.
func checkSaveName(path string) error {
	if strings.IndexByte(path, 0) >= 0 {
		return fmt.Errorf("%w: the path contains a NUL byte", ErrSaveName)
	}
	if len(path) > maxPathBytes {
		return fmt.Errorf("%w: the path has %d bytes, more than the %d a path may have", ErrSaveName, len(path), maxPathBytes)
	}
	for name := range strings.SplitSeq(path, string(filepath.Separator)) {
		if len(name) > maxNameBytes {
			return fmt.Errorf("%w: a name in the path has %d bytes, more than the %d a file name may have", ErrSaveName, len(name), maxNameBytes)
		}
	}
	return nil
}

// copyOut writes e's content to dst and fails with ErrSHA256 unless the bytes
// written hash to e's SHA-256.
func (s *Store) copyOut(ctx context.Context, dst *os.File, e *entry) error {
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

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
