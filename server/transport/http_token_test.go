// The HTTP transport's bearer token: reading a token file and its bounds. The token
// generated into a new private file when none is given is tested with the server
// (server/http_token_test.go).

package transport

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
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
		err = ServeStreamableHTTP(t.Context(), HTTPConfig{Addr: "127.0.0.1:0", Token: c.token,
			Listening: func(string, string) { t.Errorf("a %d-character token: served", len(c.token)) }}, bareHost())
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
