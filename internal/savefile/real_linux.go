package savefile

import (
	"fmt"
	"os"
)

// realPath is the path of the directory d holds open, as the kernel knows it now.
func realPath(d *os.File) (string, error) {
	return os.Readlink(fmt.Sprintf("/proc/self/fd/%d", d.Fd()))
}
