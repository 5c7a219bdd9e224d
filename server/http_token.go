package server

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"
)

// The HTTP transport's bearer token: read from a private file, or checked when it
// comes from elsewhere.

// maxTokenFile bounds what is read of a token file.
const maxTokenFile = 64 << 10

// ReadTokenFile reads a bearer token: the first line of a regular file, not a
// symbolic link, owned by this user, that only its owner may read or write (mode
// 0600 or 0400). It is opened without blocking, so a FIFO or a device is refused at
// once instead of hanging the start. The error never quotes the token.
func ReadTokenFile(path string) (string, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) {
		return "", fmt.Errorf("token file %s is a symbolic link; pass the path of the file itself", path)
	}
	if err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	if !info.Mode().IsRegular() {
		return "", fmt.Errorf("token file %s is %s, not a regular file; write the token to a file of its own", path, fileKind(info.Mode()))
	}
	if st, ok := info.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return "", fmt.Errorf("token file %s belongs to uid %d, not to this user (uid %d); use a file of your own", path, st.Uid, os.Geteuid())
	}
	if perm := info.Mode().Perm(); perm&0o077 != 0 {
		return "", fmt.Errorf("token file %s is accessible to group or others (mode %04o); make it private with chmod 600", path, perm)
	}
	line, err := bufio.NewReader(io.LimitReader(f, maxTokenFile)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("token file %s: %w", path, err)
	}
	token := strings.TrimSpace(line)
	if token == "" {
		return "", fmt.Errorf("token file %s: the first line is empty", path)
	}
	if err := CheckToken(token); err != nil {
		return "", fmt.Errorf("token file %s: %w", path, err)
	}
	return token, nil
}

// fileKind names what a path that is not a regular file is.
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "not a file (" + m.Type().String() + ")"
}

// CheckToken refuses a token that cannot travel in an Authorization header.
func CheckToken(token string) error {
	if token == "" {
		return errors.New("the token is empty")
	}
	for i := 0; i < len(token); i++ {
		if c := token[i]; c <= ' ' || c >= 0x7f {
			return errors.New("the token must be printable ASCII without spaces")
		}
	}
	return nil
}
