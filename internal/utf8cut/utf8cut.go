package utf8cut

import "unicode/utf8"

// Prefix is the longest prefix of s that is at most limit bytes and does not split a
// UTF-8 sequence.
func Prefix[T string | []byte](s T, limit int) T {
	if len(s) <= limit {
		return s
	}
	end := max(limit, 0)
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return s[:end]
}
