package server

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
)

func TestTmpDeclareCost(t *testing.T) {
	tools := (&Server{}).tools()
	start := time.Now()
	var schemas []*jsonschema.Schema
	for _, tl := range tools {
		s, _ := schemaOf(tl.handler.paramsType(), false)
		schemas = append(schemas, s)
		o, _ := outputSchema(tl.output)
		schemas = append(schemas, o)
	}
	build := time.Since(start)
	start = time.Now()
	n := 0
	for _, s := range schemas {
		b, _ := publish(s)
		n += len(b)
	}
	marshal := time.Since(start)
	start = time.Now()
	for _, s := range schemas {
		b, _ := json.Marshal(s)
		var m any
		json.Unmarshal(b, &m)
		json.Marshal(m)
	}
	t.Logf("build %v marshal %v (%d bytes) remarshal-as-map %v", build, marshal, n, time.Since(start))
	start = time.Now()
	jsonschema.ForType(reflect.TypeFor[healthReport](), nil)
	t.Logf("one For %v", time.Since(start))
}
