package privfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Errors a caller branches on with errors.Is.
var (
	// ErrLocked: another open file description, in this or another process, holds the lock.
	ErrLocked = errors.New("the lock is held")
	// ErrNotPrivate: the file is a symbolic link, not a regular file, not the
	// effective user's, or open to group or others; the *NotPrivateError says which.
	ErrNotPrivate = errors.New("not a private file")
)

// NotPrivateError says why a file is not private, as a phrase that follows its
// name: "is a symbolic link", "has mode 0644, open to group or others; chmod 600 it".
type NotPrivateError struct {
	Reason string
}

func (e *NotPrivateError) Error() string { return e.Reason }
func (e *NotPrivateError) Unwrap() error { return ErrNotPrivate }

func notPrivate(format string, a ...any) error {
	return &NotPrivateError{Reason: fmt.Sprintf(format, a...)}
}

// LockPath is the lock file of path: path with its extension replaced by "lock"
// (journal.json → journal.lock), or with ".lock" appended to a path that already
// ends in it.
func LockPath(path string) string {
	lock := strings.TrimSuffix(path, filepath.Ext(path)) + ".lock"
	if lock == path {
		lock += ".lock"
	}
	return lock
}

// Open opens path for reading the way a private file must be opened: never
// through a final symbolic link (a *NotPrivateError says so), and without blocking,
// so that a FIFO or a device opens at once for Check to refuse instead of hanging
// the caller. Other errors are the system's, fs.ErrNotExist among them.
func Open(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, notPrivate("is a symbolic link")
	}
	return f, err
}

// Check returns nil for a regular file owned by the effective user without group
// or other permission bits, a *NotPrivateError for anything else, and the stat
// error when f cannot be inspected.
func Check(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return notPrivate("is %s, not a regular file", Kind(fi.Mode()))
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return notPrivate("is owned by uid %d, not uid %d", st.Uid, os.Geteuid())
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return notPrivate("has mode %04o, open to group or others; chmod 600 it", perm)
	}
	return nil
}

// CheckDir refuses a directory (info from os.Lstat) that is a symbolic link, not a
// directory, another user's, or open to group or others, saying which.
func CheckDir(dir string, info fs.FileInfo) error {
	switch {
	case info.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("%s is a symbolic link", dir)
	case !info.IsDir():
		return fmt.Errorf("%s is not a directory", dir)
	case info.Mode().Perm()&0o077 != 0:
		return fmt.Errorf("%s is open to group or others (mode %04o)", dir, info.Mode().Perm())
	}
	if st, ok := info.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%s belongs to uid %d, not to this user (uid %d)", dir, st.Uid, os.Geteuid())
	}
	return nil
}

// Kind names what a file that is not a regular file is, for messages.
func Kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m.IsRegular():
		return "a regular file"
	}
	return "not a regular file"
}

// Lock opens (creating 0600, never following a link) the lock file at path and
// takes a non-blocking exclusive flock on it. Errors: ErrLocked when another
// holds it; a *NotPrivateError when the file is not private; otherwise the
// system's error, unwrapped.
func Lock(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, notPrivate("is a symbolic link")
		}
		return nil, err
	}
	if err := Check(f); err != nil {
		f.Close()
		return nil, err
	}
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	var flockErr error
	if err := rc.Control(func(fd uintptr) {
		for {
			flockErr = syscall.Flock(int(fd), syscall.LOCK_EX|syscall.LOCK_NB)
			if flockErr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		f.Close()
		return nil, err
	}
	if flockErr != nil {
		f.Close()
		if errors.Is(flockErr, syscall.EWOULDBLOCK) {
			return nil, ErrLocked
		}
		return nil, flockErr
	}
	return f, nil
}

// Unlock unlocks and closes a lock file from Lock; closing alone would release
// the flock too, the explicit unlock just makes it prompt.
func Unlock(f *os.File) {
	if rc, err := f.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) { syscall.Flock(int(fd), syscall.LOCK_UN) })
	}
	f.Close()
}

// WriteAtomic replaces path with data through tmp, a new file in the same
// directory: created 0600 (exclusively, never through a link), synced, renamed
// over path, then the directory synced. On error tmp is gone.
func WriteAtomic(path, tmp string, data []byte) error {
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	dir, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	err = dir.Sync()
	if cerr := dir.Close(); err == nil {
		err = cerr
	}
	return err
}
