// This file owns the diagnostics of a failed check (where in the arguments,
// which rule) and the walk that checks formats on arguments jsonschema-go accepted.

package argcheck

import (
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// locator walks schema and instance together to find where a failed
// validation went wrong, or (formatsOnly) to check the formats the broker
// supports. It follows only keywords every valid instance must satisfy
// (properties, items, allOf, $ref, ...); a failed anyOf, oneOf, not, if or
// contains is remembered as the fallback answer because deciding it would
// mean validating branches again. Its work is bounded by steps.
type locator struct {
	root       any
	followRefs bool
	steps      int
	ambiguous  *ArgumentsError
}

func (l *locator) maybe(ptr, rule string) {
	if l.ambiguous == nil {
		l.ambiguous = &ArgumentsError{Pointer: ptr, Rule: rule}
	}
}

func (l *locator) find(schema, inst any, ptr string, formatsOnly bool) *ArgumentsError {
	l.steps--
	if l.steps < 0 {
		return nil
	}
	if b, ok := schema.(bool); ok {
		if !b && !formatsOnly {
			return &ArgumentsError{Pointer: ptr, Rule: "false schema: no value allowed here"}
		}
		return nil
	}
	s, ok := schema.(map[string]any)
	if !ok {
		return nil
	}
	fail := func(rule string) *ArgumentsError { return &ArgumentsError{Pointer: ptr, Rule: rule} }

	if ref, ok := s["$ref"].(string); ok {
		if l.followRefs && (ref == "#" || strings.HasPrefix(ref, "#/")) {
			if target, ok := resolvePointer(l.root, ref[1:]); ok {
				if ae := l.find(target, inst, ptr, formatsOnly); ae != nil {
					return ae
				}
			}
		}
		if sv, _ := asMap(l.root)["$schema"].(string); strings.Contains(sv, "draft-07") {
			return nil // draft-07 ignores keywords beside $ref
		}
	}

	if !formatsOnly {
		if ae := l.scalarRules(s, inst, fail); ae != nil {
			return ae
		}
	}
	if f, ok := s["format"].(string); ok {
		if str, ok := inst.(string); ok && !formatOK(f, str) {
			return fail("format: not a valid " + f)
		}
	}

	allOf, _ := s["allOf"].([]any)
	for _, sub := range allOf {
		if ae := l.find(sub, inst, ptr, formatsOnly); ae != nil {
			return ae
		}
	}
	if !formatsOnly {
		if arr, ok := s["anyOf"].([]any); ok {
			l.maybe(ptr, fmt.Sprintf("anyOf: matches none of the %d alternatives", len(arr)))
		}
		if arr, ok := s["oneOf"].([]any); ok {
			l.maybe(ptr, fmt.Sprintf("oneOf: must match exactly one of the %d alternatives", len(arr)))
		}
		if _, ok := s["not"]; ok {
			l.maybe(ptr, "not: matches a disallowed schema")
		}
		if _, ok := s["if"]; ok {
			l.maybe(ptr, "if/then/else: fails the conditional branch")
		}
	}

	switch x := inst.(type) {
	case []any:
		return l.arrayRules(s, x, ptr, formatsOnly, fail)
	case map[string]any:
		return l.objectRules(s, x, ptr, formatsOnly, fail)
	}
	return nil
}

func (l *locator) scalarRules(s map[string]any, inst any, fail func(string) *ArgumentsError) *ArgumentsError {
	got := typeOf(inst)
	switch t := s["type"].(type) {
	case string:
		if !typeMatches(got, t) {
			return fail(fmt.Sprintf("type: want %s, got %s", t, got))
		}
	case []any:
		okType := false
		var names []string
		for _, e := range t {
			if n, ok := e.(string); ok {
				names = append(names, n)
				okType = okType || typeMatches(got, n)
			}
		}
		if !okType {
			return fail(fmt.Sprintf("type: want one of %s, got %s", strings.Join(names, ", "), got))
		}
	}
	if enum, ok := s["enum"].([]any); ok {
		if !slices.ContainsFunc(enum, func(e any) bool { return jsonEqual(e, inst) }) {
			return fail(fmt.Sprintf("enum: not one of the %d allowed values", len(enum)))
		}
	}
	if c, ok := s["const"]; ok && !jsonEqual(c, inst) {
		return fail("const: not the required constant")
	}
	if n, ok := inst.(float64); ok {
		if m, ok := s["multipleOf"].(float64); ok && m > 0 {
			if q := n / m; math.Abs(q-math.Round(q)) > 1e-9 {
				return fail("multipleOf: not a multiple of " + fmtNum(m))
			}
		}
		if m, ok := s["minimum"].(float64); ok && n < m {
			return fail("minimum: less than " + fmtNum(m))
		}
		if m, ok := s["maximum"].(float64); ok && n > m {
			return fail("maximum: greater than " + fmtNum(m))
		}
		if m, ok := s["exclusiveMinimum"].(float64); ok && n <= m {
			return fail("exclusiveMinimum: not greater than " + fmtNum(m))
		}
		if m, ok := s["exclusiveMaximum"].(float64); ok && n >= m {
			return fail("exclusiveMaximum: not less than " + fmtNum(m))
		}
	}
	if str, ok := inst.(string); ok {
		n := float64(utf8.RuneCountInString(str))
		if m, ok := s["minLength"].(float64); ok && n < m {
			return fail("minLength: shorter than " + fmtNum(m) + " characters")
		}
		if m, ok := s["maxLength"].(float64); ok && n > m {
			return fail("maxLength: longer than " + fmtNum(m) + " characters")
		}
		if p, ok := s["pattern"].(string); ok {
			if re, err := regexp.Compile(p); err == nil && !re.MatchString(str) {
				return fail("pattern: does not match " + strconv.Quote(p))
			}
		}
	}
	return nil
}

func (l *locator) arrayRules(s map[string]any, arr []any, ptr string, formatsOnly bool, fail func(string) *ArgumentsError) *ArgumentsError {
	at := func(i int) string { return ptr + "/" + strconv.Itoa(i) }
	prefix, _ := s["prefixItems"].([]any)
	rest := s["items"]
	if tuple, ok := rest.([]any); ok { // draft-07 tuple form
		prefix, rest = tuple, s["additionalItems"]
	}
	for i, sub := range prefix {
		if i >= len(arr) {
			break
		}
		if ae := l.find(sub, arr[i], at(i), formatsOnly); ae != nil {
			return ae
		}
	}
	if rest != nil {
		for i := len(prefix); i < len(arr); i++ {
			if ae := l.find(rest, arr[i], at(i), formatsOnly); ae != nil {
				return ae
			}
		}
	}
	if formatsOnly {
		return nil
	}
	n := float64(len(arr))
	if m, ok := s["minItems"].(float64); ok && n < m {
		return fail("minItems: fewer than " + fmtNum(m) + " items")
	}
	if m, ok := s["maxItems"].(float64); ok && n > m {
		return fail("maxItems: more than " + fmtNum(m) + " items")
	}
	if u, _ := s["uniqueItems"].(bool); u {
		for i := range arr {
			for j := i + 1; j < len(arr); j++ {
				if jsonEqual(arr[i], arr[j]) {
					return fail(fmt.Sprintf("uniqueItems: items %d and %d are equal", i, j))
				}
			}
		}
	}
	if _, ok := s["contains"]; ok {
		l.maybe(ptr, "contains: no item matches the required schema")
	}
	return nil
}

func (l *locator) objectRules(s map[string]any, obj map[string]any, ptr string, formatsOnly bool, fail func(string) *ArgumentsError) *ArgumentsError {
	at := func(k string) string { return ptr + "/" + escapePointer(k) }
	if !formatsOnly {
		if req, ok := s["required"].([]any); ok {
			for _, r := range req {
				if name, ok := r.(string); ok {
					if _, present := obj[name]; !present {
						return fail("required: missing property " + strconv.Quote(name))
					}
				}
			}
		}
		if dr, ok := s["dependentRequired"].(map[string]any); ok {
			for _, k := range sortedKeys(dr) {
				if _, present := obj[k]; !present {
					continue
				}
				deps, _ := dr[k].([]any)
				for _, d := range deps {
					if name, ok := d.(string); ok {
						if _, present := obj[name]; !present {
							return fail(fmt.Sprintf("dependentRequired: property %q requires %q", k, name))
						}
					}
				}
			}
		}
		n := float64(len(obj))
		if m, ok := s["minProperties"].(float64); ok && n < m {
			return fail("minProperties: fewer than " + fmtNum(m) + " properties")
		}
		if m, ok := s["maxProperties"].(float64); ok && n > m {
			return fail("maxProperties: more than " + fmtNum(m) + " properties")
		}
	}
	props, _ := s["properties"].(map[string]any)
	patterns, _ := s["patternProperties"].(map[string]any)
	var res []*regexp.Regexp
	var resSchemas []any
	for _, p := range sortedKeys(patterns) {
		if re, err := regexp.Compile(p); err == nil {
			res = append(res, re)
			resSchemas = append(resSchemas, patterns[p])
		}
	}
	additional, hasAdditional := s["additionalProperties"]
	for _, k := range sortedKeys(obj) {
		evaluated := false
		if sub, ok := props[k]; ok {
			evaluated = true
			if ae := l.find(sub, obj[k], at(k), formatsOnly); ae != nil {
				return ae
			}
		}
		for i, re := range res {
			if re.MatchString(k) {
				evaluated = true
				if ae := l.find(resSchemas[i], obj[k], at(k), formatsOnly); ae != nil {
					return ae
				}
			}
		}
		if evaluated || !hasAdditional {
			continue
		}
		if b, ok := additional.(bool); ok && !b {
			if !formatsOnly {
				return &ArgumentsError{Pointer: at(k), Rule: "additionalProperties: property not allowed"}
			}
			continue
		}
		if ae := l.find(additional, obj[k], at(k), formatsOnly); ae != nil {
			return ae
		}
	}
	if pn, ok := s["propertyNames"]; ok && !formatsOnly {
		for _, k := range sortedKeys(obj) {
			if ae := l.find(pn, k, at(k), false); ae != nil {
				ae.Rule = "propertyNames: " + ae.Rule
				return ae
			}
		}
	}
	if ds, ok := s["dependentSchemas"].(map[string]any); ok {
		for _, k := range sortedKeys(ds) {
			if _, present := obj[k]; present {
				if ae := l.find(ds[k], obj, ptr, formatsOnly); ae != nil {
					return ae
				}
			}
		}
	}
	return nil
}

// failedKeyword names the keyword jsonschema-go reported, without any of the
// values its message carries: only the word before the first colon of the
// innermost "validating <schema>: " segment, and only if it is a keyword.
func failedKeyword(err error) string {
	msg := err.Error()
	for strings.HasPrefix(msg, "validating ") {
		i := strings.Index(msg, ": ")
		if i < 0 {
			break
		}
		msg = msg[i+2:]
	}
	word, _, _ := strings.Cut(msg, ":")
	if strings.HasPrefix(msg, "unexpected additional properties") {
		word = "additionalProperties"
	}
	if word != "" && !strings.ContainsAny(word, " \"'\n") && len(word) < 40 {
		return word + ": violated"
	}
	return "schema: violated"
}

func typeOf(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case float64:
		if _, f := math.Modf(x); f == 0 {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "unknown"
}

func typeMatches(got, want string) bool {
	return got == want || got == "integer" && want == "number"
}

func jsonEqual(a, b any) bool { return reflect.DeepEqual(a, b) }

func fmtNum(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func asMap(v any) map[string]any { m, _ := v.(map[string]any); return m }
