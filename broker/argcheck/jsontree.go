// This file owns the small helpers on generic JSON that the other files share:
// the kind of a document, JSON pointers, sorted keys.

package argcheck

import (
	"bytes"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

func isEmptyObject(data []byte) bool {
	if data[0] != '{' {
		return false
	}
	return len(bytes.TrimSpace(data[1:len(data)-1])) == 0 && data[len(data)-1] == '}'
}

func jsonKind(first byte) string {
	switch first {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	if first == '-' || first >= '0' && first <= '9' {
		return "a number"
	}
	return "invalid JSON"
}

// shortPointer bounds a pointer for an error message; keys can be long.
func shortPointer(p string) string {
	if len(p) <= 128 {
		return p
	}
	return strings.ToValidUTF8(p[:128], "") + "…"
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// resolvePointer follows an RFC 6901 pointer (already without its leading
// "#") through a generic JSON tree.
func resolvePointer(root any, ptr string) (any, bool) {
	if ptr == "" {
		return root, true
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil, false
	}
	if u, err := url.PathUnescape(ptr); err == nil {
		ptr = u
	}
	cur := root
	for _, seg := range strings.Split(ptr[1:], "/") {
		seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
		switch x := cur.(type) {
		case map[string]any:
			next, ok := x[seg]
			if !ok {
				return nil, false
			}
			cur = next
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			cur = x[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
