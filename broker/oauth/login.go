package oauth

// The interactive OAuth login (docs/contract.md §1.7): `repl-mcp --oauth-login SERVER`
// obtains the broker's own authorization-code grant for one HTTP server and saves
// it in the credential store, where the connection code finds it. The flow:
// discovery (RFC 9728 protected resource metadata, RFC 8414 authorization server
// metadata), dynamic client registration (RFC 7591) unless a client id is
// configured, PKCE S256, a loopback redirect listener, state and RFC 9207 issuer
// checks, and the code exchanged with resource = the server URL (RFC 8707).
//
// Errors name the step that failed, never a token, a secret, a code or a URL
// with its query.

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/iota-uz/repl-mcp/broker/internal/safehttp"
	"github.com/iota-uz/repl-mcp/broker/registry"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// Login limits (docs/contract.md §1.7).
const (
	loginCallbackWait   = 300 * time.Second // default LoginConfig.OpenTimeout
	loginStepBudget     = 30 * time.Second  // discovery, registration, exchange: each
	loginReadTimeout    = 5 * time.Second   // one callback request's head and body
	loginMaxHead        = 16 << 10          // the callback request head
	loginShutdownBudget = 2 * time.Second   // delivering the browser's reply
	loginClientName     = "repl-mcp broker"
	loginCallbackPath   = "/callback"
)

// The browser's replies (docs/contract.md §1.7).
const (
	loginReplyOK   = "Broker authorized. You may close this tab."
	loginReplyFail = "Authorization failed. Return to the terminal."
)

// LoginConfig configures one interactive login.
type LoginConfig struct {
	// Entry is the server to log in to: HTTP, with oauth.grantType
	// authorization_code and oauth.credentialFile.
	Entry registry.Entry
	// Stderr receives the authorization URL and the confirmation; nil discards.
	Stderr io.Writer
	// HTTPClient reaches the server and its authorization server. Nil means a
	// client that refuses redirects, bounds response bodies and gives up after 30 s.
	HTTPClient *http.Client
	// OpenTimeout bounds the wait for the browser's callback; 0 means 300 s.
	OpenTimeout time.Duration
}

// Login runs the interactive authorization-code login for cfg.Entry and saves
// the grant. It prints the authorization URL on cfg.Stderr, waits for the
// browser's redirect to the loopback listener, and returns nil once the grant is
// stored. On any failure no credential file is written.
func Login(ctx context.Context, cfg LoginConfig) error {
	e := cfg.Entry
	if e.Transport != registry.TransportHTTP || e.OAuth == nil || e.OAuth.GrantType != registry.GrantAuthorizationCode || e.OAuth.CredentialFile == "" {
		return fmt.Errorf("MCP server %q is not set up for --oauth-login: it needs an HTTP url and oauth.grantType authorization_code with oauth.credentialFile", e.Name)
	}
	if cfg.Stderr == nil {
		cfg.Stderr = io.Discard
	}
	if cfg.OpenTimeout <= 0 {
		cfg.OpenTimeout = loginCallbackWait
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = newLoginHTTPClient()
	}
	o := e.OAuth
	if err := CheckStoreDir(o.CredentialFile, true); err != nil {
		return fmt.Errorf("OAuth login failed: %w", err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(o.RedirectPort))))
	if err != nil {
		var opErr *net.OpError
		if errors.As(err, &opErr) {
			err = opErr.Err // without the address
		}
		return loginFailed(fmt.Sprintf("cannot listen on 127.0.0.1:%d for the browser's redirect (%v); free the port or change oauth.redirectPort", o.RedirectPort, err))
	}
	defer ln.Close()
	redirectURI := fmt.Sprintf("http://127.0.0.1:%d%s", ln.Addr().(*net.TCPAddr).Port, loginCallbackPath)

	asm, err := discoverAuthServer(ctx, cfg.HTTPClient, e.URL)
	if err != nil {
		return err
	}
	var wire *wireNotes
	cfg.HTTPClient, wire = withWireNotes(cfg.HTTPClient)
	oc, dcrSecret, err := loginClient(ctx, cfg.HTTPClient, wire, asm, o, redirectURI)
	if err != nil {
		return err
	}
	verifier, state := oauth2.GenerateVerifier(), rand.Text()
	authURL := oc.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", e.URL))
	fmt.Fprintf(cfg.Stderr, "Open this URL in a browser to grant the repl-mcp broker its own access to MCP server %q:\n%s\n", e.Name, authURL)
	fmt.Fprintf(cfg.Stderr, "Waiting up to %v for the browser to return to %s ...\n", cfg.OpenTimeout, redirectURI)

	cb := &callbackServer{calls: make(chan *callback, 1), done: make(chan struct{})}
	srv := &http.Server{
		Handler:     cb,
		ReadTimeout: loginReadTimeout,
		// net/http allows 4 KiB over MaxHeaderBytes for the request line and slack.
		MaxHeaderBytes: loginMaxHead - 4<<10,
		IdleTimeout:    loginReadTimeout,
		BaseContext:    func(net.Listener) context.Context { return ctx },
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		srv.Serve(ln)
	}()
	defer func() {
		close(cb.done) // a callback still waiting for Login gets 400
		// Shutdown waits for the handler still writing the browser's reply.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), loginShutdownBudget)
		defer cancel()
		if srv.Shutdown(sctx) != nil {
			srv.Close()
		}
		<-served
	}()

	wait := time.NewTimer(cfg.OpenTimeout)
	defer wait.Stop()
	var call *callback
	select {
	case call = <-cb.calls:
	case <-wait.C:
		return loginFailed(fmt.Sprintf("no browser callback arrived within %v; run --oauth-login again", cfg.OpenTimeout))
	case <-ctx.Done():
		return loginFailed("interrupted while waiting for the browser callback")
	}
	err = finishLogin(ctx, cfg, wire, asm, oc, dcrSecret, call.query, state, verifier)
	call.reply <- err == nil
	if err != nil {
		return err
	}
	// The path is not echoed: it may hold an expanded environment variable.
	fmt.Fprintf(cfg.Stderr, "Authorized: the broker's grant for MCP server %q is saved in its oauth.credentialFile.\n", e.Name)
	return nil
}

// finishLogin checks the callback, exchanges its code and saves the grant.
func finishLogin(ctx context.Context, cfg LoginConfig, wire *wireNotes, asm *oauthex.AuthServerMeta, oc *oauth2.Config, dcrSecret string, q url.Values, state, verifier string) error {
	if code := q.Get("error"); code != "" {
		return loginFailed(fmt.Sprintf("the authorization server refused the request (%s)", safeToken(code)))
	}
	if subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(state)) != 1 {
		return loginFailed("the callback's state does not match this login (a forged or stale redirect); nothing was saved")
	}
	// RFC 9207: an advertised iss parameter is required; any iss must match.
	switch iss, has := q.Get("iss"), q.Has("iss"); {
	case asm.AuthorizationResponseIssParameterSupported && !has,
		has && iss != asm.Issuer:
		return loginFailed("the authorization response's issuer (iss) does not match the discovered authorization server; nothing was saved")
	}
	code := q.Get("code")
	if code == "" {
		return loginFailed("the callback carries no authorization code")
	}
	ectx, cancel := context.WithTimeout(context.WithValue(ctx, oauth2.HTTPClient, cfg.HTTPClient), loginStepBudget)
	defer cancel()
	tok, err := oc.Exchange(ectx, code, oauth2.VerifierOption(verifier), oauth2.SetAuthURLParam("resource", cfg.Entry.URL))
	if err != nil {
		return loginFailed("the token exchange failed" + tokenErrorReason(ectx, err, wire))
	}
	if tok.AccessToken == "" || !strings.EqualFold(tok.Type(), "Bearer") {
		return loginFailed("the token endpoint did not issue a bearer access token")
	}
	g := &Grant{
		TokenResponse:   tokenResponse(tok),
		TokenReceivedAt: time.Now().Unix(),
		Issuer:          asm.Issuer,
		TokenEndpoint:   asm.TokenEndpoint,
		ClientID:        oc.ClientID,
		ClientSecret:    dcrSecret,
		Resource:        cfg.Entry.URL,
		Scopes:          cfg.Entry.OAuth.Scopes,
	}
	if err := SaveGrant(cfg.Entry.OAuth.CredentialFile, g); err != nil {
		return fmt.Errorf("OAuth login failed: %w", err)
	}
	return nil
}

// tokenResponse is the token endpoint's answer as stored: its standard fields as
// received (oauth2 keeps the raw JSON; Extra reads it back).
func tokenResponse(tok *oauth2.Token) map[string]any {
	m := map[string]any{"access_token": tok.AccessToken, "token_type": tok.Type()}
	if tok.RefreshToken != "" {
		m["refresh_token"] = tok.RefreshToken
	}
	if tok.ExpiresIn > 0 {
		m["expires_in"] = tok.ExpiresIn
	}
	for _, k := range []string{"scope", "id_token", "refresh_token_expires_in"} {
		if v := tok.Extra(k); v != nil {
			m[k] = v
		}
	}
	return m
}

// discoverAuthServer finds the server's authorization server: the protected
// resource metadata at the server URL's path, else at its root, else (servers
// of the 2025-03-26 revision) the URL's origin is the authorization server.
//
// The connection code uses it too (client credentials); its errors read
// "OAuth login failed: <reason>". A nil c is the login's default client.
func discoverAuthServer(ctx context.Context, c *http.Client, serverURL string) (*oauthex.AuthServerMeta, error) {
	if c == nil {
		c = newLoginHTTPClient()
	}
	c, wire := withWireNotes(c)
	dctx, cancel := context.WithTimeout(ctx, loginStepBudget)
	defer cancel()
	u, err := url.Parse(serverURL)
	if err != nil {
		return nil, loginFailed("the server URL cannot be parsed")
	}
	origin := (&url.URL{Scheme: u.Scheme, Host: u.Host}).String()
	issuer := origin
	for _, try := range []struct{ metadata, resource string }{
		{origin + "/.well-known/oauth-protected-resource/" + strings.TrimLeft(u.Path, "/"), serverURL},
		{origin + "/.well-known/oauth-protected-resource", origin},
	} {
		prm, err := oauthex.GetProtectedResourceMetadata(dctx, try.metadata, try.resource, c)
		if err != nil || prm == nil {
			switch {
			case dctx.Err() != nil:
				return nil, loginFailed(fmt.Sprintf("OAuth discovery timed out after %v", loginStepBudget))
			case wire.unreachable():
				return nil, loginFailed("cannot reach the MCP server for OAuth discovery" + wire.reason())
			}
			continue
		}
		if len(prm.AuthorizationServers) == 0 {
			return nil, loginFailed("the server's protected resource metadata names no authorization server")
		}
		issuer = prm.AuthorizationServers[0]
		break
	}
	asm, err := auth.GetAuthServerMetadata(dctx, issuer, c)
	switch {
	case dctx.Err() != nil:
		return nil, loginFailed(fmt.Sprintf("OAuth discovery timed out after %v", loginStepBudget))
	case err != nil && wire.unreachable():
		return nil, loginFailed("cannot reach the authorization server" + wire.reason())
	case err != nil:
		return nil, loginFailed("the authorization server metadata is unavailable or invalid (issuer, endpoints or PKCE support)" + wire.reason())
	case asm == nil:
		return nil, loginFailed("the authorization server publishes no metadata (RFC 8414 or OpenID discovery)")
	case !slices.Contains(asm.CodeChallengeMethodsSupported, "S256"):
		return nil, loginFailed("the authorization server does not support PKCE S256")
	case asm.AuthorizationEndpoint == "" || asm.TokenEndpoint == "":
		return nil, loginFailed("the authorization server metadata lacks an authorization or token endpoint")
	}
	return asm, nil
}

// loginClient is the OAuth client of this login: the configured client id (and
// secret), else one registered now (RFC 7591) for this redirect URI. dcrSecret is
// a secret the registration issued, which the grant must keep for refreshes.
func loginClient(ctx context.Context, c *http.Client, wire *wireNotes, asm *oauthex.AuthServerMeta, o *registry.OAuthConfig, redirectURI string) (oc *oauth2.Config, dcrSecret string, err error) {
	oc = &oauth2.Config{
		Endpoint:    oauth2.Endpoint{AuthURL: asm.AuthorizationEndpoint, TokenURL: asm.TokenEndpoint},
		RedirectURL: redirectURI,
		Scopes:      o.Scopes,
	}
	if o.ClientID != "" {
		oc.ClientID, oc.ClientSecret = o.ClientID, o.ClientSecret
		oc.Endpoint.AuthStyle = configuredAuthStyle(o.ClientSecret, asm.TokenEndpointAuthMethodsSupported)
		return oc, "", nil
	}
	if asm.RegistrationEndpoint == "" {
		return nil, "", loginFailed("the authorization server offers no dynamic client registration; configure oauth.clientId")
	}
	rctx, cancel := context.WithTimeout(ctx, loginStepBudget)
	defer cancel()
	reg, err := oauthex.RegisterClient(rctx, asm.RegistrationEndpoint, &oauthex.ClientRegistrationMetadata{
		RedirectURIs:            []string{redirectURI},
		TokenEndpointAuthMethod: "none",
		GrantTypes:              []string{"authorization_code", "refresh_token"},
		ResponseTypes:           []string{"code"},
		ClientName:              loginClientName,
		Scope:                   strings.Join(o.Scopes, " "),
		ApplicationType:         "native",
	}, c)
	if err != nil {
		var regErr *oauthex.ClientRegistrationError
		if errors.As(err, &regErr) {
			return nil, "", loginFailed(fmt.Sprintf("dynamic client registration was refused (%s); configure oauth.clientId", safeToken(regErr.ErrorCode)))
		}
		return nil, "", loginFailed("dynamic client registration failed" + wire.reason() + "; configure oauth.clientId or retry")
	}
	oc.ClientID, oc.ClientSecret = reg.ClientID, reg.ClientSecret
	switch reg.TokenEndpointAuthMethod {
	case "none", "client_secret_post":
		oc.Endpoint.AuthStyle = oauth2.AuthStyleInParams
	default: // RFC 7591: client_secret_basic when unspecified
		oc.Endpoint.AuthStyle = oauth2.AuthStyleInHeader
		if reg.ClientSecret == "" {
			oc.Endpoint.AuthStyle = oauth2.AuthStyleInParams
		}
	}
	return oc, reg.ClientSecret, nil
}

// configuredAuthStyle picks how a configured client authenticates at the token
// endpoint: a public client sends its id in the body; a confidential one prefers
// client_secret_post, then client_secret_basic (RFC 8414's default).
func configuredAuthStyle(secret string, supported []string) oauth2.AuthStyle {
	switch {
	case secret == "", slices.Contains(supported, "client_secret_post"):
		return oauth2.AuthStyleInParams
	}
	return oauth2.AuthStyleInHeader
}

// tokenErrorReason is a safe parenthesized reason for a failed token request:
// the OAuth error code or the HTTP status, never the response body.
func tokenErrorReason(ctx context.Context, err error, wire *wireNotes) string {
	var re *oauth2.RetrieveError
	switch {
	case ctx.Err() != nil:
		return fmt.Sprintf(" (timed out after %v)", loginStepBudget)
	case errors.As(err, &re) && re.ErrorCode != "":
		return " (" + safeToken(re.ErrorCode) + ")"
	case errors.As(err, &re) && re.Response != nil:
		return fmt.Sprintf(" (HTTP %d)", re.Response.StatusCode)
	}
	return wire.reason()
}

// wireNotes remembers how the last request of a login went, so its errors can
// say why without echoing go-sdk's or oauth2's texts, which hold URLs.
type wireNotes struct {
	mu   sync.Mutex
	last string // "" after a 2xx response
	down bool   // the last request got no response at all
}

// withWireNotes returns a copy of c whose transport notes every outcome.
func withWireNotes(c *http.Client) (*http.Client, *wireNotes) {
	w := &wireNotes{}
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	cc := *c
	cc.Transport = &notingTransport{base: base, notes: w}
	return &cc, w
}

// reason is " (why)" for the last request that went wrong, or "".
func (w *wireNotes) reason() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.last == "" {
		return ""
	}
	return " (" + w.last + ")"
}

// unreachable reports whether the last request got no HTTP response.
func (w *wireNotes) unreachable() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.down
}

type notingTransport struct {
	base  http.RoundTripper
	notes *wireNotes
}

func (t *notingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	t.notes.mu.Lock()
	defer t.notes.mu.Unlock()
	if err != nil {
		t.notes.last, t.notes.down = safehttp.NetReason(err), true
		return nil, err
	}
	t.notes.last, t.notes.down = safehttp.StatusReason(resp.StatusCode), false
	return resp, nil
}

// safeToken keeps an OAuth error code showable: at most 64 bytes of
// [A-Za-z0-9_.-], the characters RFC 6749 error codes use in practice.
func safeToken(s string) string {
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= 64 {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-', r == '.':
			b.WriteRune(r)
		}
	}
	if b.Len() == 0 {
		return "unspecified error"
	}
	return b.String()
}

func loginFailed(reason string) error {
	return fmt.Errorf("OAuth login failed: %s", reason)
}

// callback is one browser redirect, handed from the listener to Login, which
// answers on reply whether the login succeeded.
type callback struct {
	query url.Values
	reply chan bool
}

// callbackServer serves the loopback redirect URI. The first GET /callback from a
// loopback peer goes to Login; later ones are refused, other paths are 404 and
// other peers are ignored.
type callbackServer struct {
	calls chan *callback // buffered: the first callback never blocks
	done  chan struct{}  // closed when Login returns
	once  sync.Once
}

func (s *callbackServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	host, _, _ := net.SplitHostPort(r.RemoteAddr)
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		http.Error(w, "Forbidden", http.StatusForbidden)
		return
	}
	if r.URL.Path != loginCallbackPath {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		return
	}
	ok := false
	first := false
	s.once.Do(func() { first = true })
	if first {
		call := &callback{query: r.URL.Query(), reply: make(chan bool, 1)}
		s.calls <- call
		select {
		case ok = <-call.reply:
		case <-s.done:
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if ok {
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, loginReplyOK+"\n")
		return
	}
	w.WriteHeader(http.StatusBadRequest)
	io.WriteString(w, loginReplyFail+"\n")
}

// newLoginHTTPClient is the default client of a login: the connect side's OAuth
// client (no redirects, bounded bodies, 30 s per request) over a dialer of its own,
// which keeps go-sdk's discovery from refusing private addresses: a registry's server
// URL is the user's choice.
func newLoginHTTPClient() *http.Client {
	return NewClient(safehttp.NewTransport())
}
