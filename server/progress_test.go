package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// progressCell prints for about 1.6 s: the first output, then one notification a
// second at most.
const progressCell = "import time\nfor i in range(5):\n    print(f'step {i}', flush=True)\n    time.sleep(0.4)\n"

// TestProgressOverHTTP: over Streamable HTTP, stateful and stateless, a call with a
// progressToken gets its notifications on the request's own SSE stream, every one
// before the reply, with the last output line as message and increasing progress;
// a call without a token gets none.
func TestProgressOverHTTP(t *testing.T) {
	url := startHTTP(t, "")
	stateful := openSession(t, url, "")
	call := func(t *testing.T, header http.Header, body string) []map[string]any {
		t.Helper()
		status, _, msgs, err := rawPost(t, t.Context(), url, header, body)
		if err != nil || status != http.StatusOK || len(msgs) == 0 {
			t.Fatalf("tools/call: status %d, %d messages, %v", status, len(msgs), err)
		}
		return msgs
	}
	// token is as JSON decodes it: a string, or a number as float64.
	check := func(t *testing.T, msgs []map[string]any, token any) {
		t.Helper()
		if _, ok := msgs[len(msgs)-1]["result"]; !ok {
			t.Fatalf("the stream's last message is not the reply: %v", msgs[len(msgs)-1])
		}
		notes := msgs[:len(msgs)-1]
		if len(notes) < 2 || len(notes) > 3 {
			t.Fatalf("%d notifications before the reply, want 2 or 3 for 1.6 s of output: %v", len(notes), notes)
		}
		last := 0.0
		for _, n := range notes {
			params, _ := n["params"].(map[string]any)
			msg, _ := params["message"].(string)
			progress, _ := params["progress"].(float64)
			if n["method"] != "notifications/progress" || params["progressToken"] != token || !strings.HasPrefix(msg, "step ") || progress <= last {
				t.Fatalf("notification %v (after progress %v)", n, last)
			}
			last = progress
		}
	}
	body := func(id int, token any, meta map[string]any) string {
		if token != nil {
			meta["progressToken"] = token
		}
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call",
			"params": map[string]any{"name": "execute_python", "arguments": map[string]any{"code": progressCell}, "_meta": meta}})
		return string(b)
	}

	t.Run("stateful", func(t *testing.T) {
		check(t, call(t, stateful, body(2, "tok-a", map[string]any{})), "tok-a")
		if msgs := call(t, stateful, body(3, nil, map[string]any{})); len(msgs) != 1 {
			t.Fatalf("a call without a progressToken got %d messages: %v", len(msgs), msgs)
		}
		// A token must be a string or an integer: anything else is not echoed.
		for i, token := range []any{1.5, true, map[string]any{"k": 1}, []any{1}} {
			if msgs := call(t, stateful, body(10+i, token, map[string]any{})); len(msgs) != 1 {
				t.Fatalf("a call with progressToken %v got %d messages: %v", token, len(msgs), msgs)
			}
		}
	})
	t.Run("stateless", func(t *testing.T) {
		hHealth, _ := statelessCall(0, "python_health", nil)
		h, _ := statelessCall(0, "execute_python", nil)
		meta := map[string]any{
			"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw", "version": "1"},
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		}
		health := call(t, hHealth, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"python_health","arguments":{},"_meta":`+mustJSON(meta)+`}}`)
		sid := health[0]["result"].(map[string]any)["structuredContent"].(map[string]any)["server"].(map[string]any)["session_id"]
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 5, "method": "tools/call",
			"params": map[string]any{"name": "execute_python", "arguments": map[string]any{"code": progressCell, "session_id": sid},
				"_meta": merge(meta, map[string]any{"progressToken": 7})}})
		// A numeric token comes back as the number it was.
		check(t, call(t, h, string(b)), 7.0)
	})
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func merge(a, b map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}
