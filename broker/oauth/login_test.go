package oauth

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/iota-uz/repl-mcp/broker/registry"
	"github.com/iota-uz/repl-mcp/internal/oauthfixture"
)

// Login (docs/contract.md §1.7) against internal/oauthfixture: the test plays the browser,
// reading the URL Login prints, following it without following the redirect, and
// delivering the callback itself.

func wantErr(t *testing.T, err error, substr string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), substr) {
		t.Fatalf("error = %v, want it to contain %q", err, substr)
	}
}

// loginBudget bounds one login test: its context, the callback wait and every
// request the test makes.
func loginBudget(t *testing.T) time.Duration {
	budget := 30 * time.Second
	if dl, ok := t.Deadline(); ok {
		budget = min(budget, time.Until(dl)/2)
	}
	return budget
}

// oauthEntry is an authorization_code server entry for fx whose grant lives in
// dir/store/grant.json.
func oauthEntry(fx *oauthfixture.Server, dir string) registry.Entry {
	return registry.Entry{
		Name:      "remote",
		Transport: registry.TransportHTTP,
		URL:       fx.MCP,
		OAuth: &registry.OAuthConfig{
			GrantType:      registry.GrantAuthorizationCode,
			CredentialFile: filepath.Join(dir, "store", "grant.json"),
			Scopes:         []string{"tools"},
		},
	}
}

// browser is the test's browser: it never follows a redirect.
func browser(t *testing.T) *http.Client {
	return &http.Client{
		Timeout:       loginBudget(t),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// syncBuffer collects Login's stderr and hands its lines to the test.
type syncBuffer struct {
	mu    sync.Mutex
	buf   strings.Builder
	lines chan string
	part  string
}

func newSyncBuffer() *syncBuffer { return &syncBuffer{lines: make(chan string, 64)} }

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	b.part += string(p)
	for {
		line, rest, ok := strings.Cut(b.part, "\n")
		if !ok {
			break
		}
		b.part = rest
		select {
		case b.lines <- line:
		default:
		}
	}
	return len(p), nil
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// loginRun is a Login running in the background.
type loginRun struct {
	stderr *syncBuffer
	done   chan error
}

func startLogin(t *testing.T, cfg LoginConfig) *loginRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), loginBudget(t))
	r := &loginRun{stderr: newSyncBuffer(), done: make(chan error, 1)}
	cfg.Stderr = r.stderr
	if cfg.OpenTimeout == 0 {
		cfg.OpenTimeout = loginBudget(t)
	}
	go func() {
		defer cancel()
		r.done <- Login(ctx, cfg)
	}()
	t.Cleanup(func() {
		cancel()
		<-r.done // the login never outlives its test
	})
	return r
}

// authURL waits for the first stderr line starting with http, as the contract's
// tests read it.
func (r *loginRun) authURL(t *testing.T) string {
	t.Helper()
	timeout := time.After(loginBudget(t))
	for {
		select {
		case line := <-r.stderr.lines:
			if strings.HasPrefix(line, "http") {
				return line
			}
		case err := <-r.done:
			r.done <- err
			t.Fatalf("Login returned before printing a URL: %v\nstderr:\n%s", err, r.stderr)
		case <-timeout:
			t.Fatalf("no URL on stderr\nstderr:\n%s", r.stderr)
		}
	}
}

func (r *loginRun) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-r.done:
		r.done <- err
		return err
	case <-time.After(loginBudget(t)):
		t.Fatalf("Login did not return\nstderr:\n%s", r.stderr)
		return nil
	}
}

// follow plays the browser: GET the authorization URL, expect a 302, GET its
// Location (the callback) and return that response's status and body.
func follow(t *testing.T, authURL string) (int, string) {
	t.Helper()
	c := browser(t)
	resp, err := c.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("authorization endpoint: status %d, want 302", resp.StatusCode)
	}
	loc := resp.Header.Get("Location")
	if !strings.HasPrefix(loc, "http://127.0.0.1:") {
		t.Fatalf("redirect to %q, want the loopback callback", loc)
	}
	resp, err = c.Get(loc)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(body))
}

// loginForTest runs a complete, successful login of entry against fx.
func loginForTest(t *testing.T, entry registry.Entry) {
	t.Helper()
	r := startLogin(t, LoginConfig{Entry: entry})
	if code, body := follow(t, r.authURL(t)); code != http.StatusOK {
		t.Fatalf("callback: %d %q", code, body)
	}
	if err := r.wait(t); err != nil {
		t.Fatalf("Login: %v", err)
	}
}

func TestLoginSavesPrivateGrant(t *testing.T) {
	fx := oauthfixture.New(t, oauthfixture.Options{})
	dir := t.TempDir()
	entry := oauthEntry(fx, dir)
	r := startLogin(t, LoginConfig{Entry: entry})
	u := r.authURL(t)
	if !strings.Contains(u, "code_challenge_method=S256") {
		t.Errorf("URL %q lacks code_challenge_method=S256", u)
	}
	code, body := follow(t, u)
	if code != http.StatusOK || body != loginReplyOK {
		t.Errorf("callback: %d %q, want 200 %q", code, body, loginReplyOK)
	}
	if err := r.wait(t); err != nil {
		t.Fatalf("Login: %v\nstderr:\n%s", err, r.stderr)
	}

	out := r.stderr.String()
	lines := strings.Split(out, "\n")
	if !strings.Contains(lines[0], "Open this URL in a browser") || lines[1] != u {
		t.Errorf("stderr should open with the instruction, then the URL alone:\n%s", out)
	}
	if !strings.Contains(out, "Authorized") {
		t.Errorf("no confirmation on stderr:\n%s", out)
	}

	fi, err := os.Stat(entry.OAuth.CredentialFile)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("credential file mode %04o, want 0600", fi.Mode().Perm())
	}
	if di, _ := os.Stat(filepath.Dir(entry.OAuth.CredentialFile)); di.Mode().Perm() != 0o700 {
		t.Errorf("store directory mode %04o, want 0700", di.Mode().Perm())
	}
	g, err := LoadGrant(entry.OAuth.CredentialFile)
	if err != nil {
		t.Fatal(err)
	}
	if rt, _ := g.TokenResponse["refresh_token"].(string); rt == "" {
		t.Errorf("token_response.refresh_token missing: %v", g.TokenResponse)
	}
	if at, _ := g.TokenResponse["access_token"].(string); at == "" {
		t.Errorf("token_response.access_token missing")
	}
	if g.Issuer != fx.URL || g.TokenEndpoint != fx.URL+"/token" || g.Resource != fx.MCP || g.ClientID == "" {
		t.Errorf("grant metadata: issuer %q token endpoint %q resource %q client %q", g.Issuer, g.TokenEndpoint, g.Resource, g.ClientID)
	}
	if age := time.Now().Unix() - g.TokenReceivedAt; age < 0 || age > 60 {
		t.Errorf("token_received_at %d is not now", g.TokenReceivedAt)
	}

	a := fx.LastAuthorization()
	if a.CodeChallengeMethod != "S256" || a.CodeChallenge == "" || a.Resource != fx.MCP || a.Scope != "tools" {
		t.Errorf("authorization request: %+v", a)
	}
	if fx.Registrations() != 1 || fx.LastRegistration()["client_name"] != loginClientName {
		t.Errorf("registrations %d, last %v", fx.Registrations(), fx.LastRegistration())
	}
	reqs := fx.TokenRequests()
	if len(reqs) != 1 || reqs[0].GrantType != "authorization_code" || reqs[0].Resource != fx.MCP || !reqs[0].CodeVerifier || reqs[0].Error != "" {
		t.Errorf("token requests: %+v", reqs)
	}
	for _, secret := range []string{g.TokenResponse["access_token"].(string), g.TokenResponse["refresh_token"].(string)} {
		if strings.Contains(out, secret) {
			t.Errorf("stderr holds a token")
		}
	}
}

func TestLoginRefusesTamperedAuthorization(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tamper func(*oauthfixture.Server)
		want   string
	}{
		{"state", func(fx *oauthfixture.Server) { fx.WrongState.Store(true) }, "state"},
		{"issuer", func(fx *oauthfixture.Server) { fx.WrongIssuer.Store(true) }, "issuer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := oauthfixture.New(t, oauthfixture.Options{})
			tc.tamper(fx)
			entry := oauthEntry(fx, t.TempDir())
			r := startLogin(t, LoginConfig{Entry: entry})
			code, body := follow(t, r.authURL(t))
			if code != http.StatusBadRequest || body != loginReplyFail {
				t.Errorf("callback: %d %q, want 400 %q", code, body, loginReplyFail)
			}
			err := r.wait(t)
			wantErr(t, err, tc.want)
			if _, serr := os.Stat(entry.OAuth.CredentialFile); !errors.Is(serr, os.ErrNotExist) {
				t.Errorf("credential file after a refused login: %v", serr)
			}
			if n := fx.Grants("authorization_code"); n != 0 {
				t.Errorf("%d token grants after a refused callback, want 0", n)
			}
		})
	}
}

func TestLoginRefusesPublicStoreDirectory(t *testing.T) {
	fx := oauthfixture.New(t, oauthfixture.Options{})
	dir := t.TempDir()
	entry := oauthEntry(fx, dir)
	store := filepath.Dir(entry.OAuth.CredentialFile)
	if err := os.Mkdir(store, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(store, 0o755); err != nil { // past the umask
		t.Fatal(err)
	}
	var stderr strings.Builder
	ctx, cancel := context.WithTimeout(t.Context(), loginBudget(t))
	defer cancel()
	err := Login(ctx, LoginConfig{Entry: entry, Stderr: &stderr, OpenTimeout: loginBudget(t)})
	wantErr(t, err, "0700")
	if !errors.Is(err, ErrStoreDirUnsafe) {
		t.Errorf("error %v does not wrap ErrStoreDirUnsafe", err)
	}
	if ents, _ := os.ReadDir(store); len(ents) != 0 {
		t.Errorf("store directory holds %d entries, want none", len(ents))
	}
	if fx.Registrations()+fx.Authorizations()+len(fx.TokenRequests()) != 0 || stderr.Len() != 0 {
		t.Errorf("a refused store still reached the network or printed: %q", stderr.String())
	}
}

func TestLoginWithConfiguredClientSkipsRegistration(t *testing.T) {
	for _, tc := range []struct{ name, secret string }{{"public", ""}, {"confidential", "pre-secret"}} {
		t.Run(tc.name, func(t *testing.T) {
			fx := oauthfixture.New(t, oauthfixture.Options{Clients: map[string]string{"preconfigured": tc.secret}})
			entry := oauthEntry(fx, t.TempDir())
			entry.OAuth.ClientID, entry.OAuth.ClientSecret = "preconfigured", tc.secret
			loginForTest(t, entry)
			if n := fx.Registrations(); n != 0 {
				t.Errorf("%d /register calls with a configured client id, want 0", n)
			}
			g, err := LoadGrant(entry.OAuth.CredentialFile)
			if err != nil {
				t.Fatal(err)
			}
			if g.ClientID != "preconfigured" || g.ClientSecret != "" {
				t.Errorf("grant client %q secret %q: a configured secret stays in the registry", g.ClientID, g.ClientSecret)
			}
		})
	}
}

func TestLoginKeepsRegisteredClientSecret(t *testing.T) {
	fx := oauthfixture.New(t, oauthfixture.Options{})
	fx.RequireClientSecret.Store(true)
	entry := oauthEntry(fx, t.TempDir())
	loginForTest(t, entry)
	g, err := LoadGrant(entry.OAuth.CredentialFile)
	if err != nil {
		t.Fatal(err)
	}
	if g.ClientSecret == "" {
		t.Error("the secret dynamic registration issued is not in the grant; refreshes would fail")
	}
}

func TestLoginRefusesEntriesItCannotServe(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "store", "grant.json")
	for _, e := range []registry.Entry{
		{Name: "stdio", Transport: registry.TransportStdio, Command: "true"},
		{Name: "plain", Transport: registry.TransportHTTP, URL: "http://127.0.0.1:1/mcp"},
		{Name: "cc", Transport: registry.TransportHTTP, URL: "http://127.0.0.1:1/mcp", OAuth: &registry.OAuthConfig{GrantType: registry.GrantClientCredentials, ClientID: "a", ClientSecret: "b"}},
		{Name: "nofile", Transport: registry.TransportHTTP, URL: "http://127.0.0.1:1/mcp", OAuth: &registry.OAuthConfig{GrantType: registry.GrantAuthorizationCode}},
	} {
		err := Login(t.Context(), LoginConfig{Entry: e})
		wantErr(t, err, "authorization_code with oauth.credentialFile")
		if strings.Contains(err.Error(), "secret") && e.OAuth != nil && strings.Contains(err.Error(), e.OAuth.ClientSecret) {
			t.Errorf("%s: error echoes the secret", e.Name)
		}
	}
	if _, err := os.Stat(filepath.Dir(file)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused entry created the store: %v", err)
	}
}

func TestLoginTimesOutWithoutCallback(t *testing.T) {
	fx := oauthfixture.New(t, oauthfixture.Options{})
	entry := oauthEntry(fx, t.TempDir())
	r := startLogin(t, LoginConfig{Entry: entry, OpenTimeout: 200 * time.Millisecond})
	r.authURL(t)
	wantErr(t, r.wait(t), "no browser callback arrived")
	if _, err := os.Stat(entry.OAuth.CredentialFile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("credential file after a timeout: %v", err)
	}
}

// The listener answers only GET /callback; other paths are 404, other methods
// 405, an oversized head is refused, and none of them ends the login.
func TestLoginCallbackListener(t *testing.T) {
	fx := oauthfixture.New(t, oauthfixture.Options{})
	entry := oauthEntry(fx, t.TempDir())
	r := startLogin(t, LoginConfig{Entry: entry})
	u := r.authURL(t)
	q, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	redirect, err := url.Parse(q.Query().Get("redirect_uri"))
	if err != nil || redirect.Hostname() != "127.0.0.1" || redirect.Path != "/callback" {
		t.Fatalf("redirect_uri %q, want http://127.0.0.1:PORT/callback", q.Query().Get("redirect_uri"))
	}
	c := browser(t)
	base := "http://" + redirect.Host
	if resp, err := c.Get(base + "/elsewhere"); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("other path: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	if resp, err := c.Post(base+"/callback", "text/plain", nil); err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /callback: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	// A head past 16 KiB: 431, or the connection dropped.
	conn, err := net.Dial("tcp", redirect.Host)
	if err != nil {
		t.Fatal(err)
	}
	conn.SetDeadline(time.Now().Add(loginBudget(t)))
	fmt.Fprintf(conn, "GET /callback HTTP/1.1\r\nHost: %s\r\nX-Pad: %s\r\n\r\n", redirect.Host, strings.Repeat("a", 17<<10))
	status, _ := bufio.NewReader(conn).ReadString('\n')
	conn.Close()
	if status != "" && !strings.Contains(status, "431") {
		t.Errorf("oversized head: %q, want 431", status)
	}
	select {
	case err := <-r.done:
		t.Fatalf("Login ended on a stray request: %v", err)
	default:
	}
	if code, body := follow(t, u); code != http.StatusOK {
		t.Fatalf("callback after stray requests: %d %q", code, body)
	}
	if err := r.wait(t); err != nil {
		t.Fatal(err)
	}
}
