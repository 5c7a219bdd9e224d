package broker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/iota-uz/repl-mcp/broker/registry"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// echoHandler is a real go-sdk Streamable HTTP server with one tool, echo.
func echoHandler() http.Handler {
	s := mcp.NewServer(&mcp.Implementation{Name: "echo-http", Version: "test"}, nil)
	type args struct {
		Text string `json:"text"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in args) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
}

// startLoopback serves h on 127.0.0.1 only: no test reaches outside the machine.
func startLoopback(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	srv := newLoopback(t, h)
	srv.Start()
	return srv
}

func newLoopback(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener = ln
	t.Cleanup(srv.Close)
	return srv
}

// countRequests counts every request that reaches h.
func countRequests(n *atomic.Int32, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		h.ServeHTTP(w, r)
	})
}

func httpEntry(url string, headers map[string]string) registry.Entry {
	return registry.Entry{Name: "remote", Transport: registry.TransportHTTP, URL: url, Headers: headers}
}

// dialHTTPErr dials an entry that must fail within a 10 s budget, and checks the
// error is the initialization failure and leaks none of the secrets given.
func dialHTTPErr(t *testing.T, e registry.Entry, secrets ...string) error {
	t.Helper()
	ctx, cancel := contextWithTimeout(t, 10*time.Second)
	defer cancel()
	p, err := dialHTTP(ctx, e, "test", time.Now)
	if err == nil {
		p.close()
		t.Fatal("dialHTTP succeeded")
	}
	if !strings.HasPrefix(err.Error(), msgHTTPInit+" (") {
		t.Errorf("error = %q, want the initialization failure", err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error = %q: the failure took the whole budget", err)
	}
	for _, s := range append(secrets, e.URL, strings.TrimPrefix(e.URL, "http://")) {
		if strings.Contains(err.Error(), s) {
			t.Errorf("error %q leaks %q", err, s)
		}
	}
	return err
}

func callEcho(t *testing.T, p *peer, text string) {
	t.Helper()
	res, err := p.session.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": text}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Content) != 1 || res.IsError {
		t.Fatalf("echo result = %+v", res)
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != text {
		t.Fatalf("echo content = %+v", res.Content[0])
	}
}

func TestHTTPPeerCallsAndCloses(t *testing.T) {
	var open atomic.Int32 // connections the server has not seen closed
	srv := newLoopback(t, echoHandler())
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			open.Add(1)
		case http.StateClosed, http.StateHijacked:
			open.Add(-1)
		}
	}
	srv.Start()
	ctx, cancel := contextWithTimeout(t, 10*time.Second)
	defer cancel()
	p, err := dialHTTP(ctx, httpEntry(srv.URL, nil), "test", time.Now)
	if err != nil {
		t.Fatal(err)
	}
	callEcho(t, p, "hello over http")
	if !p.alive() {
		t.Fatal("peer not alive after a call")
	}
	p.close()
	select {
	case <-p.ended:
	case <-ctx.Done():
		t.Fatal("session did not end after close")
	}
	if p.alive() {
		t.Fatal("peer alive after close")
	}
	// The peer's keep-alive connections close with it, not after IdleConnTimeout.
	for open.Load() != 0 {
		select {
		case <-ctx.Done():
			t.Fatalf("%d connections still open after close", open.Load())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// authRequired answers 401 with a body that must never surface unless every
// request carries the token.
func authRequired(token string, bad *atomic.Int32, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			bad.Add(1)
			http.Error(w, "body-secret: denied", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func TestHTTPHeadersReachEveryRequest(t *testing.T) {
	var all, bad atomic.Int32
	srv := startLoopback(t, countRequests(&all, authRequired("t0ken", &bad, echoHandler())))
	ctx, cancel := contextWithTimeout(t, 10*time.Second)
	defer cancel()
	p, err := dialHTTP(ctx, httpEntry(srv.URL, map[string]string{"Authorization": "Bearer t0ken"}), "test", time.Now)
	if err != nil {
		t.Fatal(err)
	}
	callEcho(t, p, "one")
	callEcho(t, p, "two")
	p.close()
	if all.Load() < 3 || bad.Load() != 0 {
		t.Fatalf("%d requests, %d without the header", all.Load(), bad.Load())
	}
}

func TestHTTPUnauthorizedIsExplainedSafely(t *testing.T) {
	var bad atomic.Int32
	srv := startLoopback(t, authRequired("t0ken", &bad, echoHandler()))
	for _, headers := range []map[string]string{nil, {"Authorization": "Bearer wr0ng-s3cret"}} {
		err := dialHTTPErr(t, httpEntry(srv.URL, headers), "t0ken", "wr0ng-s3cret", "body-secret")
		if !strings.Contains(err.Error(), "(HTTP 401: authentication required)") {
			t.Errorf("headers %d: error = %q, want HTTP 401", len(headers), err)
		}
	}
	if bad.Load() == 0 {
		t.Fatal("no request reached the server")
	}
}

func TestHTTPNotFound(t *testing.T) {
	srv := startLoopback(t, http.NotFoundHandler())
	if err := dialHTTPErr(t, httpEntry(srv.URL+"/mcp", nil)); !strings.HasSuffix(err.Error(), "(HTTP 404)") {
		t.Fatalf("error = %q", err)
	}
}

func TestHTTPRedirectIsRefused(t *testing.T) {
	var reached atomic.Int32
	target := startLoopback(t, countRequests(&reached, echoHandler()))
	srv := startLoopback(t, http.RedirectHandler(target.URL+"/elsewhere", http.StatusTemporaryRedirect))
	err := dialHTTPErr(t, httpEntry(srv.URL, nil), target.URL)
	if !strings.Contains(err.Error(), "(HTTP 307: redirect refused)") {
		t.Fatalf("error = %q", err)
	}
	if n := reached.Load(); n != 0 {
		t.Fatalf("the redirect target received %d requests", n)
	}
}

func TestHTTPConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close()
	if err := dialHTTPErr(t, httpEntry(url, nil)); !strings.HasSuffix(err.Error(), "(connection refused)") {
		t.Fatalf("error = %q", err)
	}
}

// hugeJSON answers every POST with a 2 MiB JSON-RPC response.
func hugeJSON(withLength bool) http.Handler {
	body := `{"jsonrpc":"2.0","id":1,"result":{"pad":"` + strings.Repeat("a", 2<<20) + `"}}`
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if withLength {
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		}
		fmt.Fprint(w, body)
	})
}

func TestHTTPResponseOver1MiBFails(t *testing.T) {
	for _, withLength := range []bool{true, false} {
		t.Run(fmt.Sprintf("content-length=%v", withLength), func(t *testing.T) {
			srv := startLoopback(t, hugeJSON(withLength))
			err := dialHTTPErr(t, httpEntry(srv.URL, nil))
			if !strings.Contains(err.Error(), "(MCP HTTP response exceeds 1MiB)") {
				t.Fatalf("error = %q", err)
			}
		})
	}
}

func TestHTTPSSEEventOver1MiBFails(t *testing.T) {
	srv := startLoopback(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: message\ndata: "+strings.Repeat("a", 2<<20)+"\n\n")
	}))
	err := dialHTTPErr(t, httpEntry(srv.URL, nil))
	if !strings.Contains(err.Error(), "(MCP HTTP SSE event exceeds 1MiB)") {
		t.Fatalf("error = %q", err)
	}
}

// silentListener accepts connections and never answers them.
func silentListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	})
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
		for _, c := range conns {
			c.Close()
		}
	})
	return "http://" + ln.Addr().String()
}

// stallAfterInitialize serves the handshake until the server has given a session,
// then never answers: the closing DELETE go-sdk sends for that session must not
// outlive the deadline either.
func stallAfterInitialize(t *testing.T) string {
	stop := make(chan struct{})
	h := echoHandler()
	srv := startLoopback(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Session-Id") == "" {
			h.ServeHTTP(w, r)
			return
		}
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(func() { close(stop) }) // runs before srv.Close
	return srv.URL
}

func TestHTTPHandshakeEndsWithinTheDeadline(t *testing.T) {
	for name, start := range map[string]func(*testing.T) string{
		"silent listener":        silentListener,
		"stall after initialize": stallAfterInitialize,
	} {
		t.Run(name, func(t *testing.T) {
			url := start(t)
			const budget = 2 * time.Second
			ctx, cancel := contextWithTimeout(t, budget)
			defer cancel()
			begin := time.Now()
			p, err := dialHTTP(ctx, httpEntry(url, nil), "test", time.Now)
			elapsed := time.Since(begin)
			if err == nil {
				p.close()
				t.Fatal("dialHTTP succeeded")
			}
			if !errors.Is(err, context.DeadlineExceeded) || !strings.HasPrefix(err.Error(), msgHTTPInit+" (timed out after ") {
				t.Fatalf("error = %q", err)
			}
			if strings.Contains(err.Error(), url) {
				t.Fatalf("error %q leaks the URL", err)
			}
			if elapsed > budget+time.Second {
				t.Fatalf("dialHTTP returned after %v, budget %v", elapsed, budget)
			}
		})
	}
}
