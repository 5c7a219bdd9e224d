package jsonscan

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// TestMembersAsEncodingJSONSplitsThem holds Members to encoding/json: the same keys
// and raw values, in order, for objects with every kind of value and awkward
// strings and spacing.
func TestMembersAsEncodingJSONSplitsThem(t *testing.T) {
	for _, doc := range []string{
		`{}`, ` { } `, `{"a":1}`, "{\n\t\"a\" :\r\n -1.5e+3 , \"b\":true,\"c\":null}",
		`{"s":"}]\"{[,: \\","o":{"x":[1,{"y":"]"}]},"a":[[],{}],"e":""}`,
		`{"\u0061":"é","k\"ey":"v"}`, `{"n":0,"m":[1,2,3],"z":false}`,
	} {
		checkMembers(t, doc)
	}
	n := 0
	Members([]byte(`{"a":1,"b":2,"c":3}`), func(_, _ []byte) bool { n++; return n < 2 })
	if n != 2 {
		t.Errorf("Members went on after f said stop: %d calls", n)
	}
}

func TestPlainString(t *testing.T) {
	for raw, want := range map[string]string{`"fx"`: "fx", `""`: "", `"é/ü-1"`: "é/ü-1"} {
		if got, ok := PlainString([]byte(raw)); !ok || got != want {
			t.Errorf("PlainString(%s) = %q, %v, want %q", raw, got, ok, want)
		}
	}
	for _, raw := range []string{`"a\"b"`, `"\u0066"`, "\"\xff\"", `5`, `null`, `["x"]`, `{}`} {
		if got, ok := PlainString([]byte(raw)); ok {
			t.Errorf("PlainString(%s) = %q, want it declined", raw, got)
		}
	}
}

// TestShallowStopsBelowGoSDKsNestingLimit: 999 brackets, however nested, are shallow;
// 1000 (the depth go-sdk's decoder refuses) are not.
func TestShallowStopsBelowGoSDKsNestingLimit(t *testing.T) {
	for _, tc := range []struct {
		data string
		want bool
	}{
		{`{"a":[1,{"b":2}]}`, true},
		{strings.Repeat("[", 999) + strings.Repeat("]", 999), true},
		{strings.Repeat("[", 500) + strings.Repeat("{", 500), false},
		{"{" + strings.Repeat(`"k":[],`, 999) + `"k":0}`, false},
	} {
		if got := Shallow([]byte(tc.data)); got != tc.want {
			t.Errorf("Shallow(%.40s...) = %v, want %v", tc.data, got, tc.want)
		}
	}
}

// TestMembersOfRandomObjects: random objects, written with random whitespace and
// escapes, split as encoding/json splits them.
func TestMembersOfRandomObjects(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 6))
	for range 3000 {
		var doc strings.Builder
		writeValue(rng, &doc, 3, true)
		checkMembers(t, doc.String())
	}
}

func checkMembers(t *testing.T, doc string) {
	t.Helper()
	if !json.Valid([]byte(doc)) {
		t.Fatalf("not valid: %q", doc)
	}
	var want []string
	dec := json.NewDecoder(strings.NewReader(doc))
	dec.Token()
	for dec.More() {
		key, _ := dec.Token()
		var raw json.RawMessage
		dec.Decode(&raw)
		want = append(want, key.(string), string(raw))
	}
	var got []string
	Members([]byte(doc), func(key, value []byte) bool {
		var k string
		if err := json.Unmarshal(key, &k); err != nil {
			t.Fatalf("%q: key %q is not one JSON string", doc, key)
		}
		if !json.Valid(value) {
			t.Fatalf("%q: value %q is not one JSON value", doc, value)
		}
		got = append(got, k, string(value))
		return true
	})
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Members(%q) = %q, want %q", doc, got, want)
	}
}

// writeValue writes a random JSON value (an object when object is set) with
// random whitespace between its tokens.
func writeValue(rng *rand.Rand, b *strings.Builder, depth int, object bool) {
	space := func() {
		for range rng.IntN(3) {
			b.WriteByte(" \t\r\n"[rng.IntN(4)])
		}
	}
	str := func() {
		parts := []string{`a`, `\"`, `\\`, `\n`, `\u00e9`, `é`, `}`, `]`, `,`, `:`, `{`, `[`, ` `}
		b.WriteByte('"')
		for range rng.IntN(5) {
			b.WriteString(parts[rng.IntN(len(parts))])
		}
		b.WriteByte('"')
	}
	kind := rng.IntN(6)
	if object {
		kind = 4
	} else if depth == 0 {
		kind %= 4
	}
	space()
	switch kind {
	case 0:
		b.WriteString([]string{"null", "true", "false"}[rng.IntN(3)])
	case 1:
		b.WriteString([]string{"0", "-1", "1.5e+3", "2E-2", "123"}[rng.IntN(5)])
	case 2, 3:
		str()
	case 4:
		b.WriteByte('{')
		for i := range rng.IntN(4) {
			if i > 0 {
				space()
				b.WriteByte(',')
			}
			space()
			str()
			space()
			b.WriteByte(':')
			writeValue(rng, b, depth-1, false)
		}
		space()
		b.WriteByte('}')
	default:
		b.WriteByte('[')
		for i := range rng.IntN(4) {
			if i > 0 {
				b.WriteByte(',')
			}
			writeValue(rng, b, depth-1, false)
		}
		space()
		b.WriteByte(']')
	}
	space()
}
