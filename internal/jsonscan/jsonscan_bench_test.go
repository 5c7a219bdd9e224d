package jsonscan

// Benchmarks of the top-level walk against encoding/json's decoding of the same
// object into raw members, and of PlainString against decoding a string
// (`make bench-micro`; docs/design.md, "Fast paths, and what each saves").

import (
	"encoding/json"
	"testing"
)

// BenchmarkMembers: a peer's reply to an echo call, the object the broker's
// transport walks for every response.
func BenchmarkMembers(b *testing.B) {
	line := []byte(`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hello"}],"structuredContent":{"text":"hello"},"isError":false}}`)
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			n := 0
			Members(line, func(_, _ []byte) bool { n++; return true })
			if n != 3 {
				b.Fatal(n)
			}
		}
	})
	b.Run("plain", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(line, &m); err != nil || len(m) != 3 {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkPlainString(b *testing.B) {
	raw := []byte(`"execute_python"`)
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := PlainString(raw); !ok {
				b.Fatal("declined")
			}
		}
	})
	b.Run("plain", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				b.Fatal(err)
			}
		}
	})
}
