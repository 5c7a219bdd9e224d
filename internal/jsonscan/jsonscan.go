package jsonscan

import (
	"bytes"
	"unicode/utf8"
)

// Members calls f with the raw key (quotes included) and the raw value of each
// member of the object data, in order, until f returns false. data must be one
// valid JSON object (json.Valid), surrounding whitespace allowed.
func Members(data []byte, f func(key, value []byte) bool) {
	i := skipSpace(data, 0) + 1 // past '{'
	for {
		i = skipSpace(data, i)
		switch data[i] {
		case '}':
			return
		case ',':
			i = skipSpace(data, i+1)
		}
		keyEnd := valueEnd(data, i)
		start := skipSpace(data, skipSpace(data, keyEnd)+1) // past the ':'
		end := valueEnd(data, start)
		if !f(data[i:keyEnd], data[start:end]) {
			return
		}
		i = end
	}
}

// maxShallowBrackets is the most brackets a Shallow document holds: below go-sdk's
// decoder's nesting limit of 1000, however they nest.
const maxShallowBrackets = 999

// Shallow reports whether data has so few brackets that no nesting in it can reach
// go-sdk's limit of 1000 levels. A fast path that decodes JSON-RPC with encoding/json
// instead of go-sdk's decoder takes only such lines, so that a line go-sdk refuses for
// its depth is still refused by go-sdk. data need not be valid.
func Shallow(data []byte) bool {
	return bytes.Count(data, []byte{'{'})+bytes.Count(data, []byte{'['}) <= maxShallowBrackets
}

// PlainString is the string the raw JSON string value raw holds when it needs no
// decoding: no escapes, valid UTF-8 (what encoding/json would decode it to). Any
// other value, or a string with an escape or invalid UTF-8, is not plain. raw must
// be a valid JSON value.
func PlainString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') >= 0 || !utf8.Valid(inner) {
		return "", false
	}
	return string(inner), true
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n') {
		i++
	}
	return i
}

// valueEnd is the index just past the value that starts at data[i].
func valueEnd(data []byte, i int) int {
	depth := 0
	for j := i; j < len(data); j++ {
		switch data[j] {
		case '"':
			for j++; data[j] != '"'; j++ {
				if data[j] == '\\' {
					j++
				}
			}
			if depth == 0 {
				return j + 1
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return j // a scalar that ends its container
			}
			if depth--; depth == 0 {
				return j + 1
			}
		case ',', ' ', '\t', '\r', '\n':
			if depth == 0 {
				return j
			}
		}
	}
	return len(data)
}
