package broker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sync"
	"time"

	"github.com/iota-uz/repl-mcp/broker/internal/safehttp"
	"github.com/iota-uz/repl-mcp/broker/oauth"
	"github.com/iota-uz/repl-mcp/broker/registry"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var (
	errHTTPBodyTooLarge = errors.New(msgHTTPBodyTooLarge)
	errHandshakeOver    = errors.New("the MCP handshake is over")
)

// safeError is an error whose text is safe to show while errors.Is still sees its
// cause: go-sdk's and net/http's texts may hold the URL, so the cause is only ever
// a sentinel, never their error.
type safeError struct {
	msg   string
	cause error
}

func (e *safeError) Error() string { return e.msg }
func (e *safeError) Unwrap() error { return e.cause }

// dialHTTP connects to a Streamable HTTP server and completes the MCP handshake
// within min(ctx deadline, connectTimeout). An OAuth entry first gets its bearer
// token (package oauth), within the same budget; a missing or refused grant fails
// here with its own message, before any MCP request. Its tokens expire by the clock
// now.
func dialHTTP(ctx context.Context, e registry.Entry, version string, now func() time.Time) (*peer, error) {
	state := &httpState{}
	client, rt, transport := newHTTPClient(e.Headers, state)
	budget := connectTimeout
	if dl, ok := ctx.Deadline(); ok {
		budget = max(0, min(budget, time.Until(dl)))
	}
	hctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	if e.OAuth != nil {
		src := oauth.NewSource(e, oauth.NewClient(transport), now)
		if _, err := src.Token(hctx); err != nil {
			transport.CloseIdleConnections()
			return nil, err
		}
		rt.auth = src
	}
	state.setHandshake(hctx)
	mc := mcp.NewClient(&mcp.Implementation{Name: "repl-mcp-broker", Version: version}, nil)
	session, err := mc.Connect(hctx, &mcp.StreamableClientTransport{
		Endpoint:             e.URL,
		HTTPClient:           client,
		MaxRetries:           -1, // no SSE resumption: a broken stream or expired session ends the peer
		DisableStandaloneSSE: true,
		MaxEventSize:         httpBodyLimit,
	}, nil)
	if err != nil {
		transport.CloseIdleConnections()
		return nil, httpInitError(hctx, budget, state)
	}
	state.endHandshake()
	// A closed session leaves its keep-alive connections idle in this peer's own
	// pool; close them rather than hold a socket open for IdleConnTimeout.
	go func() {
		session.Wait()
		transport.CloseIdleConnections()
	}()
	return newPeer(session, nil), nil
}

// httpInitError names why the handshake failed from what the round tripper saw,
// never from go-sdk's error, whose text embeds the URL.
func httpInitError(hctx context.Context, budget time.Duration, state *httpState) error {
	reason, cause := state.reason(), error(nil)
	switch err := hctx.Err(); {
	case errors.Is(err, context.DeadlineExceeded):
		reason, cause = fmt.Sprintf("timed out after %v", budget.Round(10*time.Millisecond)), context.DeadlineExceeded
	case err != nil:
		reason, cause = "cancelled", context.Canceled
	}
	return &safeError{msg: fmt.Sprintf("%s (%s)", msgHTTPInit, reason), cause: cause}
}

// newHTTPClient returns a client that never follows a redirect (a 3xx reaches
// go-sdk as a failed status), its round tripper (to set auth before the first
// request) and its transport, so idle connections can be closed.
func newHTTPClient(headers map[string]string, state *httpState) (*http.Client, *httpRoundTripper, *http.Transport) {
	base := safehttp.NewTransport()
	rt := &httpRoundTripper{base: base, headers: headers, state: state}
	client := &http.Client{
		Transport: rt,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	return client, rt, base
}

// httpState remembers the last thing that went wrong on the wire, so a failed
// handshake can be explained without echoing a URL, header or body.
type httpState struct {
	mu        sync.Mutex
	last      string          // "" after a 2xx response
	handshake context.Context // until the handshake succeeds
}

// setHandshake bounds every request by ctx until endHandshake. go-sdk sends
// some requests on detached contexts (the cancellation notice of a timed-out
// request, the closing DELETE), each allowed 5 s, and closing the failed session
// waits for them: without this bound the handshake would outlive its deadline.
func (s *httpState) setHandshake(ctx context.Context) {
	s.mu.Lock()
	s.handshake = ctx
	s.mu.Unlock()
}

// endHandshake lifts the handshake's bound once the session is established.
func (s *httpState) endHandshake() {
	s.mu.Lock()
	s.handshake = nil
	s.mu.Unlock()
}

func (s *httpState) handshakeOver() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.handshake != nil && s.handshake.Err() != nil
}

func (s *httpState) note(reason string) {
	s.mu.Lock()
	s.last = reason
	s.mu.Unlock()
}

func (s *httpState) reason() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last == "" {
		return "no valid MCP response"
	}
	return s.last
}

// httpRoundTripper adds the configured headers and the OAuth bearer token, and
// bounds response bodies.
type httpRoundTripper struct {
	base    http.RoundTripper
	headers map[string]string // validated by the registry; never Accept or session headers
	state   *httpState
	auth    oauth.Source // nil without oauth; set before the first request
}

func (t *httpRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.state.handshakeOver() {
		if req.Body != nil {
			req.Body.Close() // a RoundTripper closes the body even on error
		}
		return nil, errHandshakeOver
	}
	token := ""
	if t.auth != nil {
		// Cached until it expires; then renewed here, mid-session.
		tok, err := t.auth.Token(req.Context())
		if err != nil {
			if req.Body != nil {
				req.Body.Close()
			}
			t.state.note(err.Error())
			return nil, err
		}
		token = tok
	}
	if len(t.headers) > 0 || token != "" {
		req = req.Clone(req.Context()) // a RoundTripper must not modify its request
		for k, v := range t.headers {
			req.Header.Set(k, v)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		t.state.note(safehttp.NetReason(err))
		return nil, err
	}
	t.state.note(safehttp.StatusReason(resp.StatusCode))
	t.bound(resp)
	return resp, nil
}

// bound wraps the body: a successful event stream is bounded per event (go-sdk's
// MaxEventSize ends it; sseBody only notes why), everything else in total, since
// go-sdk reads JSON and error bodies whole.
func (t *httpRoundTripper) bound(resp *http.Response) {
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch {
	case ct == "text/event-stream" && resp.StatusCode/100 == 2:
		resp.Body = &sseBody{ReadCloser: resp.Body, state: t.state}
	case resp.ContentLength > httpBodyLimit:
		resp.Body.Close()
		t.state.note(msgHTTPBodyTooLarge)
		resp.Body = errBody{errHTTPBodyTooLarge}
	default:
		resp.Body = safehttp.LimitBody(resp.Body, httpBodyLimit, errHTTPBodyTooLarge, t.state.note)
	}
}

// errBody is the body of a response refused before it was read: every read
// fails with err.
type errBody struct{ err error }

func (b errBody) Read([]byte) (int, error) { return 0, b.err }
func (errBody) Close() error               { return nil }

// sseBody notes an event over httpBodyLimit so the handshake error can say so; it
// counts bytes since the last blank line the way go-sdk's event scanner does.
type sseBody struct {
	io.ReadCloser
	state *httpState
	event int  // bytes of the current event
	prev  byte // the last byte other than '\r'
}

func (b *sseBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	for _, c := range p[:n] {
		b.event++
		if c == '\r' {
			continue
		}
		if c == '\n' && b.prev == '\n' {
			b.event = 0
		}
		b.prev = c
	}
	if b.event > httpBodyLimit {
		b.state.note(msgHTTPSSETooLarge)
	}
	return n, err
}
