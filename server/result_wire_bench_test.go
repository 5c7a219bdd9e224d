package server

// The benchmark of the tools/call result's fast path against the plain path it
// replaces (`make bench-micro`; docs/design.md, "Fast paths, and what each saves"):
// <Name>/fast and <Name>/plain.

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkWireResult: a tools/call result encoded as toolResult (fast) and by
// go-sdk's MarshalJSON with isError added (plain): a trivial cell's, a cell's
// 400 KB structuredContent, and a 64 KiB base64 artifact range.
func BenchmarkWireResult(b *testing.B) {
	stdout := strings.Repeat("0123456789 ", 36000)
	structured, err := json.Marshal(map[string]any{"ok": true, "stdout": stdout, "stderr": "", "elapsed_ms": 1})
	if err != nil {
		b.Fatal(err)
	}
	raw := make([]byte, 64<<10)
	for i := range raw {
		raw[i] = byte(i * 7)
	}
	for _, c := range []struct {
		name string
		res  *mcp.CallToolResult
	}{
		{"cell", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello\n"}},
			StructuredContent: json.RawMessage(`{"ok":true,"stdout":"hello\n","stderr":"","elapsed_ms":1}`)}},
		{"400KB", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: stdout}},
			StructuredContent: json.RawMessage(structured)}},
		{"range64KiB", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", 8<<10)}},
			StructuredContent: rangeJSON{Encoding: "base64", Content: raw, Length: int64(len(raw))}}},
	} {
		b.Run(c.name+"/fast", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := json.Marshal(wireResult(c.res)); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/plain", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := json.Marshal(flaggedResult{c.res}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
