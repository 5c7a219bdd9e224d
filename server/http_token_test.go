// The HTTP transport's bearer token: reading a token file, its bounds, and the token
// generated into a new private file when none is given.

package server

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iota-uz/repl-mcp/internal/pythons"
	"github.com/iota-uz/repl-mcp/repl"
)

func TestReadTokenFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if tok, err := ReadTokenFile(write("ok", "  secret-one-0123456789  \nsecond line\n", 0o600)); err != nil || tok != "secret-one-0123456789" {
		t.Fatalf("0600 file: %q, %v", tok, err)
	}
	if tok, err := ReadTokenFile(write("ro", "secret-two-0123456789", 0o400)); err != nil || tok != "secret-two-0123456789" {
		t.Fatalf("0400 file without newline: %q, %v", tok, err)
	}
	for name, c := range map[string]struct {
		content string
		mode    os.FileMode
	}{
		"world": {"secret-three\n", 0o644},
		"group": {"secret-four\n", 0o640},
		"empty": {"\nsecret-five\n", 0o600},
		"space": {"secret six 0123456789\n", 0o600},
		"short": {"secret-seven\n", 0o600},
		"long":  {"secret-" + strings.Repeat("8", MaxTokenLen) + "\n", 0o600},
		// Longer than what is read of the file: cut, and still refused.
		"huge": {"secret-" + strings.Repeat("9", maxTokenFile) + "\n", 0o600},
	} {
		_, err := ReadTokenFile(write(name, c.content, c.mode))
		if err == nil {
			t.Fatalf("%s: accepted", name)
		}
		if strings.Contains(err.Error(), "secret") {
			t.Fatalf("%s: the error quotes the token: %v", name, err)
		}
	}
	if _, err := ReadTokenFile(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("a missing file was accepted")
	}
}

// TestTokenLengthBounds: a token under 16 characters, or too long to fit in a
// request's headers, is refused at start, on loopback too, with a message that
// says how long it is and what to do; the bounds themselves are accepted.
func TestTokenLengthBounds(t *testing.T) {
	for _, c := range []struct {
		token string
		want  string // "" when accepted
	}{
		{"x", "has 1 characters, fewer than the 16"},
		{"fifteen-chars-x", "has 15 characters, fewer than the 16"},
		{strings.Repeat("a", MaxTokenLen+1), "has 4097 characters, more than the 4096 that fit"},
		{strings.Repeat("b", 70000), "more than the 4096 that fit in a request's headers"},
		{strings.Repeat("c", MinTokenLen), ""},
		{strings.Repeat("d", MaxTokenLen), ""},
	} {
		err := CheckToken(c.token)
		if c.want == "" {
			if err != nil {
				t.Errorf("a %d-character token: %v", len(c.token), err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("a %d-character token: %v, want %q", len(c.token), err, c.want)
		}
		srv := New(Config{Version: "test"})
		err = srv.ServeStreamableHTTP(t.Context(), HTTPConfig{Addr: "127.0.0.1:0", Token: c.token,
			Listening: func(string, string) { t.Errorf("a %d-character token: served", len(c.token)) }})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("a %d-character token on loopback: %v, want %q", len(c.token), err, c.want)
		}
	}
}

// TestReadTokenFileRefusesSpecialFiles: a FIFO (with no writer), a device, a
// directory and a symbolic link are refused at once, with an error naming what the
// path is; none of them is read.
func TestReadTokenFileRefusesSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, "real")
	if err := os.WriteFile(target, []byte("secret-link-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{
		fifo:        "named pipe",
		"/dev/null": "device",
		sub:         "directory",
		link:        "symbolic link",
	}
	if os.Geteuid() == 0 {
		// Someone else's file: they know the token.
		foreign := filepath.Join(dir, "foreign")
		if err := os.WriteFile(foreign, []byte("secret-foreign-token\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(foreign, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		cases[foreign] = "owned by uid 65534"
	} else {
		t.Log("not root: the case of a file owned by another user is not checked")
	}
	for path, want := range cases {
		got := make(chan error, 1)
		go func() {
			_, err := ReadTokenFile(path)
			got <- err
		}()
		select {
		case err := <-got:
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), path) {
				t.Errorf("ReadTokenFile(%s) = %v, want an error naming the path and %q", path, err, want)
			}
			if err != nil && strings.Contains(err.Error(), "secret") {
				t.Errorf("ReadTokenFile(%s): the error quotes the token: %v", path, err)
			}
		case <-time.After(5 * time.Second):
			// Unblock the open so the goroutine ends with the test.
			if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				f.Close()
			}
			<-got
			t.Errorf("ReadTokenFile(%s) did not return within 5 s", path)
		}
	}
}

// serveGenerated serves with a generated token written to one of dirs, and
// returns the URL, the token file's path and a function that stops the server
// and waits for it.
func serveGenerated(t *testing.T, dirs ...string) (url, tokenFile string, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	srv := New(Config{Version: "test", Repl: repl.NewManager(ctx, repl.Config{Python: pythons.ForTest(t)[0].Path, PythonSource: "test", Project: t.TempDir(), Env: os.Environ(), Version: "test"})})
	type listening struct{ url, tokenFile string }
	ready := make(chan listening, 1)
	done := make(chan error, 1)
	go func() {
		done <- srv.ServeStreamableHTTP(ctx, HTTPConfig{TokenDirs: dirs, Listening: func(u, f string) { ready <- listening{u, f} }})
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
	token, err := ReadTokenFile(tokenFile)
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
	if _, err := ReadTokenFile(tokenFile); err != nil {
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
	err := srv.ServeStreamableHTTP(t.Context(), HTTPConfig{TokenDirs: dirs})
	if !errors.Is(err, ErrTokenRequired) || !strings.Contains(err.Error(), "no private directory to write a generated one to") {
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
