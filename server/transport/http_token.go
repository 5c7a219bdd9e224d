package transport

import (
	"bufio"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/iota-uz/repl-mcp/internal/privfile"
)

// The HTTP transport's bearer token: read from a private file, checked when it
// comes from elsewhere, or generated and written to a private file of its own.

// maxTokenFile bounds what is read of a token file.
const maxTokenFile = 64 << 10

// ReadTokenFile reads a bearer token: the first line of a regular file, not a
// symbolic link, owned by this user, that only its owner may read or write (mode
// 0600 or 0400). It is opened without blocking, so a FIFO or a device is refused at
// once instead of hanging the start. The error never quotes the token.
func ReadTokenFile(path string) (string, error) {
	f, err := privfile.Open(path)
	if err == nil {
		defer f.Close()
		err = privfile.Check(f)
	}
	if np := (*privfile.NotPrivateError)(nil); errors.As(err, &np) {
		return "", fmt.Errorf("token file %s %s; the token must be in a private file of your own", path, np.Reason)
	}
	if err != nil {
		return "", fmt.Errorf("token file: %w", err)
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

// Bounds of a bearer token given by its user. A generated one (rand.Text) has 26
// characters.
const (
	// MinTokenLen: a shorter token can be guessed by a client that tries many.
	MinTokenLen = 16
	// MaxTokenLen keeps "Authorization: Bearer TOKEN" well inside the 64 KiB
	// of headers a request may carry (maxHeaderBytes), beside the others.
	MaxTokenLen = 4096
)

// CheckToken refuses a token that cannot travel in an Authorization header, or is
// too short to resist guessing. Its errors never quote the token.
func CheckToken(token string) error {
	if token == "" {
		return errors.New("the token is empty")
	}
	for i := 0; i < len(token); i++ {
		if c := token[i]; c <= ' ' || c >= 0x7f {
			return errors.New("the token must be printable ASCII without spaces")
		}
	}
	switch {
	case len(token) < MinTokenLen:
		return fmt.Errorf("the token has %d characters, fewer than the %d a token needs to resist guessing "+
			"(even on loopback); use a longer one, such as the output of `openssl rand -hex 32`, or give none "+
			"and the server generates one", len(token), MinTokenLen)
	case len(token) > MaxTokenLen:
		return fmt.Errorf("the token has %d characters, more than the %d that fit in a request's headers "+
			"(64 KiB in all); use a shorter one", len(token), MaxTokenLen)
	}
	return nil
}

// tokenFile is a generated token's file, in a directory held open so that what
// is removed is what was written, whatever happens to the path meanwhile.
type tokenFile struct {
	path string
	root *os.Root
	name string
}

// createTokenFile writes token to a new file, mode 0600, with a name of its own
// (the server's pid and a random part), in the first of dirs that is private: an
// absolute path to a directory owned by this user, not a symbolic link, without
// group or other permissions (created 0700 when missing), whose parent is not
// writable by group or others. It wraps ErrTokenRequired, with every directory's
// reason, when none is.
func createTokenFile(dirs []string, token string) (*tokenFile, error) {
	var reasons []string
	for _, dir := range dirs {
		f, err := createTokenFileIn(dir, token)
		if err == nil {
			return f, nil
		}
		reasons = append(reasons, err.Error())
	}
	if len(reasons) == 0 {
		reasons = append(reasons, "no directory was given")
	}
	return nil, fmt.Errorf("%w, and there is no private directory to write a generated one to (%s)", ErrTokenRequired, strings.Join(reasons, "; "))
}

func createTokenFileIn(dir, token string) (*tokenFile, error) {
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("%s is not an absolute path", dir)
	}
	parent, err := os.Stat(filepath.Dir(dir))
	if err == nil && parent.Mode().Perm()&0o022 != 0 {
		return nil, fmt.Errorf("%s is writable by group or others (mode %04o)", filepath.Dir(dir), parent.Mode().Perm())
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	info, err := os.Lstat(dir)
	if err != nil {
		return nil, err
	}
	if err := privfile.CheckDir(dir, info); err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	// The directory opened must be the one checked, not one swapped in since.
	if opened, err := root.Stat("."); err != nil || !os.SameFile(opened, info) {
		root.Close()
		return nil, fmt.Errorf("%s changed while it was being opened", dir)
	}
	name := fmt.Sprintf("http-token-%d-%s", os.Getpid(), rand.Text()[:10])
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		root.Close()
		return nil, err
	}
	_, err = f.WriteString(token + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		root.Remove(name)
		root.Close()
		return nil, fmt.Errorf("write %s: %w", filepath.Join(dir, name), err)
	}
	return &tokenFile{path: filepath.Join(dir, name), root: root, name: name}, nil
}

// remove deletes the file; the directory stays for the next server.
func (f *tokenFile) remove() {
	f.root.Remove(f.name)
	f.root.Close()
}
