// This file owns the fast path: a check of its own for a schema of only the
// commonest keywords, which may say yes sooner than jsonschema-go, never no.

package argcheck

import (
	"math"
	"unicode/utf8"
)

// fastSchema is a schema made of the few keywords most tool schemas use (types,
// properties, required, additionalProperties, items, scalar enums, length and
// numeric bounds, annotations), compiled to a check of its own. It only ever
// shortens the way to a yes: arguments it accepts, jsonschema-go accepts (a
// differential test and a fuzz target hold it to that), and arguments it refuses
// go to jsonschema-go, which judges and explains them as before. jsonschema-go's
// generic validation, with its annotations and reflection, was half of an echo
// call's check.
//
// Nor does such a schema need the subschema budget (cost.go): without $ref or
// composition every argument value is checked by at most one subschema, so a
// check applies at most MaxArgumentNodes of them and nests at most
// MaxArgumentDepth deep, well inside the budget.
type fastSchema struct {
	types    uint8                  // typeNull, typeBoolean, ... bits the value may have; 0: any
	enum     []any                  // the values it may be (nil, bool, float64, string); nil: any
	minLen   int                    // string length bounds, in code points; -1: none
	maxLen   int                    //
	minItems int                    // array length bounds; -1: none
	maxItems int                    //
	bounds   [4]*float64            // minimum, maximum, exclusiveMinimum, exclusiveMaximum
	props    map[string]*fastSchema // properties
	required []string               //
	addl     *fastSchema            // additionalProperties as a schema; nil: any
	noAddl   bool                   // additionalProperties: false
	items    *fastSchema            // items; nil: any
}

const (
	typeNull uint8 = 1 << iota
	typeBoolean
	typeObject
	typeArray
	typeString
	typeNumber
	typeInteger
)

var typeNames = map[string]uint8{
	"null": typeNull, "boolean": typeBoolean, "object": typeObject, "array": typeArray,
	"string": typeString, "number": typeNumber, "integer": typeInteger,
}

// annotations are keywords with no say in validation.
var annotations = map[string]bool{
	"title": true, "description": true, "default": true, "examples": true, "$comment": true,
	"deprecated": true, "readOnly": true, "writeOnly": true,
}

// compileFast compiles a schema (the generic tree of one that jsonschema-go
// resolved) made only of fastSchema's keywords, or says no.
func compileFast(node any, root bool) (*fastSchema, bool) {
	if b, ok := node.(bool); ok {
		if !b {
			return nil, false // a schema that accepts nothing: jsonschema-go's to explain
		}
		return &fastSchema{minLen: -1, maxLen: -1, minItems: -1, maxItems: -1}, true
	}
	s, ok := node.(map[string]any)
	if !ok {
		return nil, false
	}
	f := &fastSchema{minLen: -1, maxLen: -1, minItems: -1, maxItems: -1}
	for key, v := range s {
		switch key {
		case "type":
			if f.types, ok = fastTypes(v); !ok {
				return nil, false
			}
		case "enum":
			list, isList := v.([]any)
			if !isList {
				return nil, false
			}
			for _, e := range list {
				switch e.(type) {
				case nil, bool, float64, string:
				default:
					return nil, false
				}
			}
			f.enum = append([]any{}, list...)
		case "minLength", "maxLength", "minItems", "maxItems":
			n, isCount := schemaCount(v)
			if !isCount {
				return nil, false
			}
			switch key {
			case "minLength":
				f.minLen = n
			case "maxLength":
				f.maxLen = n
			case "minItems":
				f.minItems = n
			default:
				f.maxItems = n
			}
		case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
			n, isNumber := v.(float64)
			if !isNumber {
				return nil, false
			}
			i := map[string]int{"minimum": 0, "maximum": 1, "exclusiveMinimum": 2, "exclusiveMaximum": 3}[key]
			f.bounds[i] = &n
		case "properties":
			props, isObject := v.(map[string]any)
			if !isObject {
				return nil, false
			}
			f.props = make(map[string]*fastSchema, len(props))
			for name, sub := range props {
				if f.props[name], ok = compileFast(sub, false); !ok {
					return nil, false
				}
			}
		case "required":
			list, isList := v.([]any)
			if !isList {
				return nil, false
			}
			for _, r := range list {
				name, isString := r.(string)
				if !isString {
					return nil, false
				}
				f.required = append(f.required, name)
			}
		case "additionalProperties":
			if b, isBool := v.(bool); isBool {
				f.noAddl = !b
				continue
			}
			if f.addl, ok = compileFast(v, false); !ok {
				return nil, false
			}
		case "items":
			if _, isObject := v.(map[string]any); !isObject { // the draft-07 tuple form too
				return nil, false
			}
			if f.items, ok = compileFast(v, false); !ok {
				return nil, false
			}
		case "$schema":
			if !root { // its value was checked when the schema was compiled
				return nil, false
			}
		default:
			if !annotations[key] {
				return nil, false
			}
		}
	}
	return f, true
}

func fastTypes(v any) (uint8, bool) {
	names, isList := v.([]any)
	if !isList {
		names = []any{v}
	}
	var types uint8
	for _, n := range names {
		name, isString := n.(string)
		bit := typeNames[name]
		if !isString || bit == 0 {
			return 0, false
		}
		types |= bit
	}
	if types == 0 {
		return 0, false // an empty list of types
	}
	if types&typeNumber != 0 {
		types |= typeInteger // "number" takes integers
	}
	return types, true
}

// schemaCount is a non-negative integer count, as a schema gives one.
func schemaCount(v any) (int, bool) {
	n, ok := v.(float64)
	if !ok || n < 0 || n != math.Trunc(n) || n > math.MaxInt32 {
		return 0, false
	}
	return int(n), true
}

// accepts reports whether v (from encoding/json, into any) is valid for sure; no
// means jsonschema-go is to judge it.
func (f *fastSchema) accepts(v any) bool {
	if f.types != 0 && f.types&fastType(v) == 0 {
		return false
	}
	if f.enum != nil && !fastIn(f.enum, v) {
		return false
	}
	switch x := v.(type) {
	case string:
		if f.minLen >= 0 || f.maxLen >= 0 {
			n := utf8.RuneCountInString(x)
			if f.minLen >= 0 && n < f.minLen || f.maxLen >= 0 && n > f.maxLen {
				return false
			}
		}
	case float64:
		b := f.bounds
		if b[0] != nil && x < *b[0] || b[1] != nil && x > *b[1] || b[2] != nil && x <= *b[2] || b[3] != nil && x >= *b[3] {
			return false
		}
	case []any:
		if f.minItems >= 0 && len(x) < f.minItems || f.maxItems >= 0 && len(x) > f.maxItems {
			return false
		}
		if f.items != nil {
			for _, e := range x {
				if !f.items.accepts(e) {
					return false
				}
			}
		}
	case map[string]any:
		for _, name := range f.required {
			if _, ok := x[name]; !ok {
				return false
			}
		}
		for name, value := range x {
			if sub, ok := f.props[name]; ok {
				if !sub.accepts(value) {
					return false
				}
				continue
			}
			if f.noAddl || f.addl != nil && !f.addl.accepts(value) {
				return false
			}
		}
	}
	return true
}

// fastType is v's type bits: an integral number is an integer and a number.
func fastType(v any) uint8 {
	switch x := v.(type) {
	case nil:
		return typeNull
	case bool:
		return typeBoolean
	case string:
		return typeString
	case float64:
		if _, frac := math.Modf(x); frac == 0 {
			return typeNumber | typeInteger
		}
		return typeNumber
	case []any:
		return typeArray
	case map[string]any:
		return typeObject
	}
	return 0
}

func fastIn(enum []any, v any) bool {
	for _, e := range enum {
		if e == v { // scalars only: nil, bool, float64 and string compare by value
			return true
		}
	}
	return false
}
