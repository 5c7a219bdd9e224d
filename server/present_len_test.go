package server

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestJSONStringLen: the length present measures a text by, without encoding it, is
// json.Marshal's, for every byte alone and for random texts of every kind of
// character that it escapes (docs/contract.md §3.4's bound is measured in it).
func TestJSONStringLen(t *testing.T) {
	check := func(s string) {
		t.Helper()
		encoded, _ := json.Marshal(s)
		if got := jsonStringLen(s); got != len(encoded) {
			t.Fatalf("jsonStringLen(%q) = %d, json.Marshal makes %d bytes: %s", s, got, len(encoded), encoded)
		}
	}
	for b := range 256 {
		check(string([]byte{byte(b)}))
		check("a" + string([]byte{byte(b)}) + "z")
	}
	pieces := []string{"a", "é", "ж", "😀", "\u2028", "\u2029", "\ufffd", "<", ">", "&", "\"", "\\", "\n", "\t", "\x00", "\x1f", "\x7f",
		"\xff", "\xe2\x80", "\xf0\x9f\x98", "\b", "\f", "\r"}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		var b strings.Builder
		for range rng.IntN(40) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		check(b.String())
	}
}

// TestReplyLen: the length present measures a reply by is json.Marshal's of the
// CallToolResult, text blocks, image blocks, isError and structuredContent included.
func TestReplyLen(t *testing.T) {
	for _, c := range []struct {
		res        *mcp.CallToolResult
		structured []byte
	}{
		{&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: ""}}}, nil},
		{&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a<b>\n\xff"}, &mcp.TextContent{Text: "[ok; run R]"}}, IsError: true}, nil},
		{&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "x"}, &mcp.ImageContent{MIMEType: "image/png", Data: []byte("12345")},
			&mcp.ImageContent{MIMEType: "image/jpeg", Data: nil}}}, nil},
		{&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "4"}}, IsError: true}, []byte(`{"success":false,"error":"\u003cx\u003e"}`)}, // as encode makes it
	} {
		res := *c.res
		if c.structured != nil {
			res.StructuredContent = json.RawMessage(c.structured)
		}
		encoded, err := json.Marshal(&res)
		if err != nil {
			t.Fatal(err)
		}
		if got := replyLen(c.res, c.structured); got != len(encoded) {
			t.Errorf("replyLen = %d, json.Marshal makes %d bytes: %s", got, len(encoded), encoded)
		}
	}
}
