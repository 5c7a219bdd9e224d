package argcheck

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const toolSchema = `{
  "type": "object",
  "properties": {
    "name":  {"type": "string", "minLength": 2, "maxLength": 8, "pattern": "^[a-z]+$"},
    "count": {"type": "integer", "minimum": 1, "maximum": 10},
    "mode":  {"enum": ["fast", "slow"]},
    "tags":  {"type": "array", "items": {"type": "string"}, "maxItems": 3, "uniqueItems": true},
    "owner": {
      "type": "object",
      "properties": {"email": {"type": "string", "format": "email"}, "id": {"$ref": "#/$defs/id"}},
      "required": ["email"],
      "additionalProperties": false
    },
    "when":  {"type": "string", "format": "date-time"},
    "addr":  {"type": "string", "format": "ipv4"}
  },
  "required": ["name"],
  "additionalProperties": false,
  "$defs": {"id": {"type": "string", "format": "uuid"}}
}`

func TestValidatorAcceptsAndRejects(t *testing.T) {
	v := New(Config{})
	tests := []struct {
		name, schema, args string
		pointer, rule      string // empty rule: must succeed
	}{
		{name: "minimal", schema: toolSchema, args: `{"name":"abc"}`},
		{name: "full", schema: toolSchema, args: `{"name":"abc","count":3,"mode":"fast","tags":["a","b"],
			"owner":{"email":"a@example.com","id":"123e4567-e89b-12d3-a456-426614174000"},
			"when":"2024-05-01T10:00:00Z","addr":"10.0.0.1"}`},
		{name: "absent schema", schema: ``, args: `{"anything":[1,2]}`},
		{name: "empty schema", schema: ` { } `, args: `{"anything":{"x":null}}`},
		{name: "absent arguments", schema: toolSchema, args: ``, pointer: "", rule: "required"},
		{name: "integer as float", schema: toolSchema, args: `{"name":"abc","count":2.0}`},
		{name: "draft-07 tuple", schema: `{"$schema":"http://json-schema.org/draft-07/schema#","properties":{"p":{"items":[{"type":"string"}],"additionalItems":false}}}`, args: `{"p":["x"]}`},

		{name: "wrong type", schema: toolSchema, args: `{"name":5}`, pointer: "/name", rule: "type: want string, got integer"},
		{name: "missing required", schema: toolSchema, args: `{"count":1}`, pointer: "", rule: `required: missing property "name"`},
		{name: "enum", schema: toolSchema, args: `{"name":"abc","mode":"medium"}`, pointer: "/mode", rule: "enum: not one of the 2 allowed values"},
		{name: "additional top", schema: toolSchema, args: `{"name":"abc","extra":1}`, pointer: "/extra", rule: "additionalProperties: property not allowed"},
		{name: "additional nested", schema: toolSchema, args: `{"name":"abc","owner":{"email":"a@b.co","x":1}}`, pointer: "/owner/x", rule: "additionalProperties"},
		{name: "nested required", schema: toolSchema, args: `{"name":"abc","owner":{}}`, pointer: "/owner", rule: `required: missing property "email"`},
		{name: "minimum", schema: toolSchema, args: `{"name":"abc","count":0}`, pointer: "/count", rule: "minimum: less than 1"},
		{name: "not integer", schema: toolSchema, args: `{"name":"abc","count":1.5}`, pointer: "/count", rule: "type: want integer, got number"},
		{name: "maxLength", schema: toolSchema, args: `{"name":"abcdefghij"}`, pointer: "/name", rule: "maxLength"},
		{name: "pattern", schema: toolSchema, args: `{"name":"ABC"}`, pointer: "/name", rule: `pattern: does not match "^[a-z]+$"`},
		{name: "array item type", schema: toolSchema, args: `{"name":"abc","tags":["a",7]}`, pointer: "/tags/1", rule: "type: want string"},
		{name: "maxItems", schema: toolSchema, args: `{"name":"abc","tags":["a","b","c","d"]}`, pointer: "/tags", rule: "maxItems: more than 3 items"},
		{name: "uniqueItems", schema: toolSchema, args: `{"name":"abc","tags":["a","a"]}`, pointer: "/tags", rule: "uniqueItems: items 0 and 1 are equal"},
		{name: "format email", schema: toolSchema, args: `{"name":"abc","owner":{"email":"not-an-email"}}`, pointer: "/owner/email", rule: "format: not a valid email"},
		{name: "format uuid via ref", schema: toolSchema, args: `{"name":"abc","owner":{"email":"a@b.co","id":"nope"}}`, pointer: "/owner/id", rule: "format: not a valid uuid"},
		{name: "format date-time", schema: toolSchema, args: `{"name":"abc","when":"yesterday"}`, pointer: "/when", rule: "format: not a valid date-time"},
		{name: "format ipv4", schema: toolSchema, args: `{"name":"abc","addr":"::1"}`, pointer: "/addr", rule: "format: not a valid ipv4"},
		{name: "anyOf", schema: `{"properties":{"v":{"anyOf":[{"type":"string"},{"type":"integer"}]}}}`, args: `{"v":true}`, pointer: "/v", rule: "anyOf: matches none of the 2 alternatives"},
		{name: "pointer escaping", schema: `{"additionalProperties":false}`, args: `{"a/b~c":1}`, pointer: "/a~1b~0c", rule: "additionalProperties"},
		{name: "duplicate key", schema: ``, args: `{"a":1,"a":2}`, pointer: "/a", rule: "duplicate object key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := v.Check(t.Context(), json.RawMessage(tt.schema), json.RawMessage(tt.args))
			if tt.rule == "" {
				if err != nil {
					t.Fatalf("Check: %v", err)
				}
				return
			}
			var ae *ArgumentsError
			if !errors.As(err, &ae) {
				t.Fatalf("Check = %v, want *ArgumentsError", err)
			}
			if ae.Pointer != tt.pointer || !strings.HasPrefix(ae.Rule, tt.rule) {
				t.Errorf("got pointer %q rule %q, want pointer %q rule prefix %q", ae.Pointer, ae.Rule, tt.pointer, tt.rule)
			}
			if !strings.HasPrefix(err.Error(), "MCP arguments violate inputSchema") {
				t.Errorf("message %q lacks the contract prefix", err)
			}
		})
	}
}

func TestValidatorArgumentsMustBeObject(t *testing.T) {
	v := New(Config{})
	for _, args := range []string{`[]`, `"x"`, `null`, `3`, `{"a":`, `{} {}`, `{"a":1}x`} {
		err := v.Check(t.Context(), nil, json.RawMessage(args))
		if !errors.Is(err, ErrArgumentsNotObject) {
			t.Errorf("Check(%s) = %v, want ErrArgumentsNotObject", args, err)
		}
	}
}

// padObject returns {"p":"xxx…"} exactly n bytes long.
func padObject(n int) string {
	return `{"p":"` + strings.Repeat("x", n-len(`{"p":""}`)) + `"}`
}

func nestedObject(depth int) string {
	return strings.Repeat(`{"a":`, depth-1) + "{}" + strings.Repeat("}", depth-1)
}

// objectOfNodes returns an object of exactly n JSON values: itself, an array, and
// n-2 scalars.
func objectOfNodes(key string, n int) string {
	return `{"` + key + `":[` + strings.TrimSuffix(strings.Repeat("0,", n-2), ",") + `]}`
}

func TestValidatorBudgets(t *testing.T) {
	v := New(Config{})
	anyOf := func(n int) string {
		return `{"anyOf":[` + strings.TrimSuffix(strings.Repeat(`{},`, n), ",") + `]}`
	}
	tests := []struct {
		name, schema, args string
		want               []error // nil: must succeed
	}{
		{"argument bytes at limit", "", padObject(MaxArgumentBytes), nil},
		{"argument bytes over", "", padObject(MaxArgumentBytes + 1), []error{ErrByteBudget}},
		{"argument depth at limit", "", nestedObject(MaxArgumentDepth), nil},
		{"argument depth over", "", nestedObject(MaxArgumentDepth + 1), []error{ErrDepthNodeBudget}},
		{"argument nodes at limit", "", objectOfNodes("a", MaxArgumentNodes), nil},
		{"argument nodes over", "", objectOfNodes("a", MaxArgumentNodes+1), []error{ErrDepthNodeBudget}},
		{"schema bytes at limit", `{"description":"` + strings.Repeat("d", MaxSchemaBytes-len(`{"description":""}`)) + `"}`, `{}`, nil},
		{"schema bytes over", `{"description":"` + strings.Repeat("d", MaxSchemaBytes+1-len(`{"description":""}`)) + `"}`, `{}`, []error{ErrSchemaRejected, ErrByteBudget}},
		{"schema depth at limit", `{"x-a":` + nestedObject(MaxSchemaDepth-1) + `}`, `{}`, nil},
		{"schema depth over", `{"x-a":` + nestedObject(MaxSchemaDepth) + `}`, `{}`, []error{ErrSchemaRejected, ErrDepthNodeBudget}},
		{"schema nodes at limit", objectOfNodes("examples", MaxSchemaNodes), `{}`, nil},
		{"schema nodes over", objectOfNodes("examples", MaxSchemaNodes+1), `{}`, []error{ErrSchemaRejected, ErrDepthNodeBudget}},
		{"composition at limit", anyOf(MaxCompositionBranch), `{}`, nil},
		{"composition over", anyOf(MaxCompositionBranch + 1), `{}`, []error{ErrSchemaRejected, ErrCompositionBudget}},
		{"nested oneOf over", `{"properties":{"a":{"oneOf":[` + strings.TrimSuffix(strings.Repeat(`{},`, 17), ",") + `]}}}`, `{}`, []error{ErrSchemaRejected, ErrCompositionBudget}},
		{"pattern at limit", `{"properties":{"a":{"pattern":"` + strings.Repeat("a", MaxPatternChars) + `"}}}`, `{}`, nil},
		{"pattern over", `{"properties":{"a":{"pattern":"` + strings.Repeat("a", MaxPatternChars+1) + `"}}}`, `{}`, []error{ErrSchemaRejected, ErrPatternBudget}},
		{"patternProperties key over", `{"patternProperties":{"` + strings.Repeat("é", MaxPatternChars+1) + `":{}}}`, `{}`, []error{ErrSchemaRejected, ErrPatternBudget}},
		{"pattern RE2 cannot compile", `{"properties":{"a":{"pattern":"(?=x)"}}}`, `{}`, []error{ErrSchemaRejected}},
		{"enum data is not a keyword", `{"properties":{"a":{"enum":[{"$ref":"http://x/"},{"pattern":"(?=x)"}]}}}`, `{}`, nil},
		{"external $ref", `{"properties":{"a":{"$ref":"https://example.com/s.json"}}}`, `{}`, []error{ErrSchemaRejected, ErrExternalRef}},
		{"relative $ref", `{"$ref":"other.json#/a"}`, `{}`, []error{ErrSchemaRejected, ErrExternalRef}},
		{"external $dynamicRef", `{"$dynamicRef":"https://example.com/s.json#meta"}`, `{}`, []error{ErrSchemaRejected, ErrExternalRef}},
		{"external $recursiveRef", `{"$defs":{"x":{"$recursiveRef":"s.json"}}}`, `{}`, []error{ErrSchemaRejected, ErrExternalRef}},
		{"local $ref", `{"properties":{"a":{"$ref":"#/$defs/x"}},"$defs":{"x":{"type":"string"}}}`, `{"a":"s"}`, nil},
		{"schema not an object", `[1]`, `{}`, []error{ErrSchemaRejected}},
		{"schema invalid JSON", `{"type":`, `{}`, []error{ErrSchemaRejected}},
		{"schema bad keyword type", `{"type":7}`, `{}`, []error{ErrSchemaRejected}},
		{"schema unknown version", `{"$schema":"http://json-schema.org/draft-04/schema#"}`, `{}`, []error{ErrSchemaRejected}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := v.Check(t.Context(), json.RawMessage(tt.schema), json.RawMessage(tt.args))
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Check: %v", err)
				}
				return
			}
			for _, w := range tt.want {
				if !errors.Is(err, w) {
					t.Errorf("Check = %v, want it to wrap %q", err, w)
				}
			}
			if errors.Is(err, ErrSchemaRejected) && !strings.HasPrefix(err.Error(), "tool inputSchema rejected: ") {
				t.Errorf("schema error %q lacks its prefix", err)
			}
			if len(err.Error()) > 400 {
				t.Errorf("error is %d bytes long", len(err.Error()))
			}
		})
	}
}

func TestValidatorRefCostBudget(t *testing.T) {
	v := New(Config{})
	tree := `{"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}}}},"$ref":"#/$defs/node"}`
	doubling := `{"$defs":{"s":{"anyOf":[{"properties":{"a":{"$ref":"#/$defs/s"}}},{"properties":{"a":{"$ref":"#/$defs/s"}},"required":["zz"]}]}},"$ref":"#/$defs/s"}`
	deep := strings.Repeat(`{"a":`, 40) + "{}" + strings.Repeat("}", 40)
	tests := []struct {
		name, schema, args string
		want               error
	}{
		{"recursive tree schema", tree, `{"v":1,"kids":[{"v":2,"kids":[]},{"v":3}]}`, nil},
		{"self reference", `{"$ref":"#"}`, `{}`, ErrDepthNodeBudget},
		{"in-place ref cycle", `{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"allOf":[{"$ref":"#/$defs/a"}]}},"$ref":"#/$defs/a"}`, `{}`, ErrDepthNodeBudget},
		{"anchor cycle", `{"$anchor":"top","allOf":[{"$ref":"#top"}]}`, `{}`, ErrDepthNodeBudget},
		{"exponential anyOf recursion", doubling, deep, ErrDepthNodeBudget},
		{"same schema, shallow arguments", doubling, `{"a":{"a":{}}}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := v.Check(t.Context(), json.RawMessage(tt.schema), json.RawMessage(tt.args))
			if tt.want == nil && err != nil || !errors.Is(err, tt.want) {
				t.Fatalf("Check = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestValidatorBudgetErrorsNameTheLimit(t *testing.T) {
	v := New(Config{})
	err := v.Check(t.Context(), nil, json.RawMessage(padObject(MaxArgumentBytes+1)))
	if err == nil || !strings.Contains(err.Error(), "limit 262144") || !strings.Contains(err.Error(), "arguments") {
		t.Errorf("byte budget error = %v", err)
	}
	err = v.Check(t.Context(), nil, json.RawMessage(nestedObject(MaxArgumentDepth+1)))
	if err == nil || !strings.Contains(err.Error(), "limit 64") {
		t.Errorf("depth budget error = %v", err)
	}
	err = v.Check(t.Context(), json.RawMessage(`{"allOf":[`+strings.TrimSuffix(strings.Repeat(`{},`, 17), ",")+`]}`), nil)
	if err == nil || !strings.Contains(err.Error(), "limit 16") || !strings.Contains(err.Error(), "allOf") {
		t.Errorf("composition budget error = %v", err)
	}
}

func TestValidatorCachesResolvedSchemas(t *testing.T) {
	v := New(Config{CacheSize: 2})
	schema := func(i int) json.RawMessage {
		return json.RawMessage(fmt.Sprintf(`{"properties":{"n":{"type":"integer","maximum":%d}}}`, i))
	}
	check := func(i int) {
		t.Helper()
		if err := v.Check(t.Context(), schema(i), json.RawMessage(`{"n":0}`)); err != nil {
			t.Fatalf("Check(%d): %v", i, err)
		}
	}
	check(1)
	check(1)
	check(1)
	if got := v.resolves.Load(); got != 1 {
		t.Fatalf("resolves after three checks of one schema = %d, want 1", got)
	}
	check(2)
	if got := v.resolves.Load(); got != 2 {
		t.Fatalf("resolves = %d, want 2", got)
	}
	check(3) // evicts schema 1, the oldest
	check(2)
	if got, ev := v.resolves.Load(), v.evictions.Load(); got != 3 || ev != 1 {
		t.Fatalf("resolves, evictions = %d, %d, want 3, 1", got, ev)
	}
	check(1)
	if got := v.resolves.Load(); got != 4 {
		t.Fatalf("resolves after re-checking an evicted schema = %d, want 4", got)
	}
	// Rejected schemas are cached too.
	bad := json.RawMessage(`{"$ref":"https://example.com/x"}`)
	for range 2 {
		if err := v.Check(t.Context(), bad, nil); !errors.Is(err, ErrExternalRef) {
			t.Fatalf("Check = %v", err)
		}
	}
	if got := v.resolves.Load(); got != 5 {
		t.Fatalf("resolves after a rejected schema twice = %d, want 5", got)
	}
}

func TestValidatorSlots(t *testing.T) {
	deadline, ok := t.Deadline()
	if !ok {
		deadline = time.Now().Add(30 * time.Second)
	}
	v := New(Config{Slots: 4})
	release := make(chan struct{})
	var active, maxActive atomic.Int32
	v.onSlot = func() {
		n := active.Add(1)
		for {
			m := maxActive.Load()
			if n <= m || maxActive.CompareAndSwap(m, n) {
				break
			}
		}
		<-release
		active.Add(-1)
	}
	schema := json.RawMessage(toolSchema)
	args := json.RawMessage(`{"name":"abc"}`)

	var wg sync.WaitGroup
	errs := make([]error, 5)
	for i := range 5 {
		wg.Go(func() { errs[i] = v.Check(t.Context(), schema, args) })
	}
	for active.Load() < 4 {
		if time.Now().After(deadline) {
			t.Fatal("four checks never held the four slots")
		}
		time.Sleep(time.Millisecond)
	}

	// A waiter whose context ends returns promptly, holding nothing.
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- v.Check(ctx, schema, args) }()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled waiter = %v, want context.Canceled", err)
		}
	case <-time.After(time.Until(deadline)):
		t.Fatal("cancelled waiter did not return")
	}
	if n := active.Load(); n != 4 {
		t.Errorf("active = %d while the fifth waits, want 4", n)
	}

	close(release)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("check %d: %v", i, err)
		}
	}
	if m := maxActive.Load(); m != 4 {
		t.Errorf("max concurrent validations = %d, want 4", m)
	}
	if len(v.slots) != 0 {
		t.Errorf("%d slots still held", len(v.slots))
	}
}

func TestValidatorNeverEchoesValues(t *testing.T) {
	const secret = "sk-LIVE-7f3a9c"
	v := New(Config{})
	cases := []struct{ schema, args string }{
		{toolSchema, `{"name":1,"token":"` + secret + `"}`},
		{toolSchema, `{"name":"` + secret + `"}`},
		{toolSchema, `{"name":"abc","mode":"` + secret + `"}`},
		{toolSchema, `{"name":"abc","owner":{"email":"` + secret + `"}}`},
		{toolSchema, `{"name":"abc","tags":["` + secret + `","` + secret + `"]}`},
		{`{"properties":{"k":{"const":"x"}}}`, `{"k":"` + secret + `"}`},
		{`{"properties":{"k":{"type":"integer"}}}`, `{"k":["` + secret + `"]}`},
		{`{"properties":{"k":{"anyOf":[{"type":"integer"},{"maxLength":2}]}}}`, `{"k":"` + secret + `"}`},
		{`{"properties":{"k":{"oneOf":[{"type":"string"},{"minLength":2}]}}}`, `{"k":"` + secret + `"}`},
		{`{"properties":{"k":{"not":{"type":"string"}}}}`, `{"k":"` + secret + `"}`},
		{`{"properties":{"k":{"contains":{"type":"integer"}}}}`, `{"k":["` + secret + `"]}`},
		{`{"properties":{"k":{"if":{"type":"string"},"then":{"maxLength":1}}}}`, `{"k":"` + secret + `"}`},
		{`{"properties":{"k":{"propertyNames":{"maxLength":3}}}}`, `{"k":{"abcd":"` + secret + `"}}`},
		{`{"properties":{"k":{"type":"string"}}}`, `{"k":"ok","k":"` + secret + `"}`},
	}
	for i, c := range cases {
		err := v.Check(t.Context(), json.RawMessage(c.schema), json.RawMessage(c.args))
		if err == nil {
			t.Errorf("case %d: no error", i)
			continue
		}
		if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "7f3a9c") {
			t.Errorf("case %d: error echoes the value: %v", i, err)
		}
		if !strings.HasPrefix(err.Error(), "MCP arguments violate inputSchema") {
			t.Errorf("case %d: %v", i, err)
		}
	}
}

// scanCases are valid documents for the budget scan: duplicate keys (also
// spelled with escapes, in nested containers, past fewKeys), pointer
// characters in keys, invalid UTF-8, whitespace everywhere, and containers at
// and over small depth and node budgets.
var scanCases = []string{
	`{}`, `{"a":1}`, ` { "a" : [ 1 , 2 , { } ] , "b" : null } `, "{\n\t\"a\":\r\n\"x\"}",
	`{"a":1,"a":2}`, `{"a":1,"\u0061":2}`, `{"ab":1,"a\u0062":{"c":[]}}`,
	`{"x":[{"k":1},{"k":1,"k":2}]}`, `{"x":{"y":{"z":1,"z":2}}}`,
	`{"a/b~c":{"d":1,"d":2}}`, `{"a/b~c":[0,{"~":1,"~":2}]}`,
	"{\"\xff\":1,\"\xfe\":2}", "{\"\xff\":1,\"\\ufffd\":2}", `{"é":1,"\u00e9":2}`,
	`{"s":"a\"b\\","t":"}{][,:","s":3}`, `{"n":-1.5e+10,"t":true,"f":false,"z":null}`,
	`{"k0":0,"k1":0,"k2":0,"k3":0,"k4":0,"k5":0,"k6":0,"k7":0,"k8":0,"k9":0,"k10":0,"k11":0,"k12":0,"k13":0,"k14":0,"k15":0,"k16":0,"k17":0,"k3":1}`,
	`[[[[1]]]]`, `[[[[[1]]]]]`, `{"a":{"b":{"c":{"d":{}}}}}`, `[1,2,3,4,5,6,7]`, `[1,2,3,4,5,6,7,8]`,
	`{"a":[1,2],"b":[3,[4,5]]}`, `"x"`, `3`, `null`, `[]`,
}

func scanAgree(t *testing.T, doc string, maxDepth, maxNodes int) {
	t.Helper()
	for _, what := range []string{"arguments", "schema"} {
		want := scanStream([]byte(doc), what, maxDepth, maxNodes)
		got := scanValid([]byte(doc), what, maxDepth, maxNodes)
		if fmt.Sprintf("%#v", got) != fmt.Sprintf("%#v", want) && fmt.Sprint(got) != fmt.Sprint(want) ||
			errors.Is(got, ErrDepthNodeBudget) != errors.Is(want, ErrDepthNodeBudget) {
			t.Errorf("scan %s %q (depth %d, nodes %d): walk says %v, stream says %v", what, doc, maxDepth, maxNodes, got, want)
		}
		var gotArg, wantArg *ArgumentsError
		if errors.As(got, &gotArg) != errors.As(want, &wantArg) || gotArg != nil && *gotArg != *wantArg {
			t.Errorf("scan %s %q: walk says %#v, stream says %#v", what, doc, got, want)
		}
	}
}

func TestValidatorBudgetWalkAgreesWithStream(t *testing.T) {
	for _, doc := range scanCases {
		if !json.Valid([]byte(doc)) {
			t.Fatalf("case %q is not valid JSON", doc)
		}
		for _, budget := range [][2]int{{64, 16384}, {4, 16384}, {5, 16384}, {64, 7}, {64, 8}, {2, 3}} {
			scanAgree(t, doc, budget[0], budget[1])
		}
	}
	// The walk is what valid input gets; the stream still answers for the rest,
	// with whichever problem comes first in the document.
	if err := scanBudget([]byte(`{"a":1,,"a":2}`), "arguments", 64, 100); !errors.Is(err, errSyntax) {
		t.Errorf("scan of a syntax error before a duplicate key = %v, want the syntax error", err)
	}
	var early *ArgumentsError
	if err := scanBudget([]byte(`{"a":1,"a":2`), "arguments", 64, 100); !errors.As(err, &early) || early.Pointer != "/a" {
		t.Errorf("scan of a duplicate key before the end of an unterminated object = %v, want the duplicate at /a", err)
	}
	var dup *ArgumentsError
	if err := scanBudget([]byte(`{"a":1,"a":2}`), "arguments", 64, 100); !errors.As(err, &dup) || dup.Pointer != "/a" {
		t.Errorf("scan of a duplicate key = %v, want it at /a", err)
	}
}

func FuzzValidatorBudgetWalk(f *testing.F) {
	for _, doc := range scanCases {
		f.Add(doc, 3, 6)
	}
	f.Fuzz(func(t *testing.T, doc string, maxDepth, maxNodes int) {
		if !json.Valid([]byte(doc)) || maxDepth < 1 || maxNodes < 1 {
			return
		}
		scanAgree(t, doc, maxDepth, maxNodes)
	})
}

func TestValidatorPreparedSchema(t *testing.T) {
	v := New(Config{CacheSize: 1})
	s := NewSchema(json.RawMessage(" \n" + toolSchema + "\t"))
	for range 3 {
		if err := v.CheckSchema(t.Context(), s, json.RawMessage(`{"name":"ab"}`)); err != nil {
			t.Fatalf("CheckSchema: %v", err)
		}
	}
	if got := v.resolves.Load(); got != 1 {
		t.Fatalf("resolves after three checks of one prepared schema = %d, want 1", got)
	}
	// It is the same schema as the bytes Check takes: one cache entry serves both.
	if err := v.Check(t.Context(), json.RawMessage(toolSchema), json.RawMessage(`{"name":"ab"}`)); err != nil || v.resolves.Load() != 1 {
		t.Fatalf("Check of the same schema = %v after %d resolves, want nil after 1", err, v.resolves.Load())
	}
	// A prepared schema keeps its key, not its compiled form: evicted from the
	// cache, it is compiled again and still checks.
	if err := v.Check(t.Context(), json.RawMessage(`{"type":"object"}`), nil); err != nil {
		t.Fatal(err)
	}
	var argErr *ArgumentsError
	if err := v.CheckSchema(t.Context(), s, json.RawMessage(`{"name":"toolongname"}`)); !errors.As(err, &argErr) || argErr.Pointer != "/name" {
		t.Fatalf("CheckSchema after eviction = %v, want a violation at /name", err)
	}
	if got := v.resolves.Load(); got != 3 {
		t.Fatalf("resolves = %d, want 3 (the prepared schema compiled again after its eviction)", got)
	}
	for _, empty := range []string{"", " {} ", "{ }"} {
		if err := v.CheckSchema(t.Context(), NewSchema(json.RawMessage(empty)), json.RawMessage(`{"any":1}`)); err != nil {
			t.Errorf("CheckSchema(%q) = %v, want any object accepted", empty, err)
		}
	}
	if err := v.CheckSchema(t.Context(), NewSchema(nil), json.RawMessage(`[]`)); !errors.Is(err, ErrArgumentsNotObject) {
		t.Errorf("CheckSchema of an array = %v, want ErrArgumentsNotObject", err)
	}
}

// TestValidatorFormatsCheckedWhereASchemaHasThem: the format pass runs for any
// schema with a "format" member anywhere (spelled with an escape too), and a
// schema without one skips it.
func TestValidatorFormatsCheckedWhereASchemaHasThem(t *testing.T) {
	for schema, want := range map[string]bool{
		toolSchema: true,
		`{"$defs":{"d":{"type":"string","format":"ipv4"}},"properties":{"a":{"$ref":"#/$defs/d"}}}`: true,
		`{"properties":{"a":{"type":"string","\u0066ormat":"ipv4"}}}`:                               true,
		`{"properties":{"a":{"type":"string"},"b":{"items":{"enum":["format"]}}}}`:                  false,
		`{"type":"object","additionalProperties":false,"properties":{"text":{"type":"string"}}}`:    false,
	} {
		if c := compileSchema([]byte(schema)); c.err != nil || c.formats != want {
			t.Errorf("compiled %s: formats %v, err %v; want formats %v", schema, c.formats, c.err, want)
		}
	}
	v := New(Config{})
	var argErr *ArgumentsError
	err := v.Check(t.Context(), json.RawMessage(`{"properties":{"a":{"type":"string","\u0066ormat":"ipv4"}}}`), json.RawMessage(`{"a":"not an address"}`))
	if !errors.As(err, &argErr) || argErr.Pointer != "/a" || !strings.HasPrefix(argErr.Rule, "format") {
		t.Errorf("Check of a bad ipv4 = %v, want a format violation at /a", err)
	}
}
