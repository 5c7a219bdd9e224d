package statedir

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/iota-uz/repl-mcp/internal/privfile"
)

// Dir is the user's state directory: its key and its projects.
type Dir struct {
	root  string
	key   []byte
	keyID string
	log   *slog.Logger
}

// keyBytes is the size of the per-user key; keyName its file in the root.
const (
	keyBytes = 32
	keyName  = "key"
)

// DefaultRoot is where the state lives unless --snapshot-dir says otherwise:
// $XDG_STATE_HOME/repl-mcp when that is an absolute path, else
// $HOME/.local/state/repl-mcp (the XDG default, on macOS too).
func DefaultRoot(getenv func(string) string) (string, error) {
	if state := getenv("XDG_STATE_HOME"); filepath.IsAbs(state) {
		return filepath.Join(state, "repl-mcp"), nil
	}
	home := getenv("HOME")
	if !filepath.IsAbs(home) {
		return "", errors.New("neither XDG_STATE_HOME nor HOME is an absolute path")
	}
	return filepath.Join(home, ".local", "state", "repl-mcp"), nil
}

// Open makes (or opens) the state directory root, private, and its key: 32 random
// bytes made once per root, kept 0600 beside the projects. root must be absolute.
func Open(root string, log *slog.Logger) (*Dir, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if !filepath.IsAbs(root) {
		return nil, fmt.Errorf("%s is not an absolute path", root)
	}
	root = filepath.Clean(root)
	if err := privateDir(root, true); err != nil {
		return nil, err
	}
	if err := privateDir(filepath.Join(root, projectsDir), false); err != nil {
		return nil, err
	}
	key, err := loadKey(filepath.Join(root, keyName))
	if err != nil {
		return nil, err
	}
	id := sha256.Sum256(append([]byte("repl-mcp key id\n"), key...))
	return &Dir{root: root, key: key, keyID: hex.EncodeToString(id[:8]), log: log}, nil
}

// Root is the directory's path.
func (d *Dir) Root() string { return d.root }

// Key is the per-user key snapshots are authenticated with (HMAC-SHA256).
func (d *Dir) Key() []byte { return d.key }

// KeyID names the key without revealing it: a snapshot written with another key
// says so by its key_id.
func (d *Dir) KeyID() string { return d.keyID }

// privateDir makes dir (its missing parents too when parents is set) with mode
// 0700 and checks that it is a directory of this user's, not a symbolic link, that
// no one else can enter.
func privateDir(dir string, parents bool) error {
	var err error
	if parents {
		err = os.MkdirAll(dir, 0o700)
	} else if err = os.Mkdir(dir, 0o700); errors.Is(err, fs.ErrExist) {
		err = nil
	}
	if err != nil {
		return err
	}
	info, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	return privfile.CheckDir(dir, info)
}

// loadKey reads the key file, or makes it: a temp file beside it linked into place,
// so that two servers starting at once agree on one key.
func loadKey(path string) ([]byte, error) {
	for range 3 {
		key, err := readKey(path)
		if !errors.Is(err, fs.ErrNotExist) {
			return key, err
		}
		fresh := make([]byte, keyBytes)
		rand.Read(fresh)
		tmp := path + ".tmp-" + rand.Text()[:10]
		if err := privfile.WriteAtomic(tmp, tmp+".part", []byte(hex.EncodeToString(fresh)+"\n")); err != nil {
			return nil, fmt.Errorf("make the snapshot key %s: %w", path, err)
		}
		err = os.Link(tmp, path)
		os.Remove(tmp)
		if err == nil {
			return fresh, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("make the snapshot key %s: %w", path, err)
		}
		// Another server made it first: read theirs.
	}
	return nil, fmt.Errorf("the snapshot key %s keeps changing", path)
}

func readKey(path string) ([]byte, error) {
	f, err := privfile.Open(path)
	if err != nil {
		var np *privfile.NotPrivateError
		if errors.As(err, &np) {
			return nil, fmt.Errorf("the snapshot key %s %s", path, np.Reason)
		}
		return nil, err
	}
	defer f.Close()
	if err := privfile.Check(f); err != nil {
		return nil, fmt.Errorf("the snapshot key %s %w", path, err)
	}
	data, err := io.ReadAll(io.LimitReader(f, 4*keyBytes))
	if err != nil {
		return nil, err
	}
	key, err := hex.DecodeString(strings.TrimSpace(string(data)))
	if err != nil || len(key) != keyBytes {
		return nil, fmt.Errorf("the snapshot key %s is not %d bytes of hex: remove it and every snapshot made with it (rm -r %s)", path, keyBytes, filepath.Dir(path))
	}
	return key, nil
}

// Sweep removes the state of projects whose directory no longer exists (a test's
// temporary project, a deleted checkout) and that no live server holds, so that the
// root does not grow with every project ever served. It returns the projects removed.
func (d *Dir) Sweep() []string {
	root := filepath.Join(d.root, projectsDir)
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil
	}
	var removed []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		p := &Project{d: d, dir: filepath.Join(root, e.Name())}
		st, err := p.read()
		if err != nil || st.Project == "" {
			continue // not ours to judge
		}
		p.path = st.Project
		if _, err := os.Stat(st.Project); !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if p.anyServerLive() || p.anySnapshotLive() {
			continue
		}
		if err := os.RemoveAll(p.dir); err != nil {
			d.log.Warn("state of a removed project not swept", "project", st.Project, "err", err)
			continue
		}
		removed = append(removed, st.Project)
	}
	return removed
}
