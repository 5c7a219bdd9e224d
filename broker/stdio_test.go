package broker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/iota-uz/repl-mcp/internal/testwait"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// TestStdioResultDecodedAsGoSDKDoes holds the response fast path to go-sdk's own
// decoder: what it decodes, go-sdk decodes to the same Response; everything else
// it leaves to go-sdk.
func TestStdioResultDecodedAsGoSDKDoes(t *testing.T) {
	fast := []string{
		`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"x"}],"isError":false}}`,
		`{"result":{},"id":"abc","jsonrpc":"2.0"}`,
		`{"jsonrpc":"2.0","id":12345678901,"result":{"a":{"b":[1,2,{"c":"\u00e9\n"}]}}}`,
		`{"jsonrpc":"2.0","id":1.0,"result":{"structuredContent":{"text":"x"}}}`,
		`{ "id" : -3 , "jsonrpc" : "2.0" , "result" : { "s" : "}]\"{[,:" , "n" : [ 1 , { } ] } }`,
		`{"jsonrpc":"2.0","id":9007199254740993,"result":{}}`,
		`{"jsonrpc":"2.0","id":1e2,"result":{"a":"b\\"}}`,
		`{"jsonrpc":"2.0","id":"é-1","result":{"é":"\u00e9"}}`,
	}
	for _, line := range fast {
		got, ok := decodeResult([]byte(line))
		if !ok {
			t.Errorf("decodeResult(%s) declined", line)
			continue
		}
		want, err := jsonrpc.DecodeMessage([]byte(line))
		if err != nil {
			t.Fatalf("go-sdk cannot decode %s: %v", line, err)
		}
		if !reflect.DeepEqual(jsonrpc.Message(got), want) {
			t.Errorf("decodeResult(%s) = %#v, go-sdk decodes %#v", line, got, want)
		}
	}
	slow := []string{
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad"}}`,
		`{"jsonrpc":"2.0","id":1,"result":{},"extra":1}`,
		`{"jsonrpc":"2.0","ID":1,"result":{}}`,
		`{"jsonrpc":"1.0","id":1,"result":{}}`,
		`{"jsonrpc":"2.0","id":null,"result":{}}`,
		`{"jsonrpc":"2.0","id":true,"result":{}}`,
		`{"jsonrpc":"2.0","id":1,"result":null}`,
		`{"jsonrpc":"2.0","id":1,"result":[1]}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{}}`,
		`{"jsonrpc":"2.0","id":1,"result":` + strings.Repeat(`{"a":`, 999) + `{}` + strings.Repeat(`}`, 999) + `}`,
		`[{"jsonrpc":"2.0","id":1,"result":{}}]`,
		`{"jsonrpc":"2.0","id":1,"result":{},"result":{}}`,
		`{"jsonrpc":"2.0","\u0069d":1,"result":{}}`,
		`{"jsonrpc":"2\u002e0","id":1,"result":{}}`,
		`{"jsonrpc":"2.0","id":"a\"b","result":{}}`,
		`{"jsonrpc":"2.0","id":1,"result":{}`,
		`{"jsonrpc":"2.0","id":1,"result":{}} {}`,
	}
	for _, line := range slow {
		if resp, ok := decodeResult([]byte(line)); ok {
			t.Errorf("decodeResult(%.80s) = %#v, want it left to go-sdk", line, resp)
		}
	}
}

func TestStdioLinesDecoded(t *testing.T) {
	msgs, err := decodePeerLine([]byte(`[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info"}}]`))
	if err != nil || len(msgs) != 2 {
		t.Fatalf("batch = %#v, %v", msgs, err)
	}
	if req, ok := msgs[1].(*jsonrpc.Request); !ok || req.Method != "notifications/message" || req.IsCall() {
		t.Errorf("batch's second message = %#v", msgs[1])
	}
	msgs, err = decodePeerLine([]byte(`{"jsonrpc":"2.0","id":"p1","method":"ping"}`))
	if req, ok := msgs[0].(*jsonrpc.Request); err != nil || !ok || req.Method != "ping" || req.ID.Raw() != "p1" {
		t.Errorf("a server's request = %#v, %v", msgs, err)
	}
	msgs, err = decodePeerLine([]byte(`{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"bad"}}`))
	var rpcErr *jsonrpc.Error
	if resp, ok := msgs[0].(*jsonrpc.Response); err != nil || !ok || !errors.As(resp.Error, &rpcErr) || rpcErr.Code != -32602 {
		t.Errorf("an error response = %#v, %v", msgs, err)
	}
	// go-sdk's decoder would take the first value of these lines and drop the rest.
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{}} x`,
		`{"jsonrpc":"2.0","id":1,"result":{}}{"jsonrpc":"2.0","id":2,"result":{}}`,
		`[]`,
		`{"jsonrpc":"2.0","id":1,"result":{}`,
	} {
		if msgs, err := decodePeerLine([]byte(line)); err == nil {
			t.Errorf("decodePeerLine(%s) = %#v, want an error", line, msgs)
		}
	}
}

// TestStdioReplyTooDeepFailsItsRequestOnly: a response nested deeper than go-sdk
// decodes becomes an error response to its own request, alone or in a batch, where
// go-sdk's refusal ended the connection; one at the limit is go-sdk's to decode; a
// request or notification that deep still ends the connection (it names no call).
func TestStdioReplyTooDeepFailsItsRequestOnly(t *testing.T) {
	nest := func(n int) string { return strings.Repeat(`[`, n) + strings.Repeat(`]`, n) }
	// The message and its result object are two levels.
	atLimit := `{"jsonrpc":"2.0","id":7,"result":{"v":` + nest(peerMaxDepth-2) + `}}`
	msgs, err := decodePeerLine([]byte(atLimit))
	if resp, ok := msgs[0].(*jsonrpc.Response); err != nil || !ok || resp.Error != nil || len(resp.Result) != len(atLimit)-len(`{"jsonrpc":"2.0","id":7,"result":}`) {
		t.Fatalf("a response at the limit: %v (%T)", err, msgs[0])
	}
	want := "MCP server's reply nests deeper than 1000 levels, past what the broker decodes; external outcome is unknown, request was not retried"
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":7,"result":{"v":` + nest(peerMaxDepth-1) + `}}`,
		`{"result":{"s":"[[[","v":` + nest(5000) + `},"id":"seven","jsonrpc":"2.0"}`,
		`{"jsonrpc":"2.0","id":7,"error":{"code":1,"message":"x","data":` + nest(peerMaxDepth) + `}}`,
		`[{"jsonrpc":"2.0","id":6,"result":{}},{"jsonrpc":"2.0","id":7,"result":` + nest(peerMaxDepth) + `}]`,
	} {
		msgs, err := decodePeerLine([]byte(line))
		if err != nil {
			t.Errorf("decodePeerLine(%.60s...) = %v, want an error response", line, err)
			continue
		}
		resp, ok := msgs[len(msgs)-1].(*jsonrpc.Response)
		var rpcErr *jsonrpc.Error
		if !ok || !errors.As(resp.Error, &rpcErr) || rpcErr.Code != codeReplyTooDeep || rpcErr.Message != want {
			t.Errorf("decodePeerLine(%.60s...) = %T, error %v", line, msgs[len(msgs)-1], resp.Error)
			continue
		}
		if id := resp.ID.Raw(); id != int64(7) && id != "seven" {
			t.Errorf("decodePeerLine(%.60s...) answers id %v", line, id)
		}
	}
	for _, line := range []string{
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"data":` + nest(peerMaxDepth) + `}}`,
		`{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage","params":{"data":` + nest(peerMaxDepth) + `}}`,
	} {
		if msgs, err := decodePeerLine([]byte(line)); err == nil {
			t.Errorf("decodePeerLine(%.60s...) = %T, want go-sdk's refusal", line, msgs[0])
		}
	}
	// Over a pipe: the connection reads on after the deep reply.
	conn, peer := pipeConn(t)
	go io.WriteString(peer, `{"jsonrpc":"2.0","id":1,"result":`+nest(2000)+"}\n"+`{"jsonrpc":"2.0","id":2,"result":{}}`+"\n")
	for _, id := range []int64{1, 2} {
		msg, err := conn.Read(t.Context())
		if resp, ok := msg.(*jsonrpc.Response); err != nil || !ok || resp.ID.Raw() != id {
			t.Fatalf("Read = %T, %v, want the response to %d", msg, err, id)
		}
	}
}

func TestNestingDepth(t *testing.T) {
	for doc, want := range map[string]int{
		`1`: 0, `[]`: 1, `{"a":[{}]}`: 3, `["[[[", "\"]]", {"\\": [[]]}]`: 4, `[[],[[]],[]]`: 3,
	} {
		if got := nestingDepth([]byte(doc)); got != want {
			t.Errorf("nestingDepth(%s) = %d, want %d", doc, got, want)
		}
	}
}

// pipeConn is a stdioConn over a real pipe, as a peer's stdout is; the test writes
// what the peer would.
func pipeConn(t *testing.T) (*stdioConn, *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	_, sink, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	conn, _ := (&stdioTransport{out: r, in: sink}).Connect(t.Context())
	t.Cleanup(func() { conn.Close() })
	return conn.(*stdioConn), w
}

func TestStdioConnReadsLines(t *testing.T) {
	conn, peer := pipeConn(t)
	big := `{"jsonrpc":"2.0","id":3,"result":{"t":"` + strings.Repeat("x", 200<<10) + `"}}`
	go func() {
		io.WriteString(peer, "\n  \r\n"+`{"jsonrpc":"2.0","id":1,"result":{}}`+"\r\n")
		io.WriteString(peer, `[{"jsonrpc":"2.0","id":2,"result":{}},{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}]`+"\n")
		io.WriteString(peer, big+"\n")
		io.WriteString(peer, `{"jsonrpc":"2.0","id":4,"result":{}}`) // the last line, no newline
		peer.Close()
	}()
	var ids []any
	for range 5 {
		msg, err := conn.Read(t.Context())
		if err != nil {
			t.Fatalf("Read after %v: %v", ids, err)
		}
		switch m := msg.(type) {
		case *jsonrpc.Response:
			ids = append(ids, m.ID.Raw())
			if m.ID.Raw() == int64(3) && len(m.Result) != len(big)-len(`{"jsonrpc":"2.0","id":3,"result":}`) {
				t.Errorf("a line past the read buffer lost bytes: result of %d bytes", len(m.Result))
			}
		case *jsonrpc.Request:
			ids = append(ids, m.Method)
		}
	}
	if want := []any{int64(1), int64(2), "notifications/tools/list_changed", int64(3), int64(4)}; !reflect.DeepEqual(ids, want) {
		t.Errorf("read %v, want %v", ids, want)
	}
	if msg, err := conn.Read(t.Context()); !errors.Is(err, io.EOF) {
		t.Errorf("Read at the end = %v, %v, want io.EOF", msg, err)
	}
}

func TestStdioConnRefusesALineOverTheLimit(t *testing.T) {
	conn, peer := pipeConn(t)
	go func() {
		io.WriteString(peer, `{"jsonrpc":"2.0","id":1,"result":{"t":"`+strings.Repeat("x", peerLineLimit)+`"}}`+"\n")
	}()
	if msg, err := conn.Read(t.Context()); !errors.Is(err, errPeerFrame) || err.Error() != "MCP peer frame exceeds 1 MiB" {
		t.Fatalf("Read of an over-long line = %#v, %v, want %q", msg, err, errPeerFrame)
	}
	conn, peer = pipeConn(t)
	atLimit := `{"jsonrpc":"2.0","id":1,"result":{"t":"`
	atLimit += strings.Repeat("x", peerLineLimit-len(atLimit)-len(`"}}`)-1) + `"}}`
	go io.WriteString(peer, atLimit+"\n")
	if _, err := conn.Read(t.Context()); err != nil {
		t.Fatalf("Read of a line of exactly 1 MiB with its newline: %v", err)
	}
}

func TestStdioConnCloseEndsABlockedRead(t *testing.T) {
	conn, peer := pipeConn(t)
	io.WriteString(peer, `{"jsonrpc":"2.0","id":1,"result":{}}`+"\n")
	reads := make(chan error, 2)
	go func() {
		for range 2 { // the line, then a Read that waits for more
			_, err := conn.Read(context.Background())
			reads <- err
		}
	}()
	timer := time.NewTimer(testwait.Bound(t, 10*time.Second))
	defer timer.Stop()
	for i := range 2 {
		if i == 1 {
			conn.Close()
		}
		select {
		case err := <-reads:
			if i == 0 && err != nil {
				t.Fatalf("first Read: %v", err)
			}
			if i == 1 && !errors.Is(err, io.EOF) {
				t.Errorf("Read ended by Close = %v, want io.EOF", err)
			}
		case <-timer.C:
			t.Fatalf("Read %d did not return (Close must end a Read waiting on the pipe)", i+1)
		}
	}
	if err := conn.Write(t.Context(), &jsonrpc.Request{Method: "ping"}); err == nil {
		t.Error("Write after Close succeeded")
	}
}

func TestStdioRequestsEncodedAsGoSDKDoes(t *testing.T) {
	params := []byte(`{"name":"echo","arguments":{"text":"x\u003c"}}`)
	id, _ := jsonrpc.MakeID(float64(41))
	sid, _ := jsonrpc.MakeID("s-1")
	msgs := []jsonrpc.Message{
		&jsonrpc.Request{ID: id, Method: "tools/call", Params: params},
		&jsonrpc.Request{ID: sid, Method: "tools/list"},
		&jsonrpc.Request{Method: "notifications/cancelled", Params: []byte(`{"requestId":41}`)},
		&jsonrpc.Request{ID: id, Method: "tools/call", Params: []byte("{\n\"name\":\"echo\"}")},
		&jsonrpc.Response{ID: sid, Result: []byte(`{}`)},
	}
	for _, msg := range msgs {
		line, err := encodePeerMessage(msg)
		if err != nil {
			t.Fatalf("encodePeerMessage(%#v): %v", msg, err)
		}
		if bytes.Count(line, []byte("\n")) != 1 || line[len(line)-1] != '\n' {
			t.Errorf("encodePeerMessage(%#v) = %q, not one line", msg, line)
		}
		back, err := jsonrpc.DecodeMessage(line[:len(line)-1])
		if err != nil {
			t.Fatalf("go-sdk cannot decode %q: %v", line, err)
		}
		want, _ := jsonrpc.EncodeMessage(msg)
		wantBack, _ := jsonrpc.DecodeMessage(want)
		if req, ok := wantBack.(*jsonrpc.Request); ok {
			req.Params = compact(t, req.Params)
			back.(*jsonrpc.Request).Params = compact(t, back.(*jsonrpc.Request).Params)
		}
		if !reflect.DeepEqual(back, wantBack) {
			t.Errorf("encodePeerMessage(%#v) = %q, decodes to %#v, go-sdk's line to %#v", msg, line, back, wantBack)
		}
	}
}

func compact(t *testing.T, raw []byte) []byte {
	t.Helper()
	if raw == nil {
		return nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func FuzzStdioResultDecodedAsGoSDKDoes(f *testing.F) {
	f.Add(`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"x"}]}}`)
	f.Add(`{ "id" : "s" , "jsonrpc" : "2.0" , "result" : { "s" : "}]\"{[,:" } }`)
	f.Add(`{"jsonrpc":"2.0","id":-1.5e3,"result":{"a":[{},[]]}}`)
	f.Fuzz(func(t *testing.T, line string) {
		if len(line) == 0 {
			return
		}
		got, ok := decodeResult([]byte(line))
		if !ok {
			return
		}
		want, err := jsonrpc.DecodeMessage([]byte(line))
		if err != nil || !reflect.DeepEqual(jsonrpc.Message(got), want) {
			t.Errorf("decodeResult(%q) = %#v, go-sdk decodes %#v, %v", line, got, want, err)
		}
	})
}

// TestStdioRandomRequestsEncodedAsGoSDKDoes: requests with ids, methods and
// params of every kind (params compact, as go-sdk encodes them, with and without
// HTML escaping) read back as go-sdk's own line reads.
func TestStdioRandomRequestsEncodedAsGoSDKDoes(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 7))
	strs := []string{"", "a", "<&>", `"`, `\`, "\n", "\x01", "é", "\u2028", "😀"}
	str := func() string {
		var s strings.Builder
		for range rng.IntN(4) {
			s.WriteString(strs[rng.IntN(len(strs))])
		}
		return s.String()
	}
	for i := range 3000 {
		var id jsonrpc.ID
		switch i % 3 {
		case 1:
			id, _ = jsonrpc.MakeID(float64(rng.IntN(1 << 40)))
		case 2:
			id, _ = jsonrpc.MakeID(str())
		}
		var params []byte
		if i%4 != 0 {
			var b bytes.Buffer
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(i%2 == 0)
			value := map[string]any{"name": str(), "arguments": map[string]any{str(): []any{str(), 1.5, nil, true}}}
			if err := enc.Encode(value); err != nil {
				t.Fatal(err)
			}
			params = bytes.TrimRight(b.Bytes(), "\n")
		}
		msg := &jsonrpc.Request{ID: id, Method: "tools/" + str(), Params: params}
		line, err := encodePeerMessage(msg)
		if err != nil {
			t.Fatalf("encodePeerMessage(%#v): %v", msg, err)
		}
		if bytes.Count(line, []byte("\n")) != 1 || line[len(line)-1] != '\n' {
			t.Fatalf("encodePeerMessage(%#v) = %q, not one line", msg, line)
		}
		back, err := jsonrpc.DecodeMessage(line[:len(line)-1])
		if err != nil {
			t.Fatalf("go-sdk cannot decode %q: %v", line, err)
		}
		want, err := jsonrpc.EncodeMessage(msg)
		if err != nil {
			t.Fatal(err)
		}
		wantBack, _ := jsonrpc.DecodeMessage(want)
		wantBack.(*jsonrpc.Request).Params = compact(t, wantBack.(*jsonrpc.Request).Params)
		back.(*jsonrpc.Request).Params = compact(t, back.(*jsonrpc.Request).Params)
		if !reflect.DeepEqual(back, wantBack) {
			t.Fatalf("encodePeerMessage(%#v) = %q, decodes to %#v, go-sdk's line to %#v", msg, line, back, wantBack)
		}
	}
}
