//go:build !linux

package savefile

import (
	"os"
	"path/filepath"
)

// realPath is the path of the directory d holds open. Outside Linux it is d's name
// with its symbolic links resolved: no sandbox there confines saves.
func realPath(d *os.File) (string, error) {
	return filepath.EvalSymlinks(d.Name())
}
