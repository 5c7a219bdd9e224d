package utf8cut

import (
	"testing"
	"unicode/utf8"
)

func TestPrefix(t *testing.T) {
	for _, c := range []struct {
		s     string
		limit int
		want  string
	}{
		{"abc", 5, "abc"},
		{"abc", 3, "abc"},
		{"abc", 2, "ab"},
		{"abc", 0, ""},
		{"abc", -1, ""},
		{"aЖb", 2, "a"}, // Ж is two bytes: the cut steps back before it
		{"aЖb", 3, "aЖ"},
		{"€€", 4, "€"},
		{"😀", 3, ""},
		{"\xff\xfe", 1, "\xff"}, // invalid bytes are each a start of their own
	} {
		if got := Prefix(c.s, c.limit); got != c.want {
			t.Errorf("Prefix(%q, %d) = %q, want %q", c.s, c.limit, got, c.want)
		}
		if got := Prefix([]byte(c.s), c.limit); string(got) != c.want {
			t.Errorf("Prefix([]byte(%q), %d) = %q, want %q", c.s, c.limit, got, c.want)
		}
	}
}

// Every prefix of a valid text is valid, and the longest that fits.
func FuzzPrefix(f *testing.F) {
	f.Add("aЖb€😀", 5)
	f.Fuzz(func(t *testing.T, s string, limit int) {
		if !utf8.ValidString(s) {
			return
		}
		got := Prefix(s, limit)
		if len(got) > max(limit, 0) || !utf8.ValidString(got) || got != s[:len(got)] {
			t.Fatalf("Prefix(%q, %d) = %q", s, limit, got)
		}
		if len(got) < len(s) {
			_, size := utf8.DecodeRuneInString(s[len(got):])
			if len(got)+size <= limit {
				t.Fatalf("Prefix(%q, %d) = %q stops short", s, limit, got)
			}
		}
	})
}
