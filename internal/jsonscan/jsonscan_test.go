package jsonscan

import (
	"encoding/json"
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
				t.Fatalf("%s: key %q is not one JSON string", doc, key)
			}
			var compact json.RawMessage
			if err := json.Unmarshal(value, &compact); err != nil {
				t.Fatalf("%s: value %q is not one JSON value", doc, value)
			}
			got = append(got, k, string(value))
			return true
		})
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Members(%s) = %q, want %q", doc, got, want)
		}
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
