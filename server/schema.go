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

	"github.com/google/jsonschema-go/jsonschema"
)

// param is one property of a tool's arguments, as its published schema declares it
// (inputOf): what parse checks and decodes, so that the published schema and the
// checks cannot drift apart.
type param struct {
	name      string
	typ       string // string, integer, number, boolean, array, object
	items     string // arrays: the items' type (string)
	maxItems  int    // arrays
	enum      []string
	required  bool
	minLength int      // strings: characters
	maxLength int      // strings: characters
	min, max  *float64 // numbers
	// def is the value an absent property decodes to, as published (default).
	def json.RawMessage
	// message replaces the generic reason for a bad value, when the contract names one.
	message string
}

// inputSchema is a tool's arguments: an object with exactly these properties.
type inputSchema []param

// maxUint64 is the largest integer argument: integers decode to uint64, and the
// contract's integers (generations, offsets) are u64.
const maxUint64 = "18446744073709551615"

// inputOf is the input schema of params struct t: its properties, and the JSON
// Schema (2020-12) published for it.
func inputOf(t reflect.Type) (inputSchema, *jsonschema.Schema, error) {
	if t.Kind() != reflect.Struct {
		return nil, nil, fmt.Errorf("params type %v is not a struct", t)
	}
	s, err := schemaOf(t, false)
	if err != nil {
		return nil, nil, err
	}
	in := make(inputSchema, 0, len(s.PropertyOrder))
	for _, name := range s.PropertyOrder {
		prop := s.Properties[name]
		p := param{
			name: name, typ: prop.Type, required: slices.Contains(s.Required, name),
			min: prop.Minimum, max: prop.Maximum, def: prop.Default, message: argMessages[name],
			minLength: deref(prop.MinLength), maxLength: deref(prop.MaxLength), maxItems: deref(prop.MaxItems),
		}
		if prop.Items != nil {
			p.items = prop.Items.Type
		}
		for _, v := range prop.Enum {
			p.enum = append(p.enum, fmt.Sprint(v))
		}
		in = append(in, p)
	}
	return in, s, nil
}

func deref(n *int) int {
	if n == nil {
		return 0
	}
	return *n
}

// integerRange publishes the u64 range that validation enforces on an integer
// property without bounds of its own, so that a value the schema accepts is never
// refused. A float64 cannot hold 2^64-1: the maximum is the float64 nearest to it,
// which publish writes as the exact integer (schemaNumber).
func integerRange(prop *jsonschema.Schema) {
	if prop.Type != "integer" {
		return
	}
	if prop.Minimum == nil {
		prop.Minimum = jsonschema.Ptr(0.0)
	}
	if prop.Maximum == nil {
		prop.Maximum = jsonschema.Ptr(float64(math.MaxUint64))
	}
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
		return fmt.Sprintf("got null, which is not allowed: pass %s, or leave %s out for its default (%s)", what, p.name, p.def)
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

// binding ties a tool's properties to its params struct: the field each property
// decodes into, and each property's decoded default.
type binding struct {
	typ      reflect.Type
	fields   [][]int         // field index, by property
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

// bind checks that each property's field in typ holds what parse decodes the
// property to (a type of the same kind, or a pointer to one where an absent property
// without a default must be told from a zero value), and that every default is a
// valid value. A mismatch is a programming error, reported when the server is built.
func (in inputSchema) bind(typ reflect.Type) (*binding, error) {
	byName := map[string][]int{}
	for _, f := range reflect.VisibleFields(typ) {
		if name, _, ok := jsonField(f); ok && name != "" {
			byName[name] = f.Index
		}
	}
	b := &binding{typ: typ, fields: make([][]int, len(in)), defaults: make([]reflect.Value, len(in))}
	for i, p := range in {
		idx, ok := byName[p.name]
		if !ok {
			return nil, fmt.Errorf("%v has no field for property %q", typ, p.name)
		}
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
		f := typ.FieldByIndex(idx)
		got := f.Type
		pointer := got.Kind() == reflect.Pointer && fits(got.Elem(), want) && p.typ != "array" && p.typ != "object"
		if !fits(got, want) && !pointer {
			return nil, fmt.Errorf("%v.%s is %v; property %q needs %v", typ, f.Name, got, p.name, want)
		}
		if p.def == nil {
			continue
		}
		if pointer || p.required {
			return nil, fmt.Errorf("property %q has a default, so it is never absent: its field must be a plain %v and it cannot be required", p.name, want)
		}
		value, reason := p.value(p.def)
		if reason != "" {
			return nil, fmt.Errorf("property %q: default %s: %s", p.name, p.def, reason)
		}
		b.defaults[i] = reflect.ValueOf(value).Convert(got)
	}
	return b, nil
}

// fits reports whether a field of type got holds a decoded value of type want: want
// itself, or for a scalar a type of its kind (sessionArg for a string).
func fits(got, want reflect.Type) bool {
	switch want.Kind() {
	case reflect.Slice, reflect.Map:
		return got == want
	}
	return got.Kind() == want.Kind()
}

// decode returns a pointer to a new params struct holding args; absent properties
// get their published default. It cannot fail: parse decoded each argument to the Go
// type of its property, and bind checked that the fields hold those types.
func (b *binding) decode(in inputSchema, args arguments) any {
	ptr := reflect.New(b.typ)
	params := ptr.Elem()
	for i, p := range in {
		field := params.FieldByIndex(b.fields[i])
		value, given := args[p.name]
		switch {
		case given && field.Kind() == reflect.Pointer:
			field.Set(reflect.New(field.Type().Elem()))
			field.Elem().Set(reflect.ValueOf(value).Convert(field.Type().Elem()))
		case given:
			field.Set(reflect.ValueOf(value).Convert(field.Type()))
		case b.defaults[i].IsValid():
			field.Set(b.defaults[i])
		}
	}
	return ptr.Interface()
}
