package server

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestVisible: every control character but newline and tab is escaped as Python's
// repr writes it; the sizes, prefixes and suffixes agree with what visible writes.
func TestVisible(t *testing.T) {
	for in, want := range map[string]string{
		"plain\ttab\n":            "plain\ttab\n",
		"\x1b[31mred\x1b[0m":      `\x1b[31mred\x1b[0m`,
		"\x1b]0;title\x07":        `\x1b]0;title\x07`,
		"a\bb\x7f\x00":            `a\x08b\x7f\x00`,
		"cr\rlf":                  `cr\rlf`,
		"c1 \u009b2J é Ж":         `c1 \x9b2J é Ж`,
		"bad \xff byte":           "bad \uFFFD byte",
		"\u2028 is not a control": "\u2028 is not a control",
		// Unicode format controls (category Cf): bidirectional overrides and
		// isolates, invisible characters, tags; the joiners of emoji and scripts stay.
		"a\u202eevil\u202c b":             `a\u202eevil\u202c b`,
		"\u2066x\u2069\u202a\u202b\u202d": `\u2066x\u2069\u202a\u202b\u202d`,
		"zero\u200bwidth\u2060\ufeff":     `zero\u200bwidth\u2060\ufeff`,
		"soft\u00adhyphen":                `soft\xadhyphen`,
		"tag\U000e0041\U000e007f":         `tag\U000e0041\U000e007f`,
		"👨\u200d👩 \u0645\u200c\u06cc":     "👨\u200d👩 \u0645\u200c\u06cc",
	} {
		got := visible(in)
		if got != want || visibleLen(in) != len(got) || !utf8.ValidString(got) {
			t.Errorf("visible(%q) = %q (visibleLen %d), want %q", in, got, visibleLen(in), want)
		}
	}
	s := strings.Repeat("a\x1bЖ\u202e\U000e0041\n", 100)
	for room := 0; room < 60; room++ {
		p, q := visiblePrefix(s, room), visibleSuffix(s, room)
		if visibleLen(p) > room || visibleLen(q) > room || !strings.HasPrefix(s, p) || !strings.HasSuffix(s, q) ||
			!utf8.ValidString(p) || !utf8.ValidString(q) {
			t.Fatalf("room %d: prefix %q, suffix %q", room, p, q)
		}
		if visibleLen(s[:len(p)+1]) <= room && len(p) < len(s) && utf8.RuneStart(s[len(p)]) && visibleLen(s[:len(p)+utf8.RuneLen([]rune(s[len(p):])[0])]) <= room {
			t.Fatalf("room %d: prefix %q is not the longest", room, p)
		}
	}
	// A cut counts the stream's own bytes, and what it keeps is visible.
	out := strings.Repeat("\x1b", 1000)
	got := cutMiddle(out, 200, "stdout")
	if len(got) > 200 || strings.ContainsRune(got, 0x1b) || !strings.Contains(got, "bytes of stdout left out") {
		t.Fatalf("cutMiddle: %d bytes: %q", len(got), got)
	}
	kept := strings.Count(got, `\x1b`)
	if !strings.Contains(got, "[... "+count(1000-kept)+" bytes of stdout left out ...]") {
		t.Errorf("cutMiddle keeps %d of 1,000 bytes and says %q", kept, got)
	}
}
