package server

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/iota-uz/repl-mcp/internal/randjson"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestWireResultWritesWhatGoSDKWrites: a tools/call result written field by field
// (toolResult) is the JSON go-sdk's own encoding gives, with isError always there,
// for every shape the tools make; a result with anything toolResult does not
// write keeps go-sdk's encoding. toolResult must not be a json.Marshaler: that is
// what spares encoding/json its scan of the whole result.
func TestWireResultWritesWhatGoSDKWrites(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n....")
	for _, c := range []struct {
		name string
		res  *mcp.CallToolResult
	}{
		{"text only", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok <&> \u2028"}}}},
		{"empty content", &mcp.CallToolResult{Content: []mcp.Content{}}},
		{"error", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Error: x"}}, IsError: true}},
		{"structured", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "{}"}},
			StructuredContent: json.RawMessage(`{"a":[1,2],"b":"\u003c"}`)}},
		{"a range", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "{}"}},
			StructuredContent: rangeJSON{Encoding: "base64", Content: []byte{0, 1, 2, 250}}}},
		{"images", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "shown"},
			&mcp.ImageContent{MIMEType: "image/png", Data: png}, &mcp.ImageContent{MIMEType: "image/png"}}}},
		{"meta", &mcp.CallToolResult{Meta: mcp.Meta{"k": "v"}, Content: []mcp.Content{&mcp.TextContent{Text: "x"}}}},
		{"annotated block", &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.TextContent{Text: "x", Annotations: &mcp.Annotations{Priority: 0.5}},
			&mcp.ImageContent{MIMEType: "image/png", Data: png, Meta: mcp.Meta{"m": 1.0}}}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := wireResult(c.res)
			if _, ok := w.(*toolResult); !ok {
				t.Fatalf("wireResult gave %T, want *toolResult", w)
			}
			if _, ok := w.(json.Marshaler); ok {
				t.Fatal("toolResult is a json.Marshaler")
			}
			got, want := decodeResult(t, w), decodeResult(t, flaggedResult{c.res})
			if !reflect.DeepEqual(got, want) {
				t.Errorf("written as\n%v\nwant go-sdk's\n%v", got, want)
			}
			if _, ok := got["isError"].(bool); !ok {
				t.Errorf("no boolean isError: %v", got)
			}
		})
	}
	asking := &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"q": &mcp.ElicitParams{Message: "?"}}}
	if _, ok := wireResult(asking).(flaggedResult); !ok {
		t.Errorf("a result with input requests is not left to go-sdk's encoding")
	}
}

func decodeResult(t *testing.T, r mcp.Result) map[string]any {
	t.Helper()
	raw, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return v
}

// TestResultTypeOnTheWire: go-sdk marks a result complete for a 2026-07-28 client
// and not for an earlier one; the result as written keeps that.
func TestResultTypeOnTheWire(t *testing.T) {
	for _, c := range []struct {
		protocol string
		want     any
	}{{"2026-07-28", "complete"}, {"", nil}} {
		w := startWireAs(t, wireClient{name: "wire-test", protocol: c.protocol})
		reply := w.request("tools/call", map[string]any{"name": "python_health", "arguments": map[string]any{}})
		if got := reply.result()["resultType"]; got != c.want {
			t.Errorf("protocol %q: resultType %v, want %v", c.protocol, got, c.want)
		}
	}
}

// TestWireResultOfRandomResults: random results (text with characters that need
// escaping, images of random bytes, structuredContent as encoded JSON or as a
// value, isError either way) are written as go-sdk writes them.
func TestWireResultOfRandomResults(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 8))
	for range 2000 {
		r := &mcp.CallToolResult{IsError: rng.IntN(2) == 0, Content: []mcp.Content{}}
		for range rng.IntN(4) {
			if rng.IntN(3) == 0 {
				data := make([]byte, rng.IntN(40))
				for i := range data {
					data[i] = byte(rng.IntN(256))
				}
				r.Content = append(r.Content, &mcp.ImageContent{MIMEType: "image/png", Data: data})
			} else {
				r.Content = append(r.Content, &mcp.TextContent{Text: randjson.String(rng)})
			}
		}
		switch v := randjson.Value(rng, 3); rng.IntN(3) {
		case 0:
			raw, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			r.StructuredContent = json.RawMessage(raw)
		case 1:
			r.StructuredContent = map[string]any{"value": v}
		}
		got, want := decodeResult(t, wireResult(r)), decodeResult(t, flaggedResult{r})
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("written as\n%v\nwant go-sdk's\n%v", got, want)
		}
	}
}
