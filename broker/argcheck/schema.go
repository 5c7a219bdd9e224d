// This file owns accepting a schema: compiling its bytes once, within the schema
// budgets (composition, pattern, local references only, a known $schema), into
// what every check against it needs.

package argcheck

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// compiled is a checked and resolved schema, or the reason it was rejected.
type compiled struct {
	resolved   *jsonschema.Resolved
	tree       any  // the schema as generic JSON, for diagnostics and formats
	followRefs bool // local refs resolve against the root (no nested $id)
	anchors    map[string][]any
	// formats: some object in the schema has a "format" member, so valid arguments
	// get the broker's format checks; without one there is nothing they could find.
	formats bool
	err     error
}

// compileSchema checks a schema against the schema budgets and resolves it; a
// rejection is returned as a compiled schema too, so the cache keeps it and a bad
// schema is judged once.
func compileSchema(data []byte) *compiled {
	reject := func(err error) *compiled {
		return &compiled{err: fmt.Errorf("%w: %w", ErrSchemaRejected, err)}
	}
	if data[0] != '{' {
		return reject(fmt.Errorf("inputSchema must be a JSON object, got %s", jsonKind(data[0])))
	}
	if err := scanBudget(data, "schema", MaxSchemaDepth, MaxSchemaNodes); err != nil {
		return reject(err)
	}
	var tree any
	if err := json.Unmarshal(data, &tree); err != nil {
		return reject(errSyntax)
	}
	sc := &schemaChecker{root: tree, seen: map[string]bool{}, anchors: map[string][]any{}}
	if err := sc.walk(tree, ""); err != nil {
		return reject(err)
	}
	if sc.nestedID && sc.hasRef {
		return reject(errors.New("$ref inside a schema with a nested $id is not supported; inline the schema"))
	}
	if s, ok := tree.(map[string]any)["$schema"]; ok {
		switch s {
		case "https://json-schema.org/draft/2020-12/schema",
			"http://json-schema.org/draft-07/schema#", "https://json-schema.org/draft-07/schema#":
		default:
			return reject(errors.New("$schema must be draft 2020-12 or draft-07"))
		}
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(data, &s); err != nil {
		return reject(err)
	}
	rs, err := s.Resolve(nil) // no loader: remote references cannot be fetched
	if err != nil {
		return reject(err)
	}
	return &compiled{resolved: rs, tree: tree, followRefs: !sc.nestedID, anchors: sc.anchors, formats: treeHasKey(tree, "format")}
}

var errSyntax = errors.New("not valid JSON")

// treeHasKey reports whether any object in the generic JSON tree has a member
// named key, at any depth (in data positions too: it may say yes for nothing).
func treeHasKey(tree any, key string) bool {
	switch t := tree.(type) {
	case map[string]any:
		if _, ok := t[key]; ok {
			return true
		}
		for _, v := range t {
			if treeHasKey(v, key) {
				return true
			}
		}
	case []any:
		for _, v := range t {
			if treeHasKey(v, key) {
				return true
			}
		}
	}
	return false
}

// schemaChecker enforces the schema-content budgets on the generic tree, walking
// only keyword positions that hold subschemas (so data in enum, const, default
// or property names is never mistaken for a keyword).
type schemaChecker struct {
	root     any
	seen     map[string]bool // ref targets already walked
	nestedID bool
	hasRef   bool
	anchors  map[string][]any // $anchor and $dynamicAnchor names to their schemas
}

var (
	singleSchemaKeys = []string{"additionalProperties", "propertyNames", "unevaluatedProperties",
		"additionalItems", "contains", "unevaluatedItems", "not", "if", "then", "else", "contentSchema"}
	arraySchemaKeys = []string{"allOf", "anyOf", "oneOf", "prefixItems"}
	mapSchemaKeys   = []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"}
)

func (sc *schemaChecker) walk(node any, ptr string) error {
	obj, ok := node.(map[string]any)
	if !ok {
		return nil // boolean schemas, or data jsonschema-go will judge
	}
	if ptr != "" {
		if _, ok := obj["$id"]; ok {
			sc.nestedID = true
		}
	}
	for _, k := range []string{"$anchor", "$dynamicAnchor"} {
		if name, ok := obj[k].(string); ok {
			sc.anchors[name] = append(sc.anchors[name], obj)
		}
	}
	for _, k := range []string{"$ref", "$dynamicRef", "$recursiveRef"} {
		raw, ok := obj[k]
		if !ok {
			continue
		}
		sc.hasRef = true
		ref, ok := raw.(string)
		if !ok {
			return fmt.Errorf("%s at %s must be a string", k, shortPointer(ptr))
		}
		if !strings.HasPrefix(ref, "#") {
			return fmt.Errorf("%w (%s at %s)", ErrExternalRef, k, shortPointer(ptr+"/"+k))
		}
		if strings.HasPrefix(ref, "#/") && !sc.seen[ref] {
			sc.seen[ref] = true
			if target, ok := resolvePointer(sc.root, ref[1:]); ok {
				if err := sc.walk(target, ref[1:]); err != nil {
					return err
				}
			}
		}
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		if arr, ok := obj[k].([]any); ok && len(arr) > MaxCompositionBranch {
			return fmt.Errorf("%w: %s at %s has %d branches, limit %d", ErrCompositionBudget, k, shortPointer(ptr), len(arr), MaxCompositionBranch)
		}
	}
	if p, ok := obj["pattern"]; ok {
		s, ok := p.(string)
		if !ok {
			return fmt.Errorf("pattern at %s must be a string", shortPointer(ptr))
		}
		if err := checkPattern(s, ptr+"/pattern"); err != nil {
			return err
		}
	}
	if pp, ok := obj["patternProperties"].(map[string]any); ok {
		for re := range pp {
			if err := checkPattern(re, ptr+"/patternProperties/"+escapePointer(re)); err != nil {
				return err
			}
		}
	}
	for _, k := range singleSchemaKeys {
		if sub, ok := obj[k]; ok {
			if err := sc.walk(sub, ptr+"/"+k); err != nil {
				return err
			}
		}
	}
	if items, ok := obj["items"]; ok {
		if arr, ok := items.([]any); ok {
			for i, sub := range arr {
				if err := sc.walk(sub, ptr+"/items/"+strconv.Itoa(i)); err != nil {
					return err
				}
			}
		} else if err := sc.walk(items, ptr+"/items"); err != nil {
			return err
		}
	}
	for _, k := range arraySchemaKeys {
		arr, _ := obj[k].([]any)
		for i, sub := range arr {
			if err := sc.walk(sub, ptr+"/"+k+"/"+strconv.Itoa(i)); err != nil {
				return err
			}
		}
	}
	for _, k := range mapSchemaKeys {
		m, _ := obj[k].(map[string]any)
		for _, name := range sortedKeys(m) {
			if err := sc.walk(m[name], ptr+"/"+k+"/"+escapePointer(name)); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkPattern enforces the pattern budget. The contract's backtrack limit
// (10,000) guards a backtracking regex engine; jsonschema-go compiles patterns
// with Go's regexp, which is RE2 and matches in time linear in the input, so
// catastrophic backtracking cannot happen and there is nothing to count. A
// pattern RE2 cannot compile (lookaround, backreferences) rejects the schema.
func checkPattern(p, ptr string) error {
	ptr = shortPointer(ptr)
	if n := utf8.RuneCountInString(p); n > MaxPatternChars {
		return fmt.Errorf("%w: pattern at %s has %d characters, limit %d", ErrPatternBudget, ptr, n, MaxPatternChars)
	}
	if _, err := regexp.Compile(p); err != nil {
		return fmt.Errorf("pattern at %s is not a valid RE2 regular expression", ptr)
	}
	return nil
}
