package oauth

// OAuth at connect time (docs/contract.md §8.7): the bearer token an HTTP entry with an
// `oauth` object sends on every request. The broker's HTTP dial asks its Source
// for a token before the MCP handshake (so a missing or refused grant fails the
// connect with its own message), and the peer's round tripper asks again before
// each request, so a token that expires mid-session is renewed there.
//
//   - client_credentials: discovery of the server's authorization server, then a
//     client-credentials grant (resource = the server URL, the configured
//     scopes); the token is kept in memory until it expires, then granted anew.
//   - authorization_code: the grant --oauth-login stored (see store.go).
//     An expired access token is refreshed under the store's lock, after reading
//     the file again (another process may have refreshed it already), and the
//     rotated tokens are saved.
//
// Every OAuth request goes through a client that refuses redirects, bounds
// response bodies to 64 KiB (oauthBodyLimit) and each exchange to 30 s. Errors never hold a
// token, a secret, a URL or a response body.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/iota-uz/repl-mcp/broker/internal/safehttp"
	"github.com/iota-uz/repl-mcp/broker/registry"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// OAuth limits.
const (
	oauthBodyLimit = 64 << 10         // an OAuth response body: metadata with many scopes stays well under it
	oauthTimeout   = 30 * time.Second // one OAuth exchange
	tokenSkew      = 60 * time.Second // a token this close to expiry is renewed
)

// Messages whose key tokens the contract fixes (docs/contract.md §8.7).
const (
	msgOAuthCodeGrant   = "Independent OAuth grant required: run repl-mcp --config REGISTRY --oauth-login SERVER"
	msgOAuthClientCreds = "OAuth client credentials exchange failed; verify independent broker grant and supported authentication method"
	msgOAuthRefresh     = "OAuth refresh failed or grant expired; run --oauth-login SERVER"
	msgOAuthValidation  = "OAuth credential store or issuer validation failed; run --oauth-login SERVER"
)

var (
	errOAuthBodyTooLarge = errors.New("OAuth response exceeds 64 KiB")
	errTokenEndpointURL  = errors.New("the token endpoint URL is invalid")
	errTokenNotJSON      = errors.New("the token endpoint answered without a JSON object")
)

// ErrCredentialsRequired marks a server that needs a grant the broker does not
// hold, or holds but cannot use or renew; explain reports it as credentials_missing.
var ErrCredentialsRequired = errors.New("OAuth credentials required")

// Error is an OAuth failure whose text is safe to show while errors.Is still sees
// its cause (ErrCredentialsRequired, a context error, a store error): the cause
// is only ever a sentinel, never a library's error, whose text may hold a URL.
type Error struct {
	msg   string
	cause error
}

func (e *Error) Error() string { return e.msg }
func (e *Error) Unwrap() error { return e.cause }

// Source yields the access token for the next request. It is safe for
// concurrent use; one grant or refresh runs at a time.
type Source interface {
	Token(ctx context.Context) (string, error)
}

// NewSource returns the token source of e, an entry with an oauth object;
// client carries every OAuth request (see NewClient), and tokens expire by the
// clock now (nil is time.Now; tests pass one they move).
func NewSource(e registry.Entry, client *http.Client, now func() time.Time) Source {
	if now == nil {
		now = time.Now
	}
	if e.OAuth.GrantType == registry.GrantClientCredentials {
		return &clientCredentialsSource{cfg: e.OAuth, resource: e.URL, client: client, now: now, sem: make(chan struct{}, 1)}
	}
	return &storedGrantSource{cfg: e.OAuth, resource: e.URL, client: client, now: now, sem: make(chan struct{}, 1)}
}

// NewClient returns the client for discovery and token requests over base:
// no redirects, bodies of at most 64 KiB, 30 s per request.
func NewClient(base http.RoundTripper) *http.Client {
	return &http.Client{
		Transport: &oauthRoundTripper{base: base},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
		Timeout: oauthTimeout,
	}
}

type oauthRoundTripper struct{ base http.RoundTripper }

func (t *oauthRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp.ContentLength > oauthBodyLimit {
		resp.Body.Close()
		return nil, errOAuthBodyTooLarge
	}
	resp.Body = safehttp.LimitBody(resp.Body, oauthBodyLimit, errOAuthBodyTooLarge, nil)
	return resp, nil
}

// semAcquire takes a one-slot semaphore unless ctx ends first.
func semAcquire(ctx context.Context, sem chan struct{}) error {
	select {
	case sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// tokenLifetime is how long a token received now may be used: expires_in less
// the skew (half the lifetime for a token shorter than twice the skew); zero
// for a token without expires_in, which is used until the server refuses it.
func tokenLifetime(expiresIn int64) time.Duration {
	if expiresIn <= 0 {
		return 0
	}
	life := time.Duration(expiresIn) * time.Second
	return life - min(tokenSkew, life/2)
}

// oauthError is the error a Source returns: msg with a safe detail, and a
// cause that explain classifies (a timeout over missing credentials).
func oauthError(ctx context.Context, msg, detail string, cause error) error {
	switch err := ctx.Err(); {
	case errors.Is(err, context.DeadlineExceeded):
		detail, cause = "timed out", context.DeadlineExceeded
	case err != nil:
		detail, cause = "cancelled", context.Canceled
	}
	if detail != "" {
		msg += " (" + detail + ")"
	}
	return &Error{msg: msg, cause: cause}
}

// storeError maps a credential store error to the connect error: no grant, an
// unsafe store (its own contract message) or an invalid grant.
func storeError(ctx context.Context, err error) error {
	switch {
	case errors.Is(err, ErrNoGrant):
		return &Error{msg: msgOAuthCodeGrant, cause: ErrCredentialsRequired}
	case errors.Is(err, ErrStoreDirUnsafe), errors.Is(err, ErrStoreUnsafe):
		return &Error{msg: err.Error(), cause: errors.Join(ErrCredentialsRequired, err)}
	case errors.Is(err, ErrGrantLocked):
		return &Error{msg: err.Error(), cause: err}
	case errors.Is(err, ErrGrantInvalid):
		detail := strings.TrimPrefix(err.Error(), ErrGrantInvalid.Error())
		return oauthError(ctx, msgOAuthValidation, strings.Trim(detail, " ()"), ErrCredentialsRequired)
	case ctx.Err() != nil:
		return oauthError(ctx, msgOAuthRefresh, "", nil)
	}
	return oauthError(ctx, msgOAuthValidation, "the credential store failed", ErrCredentialsRequired)
}

// clientCredentialsSource holds a client-credentials token in memory.
type clientCredentialsSource struct {
	cfg      *registry.OAuthConfig
	resource string
	client   *http.Client
	now      func() time.Time
	sem      chan struct{} // one grant at a time; guards the fields below

	conf    *clientcredentials.Config // nil until discovery succeeded
	access  string
	expires time.Time // zero: no known expiry
}

func (s *clientCredentialsSource) Token(ctx context.Context) (string, error) {
	if err := semAcquire(ctx, s.sem); err != nil {
		return "", oauthError(ctx, msgOAuthClientCreds, "", err)
	}
	defer func() { <-s.sem }()
	if s.access != "" && (s.expires.IsZero() || s.now().Before(s.expires)) {
		return s.access, nil
	}
	if s.conf == nil {
		asm, err := discoverAuthServer(ctx, s.client, s.resource)
		if err != nil {
			return "", oauthError(ctx, msgOAuthClientCreds, discoveryDetail(err), nil)
		}
		style, ok := clientAuthStyle(asm.TokenEndpointAuthMethodsSupported)
		if !ok {
			return "", oauthError(ctx, msgOAuthClientCreds, "the authorization server supports neither client_secret_basic nor client_secret_post", ErrCredentialsRequired)
		}
		s.conf = &clientcredentials.Config{
			ClientID:       s.cfg.ClientID,
			ClientSecret:   s.cfg.ClientSecret,
			TokenURL:       asm.TokenEndpoint,
			Scopes:         s.cfg.Scopes,
			EndpointParams: url.Values{"resource": {s.resource}},
			AuthStyle:      style,
		}
	}
	received := s.now()
	tok, err := s.conf.Token(context.WithValue(ctx, oauth2.HTTPClient, s.client))
	if err != nil {
		detail, cause := tokenRequestDetail(err)
		return "", oauthError(ctx, msgOAuthClientCreds, detail, cause)
	}
	if tok.AccessToken == "" || !bearerType(tok.TokenType) {
		return "", oauthError(ctx, msgOAuthClientCreds, "the token endpoint returned no bearer access token", ErrCredentialsRequired)
	}
	expiresIn := tok.ExpiresIn
	if expiresIn == 0 && !tok.Expiry.IsZero() {
		expiresIn = max(1, int64(tok.Expiry.Sub(received).Seconds()))
	}
	s.access, s.expires = tok.AccessToken, time.Time{}
	if life := tokenLifetime(expiresIn); life > 0 {
		s.expires = received.Add(life)
	}
	return s.access, nil
}

// storedGrantSource uses and refreshes the grant stored by --oauth-login.
type storedGrantSource struct {
	cfg      *registry.OAuthConfig
	resource string
	client   *http.Client
	now      func() time.Time
	sem      chan struct{} // one load or refresh at a time; guards the fields below

	loaded  bool
	access  string
	expires time.Time // zero: no known expiry
}

func (s *storedGrantSource) Token(ctx context.Context) (string, error) {
	if err := semAcquire(ctx, s.sem); err != nil {
		return "", oauthError(ctx, msgOAuthRefresh, "", err)
	}
	defer func() { <-s.sem }()
	if !s.loaded {
		g, err := LoadGrant(s.cfg.CredentialFile)
		if err != nil {
			return "", storeError(ctx, err)
		}
		if err := s.use(g); err != nil {
			return "", err
		}
		s.loaded = true
	}
	if s.valid() {
		return s.access, nil
	}
	unlock, err := LockGrant(ctx, s.cfg.CredentialFile)
	if err != nil {
		return "", storeError(ctx, err)
	}
	defer unlock()
	// Another process may have refreshed while this one waited for the lock.
	g, err := LoadGrant(s.cfg.CredentialFile)
	if err != nil {
		return "", storeError(ctx, err)
	}
	if err := s.use(g); err != nil {
		return "", err
	}
	if s.valid() {
		return s.access, nil
	}
	fresh, err := refreshGrant(ctx, s.client, g, s.cfg, s.now)
	if err != nil {
		return "", err
	}
	if err := SaveGrant(s.cfg.CredentialFile, fresh); err != nil {
		// The old refresh token may be spent: the store must be repaired.
		return "", oauthError(ctx, msgOAuthValidation, "the refreshed grant could not be saved: "+err.Error(), errors.Join(ErrCredentialsRequired, err))
	}
	if err := s.use(fresh); err != nil {
		return "", err
	}
	return s.access, nil
}

func (s *storedGrantSource) valid() bool {
	return s.expires.IsZero() || s.now().Before(s.expires)
}

// use validates g for this server and takes its access token.
func (s *storedGrantSource) use(g *Grant) error {
	invalid := func(detail string) error {
		return &Error{msg: msgOAuthValidation + " (" + detail + ")", cause: ErrCredentialsRequired}
	}
	switch {
	case g.Resource != s.resource:
		return invalid("the grant was made for another server URL")
	case !oauthURLOK(g.Issuer):
		return invalid("the grant's issuer is not an HTTPS or loopback URL")
	case !oauthURLOK(g.TokenEndpoint):
		return invalid("the grant's token endpoint is not an HTTPS or loopback URL")
	}
	access, _ := g.TokenResponse["access_token"].(string)
	typ, _ := g.TokenResponse["token_type"].(string)
	if access == "" || !bearerType(typ) {
		return invalid("the grant holds no bearer access token")
	}
	expiresIn, ok := jsonInt(g.TokenResponse["expires_in"])
	if !ok {
		return invalid("the grant's expires_in is not a number")
	}
	s.access, s.expires = access, time.Time{}
	if life := tokenLifetime(expiresIn); life > 0 {
		s.expires = time.Unix(g.TokenReceivedAt, 0).Add(life)
	}
	return nil
}

// refreshGrant exchanges g's refresh token (RFC 6749 section 6, with the RFC 8707
// resource) and returns the grant with the new token response, received at now();
// a response without a refresh token keeps the old one. golang.org/x/oauth2 cannot send the
// resource parameter on a refresh nor return the response as received, so the
// request is built here.
func refreshGrant(ctx context.Context, client *http.Client, g *Grant, cfg *registry.OAuthConfig, now func() time.Time) (*Grant, error) {
	refresh, _ := g.TokenResponse["refresh_token"].(string)
	if refresh == "" {
		return nil, oauthError(ctx, msgOAuthRefresh, "the grant holds no refresh token", ErrCredentialsRequired)
	}
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}, "resource": {g.Resource}}
	id, secret := g.ClientID, g.ClientSecret
	if id == "" {
		id = cfg.ClientID
	}
	if secret == "" && id == cfg.ClientID {
		secret = cfg.ClientSecret // a configured confidential client
	}
	if secret == "" {
		form.Set("client_id", id)
	}
	received := now()
	resp, err := postForm(ctx, client, g.TokenEndpoint, form, id, secret)
	if err != nil {
		detail, _ := tokenRequestDetail(err)
		return nil, oauthError(ctx, msgOAuthRefresh, detail, ErrCredentialsRequired)
	}
	if refreshed, _ := resp["refresh_token"].(string); refreshed == "" {
		resp["refresh_token"] = refresh
	}
	access, _ := resp["access_token"].(string)
	typ, _ := resp["token_type"].(string)
	if _, ok := jsonInt(resp["expires_in"]); access == "" || !bearerType(typ) || !ok {
		return nil, oauthError(ctx, msgOAuthRefresh, "the token endpoint returned no bearer access token", ErrCredentialsRequired)
	}
	fresh := *g
	fresh.TokenResponse = resp
	fresh.TokenReceivedAt = received.Unix()
	return &fresh, nil
}

// tokenEndpointError is a refused token request: its HTTP status and RFC 6749
// error code (when the code is a plain token).
type tokenEndpointError struct {
	status int
	code   string
}

func (e *tokenEndpointError) Error() string {
	s := fmt.Sprintf("the token endpoint answered HTTP %d", e.status)
	if e.code != "" {
		s += " " + e.code
	}
	return s
}

var errorCodeRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9_.\-]{1,64}$`) })

// safeErrorCode is an RFC 6749 error code fit to show, or "".
func safeErrorCode(code string) string {
	if errorCodeRE().MatchString(code) {
		return code
	}
	return ""
}

// postForm posts form to a token endpoint (the client authenticated with HTTP
// Basic when it has a secret) and decodes the JSON object of a 200 answer.
func postForm(ctx context.Context, client *http.Client, endpoint string, form url.Values, id, secret string) (map[string]any, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, errTokenEndpointURL
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if secret != "" {
		req.SetBasicAuth(url.QueryEscape(id), url.QueryEscape(secret))
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	var obj map[string]any
	decodeErr := json.Unmarshal(body, &obj)
	if resp.StatusCode != http.StatusOK {
		code, _ := obj["error"].(string)
		return nil, &tokenEndpointError{status: resp.StatusCode, code: safeErrorCode(code)}
	}
	if ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct != "application/json" || decodeErr != nil || obj == nil {
		return nil, errTokenNotJSON
	}
	if code, _ := obj["error"].(string); code != "" {
		return nil, &tokenEndpointError{status: resp.StatusCode, code: safeErrorCode(code)}
	}
	return obj, nil
}

// tokenRequestDetail says why a token request failed, and whether the token
// endpoint refused the client (credentials) or could not be used (other).
func tokenRequestDetail(err error) (string, error) {
	var te *tokenEndpointError
	var re *oauth2.RetrieveError
	switch {
	case errors.As(err, &te):
		return te.Error(), ErrCredentialsRequired
	case errors.As(err, &re):
		te := &tokenEndpointError{code: safeErrorCode(re.ErrorCode)}
		if re.Response != nil {
			te.status = re.Response.StatusCode
		}
		return te.Error(), ErrCredentialsRequired
	case errors.Is(err, errOAuthBodyTooLarge):
		return fmt.Sprintf("the token endpoint's answer exceeds %d KiB", oauthBodyLimit>>10), nil
	case errors.Is(err, errTokenEndpointURL), errors.Is(err, errTokenNotJSON):
		return err.Error(), nil
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return "token endpoint: " + safehttp.NetReason(ue.Err), nil
	}
	return "the token endpoint's answer is not a usable token response", nil
}

// discoveryDetail is the safe detail of a discoverAuthServer (login.go) error:
// its reason without the login's prefix.
func discoveryDetail(err error) string {
	return strings.TrimPrefix(err.Error(), "OAuth login failed: ")
}

// clientAuthStyle picks how a confidential client authenticates at the token
// endpoint from the metadata's token_endpoint_auth_methods_supported, whose
// default is client_secret_basic (RFC 8414 section 2).
func clientAuthStyle(supported []string) (oauth2.AuthStyle, bool) {
	switch {
	case len(supported) == 0, slices.Contains(supported, "client_secret_basic"):
		return oauth2.AuthStyleInHeader, true
	case slices.Contains(supported, "client_secret_post"):
		return oauth2.AuthStyleInParams, true
	}
	return 0, false
}

// oauthURLOK reports whether s is an absolute HTTPS URL, or HTTP to a loopback host.
func oauthURLOK(s string) bool {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.User != nil {
		return false
	}
	switch u.Scheme {
	case "https":
		return true
	case "http":
		h := u.Hostname()
		if h == "localhost" {
			return true
		}
		ip := net.ParseIP(h)
		return ip != nil && ip.IsLoopback()
	}
	return false
}

// bearerType reports whether a token_type is Bearer; a missing one is taken as
// Bearer, as golang.org/x/oauth2 does.
func bearerType(typ string) bool {
	return typ == "" || strings.EqualFold(typ, "bearer")
}

// jsonInt reads a JSON number (or a numeric string, which some servers send);
// a missing value is 0.
func jsonInt(v any) (int64, bool) {
	switch n := v.(type) {
	case nil:
		return 0, true
	case float64:
		return int64(n), n >= 0
	case string:
		i, err := strconv.ParseInt(n, 10, 64)
		return i, err == nil && i >= 0
	}
	return 0, false
}
