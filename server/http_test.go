package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/iota-uz/repl-mcp/guardian"
	"github.com/iota-uz/repl-mcp/internal/pythons"
	"github.com/iota-uz/repl-mcp/internal/testwait"
	"github.com/iota-uz/repl-mcp/repl"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMain lets the test binary serve as the process guardian of real workers.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == guardian.Flag {
		os.Exit(guardian.Main())
	}
	os.Exit(m.Run())
}

// startHTTP serves a real Server (real Python) on 127.0.0.1 and returns its URL;
// the server is stopped, and must stop promptly, when the test ends. An empty
// token serves without one (NoAuth).
func startHTTP(t *testing.T, token string) string {
	t.Helper()
	return startHTTPWith(t, HTTPConfig{Token: token, NoAuth: token == ""})
}

// startHTTPWith is startHTTP with a config of the test's own (Addr and Listening
// are set here).
func startHTTPWith(t *testing.T, cfg HTTPConfig) string {
	t.Helper()
	url, _ := startHTTPServer(t, cfg)
	return url
}

// startHTTPServer is startHTTPWith that also returns the Server, to look inside.
func startHTTPServer(t *testing.T, cfg HTTPConfig) (string, *Server) {
	t.Helper()
	py := pythons.ForTest(t)[0].Path
	ctx, cancel := context.WithCancel(t.Context())
	manager := repl.NewManager(ctx, repl.Config{Python: py, PythonSource: "test", Project: t.TempDir(), Env: os.Environ(), Version: "test"})
	srv := New(Config{Version: "test", Repl: manager})
	urls := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		cfg.Addr = "127.0.0.1:0"
		cfg.Listening = func(u, _ string) { urls <- u }
		done <- srv.ServeStreamableHTTP(ctx, cfg)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("ServeStreamableHTTP: %v", err)
			}
		case <-time.After(3 * time.Second):
			t.Errorf("the HTTP server did not stop within 3 s of its context's end")
		}
	})
	select {
	case u := <-urls:
		if !strings.HasPrefix(u, "http://127.0.0.1:") || !strings.HasSuffix(u, "/mcp") {
			t.Fatalf("endpoint URL %q", u)
		}
		return u, srv
	case err := <-done:
		t.Fatalf("ServeStreamableHTTP: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the HTTP server did not start listening")
	}
	return "", nil
}

// bearer adds an Authorization header to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// connect opens a go-sdk client session; version "" lets the client choose
// (2026-07-28 through server/discover).
func connect(t *testing.T, url, version, token string) *mcp.ClientSession {
	t.Helper()
	transport := &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}
	if token != "" {
		transport.HTTPClient = &http.Client{Transport: bearer{token, http.DefaultTransport}}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "http-test", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect (version %q): %v", version, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// callTool calls a tool and returns its structured content; a protocol error or
// a result with isError fails the test.
func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) map[string]any {
	t.Helper()
	sc, err := tryTool(t, cs, name, args)
	if err != nil {
		t.Fatalf("%s %v: %v", name, args, err)
	}
	return sc
}

func tryTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (map[string]any, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return nil, err
	}
	sc, _ := res.StructuredContent.(map[string]any)
	if res.IsError {
		return sc, fmt.Errorf("isError: %v", sc)
	}
	return sc, nil
}

func defaultSessionID(t *testing.T, cs *mcp.ClientSession) string {
	t.Helper()
	health := callTool(t, cs, "python_health", map[string]any{})
	server, _ := health["server"].(map[string]any)
	sid, _ := server["session_id"].(string)
	if sid == "" {
		t.Fatalf("python_health has no server.session_id: %v", health)
	}
	return sid
}

// TestHTTPClientsShareSessions: stateful clients (2025-11-25 and the legacy
// 2024-11-05), a stateless 2026-07-28 client that go-sdk negotiates through
// server/discover, all at once on one endpoint, all seeing the same REPL session.
func TestHTTPClientsShareSessions(t *testing.T) {
	url := startHTTP(t, "")

	a := connect(t, url, "2025-11-25", "")
	if a.ID() == "" || a.InitializeResult().ProtocolVersion != "2025-11-25" {
		t.Fatalf("stateful client: session id %q, protocol %q", a.ID(), a.InitializeResult().ProtocolVersion)
	}
	sid := defaultSessionID(t, a)
	callTool(t, a, "execute_python", map[string]any{"code": "x = 41"})
	if v := callTool(t, a, "execute_python", map[string]any{"code": "x + 1"})["value"]; v != 42.0 {
		t.Fatalf("x + 1 = %v, want 42", v)
	}

	b := connect(t, url, "2025-11-25", "")
	if b.ID() == a.ID() {
		t.Fatalf("two clients share the MCP session id %q", a.ID())
	}
	stateless := connect(t, url, "", "")
	if v := stateless.InitializeResult().ProtocolVersion; v != "2026-07-28" || stateless.ID() != "" {
		t.Fatalf("go-sdk's default client: protocol %q, session id %q; want stateless 2026-07-28", v, stateless.ID())
	}
	legacy := connect(t, url, "2024-11-05", "")
	if v := legacy.InitializeResult().ProtocolVersion; v != "2024-11-05" {
		t.Fatalf("legacy client negotiated %q", v)
	}

	// All four at once: each sees x in the default session.
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i, cs := range []*mcp.ClientSession{a, b, stateless, legacy} {
		wg.Go(func() {
			for range 2 {
				sc, err := tryTool(t, cs, "python_session_inspect", map[string]any{"session_id": sid})
				if err != nil {
					errs <- fmt.Errorf("client %d: inspect: %v", i, err)
					return
				}
				_ = sc
				// Reads only: concurrent cells in one session would be refused as busy.
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i, cs := range []*mcp.ClientSession{b, stateless, legacy} {
		sc := callTool(t, cs, "execute_python", map[string]any{"code": fmt.Sprintf("x + %d", i), "session_id": sid})
		if sc["value"] != float64(41+i) || sc["session_id"] != sid {
			t.Fatalf("client %d: x + %d = %v in session %v; want %d in %s", i, i, sc["value"], sc["session_id"], 41+i, sid)
		}
	}

	// Under 2026-07-28 execute_python without session_id is a -32602 error.
	_, err := tryTool(t, stateless, "execute_python", map[string]any{"code": "x"})
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("stateless execute_python without session_id: %v, want a -32602 error", err)
	}
}

// rawPost sends one JSON-RPC body and returns the status, the headers and the
// JSON-RPC messages of the reply (SSE or JSON).
func rawPost(t *testing.T, ctx context.Context, url string, header http.Header, body string) (int, http.Header, []map[string]any, error) {
	t.Helper()
	resp, data, raw, err := postMessages(t, ctx, url, header, body)
	if err != nil {
		return 0, nil, nil, err
	}
	var msgs []map[string]any
	for _, r := range raw {
		var m map[string]any
		if json.Unmarshal(r, &m) == nil {
			msgs = append(msgs, m)
		}
	}
	kind := resp.Header.Get("Content-Type")
	if !strings.HasPrefix(kind, "text/event-stream") && !strings.HasPrefix(kind, "application/json") && resp.StatusCode < 300 && len(data) > 0 {
		t.Logf("reply body: %s", data)
	}
	return resp.StatusCode, resp.Header, msgs, nil
}

// postMessages sends one JSON-RPC body and returns the response, its body, and the
// body's JSON-RPC messages as the bytes that came: the data lines of an SSE stream,
// or a JSON body whole (none for any other body).
func postMessages(t *testing.T, ctx context.Context, url string, header http.Header, body string) (*http.Response, []byte, []json.RawMessage, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, nil, err
	}
	var msgs []json.RawMessage
	switch kind := resp.Header.Get("Content-Type"); {
	case strings.HasPrefix(kind, "text/event-stream"):
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 4<<20)
		for sc.Scan() {
			if payload, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				msgs = append(msgs, json.RawMessage(payload))
			}
		}
	case strings.HasPrefix(kind, "application/json"):
		msgs = append(msgs, bytes.TrimSpace(data))
	}
	return resp, data, msgs, nil
}

// statelessCall is a raw 2026-07-28 tools/call: version header, Mcp-Method,
// Mcp-Name and the _meta triple.
func statelessCall(id int, tool string, args map[string]any) (http.Header, string) {
	h := http.Header{}
	h.Set("Mcp-Protocol-Version", "2026-07-28")
	h.Set("Mcp-Method", "tools/call")
	h.Set("Mcp-Name", tool)
	body, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": id, "method": "tools/call",
		"params": map[string]any{"name": tool, "arguments": args, "_meta": map[string]any{
			"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw", "version": "1"},
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		}},
	})
	return h, string(body)
}

// TestHTTPStatelessRaw: server/discover and stateless tools/call, as raw POSTs
// with the headers 2026-07-28 requires and no initialize.
func TestHTTPStatelessRaw(t *testing.T) {
	url := startHTTP(t, "")
	h := http.Header{}
	h.Set("Mcp-Protocol-Version", "2026-07-28")
	h.Set("Mcp-Method", "server/discover")
	status, _, msgs, err := rawPost(t, t.Context(), url, h, `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`)
	if err != nil || status != 200 || len(msgs) != 1 {
		t.Fatalf("server/discover: status %d, %v, %v", status, msgs, err)
	}
	versions, _ := msgs[0]["result"].(map[string]any)["supportedVersions"].([]any)
	if len(versions) == 0 || versions[0] != "2026-07-28" {
		t.Fatalf("server/discover supportedVersions %v, want 2026-07-28 first", versions)
	}

	h, body := statelessCall(2, "python_health", map[string]any{})
	status, hdr, msgs, err := rawPost(t, t.Context(), url, h, body)
	if err != nil || status != 200 || len(msgs) != 1 {
		t.Fatalf("python_health: status %d, %v, %v", status, msgs, err)
	}
	if hdr.Get("Mcp-Session-Id") != "" {
		t.Fatalf("a stateless reply carries Mcp-Session-Id %q", hdr.Get("Mcp-Session-Id"))
	}
	sid := msgs[0]["result"].(map[string]any)["structuredContent"].(map[string]any)["server"].(map[string]any)["session_id"].(string)
	for i, code := range []string{"y = 20", "y + 1"} {
		h, body := statelessCall(3+i, "execute_python", map[string]any{"code": code, "session_id": sid})
		status, _, msgs, err := rawPost(t, t.Context(), url, h, body)
		if err != nil || status != 200 || len(msgs) != 1 {
			t.Fatalf("execute_python %q: status %d, %v, %v", code, status, msgs, err)
		}
		sc := msgs[0]["result"].(map[string]any)["structuredContent"].(map[string]any)
		if sc["success"] != true || (code == "y + 1" && sc["value"] != 21.0) {
			t.Fatalf("execute_python %q: %v", code, sc)
		}
	}

	// A legacy client without a session (no initialize, no version) is served too.
	status, _, msgs, err = rawPost(t, t.Context(), url, nil, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"execute_python","arguments":{"code":"y * 2"}}}`)
	if err != nil || status != 200 || len(msgs) != 1 {
		t.Fatalf("sessionless legacy call: status %d, %v, %v", status, msgs, err)
	}
	if v := msgs[0]["result"].(map[string]any)["structuredContent"].(map[string]any)["value"]; v != 40.0 {
		t.Fatalf("sessionless legacy call: y * 2 = %v, want 40", v)
	}
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// TestHTTPRefusals: wrong Host or Origin, oversized body, unknown session.
func TestHTTPRefusals(t *testing.T) {
	url := startHTTP(t, "")
	do := func(method string, body io.Reader, set func(*http.Request)) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), method, url, body)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		set(req)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		return resp, string(data)
	}
	for _, c := range []struct {
		name   string
		method string
		body   string
		set    func(*http.Request)
		want   int
	}{
		{"foreign Host", "POST", initializeBody, func(r *http.Request) { r.Host = "evil.example" }, 403},
		{"rebinding Host with port", "POST", initializeBody, func(r *http.Request) { r.Host = "attacker.test:8080" }, 403},
		{"foreign Origin", "POST", initializeBody, func(r *http.Request) { r.Header.Set("Origin", "https://evil.example") }, 403},
		{"null Origin", "POST", initializeBody, func(r *http.Request) { r.Header.Set("Origin", "null") }, 403},
		{"loopback Origin", "POST", initializeBody, func(r *http.Request) { r.Header.Set("Origin", "http://localhost:5173") }, 200},
		{"unknown session POST", "POST", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, func(r *http.Request) { r.Header.Set("Mcp-Session-Id", "no-such-session") }, 404},
		{"unknown session GET", "GET", "", func(r *http.Request) {
			r.Header.Set("Mcp-Session-Id", "no-such-session")
			r.Header.Set("Accept", "text/event-stream")
		}, 404},
		{"unknown session DELETE", "DELETE", "", func(r *http.Request) { r.Header.Set("Mcp-Session-Id", "no-such-session") }, 404},
		{"GET without session", "GET", "", func(r *http.Request) { r.Header.Set("Accept", "text/event-stream") }, 400},
		{"stateless GET", "GET", "", func(r *http.Request) {
			r.Header.Set("Accept", "text/event-stream")
			r.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		}, 405},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, body := do(c.method, strings.NewReader(c.body), c.set)
			if resp.StatusCode != c.want {
				t.Fatalf("status %d (%s), want %d", resp.StatusCode, strings.TrimSpace(body), c.want)
			}
		})
	}

	t.Run("oversized body", func(t *testing.T) {
		big := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"execute_python","arguments":{"code":"` +
			strings.Repeat("#", maxHTTPBody) + `"}}}`
		session := openSession(t, url, "")
		for _, sessionless := range []bool{true, false} {
			resp, body := do("POST", strings.NewReader(big), func(r *http.Request) {
				if !sessionless {
					for k, v := range session {
						r.Header[k] = v
					}
				}
			})
			if resp.StatusCode != http.StatusRequestEntityTooLarge {
				t.Fatalf("status %d (%s), want 413", resp.StatusCode, strings.TrimSpace(body))
			}
		}
		// Exactly at the limit is read (and then refused for what it is, not its size).
		atLimit := `{"jsonrpc":"2.0","id":3,"method":"ping","params":{"pad":"` + strings.Repeat(" ", maxHTTPBody-60) + `"}}`
		if resp, body := do("POST", strings.NewReader(atLimit), func(*http.Request) {}); resp.StatusCode == http.StatusRequestEntityTooLarge {
			t.Fatalf("a %d-byte body got 413 (%s)", len(atLimit), body)
		}
	})

	// The server still serves after all of that.
	cs := connect(t, url, "2025-11-25", "")
	callTool(t, cs, "python_health", map[string]any{})
}

// TestHTTPToken: with a token every request needs it; 401 with a Bearer challenge
// otherwise, and the token is never echoed.
func TestHTTPToken(t *testing.T) {
	const token = "tok-0123456789abcdef"
	url := startHTTP(t, token)
	for _, auth := range []string{"", "Bearer", "Bearer wrong-token", "Basic " + token, "Bearer " + token + "x", "bearer " + token[:len(token)-1]} {
		h := http.Header{}
		if auth != "" {
			h.Set("Authorization", auth)
		}
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(initializeBody))
		req.Header = h
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Fatalf("Authorization %q: status %d, WWW-Authenticate %q; want 401 and a Bearer challenge", auth, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
		if strings.Contains(string(data), token) || strings.Contains(fmt.Sprint(resp.Header), token) {
			t.Fatalf("the 401 reply echoes the token")
		}
	}
	// GET and DELETE need it too.
	for _, method := range []string{"GET", "DELETE"} {
		req, _ := http.NewRequestWithContext(t.Context(), method, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("%s without a token: status %d", method, resp.StatusCode)
		}
	}
	// With it, both kinds of client work.
	a := connect(t, url, "2025-11-25", token)
	callTool(t, a, "execute_python", map[string]any{"code": "t = 7"})
	b := connect(t, url, "", token)
	sid := defaultSessionID(t, b)
	if v := callTool(t, b, "execute_python", map[string]any{"code": "t * 6", "session_id": sid})["value"]; v != 42.0 {
		t.Fatalf("t * 6 = %v", v)
	}
}

// TestHTTPClientDisconnect: a client that hangs up mid-call (no
// notifications/cancelled, just a closed connection) cancels the cell, on each
// route; another client is served meanwhile and afterwards.
func TestHTTPClientDisconnect(t *testing.T) {
	url := startHTTP(t, "")
	other := connect(t, url, "2025-11-25", "")
	dir := t.TempDir()

	// A stateful session for the stateful route.
	status, hdr, _, err := rawPost(t, t.Context(), url, nil, initializeBody)
	if err != nil || status != 200 || hdr.Get("Mcp-Session-Id") == "" {
		t.Fatalf("initialize: status %d, session %q, %v", status, hdr.Get("Mcp-Session-Id"), err)
	}
	mcpSession := http.Header{}
	mcpSession.Set("Mcp-Session-Id", hdr.Get("Mcp-Session-Id"))
	mcpSession.Set("Mcp-Protocol-Version", "2025-11-25")
	if status, _, _, err := rawPost(t, t.Context(), url, mcpSession, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil || status != 202 {
		t.Fatalf("notifications/initialized: status %d, %v", status, err)
	}

	routes := []struct {
		name    string
		request func(code, sid string) (http.Header, string)
	}{
		{"stateful", func(code, sid string) (http.Header, string) {
			body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/call",
				"params": map[string]any{"name": "execute_python", "arguments": map[string]any{"code": code, "session_id": sid}}})
			return mcpSession, string(body)
		}},
		{"stateless legacy", func(code, sid string) (http.Header, string) {
			body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/call",
				"params": map[string]any{"name": "execute_python", "arguments": map[string]any{"code": code, "session_id": sid}}})
			return nil, string(body)
		}},
		{"stateless 2026-07-28", func(code, sid string) (http.Header, string) {
			return statelessCall(7, "execute_python", map[string]any{"code": code, "session_id": sid})
		}},
	}
	for i, route := range routes {
		t.Run(route.name, func(t *testing.T) {
			// A REPL session of its own, so the routes do not wait on each other.
			opened := callTool(t, other, "python_session_open", map[string]any{"name": fmt.Sprintf("r%d", i), "project": dir})
			sid, _ := opened["session_id"].(string)
			if sid == "" {
				t.Fatalf("python_session_open: %v", opened)
			}
			started := filepath.Join(dir, fmt.Sprintf("started-%d", i))
			late := filepath.Join(dir, fmt.Sprintf("late-%d", i))
			code := fmt.Sprintf("import time, pathlib\npathlib.Path(%q).write_text('1')\ntime.sleep(4)\npathlib.Path(%q).write_text('late')", started, late)
			h, body := route.request(code, sid)

			ctx, hangUp := context.WithCancel(t.Context())
			posted := make(chan error, 1)
			go func() {
				_, _, _, err := rawPost(t, ctx, url, h, body)
				posted <- err
			}()
			testwait.Until(t, 20*time.Second, "the long cell to start", func() bool { _, err := os.Stat(started); return err == nil })
			// Served while the cell runs.
			callTool(t, other, "python_health", map[string]any{})
			hangUp()
			if err := <-posted; !errors.Is(err, context.Canceled) {
				t.Fatalf("the hung-up POST returned %v", err)
			}
			// The session is free again well before the 4 s cell would end.
			var last error
			testwait.Until(t, 2*time.Second, "the cancelled cell to release its session", func() bool {
				sc, err := tryTool(t, other, "execute_python", map[string]any{"code": "6 * 7", "session_id": sid})
				last = err
				return err == nil && sc["value"] == 42.0
			})
			if last != nil {
				t.Fatal(last)
			}
			// 6 * 7 ran in the same session, one cell at a time: the cancelled cell is
			// over, so its late file is there now or never.
			if _, err := os.Stat(late); err == nil {
				t.Fatal("the cancelled cell ran to its end")
			}
		})
	}
}

// TestHTTPShutdownWithOpenStreams: cancelling the context ends the server within
// 2 s while a cell runs and a client holds its standalone SSE stream open.
func TestHTTPShutdownWithOpenStreams(t *testing.T) {
	py := pythons.ForTest(t)[0].Path
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	dir := t.TempDir()
	manager := repl.NewManager(ctx, repl.Config{Python: py, PythonSource: "test", Project: dir, Env: os.Environ(), Version: "test"})
	srv := New(Config{Version: "test", Repl: manager})
	urls := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- srv.ServeStreamableHTTP(ctx, HTTPConfig{NoAuth: true, Listening: func(u, _ string) { urls <- u }})
	}()
	url := <-urls
	a := connect(t, url, "2025-11-25", "") // holds a standalone GET stream
	started := filepath.Join(dir, "started")
	go tryTool(t, a, "execute_python", map[string]any{"code": fmt.Sprintf("import time, pathlib\npathlib.Path(%q).write_text('1')\ntime.sleep(60)", started)})
	testwait.Until(t, 20*time.Second, "the long cell to start", func() bool { _, err := os.Stat(started); return err == nil })

	begin := time.Now()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("ServeStreamableHTTP: %v", err)
		}
		if d := time.Since(begin); d > 2*time.Second {
			t.Fatalf("shutdown took %v", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ServeStreamableHTTP did not return within 5 s of cancellation")
	}
}

// TestHTTPListenPolicy: an address that is not HOST:PORT is invalid, whatever the
// token; a non-loopback address needs a token.
func TestHTTPListenPolicy(t *testing.T) {
	srv := New(Config{Version: "test", Repl: repl.NewManager(t.Context(), repl.Config{})})
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0"} {
		err := srv.ServeStreamableHTTP(t.Context(), HTTPConfig{Addr: addr})
		if !errors.Is(err, ErrTokenRequired) {
			t.Fatalf("listen %s without a token: %v, want ErrTokenRequired", addr, err)
		}
	}
	for _, addr := range []string{"garbage", "127.0.0.1", "127.0.0.1:99999", "127.0.0.1:-1", "[::1:80"} {
		err := srv.ServeStreamableHTTP(t.Context(), HTTPConfig{Addr: addr})
		if !errors.Is(err, ErrInvalidAddr) || !strings.Contains(err.Error(), "HOST:PORT") {
			t.Fatalf("listen %s: %v, want ErrInvalidAddr saying HOST:PORT", addr, err)
		}
	}
	for _, addr := range []string{"0.0.0.0:0", "[::]:0", "192.0.2.1:80"} {
		err := srv.ServeStreamableHTTP(t.Context(), HTTPConfig{Addr: addr, NoAuth: true})
		if !errors.Is(err, ErrNoAuthLoopbackOnly) {
			t.Fatalf("listen %s with NoAuth: %v, want ErrNoAuthLoopbackOnly", addr, err)
		}
	}
	if err := srv.ServeStreamableHTTP(t.Context(), HTTPConfig{NoAuth: true, Token: "tok"}); err == nil || !strings.Contains(err.Error(), "NoAuth excludes a Token") {
		t.Fatalf("NoAuth with a token: %v", err)
	}
	// On loopback without a token, one is generated; with nowhere to write it, none is served.
	if err := srv.ServeStreamableHTTP(t.Context(), HTTPConfig{}); !errors.Is(err, ErrTokenRequired) {
		t.Fatalf("no token, no NoAuth, no TokenDirs: %v, want ErrTokenRequired", err)
	}
	for addr, want := range map[string]bool{
		"127.0.0.1:0": true, "localhost:8080": true, "[::1]:0": true, "127.1.2.3:9": true,
		"0.0.0.0:0": false, ":0": false, "192.168.1.2:80": false, "example.com:80": false,
	} {
		if got := loopbackHostPort(addr); got != want {
			t.Errorf("loopbackHostPort(%q) = %v", addr, got)
		}
	}
}

func TestReadTokenFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if tok, err := ReadTokenFile(write("ok", "  secret-one-0123456789  \nsecond line\n", 0o600)); err != nil || tok != "secret-one-0123456789" {
		t.Fatalf("0600 file: %q, %v", tok, err)
	}
	if tok, err := ReadTokenFile(write("ro", "secret-two-0123456789", 0o400)); err != nil || tok != "secret-two-0123456789" {
		t.Fatalf("0400 file without newline: %q, %v", tok, err)
	}
	for name, c := range map[string]struct {
		content string
		mode    os.FileMode
	}{
		"world": {"secret-three\n", 0o644},
		"group": {"secret-four\n", 0o640},
		"empty": {"\nsecret-five\n", 0o600},
		"space": {"secret six 0123456789\n", 0o600},
		"short": {"secret-seven\n", 0o600},
		"long":  {"secret-" + strings.Repeat("8", MaxTokenLen) + "\n", 0o600},
		// Longer than what is read of the file: cut, and still refused.
		"huge": {"secret-" + strings.Repeat("9", maxTokenFile) + "\n", 0o600},
	} {
		_, err := ReadTokenFile(write(name, c.content, c.mode))
		if err == nil {
			t.Fatalf("%s: accepted", name)
		}
		if strings.Contains(err.Error(), "secret") {
			t.Fatalf("%s: the error quotes the token: %v", name, err)
		}
	}
	if _, err := ReadTokenFile(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("a missing file was accepted")
	}
}

// TestTokenLengthBounds: a token under 16 characters, or too long to fit in a
// request's headers, is refused at start, on loopback too, with a message that
// says how long it is and what to do; the bounds themselves are accepted.
func TestTokenLengthBounds(t *testing.T) {
	for _, c := range []struct {
		token string
		want  string // "" when accepted
	}{
		{"x", "has 1 characters, fewer than the 16"},
		{"fifteen-chars-x", "has 15 characters, fewer than the 16"},
		{strings.Repeat("a", MaxTokenLen+1), "has 4097 characters, more than the 4096 that fit"},
		{strings.Repeat("b", 70000), "more than the 4096 that fit in a request's headers"},
		{strings.Repeat("c", MinTokenLen), ""},
		{strings.Repeat("d", MaxTokenLen), ""},
	} {
		err := CheckToken(c.token)
		if c.want == "" {
			if err != nil {
				t.Errorf("a %d-character token: %v", len(c.token), err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("a %d-character token: %v, want %q", len(c.token), err, c.want)
		}
		srv := New(Config{Version: "test"})
		err = srv.ServeStreamableHTTP(t.Context(), HTTPConfig{Addr: "127.0.0.1:0", Token: c.token,
			Listening: func(string, string) { t.Errorf("a %d-character token: served", len(c.token)) }})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("a %d-character token on loopback: %v, want %q", len(c.token), err, c.want)
		}
	}
}

// TestReadTokenFileRefusesSpecialFiles: a FIFO (with no writer), a device, a
// directory and a symbolic link are refused at once, with an error naming what the
// path is; none of them is read.
func TestReadTokenFileRefusesSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, "real")
	if err := os.WriteFile(target, []byte("secret-link-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{
		fifo:        "named pipe",
		"/dev/null": "device",
		sub:         "directory",
		link:        "symbolic link",
	}
	if os.Geteuid() == 0 {
		// Someone else's file: they know the token.
		foreign := filepath.Join(dir, "foreign")
		if err := os.WriteFile(foreign, []byte("secret-foreign-token\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(foreign, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		cases[foreign] = "owned by uid 65534"
	} else {
		t.Log("not root: the case of a file owned by another user is not checked")
	}
	for path, want := range cases {
		got := make(chan error, 1)
		go func() {
			_, err := ReadTokenFile(path)
			got <- err
		}()
		select {
		case err := <-got:
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), path) {
				t.Errorf("ReadTokenFile(%s) = %v, want an error naming the path and %q", path, err, want)
			}
			if err != nil && strings.Contains(err.Error(), "secret") {
				t.Errorf("ReadTokenFile(%s): the error quotes the token: %v", path, err)
			}
		case <-time.After(5 * time.Second):
			// Unblock the open so the goroutine ends with the test.
			if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				f.Close()
			}
			<-got
			t.Errorf("ReadTokenFile(%s) did not return within 5 s", path)
		}
	}
}

// serveGenerated serves with a generated token written to one of dirs, and
// returns the URL, the token file's path and a function that stops the server
// and waits for it.
func serveGenerated(t *testing.T, dirs ...string) (url, tokenFile string, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	srv := New(Config{Version: "test", Repl: repl.NewManager(ctx, repl.Config{Python: pythons.ForTest(t)[0].Path, PythonSource: "test", Project: t.TempDir(), Env: os.Environ(), Version: "test"})})
	type listening struct{ url, tokenFile string }
	ready := make(chan listening, 1)
	done := make(chan error, 1)
	go func() {
		done <- srv.ServeStreamableHTTP(ctx, HTTPConfig{TokenDirs: dirs, Listening: func(u, f string) { ready <- listening{u, f} }})
	}()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("ServeStreamableHTTP: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("the HTTP server did not stop within 5 s")
		}
	}
	t.Cleanup(stop)
	select {
	case l := <-ready:
		return l.url, l.tokenFile, stop
	case err := <-done:
		t.Fatalf("ServeStreamableHTTP: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the HTTP server did not start listening")
	}
	return "", "", nil
}

// TestHTTPGeneratedToken: without a token, one is generated into a new 0600 file
// in the first private directory; requests without it get 401, requests with it
// are served; each server has a file of its own, removed when it stops.
func TestHTTPGeneratedToken(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "run", "repl-mcp") // created, parents too
	url, tokenFile, stop := serveGenerated(t, dir)
	if filepath.Dir(tokenFile) != dir {
		t.Fatalf("token file %s is not in %s", tokenFile, dir)
	}
	for path, want := range map[string]os.FileMode{dir: 0o700 | os.ModeDir, tokenFile: 0o600} {
		info, err := os.Lstat(path)
		if err != nil || info.Mode() != want {
			t.Fatalf("%s: mode %v (%v), want %v", path, info.Mode(), err, want)
		}
	}
	token, err := ReadTokenFile(tokenFile)
	if err != nil || len(token) < 20 {
		t.Fatalf("the generated token file: %q, %v", token, err)
	}
	status, _, _, err := rawPost(t, t.Context(), url, nil, initializeBody)
	if err != nil || status != http.StatusUnauthorized {
		t.Fatalf("initialize without the token: status %d, %v; want 401", status, err)
	}
	cs := connect(t, url, "2025-11-25", token)
	if v := callTool(t, cs, "execute_python", map[string]any{"code": "6 * 7"})["value"]; v != 42.0 {
		t.Fatalf("6 * 7 = %v", v)
	}

	// A second server beside it: a file of its own, the first one untouched.
	_, second, stopSecond := serveGenerated(t, dir)
	if second == tokenFile || filepath.Dir(second) != dir {
		t.Fatalf("second server's token file %s (first %s)", second, tokenFile)
	}
	stopSecond()
	if _, err := os.Stat(second); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the second server's token file after it stopped: %v", err)
	}
	if _, err := ReadTokenFile(tokenFile); err != nil {
		t.Fatalf("the first server's token file after the second stopped: %v", err)
	}
	cs.Close()
	stop()
	if _, err := os.Stat(tokenFile); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the token file after the server stopped: %v", err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the token directory went with the file: %v", err)
	}
}

// TestHTTPGeneratedTokenDirs: a directory that is a symbolic link, open to others,
// under a parent others may write, or relative, is passed over for the next; with
// none left the server does not start, and says why for each.
func TestHTTPGeneratedTokenDirs(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "real")
	if err := os.Mkdir(real, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	open := filepath.Join(base, "open")
	if err := os.Mkdir(open, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(open, 0o755)
	shared := filepath.Join(base, "shared")
	if err := os.Mkdir(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(shared, 0o1777)
	// Each directory, and what the error must say of it.
	refused := map[string]string{
		link:                              link + " is a symbolic link",
		open:                              open + " is open to group or others (mode 0755)",
		filepath.Join(shared, "repl-mcp"): shared + " is writable by group or others (mode 0777)",
		"relative/dir":                    "relative/dir is not an absolute path",
	}
	var dirs []string
	for d := range refused {
		dirs = append(dirs, d)
	}
	srv := New(Config{Version: "test", Repl: repl.NewManager(t.Context(), repl.Config{})})
	err := srv.ServeStreamableHTTP(t.Context(), HTTPConfig{TokenDirs: dirs})
	if !errors.Is(err, ErrTokenRequired) || !strings.Contains(err.Error(), "no private directory to write a generated one to") {
		t.Fatalf("only refused directories: %v, want ErrTokenRequired saying there is no private directory", err)
	}
	for _, why := range refused {
		if !strings.Contains(err.Error(), why) {
			t.Errorf("the error does not say %q: %v", why, err)
		}
	}
	if entries, _ := os.ReadDir(real); len(entries) != 0 {
		t.Fatalf("a token file was written through the symbolic link: %v", entries)
	}
	good := filepath.Join(base, "good")
	_, tokenFile, _ := serveGenerated(t, append(dirs, good)...)
	if filepath.Dir(tokenFile) != good {
		t.Fatalf("token file %s, want it in %s after the refused directories", tokenFile, good)
	}
}

// refusedConn opens a connection, sends one request on it as HTTP/1.1 keep-alive
// and reads the reply's status line; the connection is returned open on the
// client's side.
func refusedConn(t *testing.T, addr, request string) (net.Conn, int, error) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, 0, err
	}
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, request); err != nil {
		conn.Close()
		return nil, 0, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		conn.Close()
		return nil, 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return conn, resp.StatusCode, nil
}

// closedByServer reports whether the server ends conn (EOF or reset) within d.
func closedByServer(conn net.Conn, d time.Duration) bool {
	conn.SetReadDeadline(time.Now().Add(d))
	var b [1]byte
	for {
		_, err := conn.Read(b[:])
		if err == nil {
			continue
		}
		var ne net.Error
		return !errors.As(err, &ne) || !ne.Timeout()
	}
}

// TestHTTPRefusedConnectionsClose: a connection whose request got 401, 403, 404 or
// 413 is closed by the server, whatever part of its body was sent, so refused clients cannot hold connections open
// in numbers; a client with the token is served after 300 of them.
func TestHTTPRefusedConnectionsClose(t *testing.T) {
	const token = "tok-0123456789abcdef"
	url := startHTTP(t, token)
	addr := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), HTTPPath)
	post := func(header, body string) string {
		return fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n%sContent-Length: %d\r\n\r\n%s",
			HTTPPath, addr, header, len(body), body)
	}
	big := strings.Repeat(" ", maxHTTPBody+1)
	for _, c := range []struct {
		name, request string
		status        int
	}{
		{"no token", post("", initializeBody), http.StatusUnauthorized},
		{"wrong token", post("Authorization: Bearer wrong\r\n", initializeBody), http.StatusUnauthorized},
		{"foreign Origin", post("Origin: https://evil.example\r\n", initializeBody), http.StatusForbidden},
		{"foreign Host", strings.Replace(post("Authorization: Bearer "+token+"\r\n", initializeBody), "Host: "+addr, "Host: evil.example", 1), http.StatusForbidden},
		{"oversized body", post("Authorization: Bearer "+token+"\r\n", big), http.StatusRequestEntityTooLarge},
	} {
		conn, status, err := refusedConn(t, addr, c.request)
		if err != nil || status != c.status {
			t.Fatalf("%s: status %d, %v; want %d", c.name, status, err, c.status)
		}
		if !closedByServer(conn, 5*time.Second) {
			t.Errorf("%s: the connection is still open 5 s after the %d", c.name, status)
		}
		conn.Close()
	}

	// A refused request that declared a body and sent only part of it: the server
	// does not wait for the rest before it closes.
	partial := func(path, header string) string {
		return fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n%sContent-Length: 1000\r\n\r\n{\"jsonrpc\"",
			path, addr, header)
	}
	auth := "Authorization: Bearer " + token + "\r\n"
	for _, c := range []struct {
		name, request string
		status        int
	}{
		{"partial body, no token", partial(HTTPPath, ""), http.StatusUnauthorized},
		{"partial body, foreign Origin", partial(HTTPPath, "Origin: https://evil.example\r\n"), http.StatusForbidden},
		{"partial body, unknown session", partial(HTTPPath, auth+"Mcp-Session-Id: no-such-session\r\n"), http.StatusNotFound},
		{"partial body, unknown path", partial("/elsewhere", auth), http.StatusNotFound},
	} {
		conn, status, err := refusedConn(t, addr, c.request)
		if err != nil || status != c.status {
			t.Fatalf("%s: status %d, %v; want %d", c.name, status, err, c.status)
		}
		if !closedByServer(conn, 5*time.Second) {
			t.Errorf("%s: the connection is still open 5 s after the %d", c.name, status)
		}
		conn.Close()
	}

	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := range 300 {
		conn, status, err := refusedConn(t, addr, post("", initializeBody))
		if err != nil || status != http.StatusUnauthorized {
			t.Fatalf("connection %d: status %d, %v; want 401", i, status, err)
		}
		conns = append(conns, conn)
	}
	for i, conn := range conns {
		if !closedByServer(conn, 5*time.Second) {
			t.Fatalf("connection %d is still open 5 s after its 401", i)
		}
	}
	begin := time.Now()
	cs := connect(t, url, "2025-11-25", token)
	callTool(t, cs, "python_health", map[string]any{})
	if d := time.Since(begin); d > 5*time.Second {
		t.Fatalf("the client with the token was served after %v", d)
	}
}

// TestHTTPConnectionCap: with every connection slot held by clients that send
// nothing, a client with the token still gets in, and its connections are not
// the ones closed for the next flood.
func TestHTTPConnectionCap(t *testing.T) {
	const token = "tok-0123456789abcdef"
	const slots = 16
	url := startHTTPWith(t, HTTPConfig{Token: token, limits: httpLimits{maxConns: slots}})
	addr := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), HTTPPath)
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	flood := func() {
		t.Helper()
		for range 3 * slots {
			conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, conn)
		}
	}
	flood()
	begin := time.Now()
	cs := connect(t, url, "2025-11-25", token) // its standalone GET stream stays open
	callTool(t, cs, "python_health", map[string]any{})
	if d := time.Since(begin); d > 5*time.Second {
		t.Fatalf("the client with the token was served after %v", d)
	}
	// The flood's connections were closed to make room, all but the newest.
	open := 0
	for _, c := range conns {
		if !closedByServer(c, 50*time.Millisecond) {
			open++
		}
	}
	if open >= slots {
		t.Fatalf("%d of the flood's connections are still open; at most %d slots", open, slots)
	}
	flood()
	callTool(t, cs, "python_health", map[string]any{})
}

// TestConnGate: past the bound the oldest connection without an authorized
// request goes first, then the oldest idle one; a connection busy for a client
// with the token is never closed, and a new one is refused when only those remain.
func TestConnGate(t *testing.T) {
	g := newConnGate(3)
	type pipe struct {
		server, client net.Conn
		gc             *gatedConn
	}
	admit := func() *pipe {
		s, c := net.Pipe()
		ctx := g.connContext(t.Context(), s)
		gc, _ := ctx.Value(gatedConnKey{}).(*gatedConn)
		t.Cleanup(func() { s.Close(); c.Close() })
		return &pipe{s, c, gc}
	}
	closed := func(p *pipe) bool {
		p.client.SetReadDeadline(time.Now().Add(time.Second))
		_, err := p.client.Read(make([]byte, 1))
		return errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe)
	}
	a, b, c := admit(), admit(), admit()
	for _, p := range []*pipe{b, c} {
		p.gc.proven.Store(true)
		g.connState(p.server, http.StateActive)
	}
	d := admit() // a: the only one without an authorized request
	if !closed(a) || d.gc == nil {
		t.Fatal("the unproven connection was not the one closed")
	}
	d.gc.proven.Store(true)
	g.connState(d.server, http.StateActive)
	g.connState(c.server, http.StateIdle)
	e := admit() // c: the only idle one
	if !closed(c) || e.gc == nil {
		t.Fatal("the idle connection was not the one closed")
	}
	e.gc.proven.Store(true)
	g.connState(e.server, http.StateActive)
	f := admit() // every slot busy for a client with the token: f is refused
	if f.gc != nil || !closed(f) {
		t.Fatal("a new connection was admitted over busy authorized ones")
	}
	for _, p := range []*pipe{b, d, e} {
		p.client.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
		if _, err := p.client.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("a busy authorized connection was closed: %v", err)
		}
	}
	// A closed connection frees its slot.
	g.connState(b.server, http.StateClosed)
	if admit().gc == nil {
		t.Fatal("no slot after a connection closed")
	}
}

// TestHTTPTimeoutsSpareLongReplies: a body that stalls is cut off after the body
// timeout, while a call that runs far longer than it, beside an open GET stream,
// gets its reply.
func TestHTTPTimeoutsSpareLongReplies(t *testing.T) {
	const token = "tok-0123456789abcdef"
	const bodyTimeout = 300 * time.Millisecond
	url := startHTTPWith(t, HTTPConfig{Token: token, limits: httpLimits{bodyTimeout: bodyTimeout}})
	addr := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), HTTPPath)

	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\":", HTTPPath, addr, token)
	begin := time.Now()
	if !closedByServer(conn, 5*time.Second) {
		t.Fatal("a stalled body still holds its connection 5 s on")
	}
	if d := time.Since(begin); d < bodyTimeout/2 {
		t.Fatalf("the stalled body was cut after %v, before the %v timeout", d, bodyTimeout)
	}

	cs := connect(t, url, "2025-11-25", token) // with its standalone GET stream
	sc := callTool(t, cs, "execute_python", map[string]any{"code": "import time\ntime.sleep(5 * 0.3)\n'late'"})
	if sc["value"] != "late" {
		t.Fatalf("a call 5 times longer than the body timeout: %v", sc)
	}
	callTool(t, cs, "python_health", map[string]any{})
}

// openSession initializes a stateful MCP session with raw POSTs, as a client
// that never closes it would, and returns the headers that address it.
func openSession(t *testing.T, url, token string) http.Header {
	t.Helper()
	h := http.Header{}
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	status, hdr, _, err := rawPost(t, t.Context(), url, h, initializeBody)
	if err != nil || status != http.StatusOK || hdr.Get("Mcp-Session-Id") == "" {
		t.Fatalf("initialize: status %d, session %q, %v", status, hdr.Get("Mcp-Session-Id"), err)
	}
	h.Set("Mcp-Session-Id", hdr.Get("Mcp-Session-Id"))
	h.Set("Mcp-Protocol-Version", "2025-11-25")
	if status, _, _, err := rawPost(t, t.Context(), url, h, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil || status != http.StatusAccepted {
		t.Fatalf("notifications/initialized: status %d, %v", status, err)
	}
	return h
}

// TestHTTPAbandonedSessionsEvicted: 256 MCP sessions opened and never closed do
// not lock a new client out: the least recently used one goes, and only the MCP
// session: what its cells left in the REPL session stays.
func TestHTTPAbandonedSessionsEvicted(t *testing.T) {
	const token = "tok-0123456789abcdef"
	url := startHTTP(t, token)
	first := openSession(t, url, token)
	status, _, msgs, err := rawPost(t, t.Context(), url, first, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"execute_python","arguments":{"code":"kept = 42"}}}`)
	if err != nil || status != http.StatusOK || len(msgs) != 1 || msgs[0]["error"] != nil {
		t.Fatalf("a cell on the first session: status %d, %v, %v", status, msgs, err)
	}
	for range 255 {
		openSession(t, url, token)
	}
	begin := time.Now()
	cs := connect(t, url, "2025-11-25", token)
	if v := callTool(t, cs, "execute_python", map[string]any{"code": "kept"})["value"]; v != 42.0 {
		t.Fatalf("the REPL session's state after an MCP session was evicted: kept = %v", v)
	}
	if d := time.Since(begin); d > 5*time.Second {
		t.Fatalf("the new client was served after %v", d)
	}
	// The first session, least recently used, is the one that went.
	status, _, _, err = rawPost(t, t.Context(), url, first, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
	if err != nil || status != http.StatusNotFound {
		t.Fatalf("the least recently used session after the eviction: status %d, %v; want 404", status, err)
	}
}

// TestHTTPSessionWithCallInFlightKept: when the table is full, a session with a
// call in flight is never the one evicted, even when it is the least recently
// used; when every session has one, a new client gets 503 until a call ends.
func TestHTTPSessionWithCallInFlightKept(t *testing.T) {
	const token = "tok-0123456789abcdef"
	url := startHTTPWith(t, HTTPConfig{Token: token, limits: httpLimits{maxSessions: 2}})
	dir := t.TempDir()
	auth := http.Header{}
	auth.Set("Authorization", "Bearer "+token)
	// REPL sessions of their own for the long cells, opened without an MCP session.
	replSession := func(name string) string {
		h, body := statelessCall(1, "python_session_open", map[string]any{"name": name, "project": dir})
		h.Set("Authorization", "Bearer "+token)
		status, _, msgs, err := rawPost(t, t.Context(), url, h, body)
		if err != nil || status != http.StatusOK || len(msgs) != 1 {
			t.Fatalf("python_session_open: status %d, %v, %v", status, msgs, err)
		}
		return msgs[0]["result"].(map[string]any)["structuredContent"].(map[string]any)["session_id"].(string)
	}
	type reply struct {
		value any
		err   error
	}
	// longCall runs a cell that waits for release on session h and returns once
	// the cell has started.
	longCall := func(h http.Header, name string) (release func(), replied <-chan reply) {
		sid := replSession(name)
		started := filepath.Join(dir, name+".started")
		released := filepath.Join(dir, name+".released")
		code := fmt.Sprintf("import os, time, pathlib\npathlib.Path(%q).write_text('1')\nwhile not os.path.exists(%q):\n    time.sleep(0.02)\n'done'", started, released)
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 5, "method": "tools/call",
			"params": map[string]any{"name": "execute_python", "arguments": map[string]any{"code": code, "session_id": sid}}})
		ch := make(chan reply, 1)
		go func() {
			_, _, msgs, err := rawPost(t, t.Context(), url, h, string(body))
			if err == nil && len(msgs) != 1 {
				err = fmt.Errorf("replies %v", msgs)
			}
			if err != nil {
				ch <- reply{err: err}
				return
			}
			res, _ := msgs[0]["result"].(map[string]any)
			sc, _ := res["structuredContent"].(map[string]any)
			ch <- reply{value: sc["value"]}
		}()
		testwait.Until(t, 20*time.Second, name+"'s cell to start", func() bool { _, err := os.Stat(started); return err == nil })
		return func() { os.WriteFile(released, nil, 0o600) }, ch
	}
	list := func(h http.Header) int {
		status, _, _, err := rawPost(t, t.Context(), url, h, `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`)
		if err != nil {
			t.Fatal(err)
		}
		return status
	}

	a := openSession(t, url, token)
	releaseA, repliedA := longCall(a, "a")
	b := openSession(t, url, token)
	if list(b) != http.StatusOK { // b is now used more recently than a
		t.Fatal("tools/list on b")
	}
	c := openSession(t, url, token) // the table is full: b goes, not a
	if s := list(b); s != http.StatusNotFound {
		t.Fatalf("b after the eviction: status %d, want 404", s)
	}
	releaseC, repliedC := longCall(c, "c")

	// Both sessions have a call in flight: a new client is refused, and told why.
	status, _, _, err := rawPost(t, t.Context(), url, auth, initializeBody)
	if err != nil || status != http.StatusServiceUnavailable {
		t.Fatalf("initialize with every session busy: status %d, %v; want 503", status, err)
	}
	releaseA()
	if r := <-repliedA; r.err != nil || r.value != "done" {
		t.Fatalf("a's call, kept through the eviction: %v, %v", r.value, r.err)
	}
	openSession(t, url, token) // a is idle now: it goes
	if s := list(a); s != http.StatusNotFound {
		t.Fatalf("a after its call ended and a new client came: status %d, want 404", s)
	}
	releaseC()
	if r := <-repliedC; r.err != nil || r.value != "done" {
		t.Fatalf("c's call: %v, %v", r.value, r.err)
	}
}

// TestHTTPIdleSessionsClosed: a session with no request open and no call in
// flight for the idle timeout is closed; one whose client holds its GET stream
// open is not, nor one whose call runs longer than the timeout.
func TestHTTPIdleSessionsClosed(t *testing.T) {
	const token = "tok-0123456789abcdef"
	// Long enough that a loaded machine opens the connected client's GET stream
	// well within it.
	const idle = time.Second
	url, srv := startHTTPServer(t, HTTPConfig{Token: token, limits: httpLimits{sessionIdle: idle}})
	abandoned := openSession(t, url, token)
	begin := time.Now()
	connected := connect(t, url, "2025-11-25", token) // holds its standalone GET stream
	busy := openSession(t, url, token)
	called := make(chan error, 1)
	go func() {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"execute_python","arguments":{"code":"import time\ntime.sleep(%g)\n'done'"}}}`, (3 * idle).Seconds())
		status, _, msgs, err := rawPost(t, t.Context(), url, busy, body)
		if err == nil && (status != http.StatusOK || len(msgs) != 1 || msgs[0]["error"] != nil) {
			err = fmt.Errorf("status %d, %v", status, msgs)
		}
		called <- err
	}()
	// Watched from inside: a request would count as use.
	testwait.Until(t, 10*time.Second, "the abandoned session to be closed", func() bool {
		n := 0
		for ss := range srv.mcp.Sessions() {
			if ss.ID() != "" {
				n++
			}
		}
		return n == 2
	})
	if d := time.Since(begin); d < idle {
		t.Fatalf("a session was closed after %v, before the %v idle timeout", d, idle)
	}
	status, _, _, err := rawPost(t, t.Context(), url, abandoned, `{"jsonrpc":"2.0","id":9,"method":"ping"}`)
	if err != nil || status != http.StatusNotFound {
		t.Fatalf("the abandoned session: status %d, %v; want 404", status, err)
	}
	// The session with a call in flight for longer than the timeout keeps it,
	// and its reply.
	if err := <-called; err != nil {
		t.Fatalf("the call longer than the idle timeout: %v", err)
	}
	if status, _, _, err := rawPost(t, t.Context(), url, busy, `{"jsonrpc":"2.0","id":6,"method":"ping"}`); err != nil || status != http.StatusOK {
		t.Fatalf("the session after its long call: status %d, %v", status, err)
	}
	// The connected client, idle for longer still, is served.
	time.Sleep(time.Until(begin.Add(3 * idle)))
	callTool(t, connected, "python_health", map[string]any{})
}
