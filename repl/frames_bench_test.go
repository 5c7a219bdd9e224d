package repl

// Benchmarks of the worker protocol's fast paths against the plain path each
// replaces, on the same frames (`make bench-micro`; docs/design.md, "Fast paths,
// and what each saves"). Each pair is <Name>/fast and <Name>/plain.

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
)

// chunkFrame is an artifact.append frame as the worker sends it: a full chunk of
// 262,144 raw bytes as base64.
func chunkFrame() []byte {
	raw := bytes.Repeat([]byte{0, 0xfb, 0xff, 'x', 'y', 'z', 0x80, 7}, 262144/8)
	return []byte(`{"type":"rpc","id":"0123456789abcdef0123456789abcdef","run_id":"fedcba9876543210fedcba9876543210","op":"artifact.append","params":{"upload_id":"u1","offset":262144},"data":"` +
		base64.StdEncoding.EncodeToString(raw) + `"}` + "\n")
}

func BenchmarkDecodeDataFrame(b *testing.B) {
	line := chunkFrame()
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(line)))
		for b.Loop() {
			if _, ok := decodeDataFrame(line); !ok {
				b.Fatal("declined")
			}
		}
	})
	b.Run("plain", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(line)))
		for b.Loop() {
			var f inFrame
			if err := json.Unmarshal(line, &f); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkResultLine: an echo call's reply, and a downstream envelope near the
// frame bound.
func BenchmarkResultLine(b *testing.B) {
	big := `{"content":[{"type":"text","text":"` + strings.Repeat("lorem ipsum ", 75000) + `"}],"isError":false}`
	for _, c := range []struct{ name, result string }{
		{"echo", `{"content":[{"type":"text","text":"hello"}],"structuredContent":{"text":"hello"},"isError":false}`},
		{"900KB", big},
	} {
		reply := rpcResultFrame{Type: "rpc_result", ID: "0123456789abcdef0123456789abcdef", Result: json.RawMessage(c.result)}
		b.Run(c.name+"/fast", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(c.result)))
			for b.Loop() {
				if _, ok := resultLine(reply); !ok {
					b.Fatal("declined")
				}
			}
		})
		b.Run(c.name+"/plain", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(c.result)))
			for b.Loop() {
				if _, err := json.Marshal(reply); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
