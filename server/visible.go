package server

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// The text form never hands a client's terminal a control sequence (docs/contract.md
// §3.4): what a cell prints, native output, exception messages and values may hold
// ESC/CSI sequences, OSC 0 (window title), OSC 8 (hyperlinks), OSC 52 (clipboard),
// C1 controls, BEL or BS, and Claude Code and Codex show tool results in a terminal.
// Every control character but newline and tab is written visibly instead, as Python's
// repr writes it (\x1b, \r, \x9b). The worker has already applied the carriage
// returns of output streams as a terminal would (a redrawn progress bar keeps its last
// state); a \r still left is shown as \r.
//
// Texts are cut in their own bytes and measured in what they become, so the counts a
// cut marker gives are of the stream's bytes and the text stays within its bound.

// controlWidth is how many bytes rune r takes once visible: 1 or its UTF-8 length for
// anything else than a control character, else its escape's.
func controlWidth(r rune, size int) int {
	switch {
	case r == utf8.RuneError && size == 1:
		return 3 // a byte that is no UTF-8 is written as U+FFFD
	case r == '\n' || r == '\t':
		return 1
	case r == '\r':
		return 2
	case r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f:
		return 4
	case r >= 0xad && formatControl(r):
		return escapeWidth(r)
	}
	return size
}

// formatControl reports a Unicode format control (category Cf) that the text form
// escapes: the bidirectional embeddings, overrides and isolates (U+202A to U+202E,
// U+2066 to U+2069) that reorder what a terminal shows, the invisible ones (U+200B,
// U+2060, U+FEFF, the soft hyphen) and the tag characters (U+E0000 block) that hide
// text from the person reading it. The zero-width joiner and non-joiner (U+200D,
// U+200C), which join emoji and the letters of many scripts, stay as they are.
func formatControl(r rune) bool {
	return r != 0x200c && r != 0x200d && unicode.Is(unicode.Cf, r)
}

// escapeWidth is the size of r's escape as Python's repr writes it: \xhh, \uhhhh or
// \Uhhhhhhhh.
func escapeWidth(r rune) int {
	switch {
	case r <= 0xff:
		return 4
	case r <= 0xffff:
		return 6
	}
	return 10
}

// visibleLen is the size of visible(s).
func visibleLen(s string) int {
	n := 0
	for i := 0; i < len(s); {
		if c := s[i]; c >= 0x20 && c < 0x7f || c == '\n' || c == '\t' {
			n++
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		n += controlWidth(r, size)
		i += size
	}
	return n
}

// visible is s with every control character but newline and tab escaped.
func visible(s string) string {
	if visibleLen(s) == len(s) {
		return s
	}
	const hex = "0123456789abcdef"
	var b strings.Builder
	b.Grow(visibleLen(s))
	for _, r := range s {
		switch {
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 && r != '\n' && r != '\t' || r >= 0x7f && r <= 0x9f || r >= 0xad && formatControl(r):
			prefix, digits := `\x`, 2
			if w := escapeWidth(r); w == 6 {
				prefix, digits = `\u`, 4
			} else if w == 10 {
				prefix, digits = `\U`, 8
			}
			b.WriteString(prefix)
			for shift := 4 * (digits - 1); shift >= 0; shift -= 4 {
				b.WriteByte(hex[r>>shift&0xf])
			}
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// visiblePrefix is the longest prefix of s, cut at a character boundary, whose
// visible form takes at most room bytes.
func visiblePrefix(s string, room int) string {
	n := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if n += controlWidth(r, size); n > room {
			return s[:i]
		}
		i += size
	}
	return s
}

// visibleSuffix is the longest suffix of s, starting at a character boundary, whose
// visible form takes at most room bytes.
func visibleSuffix(s string, room int) string {
	n := 0
	for i := len(s); i > 0; {
		r, size := utf8.DecodeLastRuneInString(s[:i])
		n += controlWidth(r, size)
		if n > room {
			return s[i:]
		}
		i -= size
	}
	return s
}
