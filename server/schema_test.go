package server

import (
	"encoding/json"
	"maps"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// inputFor is the properties of params struct P, and their binding to it.
func inputFor[P any](t *testing.T) (inputSchema, *binding) {
	t.Helper()
	in, _, err := inputOf(reflect.TypeFor[P]())
	if err != nil {
		t.Fatal(err)
	}
	b, err := in.bind(reflect.TypeFor[P]())
	if err != nil {
		t.Fatal(err)
	}
	return in, b
}

// declare is tl as it is published.
func declare(t *testing.T, tl tool) *declared {
	t.Helper()
	d, err := tl.declare()
	if err != nil {
		t.Fatalf("%s: %v", tl.name, err)
	}
	return d
}

func TestValidateArguments(t *testing.T) {
	in, _ := inputFor[execParams](t)
	cases := []struct {
		args    string
		pointer string // empty: valid
	}{
		{`{"code":"x"}`, ""},
		{`{"code":"x","timeout":0.01,"reset":true,"expected_generation":3,"session_id":"s"}`, ""},
		{``, "/code"},
		{`null`, "/code"},
		{`[]`, "/"},
		{`{"code":5}`, "/code"},
		{`{"code":"x","timeout":0}`, "/timeout"},
		{`{"code":"x","timeout":4000}`, "/timeout"},
		{`{"code":"x","timeout":"5"}`, "/timeout"},
		{`{"code":"x","reset":"yes"}`, "/reset"},
		{`{"code":"x","extra":1}`, "/extra"},
		{`{"code":"x","a/b":1}`, "/a~1b"},
		{`{"code":"x","expected_generation":-1}`, "/expected_generation"},
		{`{"code":"x","expected_generation":1.5}`, "/expected_generation"},
		{`{"code":"x","expected_generation":18446744073709551616}`, "/expected_generation"},
		{`{"code":"x","expected_generation":18446744073709551615}`, ""},
		{`{"code":"` + strings.Repeat("é", 262144) + `"}`, ""},
		{`{"code":"` + strings.Repeat("é", 262145) + `"}`, "/code"},
	}
	for _, c := range cases {
		_, err := in.parse(json.RawMessage(c.args))
		if c.pointer == "" {
			if err != nil {
				t.Errorf("%.60s: unexpected error %v", c.args, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%.60s: accepted, want error at %s", c.args, c.pointer)
			continue
		}
		want := "Invalid arguments at " + c.pointer + ":"
		if !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%.60s: error %q, want prefix %q", c.args, err, want)
		}
		if len(err.Error()) > 300 {
			t.Errorf("%.60s: error echoes too much (%d bytes)", c.args, len(err.Error()))
		}
	}
}

func TestExpectedGenerationMessage(t *testing.T) {
	in, _ := inputFor[execParams](t)
	_, err := in.parse(json.RawMessage(`{"code":"x","expected_generation":-2}`))
	if err == nil || !strings.Contains(err.Error(), "expected_generation must be a nonnegative integral u64") {
		t.Fatalf("got %v", err)
	}
}

func TestSchemaIsClosedObject(t *testing.T) {
	var s map[string]any
	if err := json.Unmarshal(declare(t, (&Server{}).pythonStartTool()).def.InputSchema.(json.RawMessage), &s); err != nil {
		t.Fatal(err)
	}
	if s["type"] != "object" || s["additionalProperties"] != false {
		t.Fatalf("schema not a closed object: %v", s)
	}
	code := s["properties"].(map[string]any)["code"].(map[string]any)
	if code["maxLength"] != float64(262144) {
		t.Fatalf("code maxLength = %v", code["maxLength"])
	}
	if req := s["required"].([]any); len(req) != 1 || req[0] != "code" {
		t.Fatalf("required = %v", req)
	}
}

func TestWholeNumber(t *testing.T) {
	for _, c := range []struct {
		text              string
		n                 uint64
		integral, inRange bool
	}{
		{"0", 0, true, true},
		{"-0", 0, true, true},
		{"-0.0e7", 0, true, true},
		{"5", 5, true, true},
		{"5.0", 5, true, true},
		{"5e0", 5, true, true},
		{"5E+0", 5, true, true},
		{"0.5e1", 5, true, true},
		{"50e-1", 5, true, true},
		{"500.00e-2", 5, true, true},
		{"1e3", 1000, true, true},
		{"18446744073709551615", math.MaxUint64, true, true},
		{"1.8446744073709551615e19", math.MaxUint64, true, true},
		{"18446744073709551616", 0, true, false},
		{"1e20", 0, true, false},
		{"1e99999999999999999999", 0, true, false},
		{"-1", 0, true, false},
		{"-1.0", 0, true, false},
		{"1.5", 0, false, false},
		{"5e-1", 0, false, false},
		{"1e-99999999999999999999", 0, false, false},
		{"0.0000000000000000000000001", 0, false, false},
	} {
		n, integral, inRange := wholeNumber(c.text)
		if n != c.n || integral != c.integral || inRange != c.inRange {
			t.Errorf("wholeNumber(%s) = %d, %v, %v; want %d, %v, %v", c.text, n, integral, inRange, c.n, c.integral, c.inRange)
		}
	}
}

// TestDecodeMeansWhatTheSchemaSays: whole-number floats decode as the integers they
// are, absent properties as their published defaults, and null is refused wherever
// a type is declared.
func TestDecodeMeansWhatTheSchemaSays(t *testing.T) {
	in, b := inputFor[execParams](t)
	decode := func(raw string) (execParams, error) {
		args, err := in.parse(json.RawMessage(raw))
		if err != nil {
			return execParams{}, err
		}
		return *b.decode(in, args).(*execParams), nil
	}
	for _, raw := range []string{`1.0`, `1e0`, `0.1e1`, `1`} {
		p, err := decode(`{"code":"x","expected_generation":` + raw + `}`)
		if err != nil || p.ExpectedGeneration == nil || *p.ExpectedGeneration != 1 {
			t.Errorf("expected_generation %s: %+v, %v; want generation 1", raw, p.ExpectedGeneration, err)
		}
	}
	p, err := decode(`{"code":"x"}`)
	if err != nil || p.ExpectedGeneration != nil || p.Timeout != 120 || p.Reset {
		t.Errorf("defaults: %+v, %v; want no generation, timeout 120, reset false", p, err)
	}
	p, err = decode(`{"code":"x","timeout":5e0,"reset":true}`)
	if err != nil || p.Timeout != 5 || !p.Reset {
		t.Errorf("timeout 5e0, reset true: %+v, %v", p, err)
	}
	for raw, want := range map[string]string{
		`{"code":null}`:                           "Invalid arguments at /code: got null, which is not allowed: pass a string",
		`{"code":"x","session_id":null}`:          "Invalid arguments at /session_id: got null, which is not allowed: pass a string, or leave session_id out",
		`{"code":"x","reset":null}`:               "Invalid arguments at /reset: got null, which is not allowed: pass a boolean, or leave reset out for its default (false)",
		`{"code":"x","timeout":null}`:             "Invalid arguments at /timeout: got null, which is not allowed: pass a number, or leave timeout out for its default (120)",
		`{"code":"x","timeout":"5"}`:              "Invalid arguments at /timeout: expected a number",
		`{"code":"x","expected_generation":null}`: "Invalid arguments at /expected_generation: got null, which is not allowed: pass an integer, or leave expected_generation out",
		`{"code":"x","expected_generation":"1"}`:  "Invalid arguments at /expected_generation: expected_generation must be a nonnegative integral u64",
	} {
		if _, err := decode(raw); err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %q", raw, err, want)
		}
	}

	file, fb := inputFor[fileParams](t)
	args, err := file.parse(json.RawMessage(`{"session_id":"s","path":"p"}`))
	if err != nil {
		t.Fatal(err)
	}
	if fp := decodedFile(fb.decode(file, args)); fp.Argv == nil || len(fp.Argv) != 0 || fp.Mode != "persistent" {
		t.Errorf("file defaults: %+v; want argv [] and mode persistent", fp)
	}
	if _, err := file.parse(json.RawMessage(`{"session_id":"s","path":"p","argv":["a",null]}`)); err == nil || err.Error() != "Invalid arguments at /argv: item 1: expected a string" {
		t.Errorf("argv with null: %v", err)
	}
}

func decodedFile(p any) fileParams { return *p.(*fileParams) }

// TestBindRefusesAMismatch: a params struct whose schema its arguments could not be
// checked against or decoded into is found when the server is built, whichever way
// it fails.
func TestBindRefusesAMismatch(t *testing.T) {
	type good struct {
		Code    string    `json:"code"`
		N       *uint64   `json:"n,omitempty"`
		Timeout float64   `json:"timeout,omitempty" schema:"maximum=10,default=5"`
		Named   runArg    `json:"named,omitempty"`
		Argv    []string  `json:"argv,omitempty" schema:"default=[]"`
		Gen     *yieldArg `json:"gen,omitempty"`
	}
	check := func(typ reflect.Type) error {
		in, _, err := inputOf(typ)
		if err != nil {
			return err
		}
		_, err = in.bind(typ)
		return err
	}
	if err := check(reflect.TypeFor[good]()); err != nil {
		t.Fatalf("a struct that can be checked: %v", err)
	}
	for name, typ := range map[string]reflect.Type{
		"an integer that is not a u64": reflect.TypeFor[struct {
			N int64 `json:"n,omitempty"`
		}](),
		"a pointer where a default always fills the value": reflect.TypeFor[struct {
			Timeout *float64 `json:"timeout,omitempty" schema:"default=5"`
		}](),
		"a required property with a default": reflect.TypeFor[struct {
			Timeout float64 `json:"timeout" schema:"default=5"`
		}](),
		"a default outside its own bounds": reflect.TypeFor[struct {
			Timeout float64 `json:"timeout,omitempty" schema:"maximum=10,default=50"`
		}](),
		"a default of another type": reflect.TypeFor[struct {
			Reset bool `json:"reset,omitempty" schema:"default=yes"`
		}](),
		"an array of integers": reflect.TypeFor[struct {
			Argv []int `json:"argv,omitempty"`
		}](),
		"an object of a struct": reflect.TypeFor[struct {
			Sub struct {
				A string `json:"a"`
			} `json:"sub,omitempty"`
		}](),
		"an unknown schema keyword": reflect.TypeFor[struct {
			Code string `json:"code" schema:"pattern=x"`
		}](),
		"not a struct": reflect.TypeFor[map[string]any](),
	} {
		if err := check(typ); err == nil {
			t.Errorf("%s: bound", name)
		}
	}
}

// TestEveryToolDeclares: each tool's types make its schemas, and its params struct
// binds to its input schema.
func TestEveryToolDeclares(t *testing.T) {
	for _, tl := range (&Server{}).tools() {
		declare(t, tl)
	}
}

// TestPublishedSchemaAgreesWithValidation is the rule of the declaration: what the
// published input schema accepts, validation accepts, and what it rejects, validation
// rejects. Every property of every tool is tried with values of every JSON type,
// whole-number floats, bounds and lengths, judged by an independent JSON Schema
// validator. (Numbers beyond float64, such as 1e400 and 1e-400, are left out: the
// validator holds numbers as float64, rounding 1e-400 to the integer 0, and cannot
// hold 1e400; TestNumbersBeyondFloat64 covers them.)
func TestPublishedSchemaAgreesWithValidation(t *testing.T) {
	candidates := []string{
		`null`, `true`, `false`, `""`, `"a"`, `"json"`, `"text"`, `"fresh"`, `"persistent"`, `"base64"`,
		`0`, `-0`, `1`, `5`, `5.0`, `5e0`, `0.5e1`, `-1`, `-1.0`, `1.5`, `0.001`, `0.01`, `3600`, `3600.5`,
		`65536`, `65536.0`, `65537`, `1e19`, `2e19`,
		`[]`, `["a"]`, `[null]`, `[1]`, `["a","b"]`, `{}`, `{"a":1}`,
		`"` + strings.Repeat("x", 129) + `"`, `"` + strings.Repeat("é", 128) + `"`, `"` + strings.Repeat("é", 4097) + `"`,
	}
	many, _ := json.Marshal(make([]string, 129))
	candidates = append(candidates, string(many))
	for _, tl := range (&Server{}).tools() {
		d := declare(t, tl)
		var schema jsonschema.Schema
		if err := json.Unmarshal(d.def.InputSchema.(json.RawMessage), &schema); err != nil {
			t.Fatalf("%s: %v", tl.name, err)
		}
		resolved, err := schema.Resolve(nil)
		if err != nil {
			t.Fatalf("%s: %v", tl.name, err)
		}
		// The arguments that satisfy every required property but the one tried.
		base := map[string]json.RawMessage{}
		for _, p := range d.input {
			if p.required {
				base[p.name] = json.RawMessage(`"x"`)
				if len(p.enum) > 0 {
					base[p.name] = json.RawMessage(`"` + p.enum[0] + `"`)
				}
			}
		}
		for _, p := range d.input {
			for _, v := range candidates {
				args := maps.Clone(base)
				args[p.name] = json.RawMessage(v)
				raw, _ := json.Marshal(args)
				var instance any
				if err := json.Unmarshal(raw, &instance); err != nil {
					t.Fatal(err)
				}
				schemaErr := resolved.Validate(instance)
				_, parseErr := d.input.parse(raw)
				if (schemaErr == nil) != (parseErr == nil) {
					t.Errorf("%s %s=%.40s: the schema says %v, validation says %v", tl.name, p.name, v, schemaErr, parseErr)
				}
			}
		}
		if _, err := d.input.parse(json.RawMessage(`{"no_such_property":1}`)); err == nil {
			t.Errorf("%s: an unknown property passed", tl.name)
		}
	}
}

func TestNumbersBeyondFloat64(t *testing.T) {
	in, _ := inputFor[execParams](t)
	for raw, want := range map[string]string{
		`{"code":"x","timeout":1e400}`:              "Invalid arguments at /timeout: must be at most 3600",
		`{"code":"x","timeout":-1e400}`:             "Invalid arguments at /timeout: must be at least 0.01",
		`{"code":"x","expected_generation":1e400}`:  "Invalid arguments at /expected_generation: expected_generation must be a nonnegative integral u64",
		`{"code":"x","expected_generation":1e-400}`: "Invalid arguments at /expected_generation: expected_generation must be a nonnegative integral u64",
		`{"code":"x","timeout":1e-400}`:             "Invalid arguments at /timeout: must be at least 0.01",
	} {
		if _, err := in.parse(json.RawMessage(raw)); err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %q", raw, err, want)
		}
	}
}
