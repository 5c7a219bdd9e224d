package server

import (
	"reflect"
	"strings"
	"testing"

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
