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
	"testing"
	"time"

	"github.com/iota-uz/repl-mcp/broker/oauth"
	"github.com/iota-uz/repl-mcp/broker/registry"
	"github.com/iota-uz/repl-mcp/internal/oauthfixture"
	"golang.org/x/oauth2"
)

// ---- connect, against the OAuth fixture ----

// The contract's OAuth messages (docs/contract.md §8.7), as a cell sees them.
const (
	msgOAuthCodeGrant   = "Independent OAuth grant required: run repl-mcp --config REGISTRY --oauth-login SERVER"
	msgOAuthClientCreds = "OAuth client credentials exchange failed; verify independent broker grant and supported authentication method"
	msgOAuthRefresh     = "OAuth refresh failed or grant expired; run --oauth-login SERVER"
	msgOAuthValidation  = "OAuth credential store or issuer validation failed; run --oauth-login SERVER"
	msgOAuthStoreDir    = "OAuth store directory must have permissions 0700"
)

const (
	ccClientID       = "cc-client"
	ccClientSecret   = "cc-s3cret-value"
	publicClientID   = "public-client"
	confClientID     = "conf-client"
	confClientSecret = "conf-s3cret-value"
)

// storeFile is a credential file path in a fresh 0700 store directory.
func storeFile(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "store")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "grant.json")
}

// tokenLife is how far a test moves the fixture's and the broker's shared clock to
// expire the tokens of a fixture with the default lifetime (3600 s).
const tokenLife = time.Hour + time.Minute

func newOAuthFixture(t *testing.T, opts oauthfixture.Options) *oauthfixture.Server {
	t.Helper()
	opts.Clients = map[string]string{ccClientID: ccClientSecret, publicClientID: "", confClientID: confClientSecret}
	return oauthfixture.New(t, opts)
}

// fixtureGrant obtains an authorization-code grant for the public client from
// fx the way --oauth-login does (PKCE S256, resource = the MCP endpoint),
// without a browser, and saves it in file.
func fixtureGrant(t *testing.T, fx *oauthfixture.Server, file string) *oauth.Grant {
	t.Helper()
	return fixtureClientGrant(t, fx, file, publicClientID, "")
}

// fixtureClientGrant is fixtureGrant for a preregistered client; like a login
// with a configured client, it does not store the client's secret.
func fixtureClientGrant(t *testing.T, fx *oauthfixture.Server, file, clientID, secret string) *oauth.Grant {
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
	g := &oauth.Grant{
		TokenResponse:   map[string]any{"access_token": tok.AccessToken, "token_type": tok.TokenType, "expires_in": tok.ExpiresIn, "refresh_token": tok.RefreshToken},
		TokenReceivedAt: time.Now().Unix(),
		Issuer:          fx.URL,
		TokenEndpoint:   fx.URL + "/token",
		ClientID:        clientID,
		Resource:        fx.MCP,
	}
	if err := oauth.SaveGrant(file, g); err != nil {
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
	g, err := oauth.LoadGrant(file)
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
	if _, err := tb.ListTools(t.Context(), "web", DefaultListTimeout); err != nil {
		t.Fatal(err)
	}
	if n := fx.Grants("client_credentials"); n != 1 {
		t.Fatalf("%d client_credentials grants, want 1 (the token is cached)", n)
	}
	reqs := fx.TokenRequests()
	if len(reqs) != 1 || reqs[0].Resource != fx.MCP || reqs[0].Scope != "mcp" || reqs[0].ClientID != ccClientID || reqs[0].Error != "" {
		t.Fatalf("token requests = %+v", reqs)
	}
	if x := tb.explain("web", nil); x.Status != "ready" {
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
	if x := tb.explain("web", nil); x.Status != "credentials_missing" || x.Evidence != "last_connection_attempt" {
		t.Fatalf("explain = %+v", x)
	}
}

func TestOAuthClientCredentialsRenewedMidSession(t *testing.T) {
	clock := oauthfixture.NewClock()
	fx := newOAuthFixture(t, oauthfixture.Options{Now: clock.Now})
	tb := newTestBroker(t, map[string]any{"web": oauthRegistryEntry(fx, map[string]any{
		"grantType": "client_credentials", "clientId": ccClientID, "clientSecret": ccClientSecret,
	})})
	tb.now = clock.Now
	wantEcho(t, tb, "before")
	p := tb.onlyPeer()
	clock.Advance(tokenLife) // the token expires at the server too
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
	g, err := oauth.LoadGrant(file)
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

// loginGrant runs the real --oauth-login flow (oauth.Login) against fx, playing
// the browser, and leaves the grant in file.
func loginGrant(t *testing.T, fx *oauthfixture.Server, file string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	entry := registry.Entry{Name: "web", Transport: registry.TransportHTTP, URL: fx.MCP, OAuth: &registry.OAuthConfig{GrantType: registry.GrantAuthorizationCode, CredentialFile: file}}
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- oauth.Login(ctx, oauth.LoginConfig{Entry: entry, Stderr: pw, OpenTimeout: 20 * time.Second})
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
	clock := oauthfixture.NewClock()
	fx := newOAuthFixture(t, oauthfixture.Options{Now: clock.Now})
	file := storeFile(t)
	fixtureGrant(t, fx, file)
	tb := newTestBroker(t, map[string]any{"web": oauthRegistryEntry(fx, map[string]any{"credentialFile": file})})
	tb.now = clock.Now
	wantEcho(t, tb, "before")
	p := tb.onlyPeer()
	clock.Advance(tokenLife) // the access token expires at the server too
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
	clock := oauthfixture.NewClock()
	fx := newOAuthFixture(t, oauthfixture.Options{Now: clock.Now})
	file := storeFile(t)
	fixtureGrant(t, fx, file)
	tb := newTestBroker(t, map[string]any{"web": oauthRegistryEntry(fx, map[string]any{"credentialFile": file})})
	tb.now = clock.Now
	wantEcho(t, tb, "before")
	fx.RejectRefresh.Store(true)
	requests := fx.MCPRequests()
	clock.Advance(tokenLife) // the access token expires
	_, err := tb.call("web", "echo", map[string]any{"text": "x"})
	wantErr(t, err, msgOAuthRefresh)
	wantErr(t, err, "the request was not sent")
	noSecrets(t, err)
	_, err = tb.call("web", "echo", map[string]any{"text": "x"})
	wantErr(t, err, msgOAuthRefresh)
	noSecrets(t, err)
	if x := tb.explain("web", nil); x.Status != "credentials_missing" || x.Connected {
		t.Fatalf("explain = %+v", x)
	}
	if n := fx.MCPRequests(); n != requests {
		t.Fatalf("%d MCP requests sent with an expired token", n-requests)
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
	if x := tb.explain("web", nil); x.Status != "credentials_missing" {
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
	if err := oauth.SaveGrant(file, g); err != nil {
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
	if x := tb.explain("web", nil); x.Status != "credentials_missing" {
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
	if x := tb.explain("web", nil); x.Status != "credentials_missing" {
		t.Fatalf("explain = %+v", x)
	}
}

func TestOAuthMissingGrantIsCredentialsMissingWithoutSideEffects(t *testing.T) {
	fx := newOAuthFixture(t, oauthfixture.Options{})
	dir := filepath.Join(t.TempDir(), "never-created")
	file := filepath.Join(dir, "grant.json")
	tb := newTestBroker(t, map[string]any{"web": oauthRegistryEntry(fx, map[string]any{"credentialFile": file})})
	x := tb.explain("web", nil)
	if x.Status != "credentials_missing" || x.Evidence != "credential_store" || x.NetworkProbePerformed || !strings.Contains(x.Actions[0], "--oauth-login") {
		t.Fatalf("explain = %+v", x)
	}
	_, err := tb.call("web", "echo", map[string]any{"text": "x"})
	wantErr(t, err, msgOAuthCodeGrant)
	if x := tb.explain("web", nil); x.Status != "credentials_missing" {
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
	p, err := dialHTTP(t.Context(), e, "test", time.Now)
	if err == nil {
		p.close()
		t.Fatal("dialHTTP succeeded")
	}
	if !errors.Is(err, oauth.ErrCredentialsRequired) || err.Error() != msgOAuthCodeGrant {
		t.Fatalf("error = %q", err)
	}
	if fx.MCPRequests() != 0 || len(fx.TokenRequests()) != 0 {
		t.Fatal("the dial touched the network")
	}
}
func TestLoginEntryFromRegistry(t *testing.T) {
	tb := newTestBroker(t, map[string]any{
		"remote": map[string]any{"url": "http://127.0.0.1:1/mcp", "oauth": map[string]any{"credentialFile": "store/grant.json"}},
		"off":    map[string]any{"url": "http://127.0.0.1:1/mcp", "disabled": true},
	})
	e, err := tb.LoginEntry("remote")
	if err != nil || e.OAuth == nil || e.OAuth.CredentialFile != filepath.Join(tb.project, "store", "grant.json") {
		t.Fatalf("LoginEntry: %+v, %v", e, err)
	}
	_, err = tb.LoginEntry("missing")
	wantErr(t, err, "unknown MCP server")
	_, err = tb.LoginEntry("off")
	wantErr(t, err, "disabled")

	tb.writeRegistry(map[string]any{"remote": map[string]any{"url": "http://127.0.0.1:1/mcp", "bogus": true}})
	tb.reload()
	_, err = tb.LoginEntry("remote")
	wantErr(t, err, "repair registry before OAuth login")
}
