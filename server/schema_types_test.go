package server

import (
	"encoding/json"
	"reflect"
	"slices"
	"sort"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestToolsPublishTheirTypes: each tool tools/list shows publishes, as its
// inputSchema, the schema of its params struct and, as its outputSchema, the
// schema of the Go type of each shape its value takes; and every one of them agrees
// with jsonschema.ForType of that type on its properties, their JSON types and
// which are required, at every depth. A schema written beside the types, or a
// refinement that changes what the type says rather than adding to it, fails here.
func TestToolsPublishTheirTypes(t *testing.T) {
	ctx := t.Context()
	srv := newServerPartsFormat(t, ctx, t.TempDir(), FormatStructured)
	serverT, clientT := mcp.NewInMemoryTransports()
	ss, err := srv.MCP().Connect(ctx, serverT, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "schema-test", Version: "1"}, nil).Connect(ctx, clientT, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	listed, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	tools := (&Server{}).tools()
	if len(listed.Tools) != len(tools) {
		t.Fatalf("tools/list has %d tools, the server declares %d", len(listed.Tools), len(tools))
	}
	for i, tl := range tools {
		got := listed.Tools[i]
		if got.Name != tl.name {
			t.Fatalf("tools/list's tool %d is %s, want %s", i, got.Name, tl.name)
		}
		d := declare(t, tl)
		for what, pair := range map[string][2]any{
			"inputSchema":  {got.InputSchema, d.def.InputSchema},
			"outputSchema": {got.OutputSchema, d.def.OutputSchema},
		} {
			if listedJSON, declaredJSON := asJSON(t, pair[0]), asJSON(t, pair[1]); !reflect.DeepEqual(listedJSON, declaredJSON) {
				t.Errorf("%s: the %s listed is not the one its types declare:\n%v\n%v", tl.name, what, listedJSON, declaredJSON)
			}
		}
		agree(t, tl.name+" input", asJSON(t, got.InputSchema).(map[string]any), tl.handler.paramsType())
		out := asJSON(t, got.OutputSchema).(map[string]any)
		if len(tl.output) == 1 {
			agree(t, tl.name+" output", out, tl.output[0].t)
			continue
		}
		branches, _ := out["oneOf"].([]any)
		if len(branches) != len(tl.output) {
			t.Errorf("%s: the outputSchema has %d shapes, the tool declares %d", tl.name, len(branches), len(tl.output))
			continue
		}
		for j, v := range tl.output {
			agree(t, tl.name+" output "+v.t.String(), branches[j].(map[string]any), v.t)
		}
	}
}

// asJSON is v decoded from its JSON, as a client reads it.
func asJSON(t *testing.T, v any) any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// agree checks a published schema against jsonschema.ForType of typ.
func agree(t *testing.T, where string, published map[string]any, typ reflect.Type) {
	t.Helper()
	inferred, err := jsonschema.ForType(typ, &jsonschema.ForOptions{TypeSchemas: typeSchemas()})
	if err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	agreeNode(t, where, published, asJSON(t, inferred).(map[string]any), typ)
}

// agreeNode compares a node of a published schema with the node jsonschema.ForType
// made of the same Go type. Refinements may add (a description, an enum, bounds, a
// type where the Go type is any JSON, the presentation's text_truncated, null for
// a field that may be null) but never take away or contradict.
func agreeNode(t *testing.T, where string, published, inferred map[string]any, typ reflect.Type) {
	t.Helper()
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	if want := jsonTypes(inferred); len(want) > 0 && !slices.Equal(jsonTypes(published), want) {
		t.Errorf("%s: published type %v, the Go type's is %v", where, published["type"], inferred["type"])
	}
	switch typ.Kind() {
	case reflect.Slice, reflect.Array:
		p, _ := published["items"].(map[string]any)
		i, _ := inferred["items"].(map[string]any)
		if p != nil && i != nil {
			agreeNode(t, where+"[]", p, i, typ.Elem())
		}
	case reflect.Struct:
		pprops, _ := published["properties"].(map[string]any)
		iprops, _ := inferred["properties"].(map[string]any)
		var pnames, inames []string
		for name := range pprops {
			if _, field := iprops[name]; field || !slices.Contains(presentedProperties, name) {
				pnames = append(pnames, name)
			}
		}
		for name := range iprops {
			inames = append(inames, name)
		}
		sort.Strings(pnames)
		sort.Strings(inames)
		if !slices.Equal(pnames, inames) {
			t.Errorf("%s: published properties %v, the Go type's %v", where, pnames, inames)
		}
		// Required is what jsonschema.ForType says, but for the fields promoted from an
		// embedded pointer, which encoding/json leaves out when it is nil.
		var want []string
		for _, r := range stringsOf(inferred["required"]) {
			if f, ok := fieldNamed(typ, r); ok && !viaPointer(typ, f) {
				want = append(want, r)
			}
		}
		if got := stringsOf(published["required"]); !slices.Equal(got, want) {
			t.Errorf("%s: published required %v, the Go type's %v", where, got, want)
		}
		for name, i := range iprops {
			p, _ := pprops[name].(map[string]any)
			f, ok := fieldNamed(typ, name)
			if p == nil || !ok {
				continue
			}
			inode, _ := i.(map[string]any) // true: any JSON
			agreeNode(t, where+"."+name, p, inode, f.Type)
		}
	}
}

// jsonTypes are a schema node's types, null left out: whether a field may be null
// is the published schema's to say (an input is never null; an output pointer
// written without omitempty may be).
func jsonTypes(node map[string]any) []string {
	var types []string
	switch v := node["type"].(type) {
	case string:
		types = []string{v}
	case []any:
		types = stringsOf(v)
	}
	return slices.DeleteFunc(types, func(s string) bool { return s == "null" })
}

func stringsOf(v any) []string {
	list, _ := v.([]any)
	out := make([]string, 0, len(list))
	for _, s := range list {
		out = append(out, s.(string))
	}
	return out
}

// fieldNamed is typ's field of JSON name name.
func fieldNamed(typ reflect.Type, name string) (reflect.StructField, bool) {
	for _, f := range reflect.VisibleFields(typ) {
		if n, _, ok := jsonField(f); ok && n == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// TestPublishWritesWhatTheSchemaSays: publish's JSON of every tool's schemas is the
// JSON jsonschema.Schema writes of them (the u64 bound aside, which both decode to
// the same float64), and a keyword publish does not know is an error.
func TestPublishWritesWhatTheSchemaSays(t *testing.T) {
	for _, s := range toolSchemas(t) {
		fast, err := publish(s)
		if err != nil {
			t.Fatal(err)
		}
		plain, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var got, want any
		if err := json.Unmarshal(fast, &got); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(plain, &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("publish wrote\n%s\njsonschema writes\n%s", fast, plain)
		}
	}
	odd := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{"code": {Type: "string", Pattern: "x"}}}
	if out, err := publish(odd); err == nil {
		t.Errorf("a pattern: published as %s", out)
	}
}

// toolSchemas are every tool's input and output schemas.
func toolSchemas(tb testing.TB) []*jsonschema.Schema {
	var out []*jsonschema.Schema
	for _, tl := range (&Server{}).tools() {
		in, err := schemaOf(tl.handler.paramsType(), false)
		if err != nil {
			tb.Fatal(err)
		}
		o, err := outputSchema(tl.output)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, in, o)
	}
	return out
}
