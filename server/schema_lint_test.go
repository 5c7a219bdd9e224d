package server

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/iota-uz/repl-mcp/broker"
	"github.com/iota-uz/repl-mcp/repl"
)

// untypedProperties are the properties whose value is any JSON on purpose; each must
// say so in a description.
var untypedProperties = []string{"value", "structuredContent"}

// presentedProperties are the properties the presentation adds to a result's JSON,
// which no result type declares: the flag of a structured text block cut at 8 KiB.
var presentedProperties = []string{"text_truncated"}

// TestPublishedOutputSchemasDeclareEveryField lints every published outputSchema the
// way a client that turns schemas into types reads them (Codex's code mode makes a
// TypeScript return type of each): an object schema, and each branch of a oneOf, has
// a property for every field it requires; every property has a type (or an enum),
// save the few that are any JSON and say so; and the Go types the results are made of
// have every JSON field declared where they appear, images and offsets included, and
// no property that no field fills. The schemas are made from the types
// (schema_types.go); this test holds whatever the refinements add to them to the
// same rules.
func TestPublishedOutputSchemasDeclareEveryField(t *testing.T) {
	schemas := map[string]map[string]any{}
	for _, tl := range (&Server{}).tools() {
		var schema map[string]any
		if err := json.Unmarshal(declare(t, tl).def.OutputSchema.(json.RawMessage), &schema); err != nil {
			t.Fatalf("%s: the outputSchema is not JSON: %v", tl.name, err)
		}
		schemas[tl.name] = schema
		lintSchema(t, tl.name, schema)
	}

	// Where each result type is published: the tool, and which branch of its oneOf
	// (-1 for the schema itself).
	for _, c := range []struct {
		tool   string
		branch int
		path   []string // properties to follow from there
		typ    reflect.Type
		// extra are properties of the node that typ does not fill: those of
		// another type that shares the node's properties.
		extra []string
	}{
		{"execute_python", 0, nil, reflect.TypeFor[repl.Result](), nil},
		{"execute_python", 1, nil, reflect.TypeFor[repl.Snapshot](), nil},
		{"python_execute_file", 0, nil, reflect.TypeFor[repl.Result](), nil},
		{"python_execute_file", 1, nil, reflect.TypeFor[repl.Snapshot](), nil},
		{"python_run", 1, nil, reflect.TypeFor[repl.Result](), nil},
		{"python_run", 0, nil, reflect.TypeFor[repl.Snapshot](), nil},
		{"python_start", 0, nil, reflect.TypeFor[repl.StartInfo](), nil},
		{"python_health", -1, nil, reflect.TypeFor[healthReport](), nil},
		{"python_health", -1, []string{"server"}, reflect.TypeFor[repl.Health](), nil},
		{"python_health", -1, []string{"broker"}, reflect.TypeFor[broker.Health](), nil},
		{"python_health", -1, []string{"sessions"}, reflect.TypeFor[sessionList](), nil},
		{"python_session_list", -1, nil, reflect.TypeFor[sessionList](), nil},
		{"python_session_open", 0, nil, reflect.TypeFor[repl.Health](), nil},
		{"python_session_inspect", 0, nil, reflect.TypeFor[inspection](), nil},
		{"python_session_close", 0, nil, reflect.TypeFor[closed](), nil},
		{"python_cancel", 0, nil, reflect.TypeFor[cancelled](), nil},
		{"python_cancel", 1, nil, reflect.TypeFor[cancelRefused](), nil},
		{"python_session_restore", 0, nil, reflect.TypeFor[repl.RestoreResult](), nil},
		{"python_session_export", 0, nil, reflect.TypeFor[sessionExported](), nil},
		{"artifact_create", 0, nil, reflect.TypeFor[artifactCreated](), nil},
		{"artifact_read", 0, nil, reflect.TypeFor[rangeJSON](), nil},
		{"artifact_save", 0, nil, reflect.TypeFor[artifactSaved](), nil},
		{"artifact_delete", 0, nil, reflect.TypeFor[artifactDeleted](), nil},
	} {
		node := schemas[c.tool]
		where := c.tool
		if c.branch >= 0 {
			node = node["oneOf"].([]any)[c.branch].(map[string]any)
			where += ".oneOf[" + string(rune('0'+c.branch)) + "]"
		}
		for _, p := range c.path {
			node = node["properties"].(map[string]any)[p].(map[string]any)
			where += "." + p
		}
		props, _ := node["properties"].(map[string]any)
		fields := jsonFields(c.typ)
		for _, field := range fields {
			if _, ok := props[field]; !ok {
				t.Errorf("%s: %s's field %q has no property", where, c.typ, field)
			}
		}
		// And the other way: a property no Go field fills is published for nothing.
		for name := range props {
			if !slices.Contains(fields, name) && !slices.Contains(presentedProperties, name) && !slices.Contains(c.extra, name) {
				t.Errorf("%s: the property %q is no field of %s", where, name, c.typ)
			}
		}
	}
}

// lintSchema checks one schema node and everything below it.
func lintSchema(t *testing.T, where string, node map[string]any) {
	t.Helper()
	props, _ := node["properties"].(map[string]any)
	if required, ok := node["required"].([]any); ok {
		for _, r := range required {
			if _, ok := props[r.(string)]; !ok {
				t.Errorf("%s: required field %q has no property", where, r)
			}
		}
	}
	for name, p := range props {
		prop := p.(map[string]any)
		_, typed := prop["type"]
		_, enum := prop["enum"]
		switch {
		case slices.Contains(untypedProperties, name):
			if desc, _ := prop["description"].(string); desc == "" {
				t.Errorf("%s.%s: any JSON, and no description says so", where, name)
			}
		case !typed && !enum:
			t.Errorf("%s.%s: the property has no type", where, name)
		}
		lintSchema(t, where+"."+name, prop)
	}
	if items, ok := node["items"].(map[string]any); ok {
		lintSchema(t, where+"[]", items)
	}
	if branches, ok := node["oneOf"].([]any); ok {
		for i, b := range branches {
			lintSchema(t, where+".oneOf["+string(rune('0'+i))+"]", b.(map[string]any))
		}
	}
}

// jsonFields are the JSON names of t's fields, those of embedded structs included.
func jsonFields(t reflect.Type) []string {
	var names []string
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		switch {
		case name == "-" || !f.IsExported() && !f.Anonymous:
		case f.Anonymous && name == "":
			names = append(names, jsonFields(f.Type)...)
		case name != "":
			names = append(names, name)
		}
	}
	return names
}
