package artifacts

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// Create copies the regular file at the absolute path into a new artifact of owner,
// checking it for format as it is copied. The source is opened non-blocking and
// checked before an I/O slot is taken, so a FIFO or device fails at once. Nothing is
// published, and nothing is evicted, unless the whole copy is valid and owner is
// still registered.
func (s *Store) Create(ctx context.Context, owner, path string, format Format) (Ref, error) {
	if !filepath.IsAbs(path) || !format.Valid() {
		return Ref{}, ErrCreateArgs
	}
	o, err := s.ownerOf(owner)
	if err != nil {
		return Ref{}, err
	}
	// A FIFO, socket or device is refused before it is even opened; the check after
	// opening (non-blocking, so a FIFO cannot stall) catches a swap in between.
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		return Ref{}, ErrNotRegular
	}
	src, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return Ref{}, fmt.Errorf("%w: %w", ErrSourceOpen, sysCause(err))
	}
	defer src.Close()
	st, err := src.Stat()
	if err != nil {
		return Ref{}, fmt.Errorf("%w: %w", ErrSourceOpen, sysCause(err))
	}
	if !st.Mode().IsRegular() {
		return Ref{}, ErrNotRegular
	}
	if st.Size() > s.lim.artifact {
		return Ref{}, ErrTooLarge
	}
	done, err := s.tryIO()
	if err != nil {
		return Ref{}, err
	}
	defer done()

	f, err := s.tempFile()
	if err != nil {
		return Ref{}, err
	}
	size, sum, err := s.copyIn(ctx, f, src, format)
	if err == nil {
		var ref Ref
		if ref, err = s.publish(o, "", f, size, format, sum); err == nil {
			return ref, nil
		}
	}
	f.Close()
	return Ref{}, err
}

// copyIn copies src to dst, at most the artifact limit, hashing and checking the
// bytes on the way.
func (s *Store) copyIn(ctx context.Context, dst *os.File, src io.Reader, format Format) (int64, string, error) {
	h := sha256.New()
	chk := newChecker(format)
	buf := make([]byte, copyChunk)
	var n int64
	for {
		if err := ctx.Err(); err != nil {
			return 0, "", err
		}
		want := buf
		if rem := s.lim.artifact + 1 - n; rem < int64(len(want)) {
			want = want[:rem]
		}
		k, rerr := src.Read(want)
		if k > 0 {
			n += int64(k)
			if n > s.lim.artifact {
				return 0, "", ErrTooLarge
			}
			if err := chk.write(want[:k]); err != nil {
				return 0, "", err
			}
			h.Write(want[:k])
			if _, err := dst.Write(want[:k]); err != nil {
				return 0, "", fmt.Errorf("%w: %w", ErrStorage, sysCause(err))
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			if errors.Is(rerr, syscall.EAGAIN) {
				return 0, "", ErrNotRegular
			}
			return 0, "", fmt.Errorf("%w: %w", ErrSourceRead, sysCause(rerr))
		}
	}
	if err := chk.finish(); err != nil {
		return 0, "", err
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}

// checkFile reads the first size bytes of f and checks them for format.
func checkFile(ctx context.Context, f *os.File, size int64, format Format) error {
	if format == FormatBinary {
		return nil
	}
	chk := newChecker(format)
	buf := make([]byte, copyChunk)
	for off := int64(0); off < size; {
		if err := ctx.Err(); err != nil {
			return err
		}
		k, err := f.ReadAt(buf[:min(int64(len(buf)), size-off)], off)
		if k > 0 {
			if cerr := chk.write(buf[:k]); cerr != nil {
				return cerr
			}
			off += int64(k)
		}
		if err != nil && off < size {
			return fmt.Errorf("%w: %w", ErrStorage, sysCause(err))
		}
	}
	return chk.finish()
}
