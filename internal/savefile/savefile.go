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
	"golang.org/x/sys/unix"
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
	// Confine, when set, is asked whether the destination's directory, its real
	// path (symbolic links resolved, from the directory the save holds open), may be
	// written; its error refuses the save. Every step after it is relative to that
	// open directory, so no later swap of a path component (a symbolic link put in
	// place of a directory) can lead the save elsewhere. The sandbox confines the
	// server's writes on a sandboxed session's behalf with it.
	Confine func(dir string) error
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
	d, err := os.Open(dir)
	if err != nil {
		return "", fmt.Errorf("%w: %w", rules.Parent, SysCause(err))
	}
	defer d.Close()
	if st, err := d.Stat(); err != nil {
		return "", fmt.Errorf("%w: %w", rules.Parent, SysCause(err))
	} else if !st.IsDir() {
		return "", rules.Parent
	}
	if trailingSlash {
		return "", fmt.Errorf("%w: the path ends in %c, which names a directory; give the file's name", rules.IsDir, filepath.Separator)
	}
	if rules.Confine != nil {
		real, err := realPath(d)
		if err != nil {
			return "", fmt.Errorf("%w: %w", rules.Parent, err)
		}
		if err := rules.Confine(real); err != nil {
			return "", err
		}
	}

	// From here on every step is relative to the directory held open.
	at := int(d.Fd())
	tmp, base := rules.TempPrefix+ids.UUID(), filepath.Base(path)
	if overwrite {
		if err := checkReplaceable(at, base, rules.NotFile); err != nil {
			return "", err
		}
	}
	tfd, err := unix.Openat(at, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return "", fmt.Errorf("%w: %w", rules.Write, err)
	}
	f := os.NewFile(uintptr(tfd), filepath.Join(dir, tmp))
	defer unix.Unlinkat(at, tmp, 0) // already gone after a rename; removed here after a link or a failure
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
		if err := checkReplaceable(at, base, rules.NotFile); err != nil {
			return "", err
		}
		if err := unix.Renameat(at, tmp, at, base); err != nil {
			return "", fmt.Errorf("%w: %w", rules.Write, err)
		}
	} else {
		if err := unix.Linkat(at, tmp, at, base, 0); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return "", rules.Exists
			}
			return "", fmt.Errorf("%w: %w", rules.Exists, err)
		}
		unix.Unlinkat(at, tmp, 0)
	}
	if err := d.Sync(); err != nil && rules.DirSyncFailed != nil {
		rules.DirSyncFailed(err)
	}
	return path, nil
}

// checkReplaceable refuses to replace what is not a regular file: overwrite
// replaces a file, never a symlink (whose target would be left as it was while the
// link goes), a FIFO, a socket, a device node or a directory. base is looked at in
// the directory held open as at, never through a link; a name that is not there is
// fine.
func checkReplaceable(at int, base string, notFile error) error {
	var st unix.Stat_t
	if err := unix.Fstatat(at, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil || st.Mode&unix.S_IFMT == unix.S_IFREG {
		return nil
	}
	return fmt.Errorf("%w (it is %s)", notFile, kind(uint32(st.Mode)))
}

// kind names what a stat mode says a file is, for a message.
func kind(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFLNK:
		return "a symlink"
	case unix.S_IFIFO:
		return "a FIFO"
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFCHR:
		return "a character device"
	case unix.S_IFBLK:
		return "a block device"
	case unix.S_IFDIR:
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
