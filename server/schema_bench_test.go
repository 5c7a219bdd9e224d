package server

// The benchmark of publish against the plain path it replaces (`make bench-micro`;
// docs/design.md, "Fast paths, and what each saves"): <Name>/fast and <Name>/plain.

import (
	"encoding/json"
	"testing"
)

// BenchmarkPublishSchemas: every tool's input and output schema written as JSON, once
// each, as building a server does: by publish (fast) and by jsonschema.Schema's own
// MarshalJSON (plain).
func BenchmarkPublishSchemas(b *testing.B) {
	schemas := toolSchemas(b)
	b.Run("tools/fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, s := range schemas {
				if _, err := publish(s); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("tools/plain", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, s := range schemas {
				if _, err := json.Marshal(s); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
