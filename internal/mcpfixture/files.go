package mcpfixture

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// countEffect adds one to the count in marker (a missing file is 0) and returns the
// new count. It holds an flock on marker's directory throughout, so fixture
// processes that share a marker never lose a count.
func countEffect(marker string) (int, error) {
	dir, err := os.Open(filepath.Dir(marker))
	if err != nil {
		return 0, err
	}
	defer dir.Close()
	if err := syscall.Flock(int(dir.Fd()), syscall.LOCK_EX); err != nil {
		return 0, fmt.Errorf("locking %s: %w", dir.Name(), err)
	}
	defer syscall.Flock(int(dir.Fd()), syscall.LOCK_UN)

	n := 0
	data, err := os.ReadFile(marker)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return 0, err
	default:
		if n, err = strconv.Atoi(strings.TrimSpace(string(data))); err != nil {
			return 0, fmt.Errorf("marker %s holds %q, not a count", marker, data)
		}
	}
	n++
	return n, writeFileAtomic(marker, []byte(strconv.Itoa(n)))
}

// writeFileAtomic replaces path with data: a temp file in the same directory,
// fsync, rename, fsync the directory. Readers see the old file or the whole new one.
func writeFileAtomic(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
