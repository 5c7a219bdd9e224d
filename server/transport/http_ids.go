package transport

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/iota-uz/repl-mcp/internal/jsonscan"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Ids and progress tokens as sent, over Streamable HTTP (docs/contract.md §2.1,
// wireids.go). repl-mcp owns a POST's body and its reply: an id go-sdk cannot hold,
// or an integer progress token beyond 2^53, is handed to go-sdk as a stand-in
// string, and the reply (JSON or the POST's SSE stream) is written with what the
// client sent. A notifications/cancelled in a later POST of the same MCP session
// names the call by the id as sent, and is rewritten to the stand-in while the call
// is in flight. A call whose id is null, and on an MCP session a call whose id is
// that of one still in flight there, are refused with -32600 as on stdio; a
// sessionless POST is its own exchange, and ids of different clients may meet there.

// httpIDs hands out stand-ins and remembers, per MCP session, the calls in flight
// under one.
type httpIDs struct {
	prefix string
	next   atomic.Uint64

	mu sync.Mutex
	// inFlight maps session id + "\x00" + idKey to the stand-in id of each call in
	// flight on an MCP session ("" for one that went to go-sdk as sent).
	inFlight map[string]string
}

func newHTTPIDs() *httpIDs {
	return &httpIDs{prefix: standInPrefix(), inFlight: map[string]string{}}
}

// restorer maps the stand-ins of one POST back to what its client sent.
type restorer struct {
	values map[string]json.RawMessage // stand-in → id or token as sent
}

func (h *httpIDs) newStandIn() string {
	return h.prefix + "h" + strconv.FormatUint(h.next.Add(1), 10)
}

// refusal is a call answered -32600 before go-sdk sees it, with id (nil: null).
type refusal struct {
	id  json.RawMessage
	err error
}

// reply is the refusal's JSON-RPC error response.
func (f *refusal) reply() []byte {
	id := f.id
	if id == nil {
		id = json.RawMessage("null")
	}
	out, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id,
		"error": map[string]any{"code": jsonrpc.CodeInvalidRequest, "message": f.err.Error()}})
	return out
}

// rewrite returns body with stand-ins where go-sdk would change an id or a progress
// token, the restorer for its reply (nil when nothing was replaced), the function
// that forgets its call once the POST is answered, and a refusal for a call with a
// null id or, on an MCP session, an id in flight there.
func (h *httpIDs) rewrite(session string, body []byte) ([]byte, *restorer, func(), *refusal) {
	nothing := func() {}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' || !json.Valid(trimmed) {
		// A batch or a malformed body goes to go-sdk as it came.
		return body, nil, nothing, nil
	}
	r := &restorer{values: map[string]json.RawMessage{}}
	msg := trimmed
	raw, start, end, hasID := member(msg, "id")
	method, _, _, isRequest := member(msg, "method")
	if !isRequest {
		return body, nil, nothing, nil
	}
	name, _ := jsonscan.PlainString(method)
	notification := strings.HasPrefix(name, "notifications/")
	var inFlight string // this POST's call in h.inFlight, if it is there
	switch key, ok := idKey(raw); {
	case !hasID || !ok || notification && string(raw) == "null":
	case string(raw) == "null":
		return body, nil, nothing, &refusal{err: errNullID}
	case session != "" || !heldExactly(raw):
		standIn := ""
		if !heldExactly(raw) {
			standIn = h.newStandIn()
			r.values[standIn] = bytes.Clone(raw)
			quoted, _ := json.Marshal(standIn)
			msg = splice(msg, start, end, quoted)
		}
		if session == "" {
			break // sessionless: its own exchange, which no later POST cancels by id
		}
		h.mu.Lock()
		_, duplicate := h.inFlight[session+"\x00"+key]
		if !duplicate {
			inFlight = session + "\x00" + key
			h.inFlight[inFlight] = standIn
		}
		h.mu.Unlock()
		if duplicate {
			return body, nil, nothing, &refusal{id: bytes.Clone(raw), err: errDuplicateID}
		}
	}
	if params, pStart, pEnd, ok := member(msg, "params"); ok {
		if token, tStart, tEnd, found := progressToken(params); found && needsStandIn(token) {
			standIn := h.newStandIn()
			r.values[standIn] = bytes.Clone(token)
			quoted, _ := json.Marshal(standIn)
			msg = splice(msg, pStart, pEnd, splice(params, tStart, tEnd, quoted))
		}
	}
	if name == "notifications/cancelled" {
		msg = h.cancelled(session, msg)
	}
	done := func() {
		if inFlight != "" {
			h.mu.Lock()
			delete(h.inFlight, inFlight)
			h.mu.Unlock()
		}
	}
	if len(r.values) == 0 {
		r = nil
	}
	return msg, r, done, nil
}

// cancelled rewrites the requestId of a notifications/cancelled to the stand-in of
// the call it names in this MCP session, if that call went to go-sdk under one.
func (h *httpIDs) cancelled(session string, msg []byte) []byte {
	params, pStart, pEnd, ok := member(msg, "params")
	if !ok {
		return msg
	}
	raw, start, end, found := member(params, "requestId")
	if !found {
		return msg
	}
	key, ok := idKey(raw)
	if !ok {
		return msg
	}
	h.mu.Lock()
	standIn := h.inFlight[session+"\x00"+key]
	h.mu.Unlock()
	if standIn == "" {
		return msg
	}
	quoted, _ := json.Marshal(standIn)
	return splice(msg, pStart, pEnd, splice(params, start, end, quoted))
}

// heldExactly reports an id go-sdk writes back byte for byte: an integer it holds
// exactly, or a string without escapes (go-sdk would write "a\u0062" as "ab").
func heldExactly(raw json.RawMessage) bool {
	if !naturalID(raw).IsValid() {
		return false
	}
	_, plain := jsonscan.PlainString(raw)
	return raw[0] != '"' || plain
}

// message restores the id and the progress token of one outgoing JSON-RPC message.
func (r *restorer) message(msg []byte) []byte {
	if raw, start, end, ok := member(msg, "id"); ok {
		if s, plain := jsonscan.PlainString(raw); plain && r.values[s] != nil {
			msg = splice(msg, start, end, r.values[s])
		}
	}
	if params, pStart, pEnd, ok := member(msg, "params"); ok {
		if raw, start, end, found := member(params, "progressToken"); found {
			if s, plain := jsonscan.PlainString(raw); plain && r.values[s] != nil {
				msg = splice(msg, pStart, pEnd, splice(params, start, end, r.values[s]))
			}
		}
	}
	return msg
}

// restoringWriter writes a POST's reply with the stand-ins of its restorer undone:
// a JSON body whole when the handler is done, an SSE stream line by line.
type restoringWriter struct {
	http.ResponseWriter
	r       *restorer
	sse     bool
	decided bool
	pending []byte // SSE: the start of a line not yet ended; JSON: the whole body
}

func (w *restoringWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *restoringWriter) decide() {
	if w.decided {
		return
	}
	w.decided = true
	w.sse = strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream")
	// The restored ids have other lengths than the stand-ins.
	w.Header().Del("Content-Length")
}

func (w *restoringWriter) WriteHeader(code int) {
	w.decide()
	w.ResponseWriter.WriteHeader(code)
}

func (w *restoringWriter) Write(p []byte) (int, error) {
	w.decide()
	w.pending = append(w.pending, p...)
	if !w.sse {
		return len(p), nil
	}
	cut := bytes.LastIndexByte(w.pending, '\n')
	if cut < 0 {
		return len(p), nil
	}
	if _, err := w.ResponseWriter.Write(w.restoreLines(w.pending[:cut+1])); err != nil {
		return 0, err
	}
	w.pending = append(w.pending[:0], w.pending[cut+1:]...)
	return len(p), nil
}

func (w *restoringWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// finish writes what is held back: a JSON body, or an SSE line without its newline.
func (w *restoringWriter) finish() {
	if len(w.pending) == 0 {
		return
	}
	if w.sse {
		w.ResponseWriter.Write(w.restoreLines(w.pending))
	} else if body := bytes.TrimSpace(w.pending); json.Valid(body) {
		w.ResponseWriter.Write(w.r.message(body))
	} else {
		w.ResponseWriter.Write(w.pending)
	}
	w.pending = nil
}

// restoreLines restores the data lines of SSE events.
func (w *restoringWriter) restoreLines(lines []byte) []byte {
	var out bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(lines))
	sc.Buffer(nil, len(lines)+1)
	for sc.Scan() {
		line := sc.Bytes()
		if payload, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			trimmed := bytes.TrimLeft(payload, " ")
			if json.Valid(trimmed) {
				out.WriteString("data: ")
				out.Write(w.r.message(trimmed))
				out.WriteByte('\n')
				continue
			}
		}
		out.Write(line)
		out.WriteByte('\n')
	}
	if !bytes.HasSuffix(lines, []byte("\n")) && out.Len() > 0 {
		out.Truncate(out.Len() - 1)
	}
	return out.Bytes()
}
