// The HTTP transport's generated bearer token, served by a real server: the token
// generated into a new private file when none is given, and the directories it may
// go to. Reading a token file and its bounds are tested with the transport
// (transport/http_token_test.go).

package server

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iota-uz/repl-mcp/cellops"
	"github.com/iota-uz/repl-mcp/internal/pythons"
	"github.com/iota-uz/repl-mcp/repl"
	"github.com/iota-uz/repl-mcp/server/transport"
)

// serveGenerated serves with a generated token written to one of dirs, and
// returns the URL, the token file's path and a function that stops the server
// and waits for it.
func serveGenerated(t *testing.T, dirs ...string) (url, tokenFile string, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	srv := New(Config{Version: "test", Repl: repl.NewManager(ctx, repl.Config{OpLimits: cellops.Limits(), Python: pythons.ForTest(t)[0].Path, PythonSource: "test", Project: t.TempDir(), Env: os.Environ(), Version: "test"})})
	type listening struct{ url, tokenFile string }
	ready := make(chan listening, 1)
	done := make(chan error, 1)
	go func() {
		done <- srv.ServeStreamableHTTP(ctx, transport.HTTPConfig{TokenDirs: dirs, Listening: func(u, f string) { ready <- listening{u, f} }})
	}()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("ServeStreamableHTTP: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("the HTTP server did not stop within 5 s")
		}
	}
	t.Cleanup(stop)
	select {
	case l := <-ready:
		return l.url, l.tokenFile, stop
	case err := <-done:
		t.Fatalf("ServeStreamableHTTP: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the HTTP server did not start listening")
	}
	return "", "", nil
}

// TestHTTPGeneratedToken: without a token, one is generated into a new 0600 file
// in the first private directory; requests without it get 401, requests with it
// are served; each server has a file of its own, removed when it stops.
func TestHTTPGeneratedToken(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "run", "repl-mcp") // created, parents too
	url, tokenFile, stop := serveGenerated(t, dir)
	if filepath.Dir(tokenFile) != dir {
		t.Fatalf("token file %s is not in %s", tokenFile, dir)
	}
	for path, want := range map[string]os.FileMode{dir: 0o700 | os.ModeDir, tokenFile: 0o600} {
		info, err := os.Lstat(path)
		if err != nil || info.Mode() != want {
			t.Fatalf("%s: mode %v (%v), want %v", path, info.Mode(), err, want)
		}
	}
	token, err := transport.ReadTokenFile(tokenFile)
	if err != nil || len(token) < 20 {
		t.Fatalf("the generated token file: %q, %v", token, err)
	}
	status, _, _, err := rawPost(t, t.Context(), url, nil, initializeBody)
	if err != nil || status != http.StatusUnauthorized {
		t.Fatalf("initialize without the token: status %d, %v; want 401", status, err)
	}
	cs := connect(t, url, "2025-11-25", token)
	if v := callTool(t, cs, "execute_python", map[string]any{"code": "6 * 7"})["value"]; v != 42.0 {
		t.Fatalf("6 * 7 = %v", v)
	}

	// A second server beside it: a file of its own, the first one untouched.
	_, second, stopSecond := serveGenerated(t, dir)
	if second == tokenFile || filepath.Dir(second) != dir {
		t.Fatalf("second server's token file %s (first %s)", second, tokenFile)
	}
	stopSecond()
	if _, err := os.Stat(second); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the second server's token file after it stopped: %v", err)
	}
	if _, err := transport.ReadTokenFile(tokenFile); err != nil {
		t.Fatalf("the first server's token file after the second stopped: %v", err)
	}
	cs.Close()
	stop()
	if _, err := os.Stat(tokenFile); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the token file after the server stopped: %v", err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the token directory went with the file: %v", err)
	}
}

// TestHTTPGeneratedTokenDirs: a directory that is a symbolic link, open to others,
// under a parent others may write, or relative, is passed over for the next; with
// none left the server does not start, and says why for each.
func TestHTTPGeneratedTokenDirs(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "real")
	if err := os.Mkdir(real, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	open := filepath.Join(base, "open")
	if err := os.Mkdir(open, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(open, 0o755)
	shared := filepath.Join(base, "shared")
	if err := os.Mkdir(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(shared, 0o1777)
	// Each directory, and what the error must say of it.
	refused := map[string]string{
		link:                              link + " is a symbolic link",
		open:                              open + " is open to group or others (mode 0755)",
		filepath.Join(shared, "repl-mcp"): shared + " is writable by group or others (mode 0777)",
		"relative/dir":                    "relative/dir is not an absolute path",
	}
	var dirs []string
	for d := range refused {
		dirs = append(dirs, d)
	}
	srv := New(Config{Version: "test", Repl: repl.NewManager(t.Context(), repl.Config{})})
	err := srv.ServeStreamableHTTP(t.Context(), transport.HTTPConfig{TokenDirs: dirs})
	if !errors.Is(err, transport.ErrTokenRequired) || !strings.Contains(err.Error(), "no private directory to write a generated one to") {
		t.Fatalf("only refused directories: %v, want ErrTokenRequired saying there is no private directory", err)
	}
	for _, why := range refused {
		if !strings.Contains(err.Error(), why) {
			t.Errorf("the error does not say %q: %v", why, err)
		}
	}
	if entries, _ := os.ReadDir(real); len(entries) != 0 {
		t.Fatalf("a token file was written through the symbolic link: %v", entries)
	}
	good := filepath.Join(base, "good")
	_, tokenFile, _ := serveGenerated(t, append(dirs, good)...)
	if filepath.Dir(tokenFile) != good {
		t.Fatalf("token file %s, want it in %s after the refused directories", tokenFile, good)
	}
}
