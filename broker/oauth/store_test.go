package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// ---- the credential store ----

// storeFile is a credential file path in a fresh 0700 store directory.
func storeFile(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "store")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "grant.json")
}

func sampleGrant() *Grant {
	return &Grant{
		TokenResponse:   map[string]any{"access_token": "at-secret", "token_type": "Bearer", "expires_in": float64(3600), "refresh_token": "rt-secret"},
		TokenReceivedAt: time.Now().Unix(),
		Issuer:          "https://as.example",
		TokenEndpoint:   "https://as.example/token",
		ClientID:        "client",
		Resource:        "https://mcp.example/mcp",
	}
}

func wantStoreErr(t *testing.T, err, target error, msg string) {
	t.Helper()
	if !errors.Is(err, target) || !strings.Contains(err.Error(), msg) {
		t.Fatalf("error = %v, want %q", err, msg)
	}
	for _, secret := range []string{"at-secret", "rt-secret", string(filepath.Separator) + "store"} {
		if strings.Contains(err.Error(), secret) {
			t.Fatalf("error %q reveals %q", err, secret)
		}
	}
}

func TestOAuthStoreSavesAtomicallyAndLoads(t *testing.T) {
	file := storeFile(t)
	g := sampleGrant()
	for range 3 { // the first save creates the file, the others replace it
		if err := SaveGrant(file, g); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := os.ReadDir(filepath.Dir(file))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "grant.json" {
		t.Fatalf("store holds %v, want only grant.json (no temp files)", entries)
	}
	fi, err := os.Stat(file)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode = %v, %v; want 0600", fi.Mode(), err)
	}
	got, err := LoadGrant(file)
	if err != nil {
		t.Fatal(err)
	}
	if got.TokenResponse["refresh_token"] != "rt-secret" || got.Resource != g.Resource || got.TokenReceivedAt != g.TokenReceivedAt {
		t.Fatalf("loaded %+v", got)
	}

	// A failed save removes its temp file: here the target is a directory.
	blocked := filepath.Join(filepath.Dir(file), "blocked.json")
	if err := os.Mkdir(blocked, 0o700); err != nil {
		t.Fatal(err)
	}
	wantStoreErr(t, SaveGrant(blocked, g), ErrStoreUnsafe, msgOAuthStoreUnsafe)
	if tmps, _ := filepath.Glob(filepath.Join(filepath.Dir(file), "*.new")); len(tmps) != 0 {
		t.Fatalf("a failed save left %v", tmps)
	}
}

func TestOAuthStoreCreatesPrivateDirectoryOnlyWhenSaving(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	file := filepath.Join(dir, "grant.json")
	if _, err := LoadGrant(file); !errors.Is(err, ErrNoGrant) || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("LoadGrant without a store = %v, want ErrNoGrant", err)
	}
	if err := CheckStoreDir(file, false); !errors.Is(err, ErrNoGrant) {
		t.Fatalf("CheckStoreDir(create=false) = %v", err)
	}
	if _, err := os.Lstat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("reading the store created its directory")
	}
	if err := SaveGrant(file, sampleGrant()); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(dir); err != nil || fi.Mode().Perm() != 0o700 || !fi.IsDir() {
		t.Fatalf("store directory = %v, %v; want a 0700 directory", fi.Mode(), err)
	}
}

func TestOAuthStoreRefusesOpenDirectory(t *testing.T) {
	file := storeFile(t)
	if err := SaveGrant(file, sampleGrant()); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	wantStoreErr(t, CheckStoreDir(file, true), ErrStoreDirUnsafe, msgOAuthStoreDir)
	wantStoreErr(t, SaveGrant(file, sampleGrant()), ErrStoreDirUnsafe, msgOAuthStoreDir)
	_, err := LoadGrant(file)
	wantStoreErr(t, err, ErrStoreDirUnsafe, msgOAuthStoreDir)
	_, err = LockGrant(t.Context(), file)
	wantStoreErr(t, err, ErrStoreDirUnsafe, msgOAuthStoreDir)
}

func TestOAuthStoreRefusesSymlinkedDirectory(t *testing.T) {
	real := filepath.Dir(storeFile(t))
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(link, "grant.json")
	wantStoreErr(t, SaveGrant(file, sampleGrant()), ErrStoreDirUnsafe, msgOAuthStoreDir)
	_, err := LoadGrant(file)
	wantStoreErr(t, err, ErrStoreDirUnsafe, msgOAuthStoreDir)
	if entries, _ := os.ReadDir(real); len(entries) != 0 {
		t.Fatalf("a save through the link wrote %v", entries)
	}
}

func TestOAuthStoreRefusesUnsafeFiles(t *testing.T) {
	for name, setup := range map[string]func(t *testing.T, file string){
		"mode 0644": func(t *testing.T, file string) {
			if err := os.Chmod(file, 0o644); err != nil {
				t.Fatal(err)
			}
		},
		"over 64 KiB": func(t *testing.T, file string) {
			g := sampleGrant()
			g.TokenResponse["padding"] = strings.Repeat("x", grantMaxBytes)
			data, _ := json.Marshal(g)
			if err := os.WriteFile(file, data, 0o600); err != nil {
				t.Fatal(err)
			}
		},
		"symbolic link": func(t *testing.T, file string) {
			target := file + ".target"
			if err := os.Rename(file, target); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, file); err != nil {
				t.Fatal(err)
			}
		},
		"not a regular file": func(t *testing.T, file string) {
			if err := os.Remove(file); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mkfifo(file, 0o600); err != nil {
				t.Fatal(err)
			}
		},
		"owned by another user": func(t *testing.T, file string) {
			if os.Geteuid() != 0 {
				t.Fatal("only root can give a file away; see TestOAuthStoreRefusesAnotherUsersFile")
			}
			if err := os.Chown(file, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		},
	} {
		if name == "owned by another user" && os.Geteuid() != 0 {
			continue // covered by TestOAuthStoreRefusesAnotherUsersFile
		}
		t.Run(name, func(t *testing.T) {
			file := storeFile(t)
			if err := SaveGrant(file, sampleGrant()); err != nil {
				t.Fatal(err)
			}
			setup(t, file)
			_, err := LoadGrant(file)
			wantStoreErr(t, err, ErrStoreUnsafe, msgOAuthStoreUnsafe)
		})
	}
}

// TestOAuthStoreRefusesAnotherUsersFile checks the owner rule on a file of
// another user whoever runs the test: root's /etc/passwd for a user, a chowned
// file for root.
func TestOAuthStoreRefusesAnotherUsersFile(t *testing.T) {
	path := "/etc/passwd"
	if os.Geteuid() == 0 {
		path = filepath.Join(t.TempDir(), "theirs")
		if err := os.WriteFile(path, []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(path, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	err = checkPrivateFile(f, "credential file")
	wantStoreErr(t, err, ErrStoreUnsafe, "is owned by uid")
}

func TestOAuthStoreLockWaitsForTheHolder(t *testing.T) {
	file := storeFile(t)
	unlock, err := LockGrant(t.Context(), file)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(file + ".oauth-lock"); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("lock file = %v, %v; want grant.json.oauth-lock 0600", fi, err)
	}
	const hold = 200 * time.Millisecond
	got := make(chan error, 1)
	start := time.Now()
	go func() {
		unlock2, err := LockGrant(t.Context(), file)
		if err == nil {
			unlock2()
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("a second LockGrant returned while the lock was held: %v", err)
	case <-time.After(hold):
	}
	unlock()
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("the waiting LockGrant failed: %v", err)
		}
		if waited := time.Since(start); waited < hold {
			t.Fatalf("the waiting LockGrant returned after %v, before the unlock", waited)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the waiting LockGrant did not get the lock after the unlock")
	}

	// A cancelled wait ends at once.
	unlock, err = LockGrant(t.Context(), file)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if _, err := LockGrant(ctx, file); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("LockGrant with an ending context = %v", err)
	}
}

func TestOAuthStoreLockGivesUpAfter5s(t *testing.T) {
	t.Parallel()
	file := storeFile(t)
	unlock, err := LockGrant(t.Context(), file)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	start := time.Now()
	_, err = LockGrant(t.Context(), file)
	waited := time.Since(start)
	if !errors.Is(err, ErrGrantLocked) || !strings.Contains(err.Error(), "gave up after 5s") {
		t.Fatalf("error = %v, want ErrGrantLocked after 5s", err)
	}
	if waited < grantLockWait || waited > grantLockWait+2*time.Second {
		t.Fatalf("gave up after %v, want %v", waited, grantLockWait)
	}
}

// TestOAuthStoreLockIsItsOwn: a grant's lock is a file of its own, not a journal's
// lock (a journal grant.json in the same directory locks grant.lock, held for the
// server's life) nor another grant's file; a credential file named like a lock
// file is refused.
func TestOAuthStoreLockIsItsOwn(t *testing.T) {
	file := storeFile(t)
	journalLock, err := os.OpenFile(filepath.Join(filepath.Dir(file), "grant.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer journalLock.Close()
	if err := syscall.Flock(int(journalLock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	unlock, err := LockGrant(ctx, file)
	if err != nil {
		t.Fatalf("LockGrant while grant.lock is held by another: %v", err)
	}
	unlock()
	for _, name := range []string{"other.lock", "grant.json.oauth-lock"} {
		other := filepath.Join(filepath.Dir(file), name)
		_, err := LoadGrant(other)
		wantStoreErr(t, err, ErrStoreUnsafe, "the name of a lock file")
		wantStoreErr(t, SaveGrant(other, &Grant{TokenResponse: map[string]any{}}), ErrStoreUnsafe, "the name of a lock file")
		_, err = LockGrant(t.Context(), other)
		wantStoreErr(t, err, ErrStoreUnsafe, "the name of a lock file")
	}
}
