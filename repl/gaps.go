package repl

import (
	"strings"
	"unicode/utf8"

	"github.com/iota-uz/repl-mcp/internal/utf8cut"
)

// Gap is one cut in a stream's text: the marker at text[At:At+Marker] stands for
// Bytes bytes of the complete stream, Lines of them newlines, that the text does not
// hold. A text cut more than once (by the worker, again when native output joins
// stderr, again by the text form) keeps one gap per place, each counted against the
// complete stream (docs/contract.md §3.4, §5.5).
type Gap struct {
	At     int   `json:"at"`
	Marker int   `json:"marker"`
	Bytes  int64 `json:"bytes"`
	Lines  int64 `json:"lines"`
}

// CutText is a text and its gaps, in order.
type CutText struct {
	Text string
	Gaps []Gap
}

// valid reports whether every gap lies in the text, in order, on UTF-8 boundaries,
// each marker starting a line of its own.
func (c CutText) valid() bool {
	end := 0
	for _, g := range c.Gaps {
		if g.At < end || g.Marker <= 0 || g.At+g.Marker > len(c.Text) || g.Bytes < 0 || g.Lines < 0 ||
			!strings.HasPrefix(c.Text[g.At:], "\n[... ") || !boundary(c.Text, g.At+g.Marker) {
			return false
		}
		end = g.At + g.Marker
	}
	return true
}

func boundary(s string, i int) bool { return i == len(s) || utf8.RuneStart(s[i]) }

// Remove is c without text[from:to], widened to whole markers, and with one gap in its
// place whose marker is marker(bytes, lines) of what that place now leaves out: the
// bytes removed and those the gaps inside stood for. from and to must be UTF-8
// boundaries. A cut at a byte count (the stream bounds) inserts its marker's newlines;
// for one that keeps whole lines, RemoveLines.
func (c CutText) Remove(from, to int, marker func(bytes, lines int64) string) CutText {
	return c.remove(from, to, marker, false)
}

// RemoveLines is Remove for a cut that keeps whole lines, whose marker's first newline
// ends the line shown before it: a plain newline at text[from] is shown by it, and is
// not counted as left out. (Its last newline ends the marker's own line.) The reader
// then finds exactly the stream's bytes between what the text shows before and after
// the marker line.
func (c CutText) RemoveLines(from, to int, marker func(bytes, lines int64) string) CutText {
	return c.remove(from, to, marker, true)
}

func (c CutText) remove(from, to int, marker func(bytes, lines int64) string, keepsLines bool) CutText {
	for _, g := range c.Gaps {
		if g.At < to && from < g.At+g.Marker {
			from, to = min(from, g.At), max(to, g.At+g.Marker)
		}
	}
	var shown int64 // a plain newline at text[from] that the marker's first newline shows
	if keepsLines && from < to && c.plainAt(from) && c.Text[from] == '\n' {
		shown = 1
	}
	var bytes, lines int64
	var before, after []Gap
	plain := from // the start of the plain text not yet counted
	for _, g := range c.Gaps {
		switch {
		case g.At+g.Marker <= from:
			before = append(before, g)
		case g.At >= to:
			after = append(after, g)
		default:
			bytes += int64(g.At-plain) + g.Bytes
			lines += int64(strings.Count(c.Text[plain:g.At], "\n")) + g.Lines
			plain = g.At + g.Marker
		}
	}
	bytes += int64(to-plain) - shown
	lines += int64(strings.Count(c.Text[plain:to], "\n")) - shown
	m := marker(bytes, lines)
	gaps := append(before, Gap{At: from, Marker: len(m), Bytes: bytes, Lines: lines})
	for _, g := range after {
		g.At += len(m) - (to - from)
		gaps = append(gaps, g)
	}
	return CutText{Text: c.Text[:from] + m + c.Text[to:], Gaps: gaps}
}

// plainAt says whether text[i] is the stream's own, not a byte of a gap's marker.
func (c CutText) plainAt(i int) bool {
	for _, g := range c.Gaps {
		if g.At <= i && i < g.At+g.Marker {
			return false
		}
	}
	return true
}

// Join is c followed by d.
func (c CutText) Join(d CutText) CutText {
	gaps := append([]Gap(nil), c.Gaps...)
	for _, g := range d.Gaps {
		g.At += len(c.Text)
		gaps = append(gaps, g)
	}
	return CutText{Text: c.Text + d.Text, Gaps: gaps}
}

// Render is the text with each gap's marker replaced by what render makes of it.
func (c CutText) Render(render func(Gap) string) string {
	var b strings.Builder
	plain := 0
	for _, g := range c.Gaps {
		b.WriteString(c.Text[plain:g.At])
		b.WriteString(render(g))
		plain = g.At + g.Marker
	}
	b.WriteString(c.Text[plain:])
	return b.String()
}

// boundCut keeps c whole when it fits limit bytes; else its first head bytes, one gap
// for all it leaves out, and its last bytes, limit bytes in all (docs/contract.md
// §5.5), and sets flag, counting what earlier cuts left out too.
func boundCut(c CutText, limit, head int, flag *bool) CutText {
	if len(c.Text) <= limit {
		return c
	}
	*flag = true
	first := utf8cut.Prefix(c.Text, head)
	last := suffixUTF8(c.Text[len(first):], limit-len(first)-streamMarker)
	return c.Remove(len(first), len(c.Text)-len(last), func(bytes, _ int64) string { return leftOutMarker(int(bytes)) })
}

// checked is c, or c's text alone when its gaps do not fit it: a marker that cannot be
// found is read as text.
func (c CutText) checked() CutText {
	if !c.valid() || !utf8.ValidString(c.Text) {
		return CutText{Text: strings.ToValidUTF8(c.Text, "\uFFFD")}
	}
	return c
}

// gapsOfSuffix are the gaps of a text's suffix that starts at byte from: those wholly
// in it, moved with it. A marker the suffix starts inside of is text there.
func gapsOfSuffix(gaps []Gap, from int) []Gap {
	var kept []Gap
	for _, g := range gaps {
		if g.At >= from {
			g.At -= from
			kept = append(kept, g)
		}
	}
	return kept
}
