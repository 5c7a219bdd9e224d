package transport

// Benchmarks of the stdio transport's fast paths against the plain path each
// replaces, on the same messages (`make bench-micro`; docs/design.md, "Fast paths,
// and what each saves"). Each pair is <Name>/fast and <Name>/plain.

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// callLine is a tools/call request as a client sends it for a trivial cell.
const callLine = `{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"execute_python","arguments":{"code":"print(\"hello\")"},"_meta":{"progressToken":42}}}`

func BenchmarkDecodeLine(b *testing.B) {
	line := []byte(callLine)
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := decodeLine(line); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("plain", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := jsonrpc.DecodeMessage(line); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// benchResults are tools/call results as go-sdk hands them to the transport,
// already encoded: a trivial cell's, and a cell's near the 1 MB line.
func benchResults() []struct {
	name   string
	result string
} {
	cell := `{"content":[{"type":"text","text":"hello\n"}],"structuredContent":{"ok":true,"stdout":"hello\n","stderr":"","elapsed_ms":1},"isError":false}`
	big := `{"content":[{"type":"text","text":"` + strings.Repeat("0123456789 ", 40000) + `"}],"structuredContent":{"ok":true,"stdout":"` + strings.Repeat("0123456789 ", 40000) + `"},"isError":false}`
	return []struct{ name, result string }{{"cell", cell}, {"880KB", big}}
}

func BenchmarkEncodeLine(b *testing.B) {
	id, err := jsonrpc.MakeID(float64(42))
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range benchResults() {
		resp := &jsonrpc.Response{ID: id, Result: json.RawMessage(c.result)}
		b.Run(c.name+"/fast", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(c.result)))
			for b.Loop() {
				if _, err := encodeLine(resp, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/plain", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(c.result)))
			for b.Loop() {
				if _, err := jsonrpc.EncodeMessage(resp); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
