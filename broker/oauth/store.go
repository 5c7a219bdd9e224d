package oauth

// The OAuth credential store (docs/contract.md §8.7): one private JSON file per
// authorization-code grant, written by --oauth-login and by a refresh, read at
// connect. The file sits in a directory of its own user (0700, not a symbolic
// link); it is opened without following links and must be a regular file of at
// most 64 KiB, owned by the effective user, without group or other permission
// bits. Saves are atomic (temp file in the same directory, fsync, rename, fsync
// the directory). A refresh holds an exclusive flock on <file>.oauth-lock so that
// two repl-mcp processes sharing a grant do not both spend its refresh token: a
// lock of its own, which no journal's lock (<stem>.lock) and no other grant's file
// can be, since a credential file may not end in .lock or .oauth-lock.
//
// Errors name what is wrong, never the path (it may come from an environment
// variable) and never a token.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/iota-uz/repl-mcp/internal/ids"
	"github.com/iota-uz/repl-mcp/internal/privfile"
)

// Credential store limits (docs/contract.md §8.7).
const (
	grantMaxBytes  = 64 << 10
	grantLockWait  = 5 * time.Second
	grantLockRetry = 20 * time.Millisecond
	// grantLockSuffix names a grant's lock file: <credential file>.oauth-lock.
	grantLockSuffix = ".oauth-lock"
)

// Messages the contract fixes (docs/contract.md §8.7).
const (
	msgOAuthStoreDir    = "OAuth store directory must have permissions 0700"
	msgOAuthStoreUnsafe = "Private broker credential store unavailable or unsafe; require regular file0600 and directory0700"
)

// Errors of the credential store; each message is safe to show.
var (
	// ErrNoGrant: the credential file does not exist (errors.Is(err, fs.ErrNotExist) holds too).
	ErrNoGrant = fmt.Errorf("no OAuth grant is stored: %w", fs.ErrNotExist)
	// ErrStoreDirUnsafe: the directory is a symbolic link, not a directory, or open to group or others.
	ErrStoreDirUnsafe = errors.New(msgOAuthStoreDir)
	// ErrStoreUnsafe: the file (or its lock file) is not a private regular file of ours.
	ErrStoreUnsafe = errors.New(msgOAuthStoreUnsafe)
	// ErrGrantInvalid: the file is not a grant this package wrote.
	ErrGrantInvalid = errors.New("OAuth credential file does not hold a valid grant")
	// ErrGrantLocked: another process held the refresh lock for the whole wait.
	ErrGrantLocked = errors.New("OAuth credential store is locked by another process")
)

// Grant is one stored authorization-code grant.
type Grant struct {
	TokenResponse   map[string]any `json:"token_response"`    // the token endpoint's JSON as received (access_token, token_type, expires_in, refresh_token, scope)
	TokenReceivedAt int64          `json:"token_received_at"` // unix seconds when received
	Issuer          string         `json:"issuer"`
	TokenEndpoint   string         `json:"token_endpoint"`
	ClientID        string         `json:"client_id"`
	ClientSecret    string         `json:"client_secret,omitempty"` // a DCR-issued secret, when any
	Resource        string         `json:"resource"`                // the MCP server URL the grant is for
	Scopes          []string       `json:"scopes,omitempty"`
}

// CheckStoreDir checks the directory of credentialFile: a real directory (not a
// symbolic link) without group or other permission bits. A missing directory is
// created 0700 (with its parents) when create is set, else it is ErrNoGrant.
func CheckStoreDir(credentialFile string, create bool) error {
	if !filepath.IsAbs(credentialFile) {
		return fmt.Errorf("%w (the credential file path is not absolute)", ErrStoreUnsafe)
	}
	if strings.HasSuffix(credentialFile, ".lock") || strings.HasSuffix(credentialFile, grantLockSuffix) {
		return fmt.Errorf("%w (the credential file's name ends in .lock or %s, the name of a lock file; choose another credentialFile)",
			ErrStoreUnsafe, grantLockSuffix)
	}
	dir := filepath.Dir(credentialFile)
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if !create {
			return ErrNoGrant
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("%w (the directory cannot be created: %v)", ErrStoreDirUnsafe, pathlessError(err))
		}
		fi, err = os.Lstat(dir)
	}
	if err != nil {
		return fmt.Errorf("%w (the directory cannot be inspected: %v)", ErrStoreDirUnsafe, pathlessError(err))
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("%w (the directory is a symbolic link)", ErrStoreDirUnsafe)
	case !fi.IsDir():
		return fmt.Errorf("%w (the directory is not a directory)", ErrStoreDirUnsafe)
	case fi.Mode().Perm()&0o077 != 0:
		return fmt.Errorf("%w (it has %04o; chmod 700 it)", ErrStoreDirUnsafe, fi.Mode().Perm())
	}
	return nil
}

// LoadGrant reads the grant in credentialFile. A missing file (or directory) is
// ErrNoGrant; the store creates nothing.
func LoadGrant(credentialFile string) (*Grant, error) {
	if err := CheckStoreDir(credentialFile, false); err != nil {
		return nil, err
	}
	f, err := privfile.Open(credentialFile)
	switch np := (*privfile.NotPrivateError)(nil); {
	case errors.Is(err, fs.ErrNotExist):
		return nil, ErrNoGrant
	case errors.As(err, &np):
		return nil, fmt.Errorf("%w (the credential file %s)", ErrStoreUnsafe, np.Reason)
	case err != nil:
		return nil, fmt.Errorf("%w (the credential file cannot be opened: %v)", ErrStoreUnsafe, pathlessError(err))
	}
	defer f.Close()
	if err := checkPrivateFile(f, "credential file"); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, grantMaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w (the credential file cannot be read: %v)", ErrStoreUnsafe, pathlessError(err))
	}
	if len(data) > grantMaxBytes {
		return nil, fmt.Errorf("%w (the credential file exceeds 64 KiB)", ErrStoreUnsafe)
	}
	var g Grant
	if err := json.Unmarshal(data, &g); err != nil {
		return nil, fmt.Errorf("%w (not a JSON grant object)", ErrGrantInvalid)
	}
	if g.TokenResponse == nil {
		return nil, fmt.Errorf("%w (token_response is missing)", ErrGrantInvalid)
	}
	return &g, nil
}

// SaveGrant replaces credentialFile with g atomically: the directory is checked
// (and created 0700), then `<stem>.<uuid>.new` is written 0600, synced, renamed
// over the file, and the directory synced.
func SaveGrant(credentialFile string, g *Grant) error {
	if err := CheckStoreDir(credentialFile, true); err != nil {
		return err
	}
	data, err := json.MarshalIndent(g, "", "  ")
	if err != nil {
		return fmt.Errorf("%w (the grant cannot be encoded)", ErrGrantInvalid)
	}
	data = append(data, '\n')
	if len(data) > grantMaxBytes {
		return fmt.Errorf("%w (the grant exceeds 64 KiB)", ErrGrantInvalid)
	}
	dir, name := filepath.Split(credentialFile)
	tmp := filepath.Join(dir, strings.TrimSuffix(name, filepath.Ext(name))+"."+ids.UUID()+".new")
	if err := privfile.WriteAtomic(credentialFile, tmp, data); err != nil {
		return fmt.Errorf("%w (the credential file cannot be written: %v)", ErrStoreUnsafe, pathlessError(err))
	}
	return nil
}

// LockGrant takes an exclusive flock on `<credential file>.oauth-lock` (created
// 0600, never through a link), retrying every 20 ms for up to 5 s. unlock
// releases it.
func LockGrant(ctx context.Context, credentialFile string) (unlock func(), err error) {
	return lockGrant(ctx, credentialFile, grantLockWait)
}

func lockGrant(ctx context.Context, credentialFile string, wait time.Duration) (unlock func(), err error) {
	if err := CheckStoreDir(credentialFile, false); err != nil {
		return nil, err
	}
	path := credentialFile + grantLockSuffix
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	retry := time.NewTicker(grantLockRetry)
	defer retry.Stop()
	for {
		f, err := privfile.Lock(path)
		switch {
		case err == nil:
			return func() { privfile.Unlock(f) }, nil
		case errors.Is(err, privfile.ErrNotPrivate):
			return nil, fmt.Errorf("%w (the lock file is not a private regular file of this user)", ErrStoreUnsafe)
		case !errors.Is(err, privfile.ErrLocked):
			return nil, fmt.Errorf("%w (the lock file cannot be opened: %v)", ErrStoreUnsafe, pathlessError(err))
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-deadline.C:
			return nil, fmt.Errorf("%w; gave up after %v, retry shortly", ErrGrantLocked, wait)
		case <-retry.C:
		}
	}
}

// checkPrivateFile refuses anything but a private file (privfile.Check) of at most
// 64 KiB.
func checkPrivateFile(f *os.File, what string) error {
	err := privfile.Check(f)
	if np := (*privfile.NotPrivateError)(nil); errors.As(err, &np) {
		return fmt.Errorf("%w (the %s %s)", ErrStoreUnsafe, what, np.Reason)
	}
	if err != nil {
		return fmt.Errorf("%w (the %s cannot be inspected: %v)", ErrStoreUnsafe, what, pathlessError(err))
	}
	if fi, err := f.Stat(); err == nil && fi.Size() > grantMaxBytes {
		return fmt.Errorf("%w (the %s exceeds 64 KiB)", ErrStoreUnsafe, what)
	}
	return nil
}

// pathlessError is err without the path an *fs.PathError or *os.LinkError names.
func pathlessError(err error) error {
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		return pe.Err
	case errors.As(err, &le):
		return le.Err
	}
	return err
}
