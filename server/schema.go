package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// param is one property of a tool's input schema. The same declaration publishes the
// JSON Schema, validates arguments and decodes them into the tool's params struct, so
// the three cannot drift apart.
type param struct {
	name      string
	typ       string // string, integer, number, boolean, array, object
	items     string // arrays: the items' type (string)
	maxItems  int    // arrays
	enum      []string
	desc      string
	required  bool
	minLength int      // strings: characters
	maxLength int      // strings: characters
	min, max  *float64 // numbers
	// def is the value an absent property decodes to, and is published as default.
	def any
	// message replaces the generic reason for a bad value, when the contract names one.
	message string
}

// inputSchema is a tool's arguments: an object with exactly these properties.
type inputSchema []param

func bound(v float64) *float64 { return &v }

// maxUint64 is the largest integer argument: integers decode to uint64, and the
// contract's integers (generations, offsets) are u64.
const maxUint64 = "18446744073709551615"

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
		if p.typ == "integer" {
			// Publish the u64 range that validation enforces, so that a value the
			// schema accepts is never refused.
			if p.min == nil {
				prop["minimum"] = 0
			}
			if p.max == nil {
				prop["maximum"] = json.Number(maxUint64)
			}
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

// Is makes every argError an errInvalidArguments for the error table (errors.go).
func (e *argError) Is(target error) bool { return target == errInvalidArguments }

// arguments are a call's validated arguments by property name, each decoded to the
// Go value of its declared type (see param.value).
type arguments map[string]any

// parse validates raw arguments and decodes each one. Missing arguments are an empty
// object. Reasons never echo the values themselves.
func (in inputSchema) parse(raw json.RawMessage) (arguments, error) {
	fields := map[string]json.RawMessage{}
	if trimmed := bytes.TrimSpace(raw); len(trimmed) > 0 && !bytes.Equal(trimmed, []byte("null")) {
		if trimmed[0] != '{' || json.Unmarshal(trimmed, &fields) != nil {
			return nil, &argError{"/", "arguments must be a JSON object"}
		}
	}
	for name := range fields {
		if !slices.ContainsFunc(in, func(p param) bool { return p.name == name }) {
			return nil, &argError{pointer(name), "unknown property; allowed: " + in.names()}
		}
	}
	args := make(arguments, len(fields))
	for _, p := range in {
		v, ok := fields[p.name]
		if !ok {
			if p.required {
				return nil, &argError{pointer(p.name), "required property is missing"}
			}
			continue
		}
		if bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			return nil, &argError{pointer(p.name), p.nullReason()}
		}
		value, reason := p.value(v)
		if reason != "" {
			if p.message != "" {
				reason = p.message
			}
			return nil, &argError{pointer(p.name), reason}
		}
		args[p.name] = value
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

// nullReason says why null is refused for p and what to send instead: null fits
// no type of JSON Schema's but null, and absent is how a default is asked for.
func (p param) nullReason() string {
	what := "a " + p.typ
	switch p.typ {
	case "integer", "array", "object":
		what = "an " + p.typ
	}
	switch {
	case p.required:
		return "got null, which is not allowed: pass " + what
	case p.def != nil:
		def, _ := json.Marshal(p.def)
		return fmt.Sprintf("got null, which is not allowed: pass %s, or leave %s out for its default (%s)", what, p.name, def)
	}
	return fmt.Sprintf("got null, which is not allowed: pass %s, or leave %s out", what, p.name)
}

// value decodes v as p's type, or returns why v does not fit p. The values are
// string, uint64 (integer), float64 (number), bool, []string (array of strings) and
// map[string]json.RawMessage (object). null fits none of them: JSON Schema's types
// exclude it, so `"code": null` is no more a string than 5 is.
func (p param) value(v json.RawMessage) (any, string) {
	v = bytes.TrimSpace(v)
	first := byte(0)
	if len(v) > 0 {
		first = v[0]
	}
	switch p.typ {
	case "string":
		var s string
		if first != '"' || json.Unmarshal(v, &s) != nil {
			return nil, "expected a string"
		}
		if utf8.RuneCountInString(s) < p.minLength {
			return nil, fmt.Sprintf("string shorter than %d characters", p.minLength)
		}
		if p.maxLength > 0 && utf8.RuneCountInString(s) > p.maxLength {
			return nil, fmt.Sprintf("string longer than %d characters", p.maxLength)
		}
		if len(p.enum) > 0 && !slices.Contains(p.enum, s) {
			return nil, "must be one of " + strings.Join(p.enum, ", ")
		}
		return s, ""
	case "array":
		var items []json.RawMessage
		if first != '[' || json.Unmarshal(v, &items) != nil {
			return nil, "expected an array"
		}
		if p.maxItems > 0 && len(items) > p.maxItems {
			return nil, fmt.Sprintf("more than %d items", p.maxItems)
		}
		out := make([]string, len(items))
		for i, item := range items {
			value, reason := (param{typ: p.items}).value(item)
			if reason != "" {
				return nil, fmt.Sprintf("item %d: %s", i, reason)
			}
			out[i] = value.(string) // bind admits only arrays of strings
		}
		return out, ""
	case "object":
		var obj map[string]json.RawMessage
		if first != '{' || json.Unmarshal(v, &obj) != nil {
			return nil, "expected an object"
		}
		return obj, ""
	case "boolean":
		switch string(v) {
		case "true":
			return true, ""
		case "false":
			return false, ""
		}
		return nil, "expected a boolean"
	case "number", "integer":
		return p.number(v)
	}
	return nil, "unsupported type " + p.typ
}

// number decodes a number or an integer and checks its bounds.
func (p param) number(v json.RawMessage) (any, string) {
	var num json.Number
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	// The first byte keeps a JSON string such as "5" from decoding as a number.
	if len(v) == 0 || (v[0] != '-' && (v[0] < '0' || v[0] > '9')) || dec.Decode(&num) != nil || dec.More() {
		return nil, "expected a " + p.typ
	}
	var (
		value any
		f     float64
	)
	if p.typ == "integer" {
		n, integral, inRange := wholeNumber(num.String())
		switch {
		case !integral:
			return nil, "expected an integer"
		case !inRange:
			return nil, "expected an integer from 0 to 2^64-1"
		}
		value, f = n, float64(n)
	} else {
		var err error
		// Beyond float64's range a number parses as ±Inf or 0, which the bounds judge.
		if f, err = strconv.ParseFloat(num.String(), 64); err != nil && !errors.Is(err, strconv.ErrRange) {
			return nil, "expected a number"
		}
		value = f
	}
	if p.min != nil && f < *p.min {
		return nil, fmt.Sprintf("must be at least %g", *p.min)
	}
	if p.max != nil && f > *p.max {
		return nil, fmt.Sprintf("must be at most %g", *p.max)
	}
	return value, ""
}

// wholeNumber reads a JSON number as JSON Schema's integer: any number whose
// fractional part is zero, so 5, 5.0, 5e0 and 0.5e1 are all 5. integral is false for
// any other number; inRange is false for a whole number below 0 or above 2^64-1. It
// works on the digits, exactly, and in time linear in the text (an exponent like
// 1e-999999 costs nothing).
func wholeNumber(text string) (n uint64, integral, inRange bool) {
	neg := strings.HasPrefix(text, "-")
	text = strings.TrimPrefix(text, "-")
	mantissa, exponent, _ := strings.Cut(strings.ToLower(text), "e")
	intPart, frac, _ := strings.Cut(mantissa, ".")
	exp := int64(0)
	if exponent != "" {
		var err error
		if exp, err = strconv.ParseInt(exponent, 10, 64); err != nil {
			// Out of int64's range: saturate; the digits decide below.
			exp = math.MaxInt32
			if strings.HasPrefix(exponent, "-") {
				exp = math.MinInt32
			}
		}
		exp = min(max(exp, math.MinInt32), math.MaxInt32)
	}
	digits := strings.TrimLeft(intPart+frac, "0")
	exp -= int64(len(frac))
	significant := strings.TrimRight(digits, "0")
	exp += int64(len(digits) - len(significant))
	switch {
	case significant == "":
		return 0, true, true // zero, however written (-0.0e5 too)
	case exp < 0:
		return 0, false, false
	case neg || int64(len(significant))+exp > int64(len(maxUint64)):
		return 0, true, false
	}
	for _, d := range significant {
		if n > (math.MaxUint64-uint64(d-'0'))/10 {
			return 0, true, false
		}
		n = n*10 + uint64(d-'0')
	}
	for range exp {
		if n > math.MaxUint64/10 {
			return 0, true, false
		}
		n *= 10
	}
	return n, true, true
}

// binding ties a tool's declaration to its params struct: the field each property
// decodes into, and each property's decoded default.
type binding struct {
	typ      reflect.Type
	fields   []int           // field index, by declaration order
	defaults []reflect.Value // the zero Value where there is no default
}

// The Go type each declared type decodes to (param.value).
var (
	stringType  = reflect.TypeFor[string]()
	uint64Type  = reflect.TypeFor[uint64]()
	float64Type = reflect.TypeFor[float64]()
	boolType    = reflect.TypeFor[bool]()
	stringsType = reflect.TypeFor[[]string]()
	objectType  = reflect.TypeFor[map[string]json.RawMessage]()
)

// bind checks that typ, a struct, has exactly one field per declared property (by
// its json name) of the property's Go type, or a pointer to it where an absent
// property without a default must be told from a zero value, and that every default
// is a valid value. A mismatch is a programming error, reported when the server is
// built.
func (in inputSchema) bind(typ reflect.Type) (*binding, error) {
	if typ.Kind() != reflect.Struct {
		return nil, fmt.Errorf("params type %v is not a struct", typ)
	}
	byName := map[string]int{}
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			return nil, fmt.Errorf("%v.%s has no json name", typ, f.Name)
		}
		byName[name] = i
	}
	b := &binding{typ: typ, fields: make([]int, len(in)), defaults: make([]reflect.Value, len(in))}
	for i, p := range in {
		idx, ok := byName[p.name]
		if !ok {
			return nil, fmt.Errorf("%v has no field for property %q", typ, p.name)
		}
		delete(byName, p.name)
		b.fields[i] = idx
		var want reflect.Type
		switch p.typ {
		case "string":
			want = stringType
		case "integer":
			want = uint64Type
		case "number":
			want = float64Type
		case "boolean":
			want = boolType
		case "array":
			if p.items != "string" {
				return nil, fmt.Errorf("property %q: arrays of %q are not supported", p.name, p.items)
			}
			want = stringsType
		case "object":
			want = objectType
		default:
			return nil, fmt.Errorf("property %q: unsupported type %q", p.name, p.typ)
		}
		got := typ.Field(idx).Type
		pointer := got.Kind() == reflect.Pointer && got.Elem() == want && (p.typ != "array" && p.typ != "object")
		if got != want && !pointer {
			return nil, fmt.Errorf("%v.%s is %v; property %q needs %v", typ, typ.Field(idx).Name, got, p.name, want)
		}
		if p.def == nil {
			continue
		}
		if pointer || p.required {
			return nil, fmt.Errorf("property %q has a default, so it is never absent: its field must be a plain %v and it cannot be required", p.name, want)
		}
		raw, err := json.Marshal(p.def)
		if err != nil {
			return nil, fmt.Errorf("property %q: default: %w", p.name, err)
		}
		value, reason := p.value(raw)
		if reason != "" {
			return nil, fmt.Errorf("property %q: default %s: %s", p.name, raw, reason)
		}
		b.defaults[i] = reflect.ValueOf(value)
	}
	for name := range byName {
		return nil, fmt.Errorf("%v field %q is not a declared property", typ, name)
	}
	return b, nil
}

// decode returns a pointer to a new params struct holding args; absent properties
// get their declared default. It cannot fail: parse decoded each argument to the Go
// type of its declaration, and bind checked that the fields have those types.
func (b *binding) decode(in inputSchema, args arguments) any {
	ptr := reflect.New(b.typ)
	params := ptr.Elem()
	for i, p := range in {
		field := params.Field(b.fields[i])
		value, given := args[p.name]
		switch {
		case given && field.Kind() == reflect.Pointer:
			field.Set(reflect.New(field.Type().Elem()))
			field.Elem().Set(reflect.ValueOf(value))
		case given:
			field.Set(reflect.ValueOf(value))
		case b.defaults[i].IsValid():
			field.Set(b.defaults[i])
		}
	}
	return ptr.Interface()
}
