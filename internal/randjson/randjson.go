package randjson

import (
	"math/rand/v2"
	"strings"
)

// Value is a random JSON value at most depth deep, with strings that need escaping.
func Value(rng *rand.Rand, depth int) any {
	kind := rng.IntN(7)
	if depth == 0 {
		kind %= 4
	}
	switch kind {
	case 0:
		return nil
	case 1:
		return rng.IntN(2) == 0
	case 2:
		return []float64{0, -1, 1.5, 1e21, 123456789, 1e-7}[rng.IntN(6)]
	case 3:
		return String(rng)
	case 4, 5:
		m := map[string]any{}
		for range rng.IntN(4) {
			m[String(rng)+"k"] = Value(rng, depth-1)
		}
		return m
	default:
		var a []any
		for range rng.IntN(4) {
			a = append(a, Value(rng, depth-1))
		}
		return a
	}
}

// String is a random string of the characters JSON encoders escape or treat
// apart: HTML's, quotes, backslash, control characters, U+2028, and non-ASCII.
func String(rng *rand.Rand) string {
	parts := []string{"a", "<", ">", "&", "\"", "\\", "\n", "\x01", "é", "\u2028", "😀", " "}
	var s strings.Builder
	for range rng.IntN(6) {
		s.WriteString(parts[rng.IntN(len(parts))])
	}
	return s.String()
}
