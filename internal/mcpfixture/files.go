package mcpfixture

import (
	"errors"
	"fmt"
	"github.com/iota-uz/repl-mcp/internal/atomicfile"
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

// writeFileAtomic replaces path with data, private to us, as markers always were.
func writeFileAtomic(path string, data []byte) error {
	return atomicfile.WriteFile(path, data, 0o600)
}
