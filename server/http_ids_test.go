package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/iota-uz/repl-mcp/internal/testwait"
)

// rawReplies POSTs body and returns the JSON-RPC messages of the reply, JSON or
// SSE, as the bytes that came.
func rawReplies(t *testing.T, url string, header http.Header, body string) []json.RawMessage {
	t.Helper()
	resp, data, msgs, err := postMessages(t, t.Context(), url, header, body)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return []json.RawMessage{bytes.TrimSpace(data)} // whatever the body is: the test reads it
	}
	return msgs
}

// rawField is the raw JSON of msg's key, or of params' key with inParams.
func rawField(t *testing.T, msg json.RawMessage, key string, inParams bool) string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(msg, &m); err != nil {
		t.Fatalf("not a JSON object: %s", msg)
	}
	if inParams {
		if err := json.Unmarshal(m["params"], &m); err != nil {
			return ""
		}
	}
	return string(m[key])
}

// TestHTTPIDsComeBackAsSent: over Streamable HTTP, stateful and stateless, a reply
// carries its request's id byte for byte, and progress notifications carry the
// token as sent, every digit of an integer beyond 2^53 included.
func TestHTTPIDsComeBackAsSent(t *testing.T) {
	url := startHTTP(t, "")
	stateful := openSession(t, url, "")
	hList, _ := statelessCall(0, "python_health", nil)
	hList.Set("Mcp-Method", "tools/list")
	hList.Del("Mcp-Name")
	meta := `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	for _, id := range []string{`12345678901234567890123`, `9007199254740993`, `1.5`, `-0`, `"a\u0062"`, `7`} {
		for name, c := range map[string]struct {
			header http.Header
			body   string
		}{
			"stateful":  {stateful, `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/list"}`},
			"stateless": {hList, `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/list","params":{"_meta":` + meta + `}}`},
		} {
			msgs := rawReplies(t, url, c.header, c.body)
			if len(msgs) != 1 || rawField(t, msgs[0], "id", false) != id || rawField(t, msgs[0], "result", false) == "" {
				t.Errorf("%s, id %s: reply %s", name, id, msgs)
			}
		}
	}

	const token = `12345678901234567890123`
	body := `{"jsonrpc":"2.0","id":12345678901234567890124,"method":"tools/call","params":{"name":"execute_python",` +
		`"arguments":{"code":` + mustJSON(progressCell) + `},"_meta":{"progressToken":` + token + `}}}`
	msgs := rawReplies(t, url, stateful, body)
	if len(msgs) < 2 || rawField(t, msgs[len(msgs)-1], "id", false) != `12345678901234567890124` {
		t.Fatalf("tools/call with progress: %s", msgs)
	}
	for _, n := range msgs[:len(msgs)-1] {
		if got := rawField(t, n, "progressToken", true); got != token {
			t.Errorf("notification %s: progressToken %s, want %s", n, got, token)
		}
	}
}

// TestHTTPCancelReachesAStandInID: on a stateful MCP session, notifications/cancelled
// in a later POST names a call by the id as sent (one go-sdk holds under a
// stand-in), and cancels it: the reply, with that id, says the cell was cancelled.
func TestHTTPCancelReachesAStandInID(t *testing.T) {
	url := startHTTP(t, "")
	session := openSession(t, url, "")
	replies := make(chan []json.RawMessage, 1)
	go func() {
		replies <- rawReplies(t, url, session, `{"jsonrpc":"2.0","id":2.5,"method":"tools/call","params":{"name":"execute_python",`+
			`"arguments":{"code":"import time\nprint('started', flush=True)\ntime.sleep(60)"}}}`)
	}()
	testwait.Until(t, 20*time.Second, "the cell to start", func() bool {
		msgs := rawReplies(t, url, session, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"python_run","arguments":{}}}`)
		return len(msgs) == 1 && strings.Contains(string(msgs[0]), `started`)
	})
	rawReplies(t, url, session, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2.5}}`)
	select {
	case msgs := <-replies:
		if len(msgs) != 1 || rawField(t, msgs[0], "id", false) != "2.5" || !strings.Contains(string(msgs[0]), `"success":false`) {
			t.Fatalf("the cancelled call's reply: %s", msgs)
		}
	case <-time.After(wait(t, 30*time.Second)):
		t.Fatal("the call named by its id as sent was not cancelled")
	}
}

// TestHTTPNullAndDuplicateIDs: over HTTP a call whose id is null gets -32600 with id
// null instead of a silent 202, and on an MCP session a call reusing the id of one
// still in flight gets -32600 with that id; the first call is unharmed.
func TestHTTPNullAndDuplicateIDs(t *testing.T) {
	url := startHTTP(t, "")
	session := openSession(t, url, "")
	refused := func(msgs []json.RawMessage, id, words string) bool {
		return len(msgs) == 1 && rawField(t, msgs[0], "id", false) == id &&
			strings.Contains(string(msgs[0]), `"code":-32600`) && strings.Contains(string(msgs[0]), words)
	}
	for name, header := range map[string]http.Header{"stateful": session, "sessionless": {}} {
		if msgs := rawReplies(t, url, header, `{"jsonrpc":"2.0","id":null,"method":"tools/list"}`); !refused(msgs, "null", `null`) {
			t.Errorf("%s, id null: %s", name, msgs)
		}
	}

	replies := make(chan []json.RawMessage, 1)
	go func() {
		replies <- rawReplies(t, url, session, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"execute_python",`+
			`"arguments":{"code":"import time\nprint('started', flush=True)\ntime.sleep(1)\n'first'"}}}`)
	}()
	testwait.Until(t, 20*time.Second, "the first call to start", func() bool {
		msgs := rawReplies(t, url, session, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"python_run","arguments":{}}}`)
		return len(msgs) == 1 && strings.Contains(string(msgs[0]), `started`)
	})
	if msgs := rawReplies(t, url, session, `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`); !refused(msgs, "9", "still in flight") {
		t.Errorf("a second call with id 9 in flight: %s", msgs)
	}
	select {
	case msgs := <-replies:
		if len(msgs) != 1 || rawField(t, msgs[0], "id", false) != "9" || !strings.Contains(string(msgs[0]), `first`) {
			t.Fatalf("the first call with id 9: %s", msgs)
		}
	case <-time.After(wait(t, 30*time.Second)):
		t.Fatal("the first call with id 9 never answered")
	}
	// Once answered, its id is free again.
	if msgs := rawReplies(t, url, session, `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`); len(msgs) != 1 || rawField(t, msgs[0], "result", false) == "" {
		t.Errorf("id 9 after its call was answered: %s", msgs)
	}
}
