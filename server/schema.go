package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strings"
	"unicode/utf8"
)

// param is one property of a tool's input schema. The same declaration produces the
// published JSON Schema and validates arguments, so the two cannot drift apart.
type param struct {
	name      string
	typ       string // string, integer, number, boolean, array
	items     string // arrays: the items' type (string)
	maxItems  int    // arrays
	enum      []string
	desc      string
	required  bool
	minLength int      // strings: characters
	maxLength int      // strings: characters
	min, max  *float64 // numbers
	def       any
	// message replaces the generic reason for a bad value, when the contract names one.
	message string
}

// inputSchema is a tool's arguments: an object with exactly these properties.
type inputSchema []param

func bound(v float64) *float64 { return &v }

// jsonSchema renders the schema as JSON Schema (2020-12).
func (in inputSchema) jsonSchema() json.RawMessage {
	props := map[string]any{}
	required := []string{}
	for _, p := range in {
		prop := map[string]any{"type": p.typ}
		if p.desc != "" {
			prop["description"] = p.desc
		}
		if p.minLength > 0 {
			prop["minLength"] = p.minLength
		}
		if p.maxLength > 0 {
			prop["maxLength"] = p.maxLength
		}
		if p.items != "" {
			prop["items"] = map[string]any{"type": p.items}
		}
		if p.maxItems > 0 {
			prop["maxItems"] = p.maxItems
		}
		if len(p.enum) > 0 {
			prop["enum"] = p.enum
		}
		if p.min != nil {
			prop["minimum"] = *p.min
		}
		if p.max != nil {
			prop["maximum"] = *p.max
		}
		if p.def != nil {
			prop["default"] = p.def
		}
		props[p.name] = prop
		if p.required {
			required = append(required, p.name)
		}
	}
	schema := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		schema["required"] = required
	}
	out, _ := json.Marshal(schema)
	return out
}

// argError is a bad argument, reported as "Invalid arguments at <pointer>: <reason>".
type argError struct {
	pointer string
	reason  string
}

func (e *argError) Error() string {
	return fmt.Sprintf("Invalid arguments at %s: %s", e.pointer, e.reason)
}

// validate checks raw arguments and returns them as a map of raw values. Missing
// arguments are an empty object. Reasons never echo the values themselves.
func (in inputSchema) validate(raw json.RawMessage) (map[string]json.RawMessage, error) {
	args := map[string]json.RawMessage{}
	if trimmed := bytes.TrimSpace(raw); len(trimmed) > 0 && !bytes.Equal(trimmed, []byte("null")) {
		if trimmed[0] != '{' || json.Unmarshal(trimmed, &args) != nil {
			return nil, &argError{"/", "arguments must be a JSON object"}
		}
	}
	known := map[string]param{}
	for _, p := range in {
		known[p.name] = p
	}
	for name := range args {
		if _, ok := known[name]; !ok {
			return nil, &argError{pointer(name), "unknown property; allowed: " + in.names()}
		}
	}
	for _, p := range in {
		v, ok := args[p.name]
		if !ok {
			if p.required {
				return nil, &argError{pointer(p.name), "required property is missing"}
			}
			continue
		}
		if reason := p.check(v); reason != "" {
			if p.message != "" {
				reason = p.message
			}
			return nil, &argError{pointer(p.name), reason}
		}
	}
	return args, nil
}

func (in inputSchema) names() string {
	if len(in) == 0 {
		return "none (this tool takes no arguments)"
	}
	names := make([]string, len(in))
	for i, p := range in {
		names[i] = p.name
	}
	return strings.Join(names, ", ")
}

// pointer is the JSON Pointer of a top-level property.
func pointer(name string) string {
	return "/" + strings.ReplaceAll(strings.ReplaceAll(name, "~", "~0"), "/", "~1")
}

// check returns why v does not fit p, or "".
func (p param) check(v json.RawMessage) string {
	switch p.typ {
	case "string":
		var s string
		if json.Unmarshal(v, &s) != nil {
			return "expected a string"
		}
		if utf8.RuneCountInString(s) < p.minLength {
			return fmt.Sprintf("string shorter than %d characters", p.minLength)
		}
		if p.maxLength > 0 && utf8.RuneCountInString(s) > p.maxLength {
			return fmt.Sprintf("string longer than %d characters", p.maxLength)
		}
		if len(p.enum) > 0 && !slices.Contains(p.enum, s) {
			return "must be one of " + strings.Join(p.enum, ", ")
		}
	case "array":
		var items []json.RawMessage
		if json.Unmarshal(v, &items) != nil || bytes.HasPrefix(bytes.TrimSpace(v), []byte("null")) {
			return "expected an array"
		}
		if p.maxItems > 0 && len(items) > p.maxItems {
			return fmt.Sprintf("more than %d items", p.maxItems)
		}
		for i, item := range items {
			if reason := (param{typ: p.items}).check(item); reason != "" {
				return fmt.Sprintf("item %d: %s", i, reason)
			}
		}
	case "object":
		var obj map[string]json.RawMessage
		if json.Unmarshal(v, &obj) != nil || obj == nil {
			return "expected an object"
		}
	case "boolean":
		var b bool
		if json.Unmarshal(v, &b) != nil {
			return "expected a boolean"
		}
	case "number", "integer":
		return p.checkNumber(v)
	}
	return ""
}

func (p param) checkNumber(v json.RawMessage) string {
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	var n any
	if dec.Decode(&n) != nil {
		return "expected a " + p.typ
	}
	num, ok := n.(json.Number)
	if !ok {
		return "expected a " + p.typ
	}
	f, err := num.Float64()
	if err != nil && !math.IsInf(f, 0) {
		return "expected a " + p.typ
	}
	if p.typ == "integer" {
		r, ok := new(big.Rat).SetString(num.String())
		if !ok || !r.IsInt() {
			return "expected an integer"
		}
		if r.Sign() < 0 || r.Num().BitLen() > 64 {
			return "expected an integer from 0 to 2^64-1"
		}
	}
	if p.min != nil && f < *p.min {
		return fmt.Sprintf("must be at least %g", *p.min)
	}
	if p.max != nil && f > *p.max {
		return fmt.Sprintf("must be at most %g", *p.max)
	}
	return ""
}

// decodeArgs unmarshals validated arguments into a params struct.
func decodeArgs(args map[string]json.RawMessage, into any) error {
	raw, err := json.Marshal(args)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, into)
}
