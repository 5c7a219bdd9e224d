package argcheck

// A benchmark of the budget scan's walk of valid JSON against the token stream it
// stands in for, on the same arguments (`make bench-micro`; docs/design.md, "Fast
// paths, and what each saves"). Each pair is <Name>/fast and <Name>/plain.

import (
	"strings"
	"testing"
)

// BenchmarkScanBudget: the budget and duplicate-key scan of an echo call's
// arguments and of 200 KiB of them, walked on the bytes (fast) and streamed
// token by token (plain).
func BenchmarkScanBudget(b *testing.B) {
	var rows []string
	for i := range 2000 {
		rows = append(rows, `{"id":`+strings.Repeat("1", i%7+1)+`,"name":"row","tags":["a","b"],"score":0.5}`)
	}
	for _, c := range []struct{ name, doc string }{
		{"echo", `{"text":"hello"}`},
		{"200KiB", `{"rows":[` + strings.Join(rows, ",") + `],"text":"` + strings.Repeat("x", 64<<10) + `"}`},
	} {
		doc := []byte(c.doc)
		b.Run(c.name+"/fast", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(doc)))
			for b.Loop() {
				if err := scanBudget(doc, "arguments", MaxArgumentDepth, MaxArgumentNodes); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/plain", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(doc)))
			for b.Loop() {
				if err := scanStream(doc, "arguments", MaxArgumentDepth, MaxArgumentNodes); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
