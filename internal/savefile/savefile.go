package savefile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/iota-uz/repl-mcp/internal/ids"
)

// Rules are the caller's errors for each rule a save can break, and the prefix of
// its temp files.
type Rules struct {
	TempPrefix string // the temp file is TempPrefix plus a UUID, in the destination's directory
	NotAbs     error  // the path is relative
	IsDir      error  // the path is a directory, or ends in a separator
	Parent     error  // the parent does not exist or is not a directory
	Exists     error  // the destination exists and overwrite is false
	NotFile    error  // overwrite is true and the destination is there but no regular file
	Write      error  // the temp file or the destination cannot be written
	BadName    error  // no file can have the path: a NUL byte, a name or the path too long
	// Copied, when set, is called once the temp file is complete, before the
	// destination is touched (tests of the callers hook in there).
	Copied func()
	// DirSyncFailed, when set, hears of a failed fsync of the directory after the
	// destination is in place: the save happened, only its durability is in doubt.
	DirSyncFailed func(err error)
}

// Save writes what write produces to path under rules and returns the cleaned
// path. An error from write is returned as it is; the others wrap the rule's error
// and name a system error, never the path.
func Save(ctx context.Context, path string, overwrite bool, rules Rules, write func(io.Writer) error) (string, error) {
	if !filepath.IsAbs(path) {
		return "", rules.NotAbs
	}
	if err := checkName(path, rules.BadName); err != nil {
		return "", err
	}
	trailingSlash := strings.HasSuffix(path, string(filepath.Separator))
	path = filepath.Clean(path)
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return "", rules.IsDir
	}
	// The parent is checked before a trailing slash is judged: a missing parent is
	// what the caller must fix first.
	dir := filepath.Dir(path)
	if st, err := os.Stat(dir); err != nil {
		return "", fmt.Errorf("%w: %w", rules.Parent, SysCause(err))
	} else if !st.IsDir() {
		return "", rules.Parent
	}
	if trailingSlash {
		return "", fmt.Errorf("%w: the path ends in %c, which names a directory; give the file's name", rules.IsDir, filepath.Separator)
	}
	if overwrite {
		if err := checkReplaceable(path, rules.NotFile); err != nil {
			return "", err
		}
	}

	tmp := filepath.Join(dir, rules.TempPrefix+ids.UUID())
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("%w: %w", rules.Write, SysCause(err))
	}
	defer os.Remove(tmp) // already gone after a rename; removed here after a link or a failure
	err = write(f)
	if err == nil {
		if serr := f.Sync(); serr != nil {
			err = fmt.Errorf("%w: %w", rules.Write, SysCause(serr))
		}
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("%w: %w", rules.Write, SysCause(cerr))
	}
	if err != nil {
		return "", err
	}
	if rules.Copied != nil {
		rules.Copied()
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}

	if overwrite {
		// Again, just before: the bytes took time, and something else may be there now.
		if err := checkReplaceable(path, rules.NotFile); err != nil {
			return "", err
		}
		if err := os.Rename(tmp, path); err != nil {
			return "", fmt.Errorf("%w: %w", rules.Write, SysCause(err))
		}
	} else {
		if err := os.Link(tmp, path); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return "", rules.Exists
			}
			return "", fmt.Errorf("%w: %w", rules.Exists, SysCause(err))
		}
		os.Remove(tmp)
	}
	if err := syncDir(dir); err != nil && rules.DirSyncFailed != nil {
		rules.DirSyncFailed(err)
	}
	return path, nil
}

// checkReplaceable refuses, as notFile, a destination that overwrite would replace
// and that is no regular file: a symlink (its target is not what the caller named
// for a file), a FIFO, a socket, a device node (/dev/null as root). Nothing there,
// or a regular file, is fine.
func checkReplaceable(path string, notFile error) error {
	st, err := os.Lstat(path)
	if err != nil || st.Mode().IsRegular() {
		return nil
	}
	return fmt.Errorf("%w (it is %s)", notFile, kind(st.Mode()))
}

// kind names what a file mode says a file is, for a message.
func kind(mode fs.FileMode) string {
	switch {
	case mode&fs.ModeSymlink != 0:
		return "a symlink"
	case mode&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case mode&fs.ModeSocket != 0:
		return "a socket"
	case mode&fs.ModeCharDevice != 0:
		return "a character device"
	case mode&fs.ModeDevice != 0:
		return "a block device"
	case mode.IsDir():
		return "a directory"
	}
	return "not a regular file"
}

// The bounds of a name on Linux (NAME_MAX, and PATH_MAX less its NUL).
const (
	maxNameBytes = 255
	maxPathBytes = 4095
)

// checkName refuses a path no file can have, saying why as bad, before anything is
// written: a NUL byte, a name over 255 bytes, a path over 4095 bytes.
func checkName(path string, bad error) error {
	if strings.IndexByte(path, 0) >= 0 {
		return fmt.Errorf("%w: the path contains a NUL byte", bad)
	}
	if len(path) > maxPathBytes {
		return fmt.Errorf("%w: the path has %d bytes, more than the %d a path may have", bad, len(path), maxPathBytes)
	}
	for name := range strings.SplitSeq(path, string(filepath.Separator)) {
		if len(name) > maxNameBytes {
			return fmt.Errorf("%w: a name in the path has %d bytes, more than the %d a file name may have", bad, len(name), maxNameBytes)
		}
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// SysCause strips the path from an *os.PathError or *os.LinkError so that a message
// names the system error only (no temp names, no user paths echoed back).
func SysCause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}
