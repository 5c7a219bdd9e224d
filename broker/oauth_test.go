package broker

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/iota-uz/repl-mcp/broker/registry"
	"github.com/iota-uz/repl-mcp/internal/oauthfixture"
	"golang.org/x/oauth2"
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
	if fi, err := os.Lstat(filepath.Join(filepath.Dir(file), "grant.lock")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("lock file = %v, %v; want grant.lock 0600", fi, err)
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

// ---- connect, against the OAuth fixture ----

const (
	ccClientID       = "cc-client"
	ccClientSecret   = "cc-s3cret-value"
	publicClientID   = "public-client"
	confClientID     = "conf-client"
	confClientSecret = "conf-s3cret-value"
)

func newOAuthFixture(t *testing.T, opts oauthfixture.Options) *oauthfixture.Server {
	t.Helper()
	opts.Clients = map[string]string{ccClientID: ccClientSecret, publicClientID: "", confClientID: confClientSecret}
	return oauthfixture.New(t, opts)
}

// fixtureGrant obtains an authorization-code grant for the public client from
// fx the way --oauth-login does (PKCE S256, resource = the MCP endpoint),
// without a browser, and saves it in file.
func fixtureGrant(t *testing.T, fx *oauthfixture.Server, file string) *Grant {
	t.Helper()
	return fixtureClientGrant(t, fx, file, publicClientID, "")
}

// fixtureClientGrant is fixtureGrant for a preregistered client; like a login
// with a configured client, it does not store the client's secret.
func fixtureClientGrant(t *testing.T, fx *oauthfixture.Server, file, clientID, secret string) *Grant {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	noRedirect := &http.Client{
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       10 * time.Second,
	}
	cfg := &oauth2.Config{
		ClientID:     clientID,
		ClientSecret: secret,
		Endpoint:     oauth2.Endpoint{AuthURL: fx.URL + "/authorize", TokenURL: fx.URL + "/token", AuthStyle: oauth2.AuthStyleInParams},
		RedirectURL:  "http://127.0.0.1:9/callback",
	}
	verifier := oauth2.GenerateVerifier()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, cfg.AuthCodeURL("st", oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", fx.MCP)), nil)
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || loc.Query().Get("code") == "" {
		t.Fatalf("/authorize answered %d without a code", resp.StatusCode)
	}
	tok, err := cfg.Exchange(context.WithValue(ctx, oauth2.HTTPClient, noRedirect), loc.Query().Get("code"),
		oauth2.VerifierOption(verifier), oauth2.SetAuthURLParam("resource", fx.MCP))
	if err != nil {
		t.Fatal(err)
	}
	g := &Grant{
		TokenResponse:   map[string]any{"access_token": tok.AccessToken, "token_type": tok.TokenType, "expires_in": tok.ExpiresIn, "refresh_token": tok.RefreshToken},
		TokenReceivedAt: time.Now().Unix(),
		Issuer:          fx.URL,
		TokenEndpoint:   fx.URL + "/token",
		ClientID:        clientID,
		Resource:        fx.MCP,
	}
	if err := SaveGrant(file, g); err != nil {
		t.Fatal(err)
	}
	return g
}

// ageGrant rewrites token_received_at in the file, as the contract's tests do.
func ageGrant(t *testing.T, file string, by time.Duration) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	raw["token_received_at"] = time.Now().Add(-by).Unix()
	data, _ = json.Marshal(raw)
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func storedRefreshToken(t *testing.T, file string) string {
	t.Helper()
	g, err := LoadGrant(file)
	if err != nil {
		t.Fatal(err)
	}
	rt, _ := g.TokenResponse["refresh_token"].(string)
	return rt
}

func oauthRegistryEntry(fx *oauthfixture.Server, oauth map[string]any) map[string]any {
	return map[string]any{"type": "http", "url": fx.MCP, "oauth": oauth}
}

func wantEcho(t *testing.T, tb *testBroker, text string) {
	t.Helper()
	env, err := tb.call("web", "echo", map[string]any{"text": text})
	if err != nil {
		t.Fatalf("echo: %v", err)
	}
	if sc, _ := env["structuredContent"].(map[string]any); sc["text"] != text {
		t.Fatalf("echo = %v", env)
	}
}

// noSecrets fails if err reveals a token or secret of the grant in file, the
// client secret, or a URL.
func noSecrets(t *testing.T, err error, secrets ...string) {
	t.Helper()
	for _, s := range append(secrets, ccClientSecret, "http://", "at-", "rt-") {
		if s != "" && strings.Contains(err.Error(), s) {
			t.Fatalf("error %q reveals %q", err, s)
		}
	}
}

func TestOAuthClientCredentialsGrantedOnceAndUsed(t *testing.T) {
	fx := newOAuthFixture(t, oauthfixture.Options{})
	tb := newTestBroker(t, map[string]any{"web": oauthRegistryEntry(fx, map[string]any{
		"grantType": "client_credentials", "clientId": ccClientID, "clientSecret": ccClientSecret, "scopes": []string{"mcp"},
	})})
	for _, text := range []string{"one", "two", "three"} {
		wantEcho(t, tb, text)
	}
	if _, err := tb.serve(t.Context(), "tools", map[string]any{"server": "web"}); err != nil {
		t.Fatal(err)
	}
	if n := fx.Grants("client_credentials"); n != 1 {
		t.Fatalf("%d client_credentials grants, want 1 (the token is cached)", n)
	}
	reqs := fx.TokenRequests()
	if len(reqs) != 1 || reqs[0].Resource != fx.MCP || reqs[0].Scope != "mcp" || reqs[0].ClientID != ccClientID || reqs[0].Error != "" {
		t.Fatalf("token requests = %+v", reqs)
	}
	if x := tb.Explain("web", nil); x.Status != "ready" {
		t.Fatalf("explain = %+v", x)
	}
}

func TestOAuthClientCredentialsRefusedIsCredentialsMissing(t *testing.T) {
	fx := newOAuthFixture(t, oauthfixture.Options{})
	tb := newTestBroker(t, map[string]any{"web": oauthRegistryEntry(fx, map[string]any{
		"grantType": "client_credentials", "clientId": ccClientID, "clientSecret": "wrong-s3cret",
	})})
	_, err := tb.call("web", "echo", map[string]any{"text": "x"})
	wantErr(t, err, msgOAuthClientCreds+" (the token endpoint answered HTTP 401 invalid_client)")
	noSecrets(t, err, "wrong-s3cret")
	if fx.MCPRequests() != 0 {
		t.Fatal("the MCP endpoint was called without a token")
	}
	if x := tb.Explain("web", nil); x.Status != "credentials_missing" || x.Evidence != "last_connection_attempt" {
		t.Fatalf("explain = %+v", x)
	}
}

func TestOAuthClientCredentialsRenewedMidSession(t *testing.T) {
	t.Parallel() // waits for a token to expire
	fx := newOAuthFixture(t, oauthfixture.Options{ExpiresIn: 2})
	tb := newTestBroker(t, map[string]any{"web": oauthRegistryEntry(fx, map[string]any{
		"grantType": "client_credentials", "clientId": ccClientID, "clientSecret": ccClientSecret,
	})})
	wantEcho(t, tb, "before")
	p := tb.onlyPeer()
	time.Sleep(2100 * time.Millisecond) // the token expires at the server too
	wantEcho(t, tb, "after")
	if n := fx.Grants("client_credentials"); n != 2 {
		t.Fatalf("%d client_credentials grants, want 2", n)
	}
	if tb.onlyPeer() != p {
		t.Fatal("the renewal replaced the MCP session")
	}
}

// onlyPeer is the broker's one connected peer.
func (tb *testBroker) onlyPeer() *peer {
	tb.t.Helper()
	tb.mu.Lock()
	defer tb.mu.Unlock()
	if len(tb.transports) != 1 {
		tb.t.Fatalf("%d transports, want 1", len(tb.transports))
	}
	for _, t := range tb.transports {
		return t.peer
	}
	return nil
}

func TestOAuthStoredGrantReusedWithoutNewGrant(t *testing.T) {
	fx := newOAuthFixture(t, oauthfixture.Options{})
	file := storeFile(t)
	fixtureGrant(t, fx, file)
	before, _ := os.ReadFile(file)
	for range 2 { // two brokers: two processes sharing the grant
		tb := newTestBroker(t, map[string]any{"web": oauthRegistryEntry(fx, map[string]any{"credentialFile": file})})
		wantEcho(t, tb, "one")
		wantEcho(t, tb, "two")
		tb.Close()
	}
	if a, r := fx.Grants("authorization_code"), fx.Grants("refresh_token"); a != 1 || r != 0 {
		t.Fatalf("grants: authorization_code %d, refresh_token %d; want 1 and 0", a, r)
	}
	if after, _ := os.ReadFile(file); string(after) != string(before) {
		t.Fatal("using a valid grant rewrote the credential file")
	}
}

func TestOAuthExpiredGrantRefreshedAndRotated(t *testing.T) {
	fx := newOAuthFixture(t, oauthfixture.Options{})
	file := storeFile(t)
	fixtureGrant(t, fx, file)
	oldRefresh := storedRefreshToken(t, file)
	ageGrant(t, file, 2*time.Hour)
	tb := newTestBroker(t, map[string]any{"web": oauthRegistryEntry(fx, map[string]any{"credentialFile": file})})
	wantEcho(t, tb, "refreshed")
	if n := fx.Grants("refresh_token"); n != 1 {
		t.Fatalf("%d refresh_token grants, want 1", n)
	}
	reqs := fx.TokenRequests()
	if last := reqs[len(reqs)-1]; last.GrantType != "refresh_token" || last.Resource != fx.MCP || last.ClientID != publicClientID || last.Error != "" {
		t.Fatalf("refresh request = %+v", last)
	}
	g, err := LoadGrant(file)
	if err != nil {
		t.Fatal(err)
	}
	if rt := g.TokenResponse["refresh_token"]; rt == oldRefresh || rt == "" {
		t.Fatalf("refresh token not rotated in the store: %v", rt == oldRefresh)
	}
	if time.Since(time.Unix(g.TokenReceivedAt, 0)) > time.Minute {
		t.Fatal("token_received_at was not updated")
	}
	if fi, _ := os.Stat(file); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode after refresh = %v", fi.Mode())
	}
	wantEcho(t, tb, "again")
	if n := fx.Grants("refresh_token"); n != 1 {
		t.Fatalf("%d refresh_token grants after reuse, want 1", n)
	}
}

// loginGrant runs the real --oauth-login flow (login.go) against fx, playing
// the browser, and leaves the grant in file.
func loginGrant(t *testing.T, fx *oauthfixture.Server, file string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	entry := registry.Entry{Name: "web", Transport: registry.TransportHTTP, URL: fx.MCP, OAuth: &registry.OAuthConfig{GrantType: registry.GrantAuthorizationCode, CredentialFile: file}}
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- Login(ctx, LoginConfig{Entry: entry, Stderr: pw, OpenTimeout: 20 * time.Second})
		pw.Close()
	}()
	authURL := ""
	sc := bufio.NewScanner(pr)
	for authURL == "" && sc.Scan() {
		if strings.HasPrefix(sc.Text(), "http") {
			authURL = sc.Text()
		}
	}
	go io.Copy(io.Discard, pr)
	if authURL == "" {
		t.Fatalf("Login printed no URL: %v", <-done)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	resp, err := http.DefaultClient.Do(req) // follows the redirect to the callback
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if err := <-done; err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("Login: %v (callback status %d)", err, resp.StatusCode)
	}
}

func TestOAuthRefreshAuthenticatesConfidentialClients(t *testing.T) {
	t.Run("configured client", func(t *testing.T) {
		fx := newOAuthFixture(t, oauthfixture.Options{})
		file := storeFile(t)
		fixtureClientGrant(t, fx, file, confClientID, confClientSecret)
		ageGrant(t, file, 2*time.Hour)
		tb := newTestBroker(t, map[string]any{"web": oauthRegistryEntry(fx, map[string]any{
			"credentialFile": file, "clientId": confClientID, "clientSecret": confClientSecret,
		})})
		wantEcho(t, tb, "configured")
		reqs := fx.TokenRequests()
		if last := reqs[len(reqs)-1]; last.GrantType != "refresh_token" || last.ClientID != confClientID || last.Error != "" {
			t.Fatalf("refresh request = %+v", last)
		}
	})
	t.Run("registered client from --oauth-login", func(t *testing.T) {
		fx := newOAuthFixture(t, oauthfixture.Options{})
		fx.RequireClientSecret.Store(true) // registration issues a secret the grant keeps
		file := filepath.Join(t.TempDir(), "store", "grant.json")
		loginGrant(t, fx, file)
		tb := newTestBroker(t, map[string]any{"web": oauthRegistryEntry(fx, map[string]any{"credentialFile": file})})
		wantEcho(t, tb, "fresh login")
		ageGrant(t, file, 2*time.Hour)
		tb2 := newTestBroker(t, map[string]any{"web": oauthRegistryEntry(fx, map[string]any{"credentialFile": file})})
		wantEcho(t, tb2, "refreshed")
		reqs := fx.TokenRequests()
		if last := reqs[len(reqs)-1]; last.GrantType != "refresh_token" || !strings.HasPrefix(last.ClientID, "dcr-") || last.Error != "" {
			t.Fatalf("refresh request = %+v", last)
		}
		if fx.Grants("authorization_code") != 1 || fx.Grants("refresh_token") != 1 {
			t.Fatalf("grants: authorization_code %d, refresh_token %d", fx.Grants("authorization_code"), fx.Grants("refresh_token"))
		}
	})
}

func TestOAuthGrantRefreshedMidSession(t *testing.T) {
	t.Parallel() // waits for a token to expire
	fx := newOAuthFixture(t, oauthfixture.Options{ExpiresIn: 2})
	file := storeFile(t)
	fixtureGrant(t, fx, file)
	tb := newTestBroker(t, map[string]any{"web": oauthRegistryEntry(fx, map[string]any{"credentialFile": file})})
	wantEcho(t, tb, "before")
	p := tb.onlyPeer()
	time.Sleep(2100 * time.Millisecond) // the access token expires at the server too
	wantEcho(t, tb, "after")
	if n := fx.Grants("refresh_token"); n < 1 {
		t.Fatal("no refresh mid-session")
	}
	if tb.onlyPeer() != p {
		t.Fatal("the refresh replaced the MCP session")
	}
}

// A refresh refused mid-session fails that call before the request is sent (the
// error names the refusal), drops the peer, and the reconnect names it too.
func TestOAuthRefreshRefusedMidSession(t *testing.T) {
	t.Parallel() // waits for a token to expire
	fx := newOAuthFixture(t, oauthfixture.Options{ExpiresIn: 2})
	file := storeFile(t)
	fixtureGrant(t, fx, file)
	tb := newTestBroker(t, map[string]any{"web": oauthRegistryEntry(fx, map[string]any{"credentialFile": file})})
	wantEcho(t, tb, "before")
	fx.RejectRefresh.Store(true)
	requests := fx.MCPRequests()
	time.Sleep(2100 * time.Millisecond) // the access token expires
	_, err := tb.call("web", "echo", map[string]any{"text": "x"})
	wantErr(t, err, msgOAuthRefresh)
	wantErr(t, err, "the request was not sent")
	noSecrets(t, err)
	_, err = tb.call("web", "echo", map[string]any{"text": "x"})
	wantErr(t, err, msgOAuthRefresh)
	noSecrets(t, err)
	if x := tb.Explain("web", nil); x.Status != "credentials_missing" || x.Connected {
		t.Fatalf("explain = %+v", x)
	}
	if n := fx.MCPRequests(); n != requests {
		t.Fatalf("%d MCP requests sent with an expired token", n-requests)
	}
}

func TestOAuthConcurrentRefreshSpendsTheRefreshTokenOnce(t *testing.T) {
	fx := newOAuthFixture(t, oauthfixture.Options{})
	file := storeFile(t)
	fixtureGrant(t, fx, file)
	ageGrant(t, file, 2*time.Hour)
	e := registry.Entry{Name: "web", Transport: registry.TransportHTTP, URL: fx.MCP, OAuth: &registry.OAuthConfig{GrantType: registry.GrantAuthorizationCode, CredentialFile: file}}
	// Two sources, as two repl-mcp processes would hold: each loaded the
	// expired grant before either refreshed.
	var srcs []bearerSource
	for range 2 {
		src := newBearerSource(e, newOAuthClient(http.DefaultTransport))
		srcs = append(srcs, src)
	}
	var wg sync.WaitGroup
	tokens, errs := make([]string, 2), make([]error, 2)
	for i, src := range srcs {
		wg.Go(func() { tokens[i], errs[i] = src.token(t.Context()) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := fx.Grants("refresh_token"); n != 1 {
		t.Fatalf("%d refresh_token grants, want 1: the second process must reuse the first's refresh", n)
	}
	if tokens[0] != tokens[1] {
		t.Fatal("the two processes use different access tokens")
	}
}

func TestOAuthRefreshFailureSaysToLogInAgain(t *testing.T) {
	fx := newOAuthFixture(t, oauthfixture.Options{})
	file := storeFile(t)
	g := fixtureGrant(t, fx, file)
	ageGrant(t, file, 2*time.Hour)
	fx.RejectRefresh.Store(true)
	tb := newTestBroker(t, map[string]any{"web": oauthRegistryEntry(fx, map[string]any{"credentialFile": file})})
	_, err := tb.call("web", "echo", map[string]any{"text": "x"})
	wantErr(t, err, msgOAuthRefresh+" (the token endpoint answered HTTP 400 invalid_grant)")
	noSecrets(t, err, g.TokenResponse["access_token"].(string), g.TokenResponse["refresh_token"].(string))
	if x := tb.Explain("web", nil); x.Status != "credentials_missing" {
		t.Fatalf("explain = %+v", x)
	}
	if fx.MCPRequests() != 0 {
		t.Fatal("the MCP endpoint was called with an expired token")
	}
	if rt := storedRefreshToken(t, file); rt != g.TokenResponse["refresh_token"] {
		t.Fatal("a failed refresh changed the stored grant")
	}
}

func TestOAuthGrantForAnotherServerIsRefused(t *testing.T) {
	fx := newOAuthFixture(t, oauthfixture.Options{})
	file := storeFile(t)
	g := fixtureGrant(t, fx, file)
	g.Resource = fx.URL + "/other"
	if err := SaveGrant(file, g); err != nil {
		t.Fatal(err)
	}
	tb := newTestBroker(t, map[string]any{"web": oauthRegistryEntry(fx, map[string]any{"credentialFile": file})})
	_, err := tb.call("web", "echo", map[string]any{"text": "x"})
	wantErr(t, err, msgOAuthValidation+" (the grant was made for another server URL)")
	if fx.MCPRequests() != 0 {
		t.Fatal("a grant for another server was sent")
	}
}

func TestOAuthGarbledGrantIsRefused(t *testing.T) {
	fx := newOAuthFixture(t, oauthfixture.Options{})
	file := storeFile(t)
	if err := os.WriteFile(file, []byte(`{"token_response": `), 0o600); err != nil {
		t.Fatal(err)
	}
	tb := newTestBroker(t, map[string]any{"web": oauthRegistryEntry(fx, map[string]any{"credentialFile": file})})
	_, err := tb.call("web", "echo", map[string]any{"text": "x"})
	wantErr(t, err, msgOAuthValidation+" (not a JSON grant object)")
	if x := tb.Explain("web", nil); x.Status != "credentials_missing" {
		t.Fatalf("explain = %+v", x)
	}
}

func TestOAuthUnsafeStoreRefusedAtConnect(t *testing.T) {
	fx := newOAuthFixture(t, oauthfixture.Options{})
	file := storeFile(t)
	fixtureGrant(t, fx, file)
	if err := os.Chmod(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	tb := newTestBroker(t, map[string]any{"web": oauthRegistryEntry(fx, map[string]any{"credentialFile": file})})
	_, err := tb.call("web", "echo", map[string]any{"text": "x"})
	wantErr(t, err, msgOAuthStoreDir)
	if x := tb.Explain("web", nil); x.Status != "credentials_missing" {
		t.Fatalf("explain = %+v", x)
	}
}

func TestOAuthMissingGrantIsCredentialsMissingWithoutSideEffects(t *testing.T) {
	fx := newOAuthFixture(t, oauthfixture.Options{})
	dir := filepath.Join(t.TempDir(), "never-created")
	file := filepath.Join(dir, "grant.json")
	tb := newTestBroker(t, map[string]any{"web": oauthRegistryEntry(fx, map[string]any{"credentialFile": file})})
	x := tb.Explain("web", nil)
	if x.Status != "credentials_missing" || x.Evidence != "credential_store" || x.NetworkProbePerformed || !strings.Contains(x.Actions[0], "--oauth-login") {
		t.Fatalf("explain = %+v", x)
	}
	_, err := tb.call("web", "echo", map[string]any{"text": "x"})
	wantErr(t, err, msgOAuthCodeGrant)
	if x := tb.Explain("web", nil); x.Status != "credentials_missing" {
		t.Fatalf("explain after the call = %+v", x)
	}
	if _, err := os.Lstat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("explain or connect created the credential store")
	}
	if fx.MCPRequests() != 0 || len(fx.TokenRequests()) != 0 {
		t.Fatal("a missing grant touched the network")
	}
}

func TestOAuthDialWithoutGrantTouchesNoNetwork(t *testing.T) {
	fx := newOAuthFixture(t, oauthfixture.Options{})
	e := httpEntry(fx.MCP, nil)
	e.OAuth = &registry.OAuthConfig{GrantType: registry.GrantAuthorizationCode, ClientID: "id", ClientSecret: "s3cret", CredentialFile: "/nonexistent/grant.json"}
	p, err := dialHTTP(t.Context(), e, "test")
	if err == nil {
		p.close()
		t.Fatal("dialHTTP succeeded")
	}
	if !errors.Is(err, errCredentialsRequired) || err.Error() != msgOAuthCodeGrant {
		t.Fatalf("error = %q", err)
	}
	if fx.MCPRequests() != 0 || len(fx.TokenRequests()) != 0 {
		t.Fatal("the dial touched the network")
	}
}

func TestOAuthResponsesAreBounded(t *testing.T) {
	srv := startLoopback(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"access_token":"` + strings.Repeat("a", oauthBodyLimit) + `"}`))
	}))
	_, err := postForm(t.Context(), newOAuthClient(http.DefaultTransport), srv.URL+"/token", url.Values{}, "id", "")
	if !errors.Is(err, errOAuthBodyTooLarge) {
		t.Fatalf("error = %v, want the 16 KiB bound", err)
	}
	if detail, _ := tokenRequestDetail(err); detail != "the token endpoint's answer exceeds 16 KiB" {
		t.Fatalf("detail = %q", detail)
	}
}
