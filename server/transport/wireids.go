package transport

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/iota-uz/repl-mcp/internal/jsonscan"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// JSON-RPC ids and progress tokens as the client wrote them (docs/contract.md §2.1).
// go-sdk holds an id as an int64 or a string, and a progress token as whatever
// encoding/json decodes it to (a float64 for a number): 12345678901234567890123,
// 9007199254740993 and 1.5 would come back as other numbers. Where repl-mcp owns
// the bytes of a connection (stdio; the bodies of HTTP POSTs and their replies), a
// call whose id go-sdk cannot hold is handed to go-sdk under a stand-in id of our
// own, and its reply written with the id as sent; a progress token that is an
// integer too large for a float64 is handed over as a stand-in string, and every
// notification that carries it is written with the token as sent.

// wireIDs maps stand-ins back to what the client sent, for the calls in flight.
type wireIDs struct {
	prefix string // random, so that no client's own id or token is a stand-in

	mu     sync.Mutex
	next   uint64
	calls  map[string]*wireCall       // by the client's id (idKey)
	byGo   map[any]*wireCall          // by the id go-sdk holds (ID.Raw)
	tokens map[string]json.RawMessage // stand-in progress token → token as sent
}

type wireCall struct {
	key   string          // idKey of the id as sent
	raw   json.RawMessage // the id as sent
	goID  jsonrpc.ID      // the id go-sdk holds
	token string          // stand-in progress token, or ""
}

func newWireIDs() *wireIDs {
	return &wireIDs{
		prefix: standInPrefix(),
		calls:  map[string]*wireCall{},
		byGo:   map[any]*wireCall{},
		tokens: map[string]json.RawMessage{},
	}
}

// standInPrefix starts every stand-in of one transport: random, so that no
// client's own id or token is one.
func standInPrefix() string { return "repl-mcp-" + rand.Text()[:12] + "-" }

// Why a call is refused before go-sdk sees it; each is a -32600 Invalid Request.
var (
	errNullID = errors.New(`Invalid Request: the request's "id" is null; nothing ran. ` +
		"Give every request a string or integer id, or leave the id out of a notification")
	errDuplicateID = errors.New("Invalid Request: a request with this id is still in flight; this one was " +
		"discarded and nothing ran. Give each request an id of its own")
)

// integerLiteral reports a JSON number written as an integer (no fraction, no
// exponent): -?(0|[1-9][0-9]*), by hand rather than a regexp compiled at every start.
func integerLiteral(b []byte) bool {
	if len(b) > 0 && b[0] == '-' {
		b = b[1:]
	}
	if len(b) == 0 || (b[0] == '0' && len(b) > 1) {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// idKey names an id as sent: the text of a string, the literal of a number.
func idKey(raw json.RawMessage) (string, bool) {
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return "", false
		}
		return "s" + s, true
	}
	return "n" + string(raw), true
}

// admit records a call whose id was sent as raw (trimmed JSON) and returns the id
// go-sdk is to hold and its params, rewritten when their progress token is one a
// float64 cannot hold. A null id or one still in flight is refused.
func (w *wireIDs) admit(raw, params json.RawMessage) (jsonrpc.ID, json.RawMessage, error) {
	if string(raw) == "null" {
		return jsonrpc.ID{}, params, errNullID
	}
	key, ok := idKey(raw)
	if !ok {
		return jsonrpc.ID{}, params, fmt.Errorf("invalid id %s", raw)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.calls[key] != nil {
		return jsonrpc.ID{}, params, errDuplicateID
	}
	call := &wireCall{key: key, raw: bytes.Clone(raw), goID: naturalID(raw)}
	if !call.goID.IsValid() || w.byGo[call.goID.Raw()] != nil {
		call.goID = stringID(w.standIn())
	}
	if token, start, end, found := progressToken(params); found && needsStandIn(token) {
		call.token = w.standIn()
		w.tokens[call.token] = bytes.Clone(token)
		quoted, _ := json.Marshal(call.token)
		params = splice(params, start, end, quoted)
	}
	w.calls[key] = call
	w.byGo[call.goID.Raw()] = call
	return call.goID, params, nil
}

// naturalID is the id go-sdk holds exactly as sent, or an invalid ID when it
// cannot: a number that is not an integer literal within ±2^53.
func naturalID(raw json.RawMessage) jsonrpc.ID {
	if raw[0] == '"' {
		var s string
		json.Unmarshal(raw, &s)
		return stringID(s)
	}
	if !integerLiteral(raw) {
		return jsonrpc.ID{}
	}
	// go-sdk decodes the requestId of a notifications/cancelled as a float64: an
	// id beyond 2^53 would cancel another call.
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || n > MaxExactFloat || n < -MaxExactFloat || strconv.FormatInt(n, 10) != string(raw) {
		return jsonrpc.ID{} // out of range, or -0
	}
	id, _ := jsonrpc.MakeID(float64(n)) // exact: |n| <= 2^53
	return id
}

func stringID(s string) jsonrpc.ID {
	id, _ := jsonrpc.MakeID(s)
	return id
}

func (w *wireIDs) standIn() string {
	w.next++
	return w.prefix + strconv.FormatUint(w.next, 10)
}

// answered forgets the call go-sdk answers with id and returns the id as sent
// (nil for an id repl-mcp never rewrote or never saw).
func (w *wireIDs) answered(id jsonrpc.ID) json.RawMessage {
	if !id.IsValid() {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	call := w.byGo[id.Raw()]
	if call == nil {
		return nil
	}
	delete(w.byGo, id.Raw())
	delete(w.calls, call.key)
	if call.token != "" {
		delete(w.tokens, call.token)
	}
	return call.raw
}

// cancelParams rewrites a notifications/cancelled's requestId to the id go-sdk
// holds for that call, which it returns (invalid for a call not in flight).
func (w *wireIDs) cancelParams(params json.RawMessage) (json.RawMessage, jsonrpc.ID) {
	raw, start, end, found := member(params, "requestId")
	if !found {
		return params, jsonrpc.ID{}
	}
	key, ok := idKey(raw)
	if !ok {
		return params, jsonrpc.ID{}
	}
	w.mu.Lock()
	call := w.calls[key]
	w.mu.Unlock()
	if call == nil {
		return params, jsonrpc.ID{}
	}
	encoded, err := json.Marshal(call.goID.Raw())
	if err != nil || bytes.Equal(encoded, raw) {
		return params, call.goID
	}
	return splice(params, start, end, encoded), call.goID
}

// progressParams rewrites the stand-in token of an outgoing notifications/progress
// to the token as sent.
func (w *wireIDs) progressParams(params json.RawMessage) json.RawMessage {
	raw, start, end, found := member(params, "progressToken")
	if !found {
		return params
	}
	standIn, ok := jsonscan.PlainString(raw)
	if !ok {
		return params
	}
	w.mu.Lock()
	token := w.tokens[standIn]
	w.mu.Unlock()
	if token == nil {
		return params
	}
	return splice(params, start, end, token)
}

// needsStandIn reports a progress token that go-sdk would change: an integer
// literal beyond what a float64 holds exactly. Any other token reaches go-sdk as
// sent (the handler echoes only strings and integers: see progress.go).
func needsStandIn(token json.RawMessage) bool {
	if !integerLiteral(token) {
		return false
	}
	n, err := strconv.ParseInt(string(token), 10, 64)
	return err != nil || n > MaxExactFloat || n < -MaxExactFloat
}

// MaxExactFloat is the largest integer up to which every integer is a float64: go-sdk
// holds an id or a progress token beyond it changed, unless a transport stands in.
const MaxExactFloat = 1 << 53

// progressToken finds params._meta.progressToken: its raw value and its offsets
// in params.
func progressToken(params json.RawMessage) (token json.RawMessage, start, end int, found bool) {
	meta, metaStart, _, ok := member(params, "_meta")
	if !ok {
		return nil, 0, 0, false
	}
	token, s, e, ok := member(meta, "progressToken")
	if !ok {
		return nil, 0, 0, false
	}
	return token, metaStart + s, metaStart + e, true
}

// member finds the member key of obj, valid JSON that need not be an object: its
// raw value and that value's offsets in obj.
func member(obj json.RawMessage, key string) (value json.RawMessage, start, end int, found bool) {
	obj = bytes.TrimRight(obj, " \t\r\n")
	if trimmed := bytes.TrimLeft(obj, " \t\r\n"); len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, 0, 0, false
	}
	jsonscan.Members(obj, func(k, v []byte) bool {
		if name, ok := jsonscan.PlainString(k); ok && name == key {
			value, found = v, true
			start = cap(obj) - cap(v)
			end = start + len(v)
			return false
		}
		return true
	})
	return value, start, end, found
}

// splice is data with data[start:end] replaced by value, in a new slice.
func splice(data []byte, start, end int, value []byte) []byte {
	out := make([]byte, 0, len(data)-(end-start)+len(value))
	out = append(out, data[:start]...)
	out = append(out, value...)
	return append(out, data[end:]...)
}
