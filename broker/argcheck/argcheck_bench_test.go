package argcheck

// Benchmarks of the validator's fast paths against the plain path each stands
// before, on the same arguments (`make bench-micro`; docs/design.md, "Fast paths,
// and what each saves"). Each pair is <Name>/fast and <Name>/plain.

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// echoSchema is the fixture server's echo tool's inputSchema (internal/mcpfixture),
// the shape most tools' schemas have.
const echoSchema = `{"additionalProperties":false,"properties":{"text":{"type":"string"}},"type":"object"}`

// BenchmarkFastSchema: a whole check of an echo call's arguments, with the
// schema's own check (fast) and with jsonschema-go alone (plain, the same
// compiled schema without it).
func BenchmarkFastSchema(b *testing.B) {
	args := json.RawMessage(`{"text":"hello"}`)
	for _, c := range []struct {
		name string
		fast bool
	}{{"fast", true}, {"plain", false}} {
		b.Run(c.name, func(b *testing.B) {
			v, schema := New(Config{}), NewSchema(json.RawMessage(echoSchema))
			ctx := context.Background()
			if err := v.CheckSchema(ctx, schema, args); err != nil {
				b.Fatal(err)
			}
			_, key := schema.prepared()
			if v.cache[key].fast == nil {
				b.Fatal("the echo schema has no fast check")
			}
			if !c.fast {
				v.cache[key].fast = nil
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := v.CheckSchema(ctx, schema, args); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

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
