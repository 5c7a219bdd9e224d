package artifacts

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

var jsonCases = []string{
	`0`, `-0`, `1`, `-1.5e+10`, `1E5`, `0.0`, `12.34e-5`, `"x"`, `""`, `true`, `false`, `null`,
	`[]`, `{}`, ` [ 1 , 2 ] `, `{"a":{"b":[true,false,null,"\u00e9\n\"\\\/\b\f\r\t"]}}`,
	"\t\r\n{\"k\" :\n1}\n", `[[[[]]]]`, `{"a":1,"b":[{}]}`, `"ж✓"`,
	// invalid
	``, ` `, `01`, `-`, `1.`, `.5`, `1e`, `1e+`, `+1`, `--1`, `0x1`, `[1,]`, `[,1]`, `{"a"}`, `{"a":}`,
	`{"a":1,}`, `{,}`, `{1:2}`, `[1 2]`, `"abc`, `"\x"`, `"\u12"`, `"\u12g4"`, "\"a\x01\"", `tru`,
	`truex`, `nul`, `[true false]`, `{"a" "b"}`, `[1]]`, `]`, `}`, `[}`, `{]`, `1 2`, `"a" "b"`,
	`[1] x`, `NaN`, `Infinity`, `'a'`, "\ufeff1", `[-]`, `{"a":1 "b":2}`, `[1,,2]`,
}

func checkJSON(chunks ...string) bool {
	var j jsonStream
	for _, c := range chunks {
		if !j.write([]byte(c)) {
			return false
		}
	}
	return j.finish()
}

func TestJSONStreamMatchesEncodingJSON(t *testing.T) {
	for _, c := range jsonCases {
		want := json.Valid([]byte(c))
		if got := checkJSON(c); got != want {
			t.Errorf("%q: valid = %v, want %v", c, got, want)
		}
		for i := 0; i <= len(c); i++ { // every split into two chunks
			if got := checkJSON(c[:i], c[i:]); got != want {
				t.Errorf("%q split at %d: valid = %v, want %v", c, i, got, want)
			}
		}
		bytewise := make([]string, len(c))
		for i := range c {
			bytewise[i] = c[i : i+1]
		}
		if got := checkJSON(bytewise...); got != want {
			t.Errorf("%q byte by byte: valid = %v, want %v", c, got, want)
		}
	}
}

// TestJSONStreamRandom compares the checker with encoding/json on mutated documents.
func TestJSONStreamRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte(`{}[],:"\ 0123456789-+.eEtruefalsnxu` + "\n\x01")
	for range 20000 {
		base := []byte(jsonCases[r.IntN(len(jsonCases))])
		for range r.IntN(4) {
			switch op := r.IntN(3); {
			case op == 0 || len(base) == 0:
				i := r.IntN(len(base) + 1)
				base = append(base[:i], append([]byte{alphabet[r.IntN(len(alphabet))]}, base[i:]...)...)
			case op == 1:
				i := r.IntN(len(base))
				base = append(base[:i], base[i+1:]...)
			default:
				base[r.IntN(len(base))] = alphabet[r.IntN(len(alphabet))]
			}
		}
		s := string(base)
		want := json.Valid(base)
		cut := r.IntN(len(s) + 1)
		if got := checkJSON(s[:cut], s[cut:]); got != want {
			t.Fatalf("%q (cut %d): valid = %v, want %v", s, cut, got, want)
		}
	}
}

func TestJSONStreamDepth(t *testing.T) {
	ok := strings.Repeat(`[{"a":`, MaxJSONDepth/2) + "1" + strings.Repeat(`}]`, MaxJSONDepth/2)
	if !checkJSON(ok) {
		t.Errorf("depth %d refused", MaxJSONDepth)
	}
	deep := "[" + ok + "]"
	if checkJSON(deep) {
		t.Errorf("depth %d accepted", MaxJSONDepth+1)
	}
}

func TestUTF8StreamSplits(t *testing.T) {
	cases := []string{
		"", "ascii", "ж", "✓", "😀", "aж✓😀b", "\xff", "\xc3", "\xe2\x82", "\xf0\x9f\x98",
		"a\xc3(", "\xed\xa0\x80", "\xc0\xaf", "\xf4\x90\x80\x80", "\x80", "ok\xe2\x82\xacok", "\xef\xbf\xbd",
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		b := make([]byte, r.IntN(12))
		for i := range b {
			b[i] = []byte{'a', 0x80, 0xbf, 0xc3, 0xa9, 0xe2, 0x9c, 0x93, 0xf0, 0x9f, 0xed, 0xff}[r.IntN(12)]
		}
		cases = append(cases, string(b))
	}
	for _, c := range cases {
		want := utf8.ValidString(c)
		for i := 0; i <= len(c); i++ {
			for j := i; j <= len(c); j++ {
				var u utf8Stream
				got := u.write([]byte(c[:i])) && u.write([]byte(c[i:j])) && u.write([]byte(c[j:])) && u.finish()
				if got != want {
					t.Fatalf("%q split at %d,%d: valid = %v, want %v", c, i, j, got, want)
				}
			}
		}
	}
}
