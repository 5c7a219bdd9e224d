package argcheck

import (
	"encoding/json"
	"errors"
	"testing"
)

// fastSchemas use only fastSchema's keywords; each must get a fast check.
var fastSchemas = []string{
	`{"type":"object","additionalProperties":false,"properties":{"text":{"type":"string"}}}`,
	`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"n":{"type":"integer","minimum":1,"maximum":10},"x":{"type":"number","exclusiveMinimum":0,"exclusiveMaximum":1.5}},"required":["n"],"additionalProperties":false,"description":"d"}`,
	`{"type":"object","properties":{"mode":{"enum":["fast","slow",null,3,true]},"tags":{"type":"array","items":{"type":"string","minLength":1,"maxLength":3},"minItems":1,"maxItems":2}},"additionalProperties":{"type":["string","null"]}}`,
	`{"type":"object","properties":{"o":{"type":"object","properties":{"a":{"type":"boolean"}},"required":["a"],"additionalProperties":true},"any":true,"t":{"title":"t","default":1,"examples":[1],"readOnly":true}}}`,
	`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"i":{"type":["integer","string"]}}}`,
}

// fastInstances are argument objects for them: valid, invalid and in between.
var fastInstances = []string{
	`{}`, `{"text":"x"}`, `{"text":5}`, `{"text":"x","extra":1}`, `{"n":1}`, `{"n":0}`, `{"n":10}`, `{"n":11}`,
	`{"n":1.0}`, `{"n":1.5}`, `{"n":3,"x":0}`, `{"n":3,"x":1.5}`, `{"n":3,"x":1.4999}`, `{"n":3,"x":1e-300}`, `{"n":-0}`,
	`{"mode":"fast"}`, `{"mode":"Fast"}`, `{"mode":null}`, `{"mode":3.0}`, `{"mode":"3"}`, `{"mode":true}`, `{"mode":false}`,
	`{"tags":[]}`, `{"tags":["a"]}`, `{"tags":["a","bcd"]}`, `{"tags":["a","b","c"]}`, `{"tags":[""]}`, `{"tags":["é€𝄞"]}`,
	`{"tags":["abcd"]}`, `{"tags":"a"}`, `{"tags":[1]}`, `{"other":"s"}`, `{"other":null}`, `{"other":1}`,
	`{"o":{"a":true}}`, `{"o":{}}`, `{"o":{"a":1}}`, `{"o":{"a":false,"b":[1]}}`, `{"o":[]}`, `{"any":[{"x":null}]}`,
	`{"t":"anything"}`, `{"i":1}`, `{"i":"1"}`, `{"i":1.25}`, `{"i":null}`, `{"i":1e20}`,
}

// fastAgree checks one instance against one schema both ways and reports a
// difference: the fast check accepting what jsonschema-go refuses is the bug that
// matters; refusing what it accepts would only waste the fast path.
func fastAgree(t *testing.T, schema string, instance any) {
	t.Helper()
	c := compileSchema([]byte(schema))
	if c.err != nil || c.fast == nil {
		t.Fatalf("schema %s: no fast check (err %v)", schema, c.err)
	}
	fast := c.fast.accepts(instance)
	slow := safeValidate(c.resolved, instance) == nil
	if fast != slow {
		data, _ := json.Marshal(instance)
		t.Errorf("schema %s, arguments %s: fast check says %v, jsonschema-go %v", schema, data, fast, slow)
	}
}

func TestValidatorFastCheckAgreesWithJSONSchemaGo(t *testing.T) {
	for _, schema := range fastSchemas {
		for _, doc := range fastInstances {
			var instance any
			if err := json.Unmarshal([]byte(doc), &instance); err != nil {
				t.Fatal(err)
			}
			fastAgree(t, schema, instance)
		}
	}
}

func TestValidatorFastCheckOnlyForItsKeywords(t *testing.T) {
	for _, schema := range []string{
		toolSchema, // formats, patterns, $ref
		`{"properties":{"a":{"$ref":"#/$defs/x"}},"$defs":{"x":{"type":"string"}}}`,
		`{"properties":{"a":{"anyOf":[{"type":"string"},{"type":"null"}]}}}`,
		`{"properties":{"a":{"type":"string","pattern":"^a"}}}`,
		`{"properties":{"a":{"type":"string","format":"email"}}}`,
		`{"properties":{"a":{"const":"x"}}}`,
		`{"properties":{"a":{"enum":[[1],{"b":2}]}}}`,
		`{"properties":{"a":{"type":"array","items":[{"type":"string"}]}}}`,
		`{"properties":{"a":false}}`,
		`{"patternProperties":{"^x":{}}}`,
		`{"properties":{"a":{"x-vendor":1}}}`,
		`{"properties":{"a":{"$schema":"https://json-schema.org/draft/2020-12/schema"}}}`,
		`{"properties":{"a":{"minLength":1.5}}}`,
	} {
		c := compileSchema([]byte(schema))
		if c.fast != nil {
			t.Errorf("schema %s got a fast check", schema)
		}
	}
}

// TestValidatorFastSchemaViolationsExplainedAsBefore: with or without its fast
// check, a schema gives every argument object the same answer: arguments the fast
// check refuses are judged and explained by jsonschema-go and the locator.
func TestValidatorFastSchemaViolationsExplainedAsBefore(t *testing.T) {
	fast, slow := New(Config{}), New(Config{})
	for _, schema := range fastSchemas {
		if err := slow.Check(t.Context(), json.RawMessage(schema), json.RawMessage(`{}`)); err != nil && !errors.As(err, new(*ArgumentsError)) {
			t.Fatal(err)
		}
	}
	for _, c := range slow.cache {
		c.fast = nil
	}
	violations := 0
	for _, schema := range fastSchemas {
		for _, args := range fastInstances {
			want := slow.Check(t.Context(), json.RawMessage(schema), json.RawMessage(args))
			got := fast.Check(t.Context(), json.RawMessage(schema), json.RawMessage(args))
			if errors.As(want, new(*ArgumentsError)) {
				violations++
			}
			if (got == nil) != (want == nil) || got != nil && got.Error() != want.Error() {
				t.Errorf("schema %s, arguments %s: %v with the fast check, %v without", schema, args, got, want)
			}
		}
	}
	if violations == 0 {
		t.Fatal("no case was a violation")
	}
}

func FuzzValidatorFastCheck(f *testing.F) {
	for i := range fastSchemas {
		for _, doc := range fastInstances[:12] {
			f.Add(uint8(i), doc)
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, doc string) {
		var instance any
		if json.Unmarshal([]byte(doc), &instance) != nil {
			return
		}
		fastAgree(t, fastSchemas[int(which)%len(fastSchemas)], instance)
	})
}
