// The Streamable HTTP transport's bounds: refused connections closed, the connection cap,
// timeouts, and the session table (abandoned, busy and idle sessions).

package server

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/iota-uz/repl-mcp/internal/testwait"
	"github.com/iota-uz/repl-mcp/server/transport"
)

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
	addr := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), transport.HTTPPath)
	post := func(header, body string) string {
		return fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n%sContent-Length: %d\r\n\r\n%s",
			transport.HTTPPath, addr, header, len(body), body)
	}
	big := strings.Repeat(" ", transport.MaxHTTPBody+1)
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
		{"partial body, no token", partial(transport.HTTPPath, ""), http.StatusUnauthorized},
		{"partial body, foreign Origin", partial(transport.HTTPPath, "Origin: https://evil.example\r\n"), http.StatusForbidden},
		{"partial body, unknown session", partial(transport.HTTPPath, auth+"Mcp-Session-Id: no-such-session\r\n"), http.StatusNotFound},
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
	url := startHTTPWith(t, transport.HTTPConfig{Token: token, Limits: transport.HTTPLimits{MaxConns: slots}})
	addr := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), transport.HTTPPath)
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

// TestHTTPTimeoutsSpareLongReplies: a body that stalls is cut off after the body
// timeout, while a call that runs far longer than it, beside an open GET stream,
// gets its reply.
func TestHTTPTimeoutsSpareLongReplies(t *testing.T) {
	const token = "tok-0123456789abcdef"
	const bodyTimeout = 300 * time.Millisecond
	url := startHTTPWith(t, transport.HTTPConfig{Token: token, Limits: transport.HTTPLimits{BodyTimeout: bodyTimeout}})
	addr := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), transport.HTTPPath)

	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\":", transport.HTTPPath, addr, token)
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
	url := startHTTPWith(t, transport.HTTPConfig{Token: token, Limits: transport.HTTPLimits{MaxSessions: 2}})
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
	var sweptMu sync.Mutex
	var lastSweep time.Time
	swept := func(at time.Time) {
		sweptMu.Lock()
		defer sweptMu.Unlock()
		lastSweep = at
	}
	url, srv := startHTTPServer(t, transport.HTTPConfig{Token: token, Limits: transport.HTTPLimits{SessionIdle: idle, Swept: swept}})
	abandoned := openSession(t, url, token)
	begin := time.Now()
	connected := connect(t, url, "2025-11-25", token) // holds its standalone GET stream
	connectedIdleFrom := time.Now()                   // its last request has been answered
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
	// The connected client is served after a sweep that found it idle for longer than
	// the timeout.
	testwait.Until(t, 10*time.Second, "a sweep past the connected client's idle timeout", func() bool {
		sweptMu.Lock()
		defer sweptMu.Unlock()
		return lastSweep.Sub(connectedIdleFrom) > idle
	})
	callTool(t, connected, "python_health", map[string]any{})
}
