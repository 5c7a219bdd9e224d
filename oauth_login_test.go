package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iota-uz/repl-mcp/internal/oauthfixture"
)

// The real binary with --oauth-login (docs/contract.md §1.6, §1.7): the URL read from
// stderr and followed like a browser, exit 0 and a private grant; a public store
// directory and a broken registry refused with exit 1 and no grant.

// oauthLoginProject writes a project whose registry names fx as "remote", an
// authorization_code server whose grant lives in store/grant.json, and returns it.
func oauthLoginProject(t *testing.T, fx *oauthfixture.Server, extra map[string]any) string {
	t.Helper()
	dir := t.TempDir()
	entry := map[string]any{"url": fx.MCP, "oauth": map[string]any{"credentialFile": "store/grant.json"}}
	for k, v := range extra {
		entry[k] = v
	}
	data, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"remote": entry}})
	if err := os.WriteFile(filepath.Join(dir, "registry.json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// startOAuthLogin runs repl-mcp --config registry.json --oauth-login remote in
// dir; its stderr lines arrive on the returned channel, its exit on the other.
func startOAuthLogin(t *testing.T, ctx context.Context, dir string) (<-chan string, <-chan error) {
	t.Helper()
	exe, err := exec.LookPath("repl-mcp")
	if err != nil {
		t.Fatalf("repl-mcp is not on PATH (TestMain puts it there): %v", err)
	}
	cmd := exec.CommandContext(ctx, exe, "--config", "registry.json", "--oauth-login", "remote")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "REPL_MCP_NO_BRIDGE=") // the broker must be on
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines, exited := make(chan string, 64), make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		exited <- cmd.Wait() // after the pipe is drained
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
		}
		for range lines {
		}
	})
	return lines, exited
}

func oauthTestContext(t *testing.T) context.Context {
	budget := 60 * time.Second
	if dl, ok := t.Deadline(); ok {
		budget = min(budget, time.Until(dl)/2)
	}
	ctx, cancel := context.WithTimeout(t.Context(), budget)
	t.Cleanup(cancel)
	return ctx
}

func TestOAuthLoginBinary(t *testing.T) {
	ctx := oauthTestContext(t)
	fx := oauthfixture.New(t, oauthfixture.Options{})
	dir := oauthLoginProject(t, fx, nil)
	lines, exited := startOAuthLogin(t, ctx, dir)

	var authURL string
	var seen []string
	for authURL == "" {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("stderr ended without a URL: %q", seen)
			}
			seen = append(seen, line)
			if strings.HasPrefix(line, "http") {
				authURL = line
			}
		case <-ctx.Done():
			t.Fatalf("no URL on stderr: %q", seen)
		}
	}
	if !strings.Contains(authURL, "code_challenge_method=S256") {
		t.Errorf("URL lacks S256: %s", authURL)
	}
	browser := &http.Client{
		Timeout:       30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	resp, err := browser.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("authorize: %d, want 302", resp.StatusCode)
	}
	resp, err = browser.Get(resp.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "Broker authorized") {
		t.Errorf("callback: %d %q", resp.StatusCode, body)
	}
	for line := range lines {
		seen = append(seen, line)
	}
	if err := <-exited; err != nil {
		t.Fatalf("repl-mcp --oauth-login: %v\nstderr: %q", err, seen)
	}

	file := filepath.Join(dir, "store", "grant.json")
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("grant mode %04o, want 0600", fi.Mode().Perm())
	}
	var g struct {
		TokenResponse map[string]any `json:"token_response"`
	}
	data, _ := os.ReadFile(file)
	if err := json.Unmarshal(data, &g); err != nil || g.TokenResponse["refresh_token"] == nil {
		t.Errorf("grant has no token_response.refresh_token: %v", err)
	}
	if fx.Grants("authorization_code") != 1 {
		t.Errorf("authorization_code grants %d, want 1", fx.Grants("authorization_code"))
	}
}

func TestOAuthLoginBinaryRefusals(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dir string)
		extra map[string]any
		want  string
	}{
		{name: "public store directory", want: "0700", setup: func(t *testing.T, dir string) {
			if err := os.Mkdir(filepath.Join(dir, "store"), 0o755); err != nil {
				t.Fatal(err)
			}
			os.Chmod(filepath.Join(dir, "store"), 0o755)
		}},
		{name: "registry error", want: "repair registry before OAuth login", extra: map[string]any{"bogus": true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := oauthTestContext(t)
			fx := oauthfixture.New(t, oauthfixture.Options{})
			dir := oauthLoginProject(t, fx, tc.extra)
			if tc.setup != nil {
				tc.setup(t, dir)
			}
			lines, exited := startOAuthLogin(t, ctx, dir)
			var seen []string
			for line := range lines {
				seen = append(seen, line)
			}
			err := <-exited
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 {
				t.Fatalf("exit: %v, want status 1; stderr %q", err, seen)
			}
			if len(seen) == 0 || !strings.HasPrefix(seen[len(seen)-1], "Error: ") || !strings.Contains(seen[len(seen)-1], tc.want) {
				t.Errorf("stderr %q, want an Error: line containing %q", seen, tc.want)
			}
			if _, err := os.Stat(filepath.Join(dir, "store", "grant.json")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("grant written: %v", err)
			}
			if fx.Registrations()+fx.Authorizations() != 0 {
				t.Error("a refused login reached the authorization server")
			}
		})
	}
}
