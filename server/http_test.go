package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/iota-uz/repl-mcp/cellops"
	"github.com/iota-uz/repl-mcp/guardian"
	"github.com/iota-uz/repl-mcp/internal/pythons"
	"github.com/iota-uz/repl-mcp/internal/testwait"
	"github.com/iota-uz/repl-mcp/repl"
	"github.com/iota-uz/repl-mcp/server/transport"
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
	return startHTTPWith(t, transport.HTTPConfig{Token: token, NoAuth: token == ""})
}

// startHTTPWith is startHTTP with a config of the test's own (Addr and Listening
// are set here).
func startHTTPWith(t *testing.T, cfg transport.HTTPConfig) string {
	t.Helper()
	url, _ := startHTTPServer(t, cfg)
	return url
}

// startHTTPServer is startHTTPWith that also returns the Server, to look inside;
// configure, if given, changes the Server's Config first.
func startHTTPServer(t *testing.T, cfg transport.HTTPConfig, configure ...func(*Config)) (string, *Server) {
	t.Helper()
	py := pythons.ForTest(t)[0].Path
	ctx, cancel := context.WithCancel(t.Context())
	manager := repl.NewManager(ctx, repl.Config{OpLimits: cellops.Limits(), Python: py, PythonSource: "test", Project: t.TempDir(), Env: os.Environ(), Version: "test"})
	config := Config{Version: "test", Repl: manager}
	for _, c := range configure {
		c(&config)
	}
	srv := New(config)
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
			strings.Repeat("#", transport.MaxHTTPBody) + `"}}}`
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
		atLimit := `{"jsonrpc":"2.0","id":3,"method":"ping","params":{"pad":"` + strings.Repeat(" ", transport.MaxHTTPBody-60) + `"}}`
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
	manager := repl.NewManager(ctx, repl.Config{OpLimits: cellops.Limits(), Python: py, PythonSource: "test", Project: dir, Env: os.Environ(), Version: "test"})
	srv := New(Config{Version: "test", Repl: manager})
	urls := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- srv.ServeStreamableHTTP(ctx, transport.HTTPConfig{NoAuth: true, Listening: func(u, _ string) { urls <- u }})
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
