package oauthfixture_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/iota-uz/repl-mcp/internal/oauthfixture"
)

func testContext(t *testing.T) context.Context {
	t.Helper()
	budget := 30 * time.Second
	if dl, ok := t.Deadline(); ok {
		budget = min(budget, time.Until(dl)-time.Second)
	}
	ctx, cancel := context.WithTimeout(t.Context(), budget)
	t.Cleanup(cancel)
	return ctx
}

var noRedirect = &http.Client{
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	Timeout:       10 * time.Second,
}

// authorize runs /authorize and returns the redirect's query.
func authorize(t *testing.T, cfg *oauth2.Config, state, verifier, resource string) url.Values {
	t.Helper()
	resp, err := noRedirect.Get(cfg.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", resource)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("/authorize: status %d, want 302", resp.StatusCode)
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	return loc.Query()
}

func callEcho(ctx context.Context, t *testing.T, fx *oauthfixture.Server, token string) (*mcp.CallToolResult, error) {
	t.Helper()
	hc := &http.Client{Transport: &oauth2.Transport{Source: oauth2.StaticTokenSource(&oauth2.Token{AccessToken: token})}}
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	s, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: fx.MCP, HTTPClient: hc, DisableStandaloneSSE: true, MaxRetries: -1}, nil)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	return s.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
}

func TestAuthorizationCodeRefreshAndMCP(t *testing.T) {
	ctx := testContext(t)
	fx := oauthfixture.New(t, oauthfixture.Options{})
	prm, err := oauthex.GetProtectedResourceMetadata(ctx, fx.URL+"/.well-known/oauth-protected-resource/mcp", fx.MCP, nil)
	if err != nil || len(prm.AuthorizationServers) != 1 || prm.AuthorizationServers[0] != fx.URL {
		t.Fatalf("protected resource metadata: %+v, %v", prm, err)
	}
	asm, err := oauthex.GetAuthServerMeta(ctx, fx.URL+"/.well-known/oauth-authorization-server", fx.URL, nil)
	if err != nil || asm == nil || !asm.AuthorizationResponseIssParameterSupported {
		t.Fatalf("authorization server metadata: %+v, %v", asm, err)
	}
	redirect := "http://127.0.0.1:9/callback"
	reg, err := oauthex.RegisterClient(ctx, asm.RegistrationEndpoint, &oauthex.ClientRegistrationMetadata{
		RedirectURIs: []string{redirect}, ClientName: "test", TokenEndpointAuthMethod: "none",
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &oauth2.Config{
		ClientID:    reg.ClientID,
		Endpoint:    oauth2.Endpoint{AuthURL: asm.AuthorizationEndpoint, TokenURL: asm.TokenEndpoint, AuthStyle: oauth2.AuthStyleInParams},
		RedirectURL: redirect,
	}
	verifier := oauth2.GenerateVerifier()
	q := authorize(t, cfg, "st", verifier, fx.MCP)
	if q.Get("state") != "st" || q.Get("iss") != fx.URL || q.Get("code") == "" {
		t.Fatalf("redirect query %v", q)
	}
	if a := fx.LastAuthorization(); a.CodeChallengeMethod != "S256" || a.Resource != fx.MCP {
		t.Fatalf("authorization %+v", a)
	}
	// A wrong verifier fails and spends the code.
	if _, err := cfg.Exchange(ctx, q.Get("code"), oauth2.VerifierOption("wrong"), oauth2.SetAuthURLParam("resource", fx.MCP)); err == nil {
		t.Fatal("exchange with a wrong verifier succeeded")
	}
	q = authorize(t, cfg, "st", verifier, fx.MCP)
	tok, err := cfg.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(verifier), oauth2.SetAuthURLParam("resource", fx.MCP))
	if err != nil {
		t.Fatal(err)
	}
	if tok.RefreshToken == "" || fx.Grants("authorization_code") != 2 {
		t.Fatalf("token %+v, grants %d", tok, fx.Grants("authorization_code"))
	}
	res, err := callEcho(ctx, t, fx, tok.AccessToken)
	if err != nil || res.IsError {
		t.Fatalf("echo: %+v, %v", res, err)
	}
	if _, err := callEcho(ctx, t, fx, "forged"); err == nil {
		t.Fatal("a forged token reached the MCP server")
	}

	// Refresh rotates the refresh token; the old one is spent.
	tok.Expiry = time.Now().Add(-time.Hour)
	fresh, err := cfg.TokenSource(ctx, tok).Token()
	if err != nil || fresh.RefreshToken == tok.RefreshToken || fresh.RefreshToken == "" {
		t.Fatalf("refresh: %+v, %v", fresh, err)
	}
	if _, err := cfg.TokenSource(ctx, tok).Token(); err == nil {
		t.Fatal("a spent refresh token was accepted")
	}
	fx.RejectRefresh.Store(true)
	fresh.Expiry = time.Now().Add(-time.Hour)
	if _, err := cfg.TokenSource(ctx, fresh).Token(); err == nil {
		t.Fatal("RejectRefresh: refresh succeeded")
	}
	if fx.Registrations() != 1 || fx.Grants("refresh_token") != 3 {
		t.Fatalf("registrations %d, refresh grants %d", fx.Registrations(), fx.Grants("refresh_token"))
	}
}

func TestTamperingKnobs(t *testing.T) {
	fx := oauthfixture.New(t, oauthfixture.Options{Clients: map[string]string{"pre": ""}})
	cfg := &oauth2.Config{ClientID: "pre", Endpoint: oauth2.Endpoint{AuthURL: fx.URL + "/authorize"}, RedirectURL: "http://127.0.0.1:9/callback"}
	fx.WrongState.Store(true)
	fx.WrongIssuer.Store(true)
	q := authorize(t, cfg, "st", oauth2.GenerateVerifier(), fx.MCP)
	if q.Get("state") == "st" || q.Get("iss") == fx.URL {
		t.Fatalf("tampering knobs ignored: %v", q)
	}
}

func TestClientCredentialsAndProtocolErrorOnce(t *testing.T) {
	ctx := testContext(t)
	fx := oauthfixture.New(t, oauthfixture.Options{Clients: map[string]string{"svc": "s3cret"}})
	cc := &clientcredentials.Config{ClientID: "svc", ClientSecret: "s3cret", TokenURL: fx.URL + "/token",
		EndpointParams: url.Values{"resource": {fx.MCP}}}
	tok, err := cc.Token(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cc.ClientSecret = "wrong"
	if _, err := cc.Token(ctx); err == nil {
		t.Fatal("a wrong client secret was accepted")
	}
	fx.ProtocolErrorOnce.Store(true)
	if _, err := callEcho(ctx, t, fx, tok.AccessToken); err == nil {
		t.Fatal("ProtocolErrorOnce: the call succeeded")
	}
	if res, err := callEcho(ctx, t, fx, tok.AccessToken); err != nil || res.IsError {
		t.Fatalf("second call: %+v, %v", res, err)
	}
	if fx.Grants("client_credentials") != 2 || fx.MCPRequests() == 0 {
		t.Fatalf("grants %d, mcp requests %d", fx.Grants("client_credentials"), fx.MCPRequests())
	}
}
