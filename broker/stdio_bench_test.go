package broker

// Benchmarks of the broker's stdio transport fast paths against go-sdk's own
// decoder and encoder, on the same messages (`make bench-micro`; docs/design.md,
// "Fast paths, and what each saves"). Each pair is <Name>/fast and <Name>/plain.

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// BenchmarkDecodeResult: a peer's reply to an echo call, and one of 256 KiB.
func BenchmarkDecodeResult(b *testing.B) {
	for _, c := range []struct{ name, line string }{
		{"echo", `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hello"}],"structuredContent":{"text":"hello"},"isError":false}}`},
		{"256KiB", `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"` + strings.Repeat("lorem ipsum ", 256<<10/12) + `"}],"isError":false}}`},
	} {
		line := []byte(c.line)
		b.Run(c.name+"/fast", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := decodeResult(line); !ok {
					b.Fatal("declined")
				}
			}
		})
		b.Run(c.name+"/plain", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := jsonrpc.DecodeMessage(line); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEncodePeerMessage: a tools/call request for an echo call, and one
// whose arguments are 256 KiB.
func BenchmarkEncodePeerMessage(b *testing.B) {
	id, err := jsonrpc.MakeID(float64(7))
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct{ name, params string }{
		{"echo", `{"name":"echo","arguments":{"text":"hello"},"_meta":{"progressToken":3}}`},
		{"256KiB", `{"name":"echo","arguments":{"text":"` + strings.Repeat("lorem ipsum ", 256<<10/12) + `"}}`},
	} {
		req := &jsonrpc.Request{ID: id, Method: "tools/call", Params: json.RawMessage(c.params)}
		b.Run(c.name+"/fast", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := encodePeerMessage(req); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/plain", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := jsonrpc.EncodeMessage(req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
