package server

import (
	"fmt"
	"strings"

	"github.com/iota-uz/repl-mcp/artifacts"
	"github.com/iota-uz/repl-mcp/repl"
)

// One place cuts what the model reads of a long text (docs/contract.md §3.4): the
// text form cuts each part of a result in its middle, around the cuts made before it
// (by the worker, or when native output joined stderr), so the model reads one marker
// per part, and every marker counts against the complete stream: the bytes and the
// lines it stands for, and the artifact that holds all of it when one does.

// part is one piece of an execution's text: the cell's stdout, its stderr, the
// trailing value, the error, what threads of earlier cells printed.
type part struct {
	// label introduces the part on a line of its own ("" for none).
	label string
	text  string
	// gaps are where text was cut before, and what each cut left out.
	gaps []repl.Gap
	// what the cut marker calls it.
	what string
	// saved: an artifact already holds all of it, so cutting it loses nothing.
	saved bool
	// all is the artifact that holds all of it, which its markers name.
	all *artifacts.Ref
}

// cutText is p's text with its gaps.
func (p part) cutText() repl.CutText { return repl.CutText{Text: p.text, Gaps: p.gaps} }

// shown is p's text as the model reads it whole: visible, its markers the text form's.
func (p part) shown(c repl.CutText) string {
	var b strings.Builder
	plain := 0
	for _, g := range c.Gaps {
		b.WriteString(visible(c.Text[plain:g.At]))
		b.WriteString(p.marker(g.Bytes, g.Lines))
		plain = g.At + g.Marker
	}
	b.WriteString(visible(c.Text[plain:]))
	return b.String()
}

func (p part) shownLen() int { return len(p.shown(p.cutText())) }

// marker is the line that stands for bytes of p left out, lines of them newlines.
func (p part) marker(bytes, lines int64) string {
	what := count(bytes) + " bytes"
	if lines > 0 {
		what = fmt.Sprintf("%s line%s, %s", count(lines), plural(int(lines)), what)
	}
	where := ""
	if p.all != nil {
		where = "; all of it: artifact " + p.all.ID
		if p.all.Size < p.streamBytes() {
			where = "; its first and last bytes: artifact " + p.all.ID
		}
	}
	return fmt.Sprintf("\n[... %s of %s left out%s ...]\n", what, p.what, where)
}

// streamBytes is the size of the complete text p is of: what it shows and what its
// gaps stand for.
func (p part) streamBytes() int64 {
	n := int64(len(p.text))
	for _, g := range p.gaps {
		n += g.Bytes - int64(g.Marker)
	}
	return n
}

// cut is p as the model reads it within limit bytes: shown whole, or its head and
// its tail around one marker, which also takes the place of every earlier cut.
// Cuts fall on UTF-8 boundaries, and on line ends when one is near.
func (p part) cut(limit int) string {
	c := p.cutText()
	if len(p.shown(c)) <= limit {
		return p.shown(c)
	}
	// The longest marker this cut can make: everything left out.
	most := p.marker(p.streamBytes(), int64(strings.Count(p.text, "\n"))+p.gapLines())
	room := limit - len(most)
	if room <= 0 {
		return strings.TrimPrefix(most, "\n")
	}
	// Keep the head before the first gap and the tail after the last.
	before, after := p.text, p.text
	if n := len(p.gaps); n > 0 {
		before, after = p.text[:p.gaps[0].At], p.text[p.gaps[n-1].At+p.gaps[n-1].Marker:]
	}
	head := visiblePrefix(before, room/2)
	if i := strings.LastIndexByte(head, '\n'); i >= len(head)*3/4 {
		head = head[:i]
	}
	tail := visibleSuffix(after, room-visibleLen(head))
	if i := strings.IndexByte(tail, '\n'); i >= 0 && i < len(tail)/4 {
		tail = tail[i+1:]
	}
	if len(tail) == len(after) && len(before) > len(head) {
		// The tail is all there is after the cut: the head may have the rest.
		head = visiblePrefix(before, room-visibleLen(tail))
	}
	return p.shown(c.RemoveLines(len(head), len(p.text)-len(tail), func(b, l int64) string { return p.marker(b, l) }))
}

func (p part) gapLines() int64 {
	var n int64
	for _, g := range p.gaps {
		n += g.Lines
	}
	return n
}

// cutMiddle is s as the model reads it within limit bytes (part.cut).
func cutMiddle(s string, limit int, what string) string {
	return part{text: s, what: what}.cut(limit)
}
