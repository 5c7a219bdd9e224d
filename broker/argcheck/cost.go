// This file owns the subschema budget (MaxValidationSteps): counting the
// applications a validation can make before jsonschema-go runs.

package argcheck

import (
	"strings"
)

// cost counts, without evaluating any keyword, how many subschema
// applications validating instance can make: an upper bound of
// jsonschema-go's work. It stops at its budget or recursion limit.
type cost struct {
	c    *compiled
	left int
}

func (vc *cost) apply(schema, inst any, depth int) bool {
	vc.left--
	if vc.left < 0 || depth > maxRecursion {
		return false
	}
	s, ok := schema.(map[string]any)
	if !ok {
		return true
	}
	in := func(sub any) bool { return vc.apply(sub, inst, depth+1) }
	for _, k := range []string{"$ref", "$dynamicRef", "$recursiveRef"} {
		ref, ok := s[k].(string)
		if !ok {
			continue
		}
		var targets []any
		if ref == "#" || strings.HasPrefix(ref, "#/") {
			if t, ok := resolvePointer(vc.c.tree, ref[1:]); ok {
				targets = append(targets, t)
			}
		} else {
			targets = vc.c.anchors[strings.TrimPrefix(ref, "#")]
		}
		for _, t := range targets {
			if !in(t) {
				return false
			}
		}
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		arr, _ := s[k].([]any)
		for _, sub := range arr {
			if !in(sub) {
				return false
			}
		}
	}
	for _, k := range []string{"not", "if", "then", "else"} {
		if sub, ok := s[k]; ok && !in(sub) {
			return false
		}
	}
	switch x := inst.(type) {
	case []any:
		var each []any
		for _, k := range []string{"additionalItems", "contains", "unevaluatedItems"} {
			if sub, ok := s[k]; ok {
				each = append(each, sub)
			}
		}
		prefix, _ := s["prefixItems"].([]any)
		if tuple, ok := s["items"].([]any); ok {
			prefix = tuple
		} else if sub, ok := s["items"]; ok {
			each = append(each, sub)
		}
		for i, elem := range x {
			if i < len(prefix) && !vc.apply(prefix[i], elem, depth+1) {
				return false
			}
			for _, sub := range each {
				if !vc.apply(sub, elem, depth+1) {
					return false
				}
			}
		}
	case map[string]any:
		props, _ := s["properties"].(map[string]any)
		patterns, _ := s["patternProperties"].(map[string]any)
		if ds, ok := s["dependentSchemas"].(map[string]any); ok {
			for _, sub := range ds {
				if !in(sub) {
					return false
				}
			}
		}
		var each []any
		for _, k := range []string{"additionalProperties", "unevaluatedProperties"} {
			if sub, ok := s[k]; ok {
				each = append(each, sub)
			}
		}
		for _, sub := range patterns {
			each = append(each, sub)
		}
		pn, hasPN := s["propertyNames"]
		for k, val := range x {
			if sub, ok := props[k]; ok && !vc.apply(sub, val, depth+1) {
				return false
			}
			for _, sub := range each {
				if !vc.apply(sub, val, depth+1) {
					return false
				}
			}
			if hasPN && !vc.apply(pn, k, depth+1) {
				return false
			}
		}
	}
	return true
}
