// This file owns the depth and node budgets and the duplicate-key rule: a scan
// of the raw bytes of arguments or of a schema, before anything is decoded.

package argcheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// scanBudget checks data against the depth and node budgets without building
// a tree, and rejects duplicate object keys, which would let the validator and
// the downstream server see different values. Valid JSON, which every call
// sends, is walked byte by byte (scanValid); anything else is streamed token
// by token (scanStream), which reports the first problem in document order,
// syntax errors included. Both report the same problem for the same input: the
// walk meets the budgets and keys in the order the stream does.
func scanBudget(data []byte, what string, maxDepth, maxNodes int) error {
	if json.Valid(data) {
		return scanValid(data, what, maxDepth, maxNodes)
	}
	return scanStream(data, what, maxDepth, maxNodes)
}

// scanStream streams data token by token, stopping at the first syntax error,
// duplicate key or exceeded budget.
func scanStream(data []byte, what string, maxDepth, maxNodes int) error {
	type frame struct {
		obj       bool
		expectKey bool
		keys      map[string]struct{}
		seg       string // pointer segment of this container in its parent
		key       string // escaped key of the member being read (objects)
		next      int    // next array index
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var stack []*frame
	pointer := func(last string) string {
		var b strings.Builder
		for _, f := range stack[1:] {
			b.WriteString("/" + f.seg)
		}
		b.WriteString("/" + last)
		return b.String()
	}
	nodes := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			if len(stack) != 0 || nodes == 0 {
				return errSyntax
			}
			return nil
		}
		if err != nil {
			return errSyntax
		}
		if nodes > 0 && len(stack) == 0 {
			return errSyntax // trailing data after the top-level value
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			if len(stack) > 0 && stack[len(stack)-1].obj {
				stack[len(stack)-1].expectKey = true
			}
			continue
		}
		if top != nil && top.obj && top.expectKey {
			key := tok.(string)
			if _, dup := top.keys[key]; dup {
				return duplicateKey(what, pointer(escapePointer(key)))
			}
			top.keys[key] = struct{}{}
			top.key = escapePointer(key)
			top.expectKey = false
			continue
		}
		nodes++
		if nodes > maxNodes {
			return tooManyNodes(what, maxNodes)
		}
		seg := ""
		if top != nil && !top.obj {
			seg = strconv.Itoa(top.next)
			top.next++
		} else if top != nil {
			seg = top.key
		}
		if d, ok := tok.(json.Delim); ok {
			if len(stack)+1 > maxDepth {
				return tooDeep(what, maxDepth)
			}
			f := &frame{obj: d == '{', seg: seg}
			if f.obj {
				f.expectKey = true
				f.keys = map[string]struct{}{}
			}
			stack = append(stack, f)
			continue
		}
		if top != nil && top.obj {
			top.expectKey = true
		}
	}
}

// scanValid is scanStream for data that json.Valid accepts: the same
// checks in the same order, on the bytes, with no token values made but the keys.
func scanValid(data []byte, what string, maxDepth, maxNodes int) error {
	var stack []scanFrame
	pointer := func(last string) string {
		var b strings.Builder
		for _, f := range stack[1:] {
			b.WriteString("/" + f.seg)
		}
		b.WriteString("/" + last)
		return b.String()
	}
	nodes := 0
	for i := 0; i < len(data); {
		c := data[i]
		switch c {
		case ' ', '\t', '\r', '\n', ',', ':':
			i++
			continue
		case '}', ']':
			stack = stack[:len(stack)-1]
			if len(stack) > 0 && stack[len(stack)-1].obj {
				stack[len(stack)-1].expectKey = true
			}
			i++
			continue
		}
		var top *scanFrame
		if len(stack) > 0 {
			top = &stack[len(stack)-1]
		}
		if top != nil && top.obj && top.expectKey {
			end := stringEnd(data, i)
			key := decodeKey(data[i:end])
			if top.hasKey(key) {
				return duplicateKey(what, pointer(escapePointer(key)))
			}
			top.addKey(key)
			top.key = key
			top.expectKey = false
			i = end
			continue
		}
		nodes++
		if nodes > maxNodes {
			return tooManyNodes(what, maxNodes)
		}
		seg := ""
		if top != nil && !top.obj {
			seg = strconv.Itoa(top.next)
			top.next++
		} else if top != nil {
			seg = escapePointer(top.key)
		}
		if c == '{' || c == '[' {
			if len(stack)+1 > maxDepth {
				return tooDeep(what, maxDepth)
			}
			stack = append(stack, scanFrame{obj: c == '{', expectKey: c == '{', seg: seg})
			i++
			continue
		}
		if c == '"' {
			i = stringEnd(data, i)
		} else {
			i = scalarEnd(data, i)
		}
		if top != nil && top.obj {
			top.expectKey = true
		}
	}
	return nil
}

// scanFrame is one open container of scanValid.
type scanFrame struct {
	obj       bool
	expectKey bool
	keys      []string            // the object's keys so far, while few
	keySet    map[string]struct{} // then all of them
	seg       string              // pointer segment of this container in its parent
	key       string              // key of the member being read (objects), unescaped
	next      int                 // next array index
}

// fewKeys is how many keys an object's frame compares one by one before it
// keeps them in a map.
const fewKeys = 16

func (f *scanFrame) hasKey(key string) bool {
	if f.keySet != nil {
		_, ok := f.keySet[key]
		return ok
	}
	return slices.Contains(f.keys, key)
}

func (f *scanFrame) addKey(key string) {
	if f.keySet == nil && len(f.keys) < fewKeys {
		f.keys = append(f.keys, key)
		return
	}
	if f.keySet == nil {
		f.keySet = make(map[string]struct{}, 2*fewKeys)
		for _, k := range f.keys {
			f.keySet[k] = struct{}{}
		}
		f.keys = nil
	}
	f.keySet[key] = struct{}{}
}

// stringEnd is the index just past the string that opens at data[i], in
// valid JSON.
func stringEnd(data []byte, i int) int {
	for j := i + 1; j < len(data); j++ {
		switch data[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(data)
}

// scalarEnd is the index just past the number, true, false or null that
// starts at data[i], in valid JSON.
func scalarEnd(data []byte, i int) int {
	for j := i; j < len(data); j++ {
		switch data[j] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return j
		}
	}
	return len(data)
}

// decodeKey is the string a quoted key of valid JSON decodes to, as
// encoding/json decodes it (escapes resolved, invalid UTF-8 replaced).
func decodeKey(quoted []byte) string {
	plain := true
	for _, b := range quoted[1 : len(quoted)-1] {
		if b == '\\' || b >= utf8.RuneSelf {
			plain = false
			break
		}
	}
	if plain {
		return string(quoted[1 : len(quoted)-1])
	}
	var key string
	json.Unmarshal(quoted, &key) // cannot fail: the document is valid
	return key
}

func duplicateKey(what, pointer string) error {
	if what == "arguments" {
		return &ArgumentsError{Pointer: pointer, Rule: "duplicate object key"}
	}
	return fmt.Errorf("duplicate object key at %s", shortPointer(pointer))
}

func tooManyNodes(what string, maxNodes int) error {
	return fmt.Errorf("%w: %s have more than %d nodes, limit %d", ErrDepthNodeBudget, what, maxNodes, maxNodes)
}

func tooDeep(what string, maxDepth int) error {
	return fmt.Errorf("%w: %s nest deeper than %d levels, limit %d", ErrDepthNodeBudget, what, maxDepth, maxDepth)
}
