// Package compare measures jsonschema-go, which broker/argcheck validates with,
// against santhosh-tekuri/jsonschema v6 on the schemas argcheck meets: the
// fixture server's echo tool (the shape of most tools' schemas) and argcheck's
// test schema with patterns, formats and a $ref. It is a module of its own, under
// testdata, so that the server's go.mod does not carry v6 for it:
//
//	cd broker/argcheck/testdata/jsonschema-v6 && go test -bench . -benchmem -count 5
//
// TestSchemasV6Refuses shows the schemas v6 refuses that jsonschema-go takes, and
// the draft-07 format v6 asserts (docs/design.md, "Fast paths, and what each
// saves", says why argcheck keeps jsonschema-go).
package compare

import (
	"encoding/json"
	"strings"
	"testing"

	gojs "github.com/google/jsonschema-go/jsonschema"
	v6 "github.com/santhosh-tekuri/jsonschema/v6"
)

// echoSchema is internal/mcpfixture's echo tool's inputSchema.
const echoSchema = `{"additionalProperties":false,"properties":{"text":{"type":"string"}},"type":"object"}`

// toolSchema is broker/argcheck's test schema.
const toolSchema = `{
  "type": "object",
  "properties": {
    "name":  {"type": "string", "minLength": 2, "maxLength": 8, "pattern": "^[a-z]+$"},
    "count": {"type": "integer", "minimum": 1, "maximum": 10},
    "mode":  {"enum": ["fast", "slow"]},
    "tags":  {"type": "array", "items": {"type": "string"}, "maxItems": 3, "uniqueItems": true},
    "owner": {
      "type": "object",
      "properties": {"email": {"type": "string", "format": "email"}, "id": {"$ref": "#/$defs/id"}},
      "required": ["email"],
      "additionalProperties": false
    },
    "when":  {"type": "string", "format": "date-time"},
    "addr":  {"type": "string", "format": "ipv4"}
  },
  "required": ["name"],
  "additionalProperties": false,
  "$defs": {"id": {"type": "string", "format": "uuid"}}
}`

var cases = []struct {
	name, schema, args string
	valid              bool
}{
	{"echo_valid", echoSchema, `{"text":"hello"}`, true},
	{"echo_invalid", echoSchema, `{"text":5}`, false},
	{"tool_valid", toolSchema, `{"name":"abc","count":3,"mode":"fast","tags":["a","b"],"owner":{"email":"a@b.c","id":"1b4e28ba-2fa1-11d2-883f-0016d3cca427"},"when":"2024-01-02T03:04:05Z","addr":"1.2.3.4"}`, true},
	{"tool_invalid", toolSchema, `{"name":"abc","count":30,"mode":"fast"}`, false},
}

func compileGo(schema string) (*gojs.Resolved, error) {
	var s gojs.Schema
	if err := json.Unmarshal([]byte(schema), &s); err != nil {
		return nil, err
	}
	return s.Resolve(nil)
}

func compileV6(schema string) (*v6.Schema, error) {
	doc, err := v6.UnmarshalJSON(strings.NewReader(schema))
	if err != nil {
		return nil, err
	}
	c := v6.NewCompiler()
	c.DefaultDraft(v6.Draft2020)
	if err := c.AddResource("mem:///schema.json", doc); err != nil {
		return nil, err
	}
	return c.Compile("mem:///schema.json")
}

// instance decodes arguments as argcheck does.
func instance(t testing.TB, args string) any {
	var v any
	if err := json.Unmarshal([]byte(args), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestBothAgree(t *testing.T) {
	for _, c := range cases {
		g, err := compileGo(c.schema)
		if err != nil {
			t.Fatal(err)
		}
		s, err := compileV6(c.schema)
		if err != nil {
			t.Fatal(err)
		}
		v := instance(t, c.args)
		if ge, se := g.Validate(v), s.Validate(v); (ge == nil) != c.valid || (se == nil) != c.valid {
			t.Errorf("%s: jsonschema-go says %v, v6 %v", c.name, ge, se)
		}
	}
}

// TestSchemasV6Refuses: v6 checks every schema against its metaschema, and so
// refuses schemas jsonschema-go takes; and it asserts format under draft-07.
func TestSchemasV6Refuses(t *testing.T) {
	for _, schema := range []string{
		`{"type":"object","properties":{"a":{"type":"strin"}}}`,
		`{"type":"object","properties":{"a":{"type":"string","minLength":-1}}}`,
	} {
		if _, err := compileGo(schema); err != nil {
			t.Errorf("jsonschema-go refuses %s: %v", schema, err)
		}
		if _, err := compileV6(schema); err == nil {
			t.Errorf("v6 takes %s", schema)
		}
	}
	draft7 := `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"h":{"type":"string","format":"hostname"}}}`
	g, err := compileGo(draft7)
	if err != nil {
		t.Fatal(err)
	}
	s, err := compileV6(draft7)
	if err != nil {
		t.Fatal(err)
	}
	v := instance(t, `{"h":"not a host!"}`)
	if g.Validate(v) != nil || s.Validate(v) == nil {
		t.Errorf("draft-07 format: jsonschema-go says %v, v6 %v; want only v6 to assert it", g.Validate(v), s.Validate(v))
	}
}

func BenchmarkValidate(b *testing.B) {
	for _, c := range cases {
		g, err := compileGo(c.schema)
		if err != nil {
			b.Fatal(err)
		}
		s, err := compileV6(c.schema)
		if err != nil {
			b.Fatal(err)
		}
		v := instance(b, c.args)
		b.Run(c.name+"/jsonschema-go", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if (g.Validate(v) == nil) != c.valid {
					b.Fatal("wrong verdict")
				}
			}
		})
		b.Run(c.name+"/v6", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if (s.Validate(v) == nil) != c.valid {
					b.Fatal("wrong verdict")
				}
			}
		})
	}
}

func BenchmarkCompile(b *testing.B) {
	b.Run("jsonschema-go", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := compileGo(toolSchema); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("v6", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := compileV6(toolSchema); err != nil {
				b.Fatal(err)
			}
		}
	})
}
