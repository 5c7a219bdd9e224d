package oauthfixture

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxBody bounds every request body the fixture reads.
const maxBody = 16 << 10

// Options configure a fixture when it is built.
type Options struct {
	// Clients are preregistered clients: client id to secret ("" for a public
	// client). They may use any loopback redirect URI.
	Clients map[string]string
	// ExpiresIn is the access tokens' lifetime in seconds; 0 means 3600.
	ExpiresIn int
	// Scopes are advertised as scopes_supported; nil advertises none.
	Scopes []string
	// NoIssParameter leaves authorization_response_iss_parameter_supported out of
	// the metadata and iss out of the authorization response.
	NoIssParameter bool
	// Now is the clock codes and access tokens expire by; nil is time.Now. A test
	// that lets a token expire shares a [Clock] with the client instead of
	// sleeping.
	Now func() time.Time
}

// Clock is a clock that moves only when a test advances it; safe for concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock that reads the current time until advanced.
func NewClock() *Clock { return &Clock{now: time.Now()} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock d forward.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Authorization is what one /authorize request asked for.
type Authorization struct {
	ClientID            string
	RedirectURI         string
	Scope               string
	Resource            string
	State               string
	CodeChallenge       string
	CodeChallengeMethod string
}

// TokenRequest is one /token request as the fixture understood it.
type TokenRequest struct {
	GrantType    string
	ClientID     string // "" when the client could not be identified
	Resource     string
	Scope        string
	CodeVerifier bool   // a code_verifier was sent
	Error        string // the OAuth error code answered; "" when tokens were issued
}

// Server is a running fixture. Its knobs are safe to set from any goroutine.
type Server struct {
	// URL is the base URL (http://127.0.0.1:PORT) and the issuer.
	URL string
	// MCP is the protected MCP endpoint, URL+"/mcp".
	MCP string

	// WrongState makes /authorize send back a state other than the one it got.
	WrongState atomic.Bool
	// WrongIssuer makes /authorize send back an iss other than the issuer.
	WrongIssuer atomic.Bool
	// RequireClientSecret makes /register issue confidential clients and /token
	// refuse clients without a secret.
	RequireClientSecret atomic.Bool
	// RejectRefresh makes every refresh_token grant fail with invalid_grant.
	RejectRefresh atomic.Bool
	// ProtocolErrorOnce fails the next tools/call with JSON-RPC -32602, then
	// clears itself.
	ProtocolErrorOnce atomic.Bool

	opts Options
	srv  *httptest.Server

	mu            sync.Mutex
	clients       map[string]*client
	codes         map[string]*codeGrant
	access        map[string]time.Time // access token -> expiry
	refresh       map[string]string    // refresh token -> client id
	grants        map[string]int
	registrations int
	authorizes    int
	mcpRequests   int
	lastAuthorize Authorization
	lastRegister  map[string]any
	tokenRequests []TokenRequest
}

type client struct {
	secret       string
	redirectURIs []string // nil: any loopback redirect URI
}

type codeGrant struct {
	clientID    string
	redirectURI string
	challenge   string
	resource    string
	scope       string
	expires     time.Time
}

// New starts a fixture on 127.0.0.1; the test's cleanup closes it.
func New(t testing.TB, opts Options) *Server {
	t.Helper()
	if opts.ExpiresIn == 0 {
		opts.ExpiresIn = 3600
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Server{
		opts:    opts,
		clients: map[string]*client{},
		codes:   map[string]*codeGrant{},
		access:  map[string]time.Time{},
		refresh: map[string]string{},
		grants:  map[string]int{},
	}
	for id, secret := range opts.Clients {
		s.clients[id] = &client{secret: secret}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("oauthfixture: listen: %v", err)
	}
	s.URL = "http://" + ln.Addr().String()
	s.MCP = s.URL + "/mcp"
	s.srv = httptest.NewUnstartedServer(s.handler())
	s.srv.Listener.Close()
	s.srv.Listener = ln
	s.srv.Start()
	t.Cleanup(func() {
		s.srv.CloseClientConnections() // open MCP streams would hold Close forever
		s.srv.Close()
	})
	return s
}

// Grants returns how many /token requests asked for grantType
// ("authorization_code", "refresh_token", "client_credentials"), issued or not.
func (s *Server) Grants(grantType string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.grants[grantType]
}

// Registrations returns how many /register requests arrived.
func (s *Server) Registrations() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.registrations
}

// Authorizations returns how many /authorize requests arrived.
func (s *Server) Authorizations() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.authorizes
}

// MCPRequests returns how many HTTP requests reached /mcp, authorized or not.
func (s *Server) MCPRequests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mcpRequests
}

// LastAuthorization returns the last /authorize request's parameters.
func (s *Server) LastAuthorization() Authorization {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastAuthorize
}

// LastRegistration returns the last /register request's JSON body, or nil.
func (s *Server) LastRegistration() map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastRegister
}

// TokenRequests returns every /token request so far, oldest first.
func (s *Server) TokenRequests() []TokenRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.tokenRequests)
}

// RevokeAccessTokens makes every access token issued so far invalid at /mcp.
func (s *Server) RevokeAccessTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.access)
}

func (s *Server) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		s.protectedResource(w, s.URL+"/mcp")
	})
	mux.HandleFunc("GET /.well-known/oauth-protected-resource", func(w http.ResponseWriter, r *http.Request) {
		s.protectedResource(w, s.URL)
	})
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", s.serveASMetadata)
	mux.HandleFunc("POST /register", s.serveRegister)
	mux.HandleFunc("GET /authorize", s.serveAuthorize)
	mux.HandleFunc("POST /token", s.serveToken)
	mux.Handle("/mcp", s.mcpHandler())
	return mux
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

func oauthError(w http.ResponseWriter, code int, errCode string) {
	writeJSON(w, code, map[string]string{"error": errCode})
}

func (s *Server) protectedResource(w http.ResponseWriter, resource string) {
	m := map[string]any{
		"resource":                 resource,
		"authorization_servers":    []string{s.URL},
		"bearer_methods_supported": []string{"header"},
	}
	if len(s.opts.Scopes) > 0 {
		m["scopes_supported"] = s.opts.Scopes
	}
	writeJSON(w, http.StatusOK, m)
}

func (s *Server) serveASMetadata(w http.ResponseWriter, r *http.Request) {
	m := map[string]any{
		"issuer":                                s.URL,
		"authorization_endpoint":                s.URL + "/authorize",
		"token_endpoint":                        s.URL + "/token",
		"registration_endpoint":                 s.URL + "/register",
		"response_types_supported":              []string{"code"},
		"grant_types_supported":                 []string{"authorization_code", "refresh_token", "client_credentials"},
		"code_challenge_methods_supported":      []string{"S256"},
		"token_endpoint_auth_methods_supported": []string{"client_secret_post", "client_secret_basic", "none"},
	}
	if !s.opts.NoIssParameter {
		m["authorization_response_iss_parameter_supported"] = true
	}
	if len(s.opts.Scopes) > 0 {
		m["scopes_supported"] = s.opts.Scopes
	}
	writeJSON(w, http.StatusOK, m)
}

func (s *Server) serveRegister(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody)).Decode(&body)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.registrations++
	if err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_client_metadata")
		return
	}
	s.lastRegister = body
	var uris []string
	raw, _ := body["redirect_uris"].([]any)
	for _, u := range raw {
		if str, ok := u.(string); ok && loopbackRedirect(str) {
			uris = append(uris, str)
		}
	}
	if len(uris) == 0 || len(uris) != len(raw) {
		oauthError(w, http.StatusBadRequest, "invalid_redirect_uri")
		return
	}
	c := &client{redirectURIs: uris}
	method := "none"
	if s.RequireClientSecret.Load() {
		c.secret, method = rand.Text(), "client_secret_post"
	}
	id := "dcr-" + rand.Text()
	s.clients[id] = c
	resp := map[string]any{
		"client_id":                  id,
		"client_id_issued_at":        s.opts.Now().Unix(),
		"redirect_uris":              uris,
		"token_endpoint_auth_method": method,
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
	}
	if name, ok := body["client_name"].(string); ok {
		resp["client_name"] = name
	}
	if c.secret != "" {
		resp["client_secret"] = c.secret
		resp["client_secret_expires_at"] = 0
	}
	writeJSON(w, http.StatusCreated, resp)
}

// loopbackRedirect reports whether u is http://127.0.0.1:PORT/... or
// http://localhost:PORT/..., the only redirect URIs the fixture accepts.
func loopbackRedirect(u string) bool {
	p, err := url.Parse(u)
	if err != nil || p.Scheme != "http" || p.User != nil || p.Fragment != "" {
		return false
	}
	h := p.Hostname()
	return h == "127.0.0.1" || h == "localhost" || h == "::1"
}

func (s *Server) serveAuthorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	a := Authorization{
		ClientID:            q.Get("client_id"),
		RedirectURI:         q.Get("redirect_uri"),
		Scope:               q.Get("scope"),
		Resource:            q.Get("resource"),
		State:               q.Get("state"),
		CodeChallenge:       q.Get("code_challenge"),
		CodeChallengeMethod: q.Get("code_challenge_method"),
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.authorizes++
	s.lastAuthorize = a
	c := s.clients[a.ClientID]
	if c == nil || !loopbackRedirect(a.RedirectURI) ||
		(c.redirectURIs != nil && !slices.Contains(c.redirectURIs, a.RedirectURI)) {
		http.Error(w, "unknown client or redirect URI", http.StatusBadRequest)
		return
	}
	back, _ := url.Parse(a.RedirectURI)
	v := back.Query()
	state := a.State
	if s.WrongState.Load() {
		state += "-tampered"
	}
	v.Set("state", state)
	if !s.opts.NoIssParameter {
		iss := s.URL
		if s.WrongIssuer.Load() {
			iss = s.URL + "/wrong-issuer"
		}
		v.Set("iss", iss)
	}
	switch {
	case q.Get("response_type") != "code":
		v.Set("error", "unsupported_response_type")
	case a.CodeChallengeMethod != "S256" || a.CodeChallenge == "":
		v.Set("error", "invalid_request")
	default:
		code := rand.Text()
		s.codes[code] = &codeGrant{
			clientID:    a.ClientID,
			redirectURI: a.RedirectURI,
			challenge:   a.CodeChallenge,
			resource:    a.Resource,
			scope:       a.Scope,
			expires:     s.opts.Now().Add(5 * time.Minute),
		}
		v.Set("code", code)
	}
	back.RawQuery = v.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

func (s *Server) serveToken(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	formErr := r.ParseForm()
	f := r.PostForm
	tr := TokenRequest{
		GrantType:    f.Get("grant_type"),
		Resource:     f.Get("resource"),
		Scope:        f.Get("scope"),
		CodeVerifier: f.Get("code_verifier") != "",
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.grants[tr.GrantType]++
	fail := func(code int, errCode string) {
		tr.Error = errCode
		s.tokenRequests = append(s.tokenRequests, tr)
		oauthError(w, code, errCode)
	}
	if formErr != nil {
		fail(http.StatusBadRequest, "invalid_request")
		return
	}
	id, secret, basic := r.BasicAuth()
	if basic {
		// RFC 6749 2.3.1: the id and secret are form-encoded inside Basic.
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	} else {
		id, secret = f.Get("client_id"), f.Get("client_secret")
	}
	c := s.clients[id]
	switch {
	case c == nil:
		fail(http.StatusUnauthorized, "invalid_client")
		return
	case c.secret != "" && secret != c.secret,
		c.secret == "" && s.RequireClientSecret.Load():
		fail(http.StatusUnauthorized, "invalid_client")
		return
	}
	tr.ClientID = id
	issueRefresh := true
	switch tr.GrantType {
	case "authorization_code":
		g := s.codes[f.Get("code")]
		delete(s.codes, f.Get("code")) // single use, even when the exchange fails
		switch {
		case g == nil || s.opts.Now().After(g.expires) || g.clientID != id:
			fail(http.StatusBadRequest, "invalid_grant")
			return
		case g.redirectURI != f.Get("redirect_uri"):
			fail(http.StatusBadRequest, "invalid_grant")
			return
		case s256(f.Get("code_verifier")) != g.challenge:
			fail(http.StatusBadRequest, "invalid_grant")
			return
		case tr.Resource != s.MCP || g.resource != s.MCP:
			fail(http.StatusBadRequest, "invalid_target")
			return
		}
		tr.Scope = g.scope
	case "refresh_token":
		rt := f.Get("refresh_token")
		owner, ok := s.refresh[rt]
		switch {
		case s.RejectRefresh.Load() || !ok || owner != id:
			fail(http.StatusBadRequest, "invalid_grant")
			return
		case tr.Resource != "" && tr.Resource != s.MCP:
			fail(http.StatusBadRequest, "invalid_target")
			return
		}
		delete(s.refresh, rt) // rotation: the old refresh token is spent
	case "client_credentials":
		switch {
		case c.secret == "":
			fail(http.StatusUnauthorized, "unauthorized_client")
			return
		case tr.Resource != s.MCP:
			fail(http.StatusBadRequest, "invalid_target")
			return
		}
		issueRefresh = false
	default:
		fail(http.StatusBadRequest, "unsupported_grant_type")
		return
	}
	s.tokenRequests = append(s.tokenRequests, tr)
	access := "at-" + rand.Text()
	s.access[access] = s.opts.Now().Add(time.Duration(s.opts.ExpiresIn) * time.Second)
	resp := map[string]any{
		"access_token": access,
		"token_type":   "Bearer",
		"expires_in":   s.opts.ExpiresIn,
	}
	if tr.Scope != "" {
		resp["scope"] = tr.Scope
	}
	if issueRefresh {
		rt := "rt-" + rand.Text()
		s.refresh[rt] = id
		resp["refresh_token"] = rt
	}
	writeJSON(w, http.StatusOK, resp)
}

// s256 is the PKCE S256 code challenge of verifier (RFC 7636 4.2).
func s256(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// mcpHandler is the protected MCP endpoint: bearer check, then go-sdk.
func (s *Server) mcpHandler() http.Handler {
	srv := mcp.NewServer(&mcp.Implementation{Name: "oauthfixture", Version: "1"}, nil)
	type echoArgs struct {
		Text string `json:"text"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "Returns text (fixture)."},
		func(ctx context.Context, req *mcp.CallToolRequest, a echoArgs) (*mcp.CallToolResult, map[string]string, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text}}}, map[string]string{"text": a.Text}, nil
		})
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/call" && s.ProtocolErrorOnce.CompareAndSwap(true, false) {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "rejected once (fixture)"}
			}
			return next(ctx, method, req)
		}
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		s.mu.Lock()
		exp, ok := s.access[token]
		s.mu.Unlock()
		if !ok {
			return nil, fmt.Errorf("%w: unknown token", auth.ErrInvalidToken)
		}
		// Expiry is judged by the fixture's clock; go-sdk checks Expiration against
		// the real one, so it gets the time left, from now.
		left := exp.Sub(s.opts.Now())
		if left <= 0 {
			return nil, fmt.Errorf("%w: token expired", auth.ErrInvalidToken)
		}
		return &auth.TokenInfo{Expiration: time.Now().Add(left)}, nil
	}
	protected := auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{
		ResourceMetadataURL: s.URL + "/.well-known/oauth-protected-resource/mcp",
	})(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.mcpRequests++
		s.mu.Unlock()
		protected.ServeHTTP(w, r)
	})
}
