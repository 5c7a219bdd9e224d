package server

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
)

// Schemas from types (docs/design.md, "Architecture"): a tool's input schema
// is jsonschema.ForType of its params struct, and its output schema that of each
// shape its value takes, as go-sdk's AddTool[In, Out] derives them. What the Go type
// alone does not say is said beside it:
//
//   - a field's description in its `jsonschema:"..."` tag (jsonschema-go's own);
//   - a field's bounds, enum and default in its `schema:"..."` tag: comma-separated
//     minLength=, maxLength=, minimum=, maximum=, maxItems=, enum= (values split by
//     |), default= (the JSON value; a string's without quotes), type= (a value that
//     is any Go type but one JSON type);
//   - the shared argument types' schemas, whose bounds are Go constants (params.go);
//   - for types of other packages, whose fields this package does not tag, a
//     refinement (schema_out.go).
//
// Required is every field without omitempty or omitzero, as encoding/json writes
// it, except those promoted from an embedded pointer, which may be absent. An input
// property is never null (decode refuses null: absent is how a default is asked
// for). An output pointer without omitempty may be null and says so; every other
// output field has its one type. Output objects stay open (no additionalProperties),
// as the presentation adds text_truncated to any value.

// schemaCache holds each type's schema, input and output apart: a schema is built
// once per process, however many servers are made.
var schemaCache sync.Map // schemaKey → *jsonschema.Schema

type schemaKey struct {
	t      reflect.Type
	output bool
}

// schemaOf is t's schema; the caller must not change it.
func schemaOf(t reflect.Type, output bool) (*jsonschema.Schema, error) {
	key := schemaKey{t, output}
	if s, ok := schemaCache.Load(key); ok {
		return s.(*jsonschema.Schema), nil
	}
	s, err := jsonschema.ForType(t, &jsonschema.ForOptions{TypeSchemas: typeSchemas()})
	if err != nil {
		return nil, err
	}
	if err := refine(t, s, output, false); err != nil {
		return nil, fmt.Errorf("%v: %w", t, err)
	}
	if t.Kind() == reflect.Struct && s.Properties == nil {
		s.Properties = map[string]*jsonschema.Schema{} // published as {}: no arguments
	}
	schemaCache.Store(key, s)
	return s, nil
}

// typeSchemas are the types whose schema is declared rather than inferred: the
// shared argument types, and json.RawMessage as any JSON (inferred, it would be an
// array of bytes).
var typeSchemas = sync.OnceValue(func() map[reflect.Type]*jsonschema.Schema {
	m := maps.Clone(argTypes)
	m[reflect.TypeFor[json.RawMessage]()] = &jsonschema.Schema{}
	return m
})

// refine applies to s, the schema jsonschema.ForType made of t, what this file's
// comment says. nullable: s is an output field that encoding/json may write as null.
func refine(t reflect.Type, s *jsonschema.Schema, output, nullable bool) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	setNullable(s, nullable)
	if _, declared := typeSchemas()[t]; declared {
		return nil
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		if s.Items != nil && isEmpty(s.Items) {
			s.Items = nil // items of any JSON: the same as saying nothing
		} else if s.Items != nil {
			return refine(t.Elem(), s.Items, output, false)
		}
	case reflect.Map:
		if s.AdditionalProperties != nil {
			if isEmpty(s.AdditionalProperties) {
				s.AdditionalProperties = nil // any value: the same as saying nothing
			} else if err := refine(t.Elem(), s.AdditionalProperties, output, false); err != nil {
				return err
			}
		}
	case reflect.Struct:
		if err := refineStruct(t, s, output); err != nil {
			return err
		}
	}
	if r := refinements[t]; r != nil {
		r(s)
	}
	return nil
}

// refineStruct refines each property of struct t's schema s, and says which are
// required.
func refineStruct(t reflect.Type, s *jsonschema.Schema, output bool) error {
	s.Required = nil
	if output {
		s.AdditionalProperties = nil
	}
	fields := reflect.VisibleFields(t)
	// Of two fields of one JSON name, jsonschema.ForType describes the last.
	last := map[string]int{}
	for i, f := range fields {
		if name, _, ok := jsonField(f); ok && name != "" {
			last[name] = i
		}
	}
	var embedded []reflect.Type
	for i, f := range fields {
		name, opts, ok := jsonField(f)
		if !ok {
			continue
		}
		if f.Anonymous && name == "" {
			embedded = append(embedded, f.Type)
			continue
		}
		prop := s.Properties[name]
		if prop == nil || last[name] != i {
			continue
		}
		optional := slices.Contains(opts, "omitempty") || slices.Contains(opts, "omitzero") || viaPointer(t, f)
		if !optional {
			s.Required = append(s.Required, name)
		}
		tag, err := parseSchemaTag(f.Tag.Get("schema"))
		if err != nil {
			return fmt.Errorf("field %s: %w", f.Name, err)
		}
		mayBeNull := output && !optional && f.Type.Kind() == reflect.Pointer
		if tag.typ != "" {
			prop.Type, prop.Types = tag.typ, nil
		}
		if err := refine(f.Type, prop, output, mayBeNull); err != nil {
			return fmt.Errorf("field %s: %w", f.Name, err)
		}
		if err := tag.apply(prop); err != nil {
			return fmt.Errorf("field %s: %w", f.Name, err)
		}
		if !output {
			integerRange(prop)
		}
	}
	// An embedded struct's fields are properties of t's: so is what its type says
	// of them.
	for _, e := range embedded {
		for e.Kind() == reflect.Pointer {
			e = e.Elem()
		}
		if r := refinements[e]; r != nil {
			r(s)
		}
	}
	return nil
}

// jsonField is f's JSON name and options; ok is false for a field encoding/json
// leaves out. An embedded struct without a name has name "".
func jsonField(f reflect.StructField) (name string, opts []string, ok bool) {
	tag := f.Tag.Get("json")
	if tag == "-" || !f.IsExported() && !f.Anonymous {
		return "", nil, false
	}
	parts := strings.Split(tag, ",")
	name = parts[0]
	if name == "" && !f.Anonymous {
		name = f.Name
	}
	return name, parts[1:], true
}

// viaPointer reports whether f is promoted from an embedded pointer, which
// encoding/json leaves out when it is nil.
func viaPointer(t reflect.Type, f reflect.StructField) bool {
	for i := range len(f.Index) - 1 {
		e := t.FieldByIndex(f.Index[:i+1])
		if e.Type.Kind() == reflect.Pointer {
			return true
		}
	}
	return false
}

// setNullable makes s's type [T, "null"] when nullable, and T otherwise.
func setNullable(s *jsonschema.Schema, nullable bool) {
	types := s.Types
	if s.Type != "" {
		types = []string{s.Type}
	}
	types = slices.DeleteFunc(slices.Clone(types), func(t string) bool { return t == "null" })
	if len(types) == 0 {
		s.Type, s.Types = "", nil // any JSON
		return
	}
	if nullable {
		s.Type, s.Types = "", append(types, "null")
		return
	}
	s.Type, s.Types = "", nil
	if len(types) == 1 {
		s.Type = types[0]
	} else {
		s.Types = types
	}
}

// isEmpty reports the schema {}: any JSON.
func isEmpty(s *jsonschema.Schema) bool { return reflect.ValueOf(*s).IsZero() }

// schemaTag is a field's `schema:"..."` tag.
type schemaTag struct {
	minLength, maxLength, maxItems *int
	minimum, maximum               *float64
	enum                           []string
	def                            *string
	typ                            string
}

func parseSchemaTag(tag string) (schemaTag, error) {
	var st schemaTag
	if tag == "" {
		return st, nil
	}
	for _, part := range strings.Split(tag, ",") {
		key, value, _ := strings.Cut(part, "=")
		var err error
		switch key {
		case "minLength":
			st.minLength, err = intValue(value)
		case "maxLength":
			st.maxLength, err = intValue(value)
		case "maxItems":
			st.maxItems, err = intValue(value)
		case "minimum":
			st.minimum, err = floatValue(value)
		case "maximum":
			st.maximum, err = floatValue(value)
		case "enum":
			st.enum = strings.Split(value, "|")
		case "default":
			st.def = &value
		case "type":
			st.typ = value
		default:
			return st, fmt.Errorf("schema tag: unknown keyword %q", key)
		}
		if err != nil {
			return st, fmt.Errorf("schema tag: %s: %w", key, err)
		}
	}
	return st, nil
}

func intValue(s string) (*int, error) {
	n, err := strconv.Atoi(s)
	return &n, err
}

func floatValue(s string) (*float64, error) {
	f, err := strconv.ParseFloat(s, 64)
	return &f, err
}

// apply sets the tag's keywords on prop.
func (st schemaTag) apply(prop *jsonschema.Schema) error {
	if st.minLength != nil {
		prop.MinLength = st.minLength
	}
	if st.maxLength != nil {
		prop.MaxLength = st.maxLength
	}
	if st.maxItems != nil {
		prop.MaxItems = st.maxItems
	}
	if st.minimum != nil {
		prop.Minimum = st.minimum
	}
	if st.maximum != nil {
		prop.Maximum = st.maximum
	}
	for _, v := range st.enum {
		prop.Enum = append(prop.Enum, v)
	}
	if st.def != nil {
		def := []byte(*st.def)
		if prop.Type == "string" {
			def, _ = json.Marshal(*st.def)
		}
		if !json.Valid(def) {
			return fmt.Errorf("schema tag: default %s is not JSON", def)
		}
		prop.Default = def
	}
	return nil
}

// publish is s as the JSON a client reads, written by one json.Marshal of the plain
// value schemaValue makes of it: jsonschema.Schema's own MarshalJSON, run at every
// node, writes each node once per level above it and took most of the time the
// server spends declaring its tools before it can answer (BenchmarkPublishSchemas).
// The keys come sorted, as they did from the hand-written schemas.
func publish(s *jsonschema.Schema) (json.RawMessage, error) {
	v, err := schemaValue(s)
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// schemaValue is s as a JSON value: an object of the keywords these schemas use, true
// for {} and false for {"not": {}}, as jsonschema writes them. A keyword it does not
// know is an error, never dropped.
func schemaValue(s *jsonschema.Schema) (any, error) {
	rest := *s
	m := map[string]any{}
	switch {
	case s.Type != "":
		m["type"] = s.Type
	case s.Types != nil:
		m["type"] = s.Types
	}
	if s.Description != "" {
		m["description"] = s.Description
	}
	if s.Default != nil {
		m["default"] = s.Default
	}
	if s.Enum != nil {
		m["enum"] = s.Enum
	}
	for key, n := range map[string]*float64{"minimum": s.Minimum, "maximum": s.Maximum} {
		if n != nil {
			m[key] = schemaNumber(*n)
		}
	}
	for key, n := range map[string]*int{"minLength": s.MinLength, "maxLength": s.MaxLength, "maxItems": s.MaxItems} {
		if n != nil {
			m[key] = *n
		}
	}
	if s.Required != nil {
		m["required"] = s.Required
	}
	if s.Properties != nil {
		props := make(map[string]any, len(s.Properties))
		for name, p := range s.Properties {
			v, err := schemaValue(p)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			props[name] = v
		}
		m["properties"] = props
	}
	for key, sub := range map[string]*jsonschema.Schema{"items": s.Items, "additionalProperties": s.AdditionalProperties, "not": s.Not} {
		if sub != nil {
			v, err := schemaValue(sub)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", key, err)
			}
			m[key] = v
		}
	}
	if s.OneOf != nil {
		branches := make([]any, len(s.OneOf))
		for i, b := range s.OneOf {
			v, err := schemaValue(b)
			if err != nil {
				return nil, fmt.Errorf("oneOf[%d]: %w", i, err)
			}
			branches[i] = v
		}
		m["oneOf"] = branches
	}
	rest.Type, rest.Types, rest.Description, rest.Default, rest.Enum = "", nil, "", nil, nil
	rest.Minimum, rest.Maximum, rest.MinLength, rest.MaxLength, rest.MaxItems = nil, nil, nil, nil, nil
	rest.Required, rest.Properties, rest.PropertyOrder = nil, nil, nil
	rest.Items, rest.AdditionalProperties, rest.Not, rest.OneOf = nil, nil, nil, nil
	if !reflect.ValueOf(rest).IsZero() {
		return nil, fmt.Errorf("a schema keyword publish does not write: %+v", rest)
	}
	switch {
	case len(m) == 0:
		return true, nil
	case len(m) == 1 && m["not"] == true:
		return false, nil
	}
	return m, nil
}

// schemaNumber is a bound as published: integerRange's maximum exactly (2^64-1; the
// float64 nearest to it would be written 18446744073709552000), any other as it is.
func schemaNumber(f float64) any {
	if f == float64(math.MaxUint64) {
		return json.Number(maxUint64)
	}
	return f
}
