package transport

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/iota-uz/repl-mcp/internal/randjson"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// decodeLine must read every line as go-sdk's decoder does: the same message, or an
// error where go-sdk has one.
func TestDecodeLineMatchesGoSDK(t *testing.T) {
	lines := []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"execute_python","arguments":{"code":"1 + 1"}}}`,
		`{"jsonrpc":"2.0","id":"a-b","method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":2.0,"method":"ping","params":null}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":null,"method":"notifications/cancelled","params":{"requestId":3}}`,
		`{"jsonrpc":"2.0","id":1,"method":""}`,
		`{"jsonrpc":"2.0","id":7,"result":{"roots":[]}}`,
		`{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"no"}}`,
		`{"jsonrpc":"1.0","id":1,"method":"ping"}`,
		`{"JSONRPC":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"Method":"ping"}`,
		`{"jsonrpc":"2.0","id":[1],"method":"ping"}`,
		`{"jsonrpc":"2.0","id":true,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"method":5}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping","extra":1}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping"} trailing`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
		`not json`,
		`{"jsonrpc":"2.0","id":1,"method":"ping","params":` + strings.Repeat("[", 1001) + strings.Repeat("]", 1001) + `}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping","params":` + strings.Repeat("[", 990) + strings.Repeat("]", 990) + `}`,
	}
	for _, line := range lines {
		want, wantErr := jsonrpc.DecodeMessage([]byte(line))
		got, _, err := decodeLine([]byte(line))
		if (err != nil) != (wantErr != nil) {
			t.Errorf("%.80s: error %v, go-sdk's %v", line, err, wantErr)
			continue
		}
		if err == nil && !reflect.DeepEqual(normal(got), normal(want)) {
			t.Errorf("%.80s: decoded %#v, go-sdk %#v", line, got, want)
		}
	}
}

// normal makes a message comparable: params as compact bytes, an empty slice as nil.
func normal(m jsonrpc.Message) jsonrpc.Message {
	if r, ok := m.(*jsonrpc.Request); ok {
		c := *r
		if len(c.Params) == 0 {
			c.Params = nil
		}
		return &c
	}
	return m
}

// TestDecodeLineRawID: the raw id decodeLine reports is the member go-sdk reads:
// "id" exactly, by case, the last of several, on both decoding paths.
func TestDecodeLineRawID(t *testing.T) {
	for line, want := range map[string]string{
		`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`:                      `1.5`,
		`{"jsonrpc":"2.0","id":1.5,"method":"ping","extra":1}`:            `1.5`,
		`{"jsonrpc":"2.0","ID":7,"method":"ping","extra":1}`:              ``,
		`{"jsonrpc":"2.0","id":1,"id":"two","method":"ping","extra":1}`:   `"two"`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`:          ``,
		`{"jsonrpc":"2.0","method":"notifications/initialized","x":null}`: ``,
	} {
		msg, raw, err := decodeLine([]byte(line))
		if err != nil {
			t.Errorf("%s: %v", line, err)
			continue
		}
		if string(raw) != want {
			t.Errorf("%s: raw id %q, want %q", line, raw, want)
		}
		req, _ := msg.(*jsonrpc.Request)
		if want == "" && req != nil && req.ID.IsValid() {
			t.Errorf("%s: go-sdk reads id %v where the raw id is none", line, req.ID.Raw())
		}
	}
}

// TestDecodeLineMutated: the lines of TestDecodeLineMatchesGoSDK's kind with bytes
// replaced, inserted or removed, many times over, read as go-sdk reads them.
func TestDecodeLineMutated(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 3))
	alphabet := []byte(`{}[],:"\ ` + "\t\n" + `0123456789.-eE+truefalsnijdmpIDMJ` + "\xff\xc3\xa9")
	seeds := []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"execute_python","arguments":{"code":"1 + 1"}}}`,
		`{"jsonrpc":"2.0","id":"a-b","method":"tools/list"}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3,"reason":"x"}}`,
		`{"jsonrpc":"2.0","id":7,"result":{"roots":[]}}`,
		`{"id":-1.5e3,"method":"ping","params":[1,"\u00e9",null],"jsonrpc":"2.0"}`,
	}
	taken := 0
	for i := range 20000 {
		line := []byte(seeds[i%len(seeds)])
		for range 1 + rng.IntN(3) {
			at := rng.IntN(len(line) + 1)
			c := alphabet[rng.IntN(len(alphabet))]
			switch rng.IntN(3) {
			case 0:
				if at < len(line) {
					line[at] = c
				}
			case 1:
				line = append(line[:at], append([]byte{c}, line[at:]...)...)
			default:
				if at < len(line) {
					line = append(line[:at], line[at+1:]...)
				}
			}
		}
		want, wantErr := jsonrpc.DecodeMessage(line)
		got, _, err := decodeLine(line)
		if _, _, ok := decodeRequest(line); ok {
			taken++
		}
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("%q: error %v, go-sdk's %v", line, err, wantErr)
		}
		if err == nil && !reflect.DeepEqual(normal(got), normal(want)) {
			t.Fatalf("%q: decoded %#v, go-sdk %#v", line, got, want)
		}
	}
	if taken < 2000 {
		t.Errorf("only %d of the mutated lines were decoded by the fast path", taken)
	}
}

// TestEncodeLineMatchesGoSDKOnManyResponses: a successful response assembled
// around its result is the line go-sdk's encoder writes, for ids of every kind
// and random compact results (as go-sdk encodes them, with and without HTML
// escaping); an error response, and one with the client's raw id, keep
// go-sdk's encoding with the id spliced in.
func TestEncodeLineMatchesGoSDKOnManyResponses(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 4))
	ids := []any{float64(0), float64(-1), float64(7), float64(1 << 53), "", "a<b>&c", "é\u2028\"\\", "\x7f\t"}
	for i := range 3000 {
		id, err := jsonrpc.MakeID(ids[i%len(ids)])
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(i%2 == 0)
		if err := enc.Encode(randjson.Value(rng, 4)); err != nil {
			t.Fatal(err)
		}
		resp := &jsonrpc.Response{ID: id, Result: bytes.TrimRight(buf.Bytes(), "\n")}
		want, err := jsonrpc.EncodeMessage(resp)
		if err != nil {
			t.Fatal(err)
		}
		got, err := encodeLine(resp, nil)
		if err != nil || string(got) != string(want)+"\n" {
			t.Fatalf("encodeLine = %q, %v; go-sdk writes %q", got, err, want)
		}
	}
	id, _ := jsonrpc.MakeID(float64(3))
	for _, resp := range []*jsonrpc.Response{
		{ID: id, Error: &jsonrpc.Error{Code: -32602, Message: "bad <x>"}},
		{ID: id, Result: json.RawMessage(`{"a":1}`)},
	} {
		got, err := encodeLine(resp, json.RawMessage(`1.50`))
		var m map[string]json.RawMessage
		if err != nil || json.Unmarshal(got, &m) != nil || string(m["id"]) != `1.50` {
			t.Errorf("encodeLine with the raw id 1.50 = %s, %v", got, err)
		}
	}
}
