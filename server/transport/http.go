package transport

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The streamable HTTP transport: one endpoint, two go-sdk handlers over the same
// *mcp.Server. Sessions (initialize, then Mcp-Session-Id) go to a stateful
// handler; stateless requests (protocol 2026-07-28, server/discover, and legacy
// requests that carry no session id) go to a handler with Stateless set, the only
// way go-sdk v1.8.0 accepts the 2026-07-28 protocol over HTTP.

// HTTPPath is the MCP endpoint's path.
const HTTPPath = "/mcp"

// DefaultHTTPAddr is where the HTTP transport listens unless told otherwise.
const DefaultHTTPAddr = "127.0.0.1:0"

// HTTP limits.
const (
	// MaxHTTPBody bounds one request body, as maxLine bounds a stdio line.
	MaxHTTPBody = maxLine
	// readHeaderTimeout bounds a client that opens a connection and stalls.
	readHeaderTimeout = 10 * time.Second
	// readBodyTimeout bounds reading one request body (at most MaxHTTPBody). There
	// is no whole-request read or write timeout: a GET stream and a long
	// tools/call reply legitimately last as long as they need.
	readBodyTimeout = 30 * time.Second
	// httpIdleTimeout closes a keep-alive connection that carries no request.
	httpIdleTimeout = 2 * time.Minute
	// maxHeaderBytes bounds the headers read before the token is checked.
	maxHeaderBytes = 64 << 10
)

// ErrInvalidAddr is returned for a listen address that is not HOST:PORT.
var ErrInvalidAddr = errors.New("invalid listen address")

// CheckListenAddr refuses an address that cannot be listened on for its form:
// not HOST:PORT, or a port that is neither a number up to 65535 nor a service name.
// The host is resolved only when listening.
func CheckListenAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err == nil {
		_, err = net.LookupPort("tcp", port)
	}
	if err != nil {
		var addrErr *net.AddrError
		if errors.As(err, &addrErr) {
			err = errors.New(addrErr.Err)
		}
		return fmt.Errorf("%w %q: %v; want HOST:PORT, such as 127.0.0.1:8080 (port 0 picks a free port)", ErrInvalidAddr, addr, err)
	}
	return nil
}

// ErrTokenRequired is returned when the HTTP transport would listen on an address
// other than loopback without a token of its user's choosing, or would need a
// generated token and has nowhere private to write it.
var ErrTokenRequired = errors.New("a bearer token is required")

// ErrNoAuthLoopbackOnly is returned for NoAuth on an address other than loopback.
var ErrNoAuthLoopbackOnly = errors.New("serving without a bearer token is allowed on a loopback address only")

// HTTPConfig configures the streamable HTTP transport. Every request must carry a
// bearer token: Token, or one generated at start and written to a private file,
// unless NoAuth says otherwise.
type HTTPConfig struct {
	// Addr is the host:port to listen on; empty means DefaultHTTPAddr. An address
	// that is not loopback requires Token.
	Addr string
	// Token, when non-empty, must arrive on every request as
	// "Authorization: Bearer <Token>". It is never logged or echoed.
	Token string
	// TokenDirs are where a generated token's file may go, in order of preference,
	// when Token is empty and NoAuth is false: the first directory that is private
	// (see createTokenFile) is used. The file is removed when ServeStreamableHTTP
	// returns.
	TokenDirs []string
	// NoAuth serves without any token, on loopback only: then every local user and
	// process that can connect runs code as this one. It excludes Token.
	NoAuth bool
	// Listening, if set, is called once before the first request is served, with
	// the endpoint URL and the path of the generated token's file ("" when the
	// token was given or NoAuth is set).
	Listening func(url, tokenFile string)

	// Limits are zero but in tests, which lower them; withDefaults fills in the
	// fields left zero.
	Limits HTTPLimits
}

// HTTPLimits are the transport's bounds that tests lower; a zero field is the
// transport's own bound.
type HTTPLimits struct {
	// MaxConns bounds the connections open at once (connLimit).
	MaxConns int
	// BodyTimeout bounds reading one request body (readBodyTimeout).
	BodyTimeout time.Duration
	// MaxSessions bounds the stateful MCP sessions open at once (maxHTTPSessions).
	MaxSessions int
	// SessionIdle closes a stateful MCP session idle this long (httpSessionIdle).
	SessionIdle time.Duration
	// Swept, if set, is called after each sweep of the idle reaper with the time it
	// judged idleness at: a test waits for a sweep instead of sleeping past one.
	Swept func(at time.Time)
}

func (l HTTPLimits) withDefaults() HTTPLimits {
	if l.MaxSessions <= 0 {
		l.MaxSessions = maxHTTPSessions
	}
	if l.SessionIdle <= 0 {
		l.SessionIdle = httpSessionIdle
	}
	if l.MaxConns <= 0 {
		l.MaxConns = connLimit()
	}
	if l.BodyTimeout <= 0 {
		l.BodyTimeout = readBodyTimeout
	}
	return l
}

// ServeStreamableHTTP serves host over streamable HTTP until ctx is cancelled
// (SIGTERM, SIGINT). Any number of clients may connect; every MCP session, stateful
// or stateless, sees the same REPL sessions. On cancellation it stops accepting,
// closes every REPL session (host.CloseSessions: runs are cancelled, workers
// reaped) and every MCP session, and returns nil within about closeGrace (REPL
// sessions get signalGrace of it to stop their runs).
func ServeStreamableHTTP(ctx context.Context, cfg HTTPConfig, host Host) error {
	addr := cfg.Addr
	if addr == "" {
		addr = DefaultHTTPAddr
	}
	if err := CheckListenAddr(addr); err != nil {
		return err
	}
	switch {
	case cfg.NoAuth && cfg.Token != "":
		return errors.New("HTTPConfig: NoAuth excludes a Token")
	case cfg.NoAuth && !loopbackHostPort(addr):
		return fmt.Errorf("listen on %s: %w", addr, ErrNoAuthLoopbackOnly)
	case cfg.Token == "" && !cfg.NoAuth && !loopbackHostPort(addr):
		return fmt.Errorf("listen on %s: %w to listen on a non-loopback address", addr, ErrTokenRequired)
	}
	if cfg.Token != "" {
		if err := CheckToken(cfg.Token); err != nil {
			return fmt.Errorf("bearer token: %w", err)
		}
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	if bound := ln.Addr().(*net.TCPAddr); cfg.Token == "" && !bound.IP.IsLoopback() {
		// A host name that resolved to something other than loopback.
		ln.Close()
		if cfg.NoAuth {
			return fmt.Errorf("listen on %s (bound %s): %w", addr, bound, ErrNoAuthLoopbackOnly)
		}
		return fmt.Errorf("listen on %s (bound %s): %w to listen on a non-loopback address", addr, bound, ErrTokenRequired)
	}
	token, tokenFile := cfg.Token, ""
	if token == "" && !cfg.NoAuth {
		// Written once listening: a failed listen leaves no file behind.
		token = rand.Text()
		f, err := createTokenFile(cfg.TokenDirs, token)
		if err != nil {
			ln.Close()
			return err
		}
		defer f.remove()
		tokenFile = f.path
	}
	return serveHTTPListener(ctx, host, ln, token, cfg.Limits.withDefaults(), func(url string) {
		if cfg.Listening != nil {
			cfg.Listening(url, tokenFile)
		}
	})
}

// serveHTTPListener serves host on ln, which it closes, within limits. It is meant
// to run once per host: each call adds its middleware again.
func serveHTTPListener(ctx context.Context, host Host, ln net.Listener, token string, limits HTTPLimits, listening func(url string)) error {
	h := newHTTPHandler(host, token, limits)
	host.MCP.AddReceivingMiddleware(h.requests.cancelWithRequest, h.sessions.track)
	mux := http.NewServeMux()
	mux.Handle(HTTPPath, h)
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		refuse(w, http.StatusNotFound, "404 page not found: the MCP endpoint is "+HTTPPath)
	})
	gate := newConnGate(limits.MaxConns)
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       httpIdleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ConnContext:       gate.connContext,
		ConnState:         gate.connState,
		// Connection-level errors (a client that hangs up) are not ours to report.
		ErrorLog: slog.NewLogLogger(slog.DiscardHandler, slog.LevelError),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	reapCtx, stopReaping := context.WithCancel(ctx)
	reaped := make(chan struct{})
	go func() {
		defer close(reaped)
		h.sessions.reap(reapCtx)
	}()
	listening("http://" + ln.Addr().String() + HTTPPath)

	var serveErr error
	select {
	case serveErr = <-served:
		// The listener failed; close what is open, as on a signal.
	case <-ctx.Done():
	}
	stopReaping()
	shutdownHTTP(context.WithoutCancel(ctx), host, srv, reaped)
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return serveErr
	}
	return nil
}

// shutdownHTTP stops accepting at once, closes every REPL session (cancelled cells
// still get their replies written), then every MCP session (which ends hanging
// POSTs and standalone SSE streams), and forcibly closes what is still open when
// closeGrace has passed. A session close stuck behind a handler that ignores
// cancellation is left behind, as ServeStdio leaves a stuck Run: the process is
// ending.
func shutdownHTTP(ctx context.Context, host Host, srv *http.Server, reaped <-chan struct{}) {
	deadline, cancel := context.WithTimeout(ctx, closeGrace)
	defer cancel()
	var wg sync.WaitGroup
	shut := make(chan struct{})
	wg.Go(func() {
		defer close(shut)
		// Shutdown closes the listener first, then waits for handlers to return.
		srv.Shutdown(deadline)
	})
	host.CloseSessions(signalGrace)
	closed := make(chan struct{})
	go func() {
		// ServerSession.Close waits for in-flight handlers; they have been
		// cancelled with their REPL sessions, but a stuck one must not hold us.
		var sessions sync.WaitGroup
		for ss := range host.MCP.Sessions() {
			sessions.Go(func() { ss.Close() })
		}
		sessions.Wait()
		close(closed)
	}()
	select {
	case <-closed:
	case <-deadline.Done():
	}
	select {
	case <-shut:
	case <-deadline.Done():
	}
	// The idle reaper, stopped before, may be inside a session close; that ends
	// with the sessions, or is left behind with them.
	select {
	case <-reaped:
	case <-deadline.Done():
	}
	srv.Close()
	wg.Wait()
}

// newHTTPHandler is the /mcp endpoint: Host and Origin checks, bearer token, body
// bound, then routing to the stateful go-sdk handler (through the MCP session
// table) or the stateless one.
func newHTTPHandler(host Host, token string, limits HTTPLimits) *httpHandler {
	getServer := func(*http.Request) *mcp.Server { return host.MCP }
	// go-sdk's logger reports normal disconnects as errors; ours reports what matters.
	quiet := slog.New(slog.DiscardHandler)
	h := &httpHandler{
		bodyTimeout: limits.BodyTimeout,
		requests:    &requestContexts{m: map[string]context.Context{}},
		ids:         newHTTPIDs(),
		sessions:    newMCPSessions(host.MCP, limits, host.logger()),
		tasks:       host.Tasks,
		// No SessionTimeout: h.sessions closes idle sessions (see http_sessions.go).
		stateful: mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
			MaxRequestBodyBytes: MaxHTTPBody,
			Logger:              quiet,
		}),
		stateless: mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
			Stateless:                    true,
			MaxRequestBodyBytes:          MaxHTTPBody,
			PropagateRequestCancellation: true,
			Logger:                       quiet,
		}),
	}
	if token != "" {
		sum := sha256.Sum256([]byte(token))
		h.tokenSum = sum[:]
	}
	return h
}

type httpHandler struct {
	bodyTimeout         time.Duration
	stateful, stateless *mcp.StreamableHTTPHandler
	tokenSum            []byte // sha256 of the bearer token; nil: no token
	requests            *requestContexts
	sessions            *mcpSessions
	ids                 *httpIDs // ids and progress tokens as sent (http_ids.go)
	tasks               Tasks
}

func (h *httpHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// DNS rebinding: a non-loopback Host on a loopback connection (as go-sdk
	// checks too, but without closing the connection); a browser page from
	// elsewhere is refused by its Origin.
	if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && loopbackHostPortOrHost(local.String()) && !loopbackHostPortOrHost(r.Host) {
		refuse(w, http.StatusForbidden, fmt.Sprintf("Forbidden: invalid Host header %q", r.Host))
		return
	}
	if origins := r.Header.Values("Origin"); len(origins) > 0 && !loopbackOrigin(origins) {
		refuse(w, http.StatusForbidden, "Forbidden: cross-origin request")
		return
	}
	if h.tokenSum != nil && !h.authorized(r) {
		w.Header().Set("WWW-Authenticate", "Bearer")
		refuse(w, http.StatusUnauthorized, "Unauthorized: a bearer token is required")
		return
	}
	prove(r)
	// An unknown session is refused before its body is read, as the refusals
	// above are: a client that declared a body and sent part of it must not hold
	// the connection until the body timeout.
	if id := r.Header.Get(SessionIDHeader); id != "" {
		done, ok := h.sessions.request(id, r.Method == http.MethodGet)
		if !ok {
			refuse(w, http.StatusNotFound, "session not found")
			return
		}
		defer done()
	}
	var msgs peeked
	if r.Method == http.MethodPost {
		// A deadline for the body alone, lifted once it is read: the reply may
		// take as long as the call.
		rc := http.NewResponseController(w)
		rc.SetReadDeadline(time.Now().Add(h.bodyTimeout))
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxHTTPBody))
		if err == nil {
			rc.SetReadDeadline(time.Time{})
		} else {
			// Expired, so that net/http does not wait on the rest of the body
			// before it closes the connection.
			rc.SetReadDeadline(time.Now())
		}
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				refuse(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body exceeds %d bytes", int64(MaxHTTPBody)))
				return
			}
			refuse(w, http.StatusBadRequest, "failed to read body")
			return
		}
		msgs = peek(body)
		if h.serveTask(w, r, body) {
			return
		}
		body, restore, forget, refused := h.ids.rewrite(r.Header.Get(SessionIDHeader), body)
		defer forget()
		if refused != nil {
			w.Header().Set("Content-Type", "application/json")
			w.Write(refused.reply())
			return
		}
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		if restore != nil {
			rw := &restoringWriter{ResponseWriter: w, r: restore}
			defer rw.finish()
			w = rw
		}
	}
	// Tie each call's handler to this HTTP request: a client that hangs up
	// mid-call cancels it, as notifications/cancelled does. go-sdk hands handlers
	// the request's headers but not its context, so a header carries a key to it.
	r.Header.Del(requestKeyHeader)
	key, done := h.requests.add(r.Context())
	defer done()
	r.Header.Set(requestKeyHeader, key)
	if routeStateless(r, msgs) {
		h.stateless.ServeHTTP(w, r)
		return
	}
	if r.Header.Get(SessionIDHeader) == "" && msgs.initialize {
		ok, release := h.sessions.admit()
		if !ok {
			http.Error(w, "too many open MCP sessions, each with a call in flight; retry when one ends, or close one (HTTP DELETE)", http.StatusServiceUnavailable)
			return
		}
		defer release()
	}
	h.stateful.ServeHTTP(w, r)
}

// refuse answers a request that will not be served and closes its connection
// after the reply, so that refused clients cannot hold connections open. The read
// deadline expires at once: net/http would otherwise read what is left of a
// declared body (up to 256 KiB) before closing, and wait as long as the client
// takes to send it.
func refuse(w http.ResponseWriter, status int, message string) {
	w.Header().Set("Connection", "close")
	http.Error(w, message, status)
	http.NewResponseController(w).SetReadDeadline(time.Now())
}

// authorized checks the bearer token in constant time.
func (h *httpHandler) authorized(r *http.Request) bool {
	scheme, given, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(given)))
	return subtle.ConstantTimeCompare(sum[:], h.tokenSum) == 1
}

const (
	protocolVersionHeader = "Mcp-Protocol-Version"
	// requestKeyHeader carries the key of the HTTP request's context to handlers;
	// a client's own value is dropped.
	requestKeyHeader = "Repl-Mcp-Http-Request"
)

// routeStateless decides which handler serves a request. A session id names a
// stateful session (go-sdk answers 404 for an unknown one). Without one, a request
// under 2026-07-28 or later (by header or _meta), server/discover, and a legacy
// request that is not initialize (a sessionless client) are stateless; initialize
// opens a stateful session. GET and DELETE without a session id stay stateful
// (400) unless they declare 2026-07-28 (405, as that protocol has no GET stream).
func routeStateless(r *http.Request, msgs peeked) bool {
	if r.Header.Get(SessionIDHeader) != "" {
		return false
	}
	if r.Header.Get(protocolVersionHeader) >= StatelessProtocol {
		return true
	}
	if r.Method != http.MethodPost || !msgs.valid {
		return false
	}
	switch {
	case msgs.metaVersion >= StatelessProtocol, msgs.discover:
		return true
	case msgs.initialize:
		return false
	}
	return true
}

// peeked is what routing needs from a POST body.
type peeked struct {
	valid       bool // the body held JSON-RPC messages
	initialize  bool
	discover    bool
	metaVersion string // highest _meta protocol version seen
}

// peek reads the methods and _meta protocol versions of a body (one message or a
// batch) without judging it: go-sdk answers a malformed body.
func peek(body []byte) peeked {
	var raws []json.RawMessage
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '[' {
		if json.Unmarshal(body, &raws) != nil {
			return peeked{}
		}
	} else {
		raws = []json.RawMessage{body}
	}
	var p peeked
	for _, raw := range raws {
		var m struct {
			Method string `json:"method"`
			Params struct {
				Meta map[string]any `json:"_meta"`
			} `json:"params"`
		}
		if json.Unmarshal(raw, &m) != nil {
			// Params that are not an object: take the method alone.
			var bare struct {
				Method string `json:"method"`
			}
			if json.Unmarshal(raw, &bare) != nil {
				continue
			}
			m.Method = bare.Method
		}
		p.valid = true
		switch m.Method {
		case "initialize":
			p.initialize = true
		case "server/discover":
			p.discover = true
		}
		if v, ok := m.Params.Meta[mcp.MetaKeyProtocolVersion].(string); ok && v > p.metaVersion {
			p.metaVersion = v
		}
	}
	return p
}

// requestContexts maps a key carried in each HTTP request's headers to the
// request's context, while the request is being served.
type requestContexts struct {
	mu sync.Mutex
	m  map[string]context.Context
}

func (rc *requestContexts) add(ctx context.Context) (key string, done func()) {
	key = rand.Text()
	rc.mu.Lock()
	rc.m[key] = ctx
	rc.mu.Unlock()
	return key, func() {
		rc.mu.Lock()
		delete(rc.m, key)
		rc.mu.Unlock()
	}
}

// lookup returns the context of the HTTP request that carried req. carried is
// false for requests not carried by HTTP; a nil context with carried true is a
// request that has already ended (its client hung up before the handler started).
func (rc *requestContexts) lookup(req mcp.Request) (httpCtx context.Context, carried bool) {
	extra := req.GetExtra()
	if extra == nil || extra.Header == nil {
		return nil, false
	}
	key := extra.Header.Get(requestKeyHeader)
	if key == "" {
		return nil, false
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.m[key], true
}

// cancelWithRequest cancels a call's handler when the HTTP request that carried
// it ends before the reply (the client hung up), as notifications/cancelled would.
// go-sdk does this only for stateless 2026-07-28 requests: on a stateful session
// the call would run on until done, its reply undeliverable.
func (rc *requestContexts) cancelWithRequest(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if strings.HasPrefix(method, "notifications/") {
			return next(ctx, method, req)
		}
		httpCtx, carried := rc.lookup(req)
		if !carried {
			return next(ctx, method, req)
		}
		ctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		if httpCtx == nil {
			cancel(errClientGone)
		} else {
			stop := context.AfterFunc(httpCtx, func() { cancel(errClientGone) })
			defer stop()
		}
		return next(ctx, method, req)
	}
}

var errClientGone = errors.New("the HTTP client disconnected")

// loopbackHostPort reports an address whose host is a loopback IP or localhost;
// an empty host (every interface) is not.
func loopbackHostPort(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	return loopbackHost(host)
}

// loopbackHostPortOrHost reports a loopback host, with or without a port, as
// go-sdk judges a Host header.
func loopbackHostPortOrHost(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	return loopbackHost(host)
}

func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(strings.Trim(host, "[]"))
	return err == nil && ip.IsLoopback()
}

// loopbackOrigin reports Origin values that all name a loopback http(s) origin.
func loopbackOrigin(origins []string) bool {
	for _, o := range origins {
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || !loopbackHost(u.Hostname()) {
			return false
		}
	}
	return true
}
