package repl

import (
	"bytes"

	"github.com/iota-uz/repl-mcp/internal/utf8cut"
)

// terminalText is a stream of bytes as a terminal shows it, bounded: a \r moves the
// cursor back to the start of the line and what follows overwrites it, so a
// progress bar that redraws itself keeps only its last state; a line is final at
// its \n, or once it is longer than the limit. Final bytes are kept whole up to the
// limit; past it, the first head bytes and the latest ones, and view puts a marker
// saying how many bytes were left out between them. It is how the worker keeps a
// cell's stdout and stderr (docs/contract.md §5.5), for the native output of a run.
// Memory stays within about three times the limit. Not safe for concurrent use.
//
// It is the twin of the worker's StreamText (replworker/terminal.py), on other data: only
// the server reads the native-output pipe (C code holding the GIL, children that outlive
// a run and a dying worker's last words write there), and only the worker sees each
// print, which it must render and cut before sending to bound the frame pipe, and
// spools. Both pass the cases of testdata/terminal_cases.json, which name where they
// differ (columns in bytes here, in characters there).
type terminalText struct {
	limit, head int
	line        []byte // the current line, not yet final
	col         int    // where the next byte goes; below len(line) after a \r
	kept        []byte // final bytes while they fit, then the head
	tail        []byte // once cut: the latest final bytes (trimmed lazily)
	cut         bool
	total       int // final bytes, all of them
	lines       int // newlines in them
}

func newTerminalText(limit, head int) *terminalText {
	return &terminalText{limit: limit, head: head}
}

// write takes p into the text.
func (t *terminalText) write(p []byte) {
	for len(p) > 0 {
		i := 0
		for i < len(p) && p[i] != '\r' && p[i] != '\n' {
			i++
		}
		t.put(p[:i])
		if i == len(p) {
			return
		}
		if p[i] == '\n' {
			t.line = append(t.line, '\n')
			t.endLine()
		} else {
			t.col = 0
		}
		p = p[i+1:]
	}
}

// put writes a piece without \r or \n at the cursor.
func (t *terminalText) put(p []byte) {
	if len(p) == 0 {
		return
	}
	n := copy(t.line[t.col:], p)
	t.line = append(t.line, p[n:]...)
	t.col += len(p)
	if len(t.line) > t.limit {
		t.endLine() // too long to keep rewritable: final as written
	}
}

func (t *terminalText) endLine() {
	t.final(t.line)
	t.line, t.col = t.line[:0], 0
}

func (t *terminalText) final(p []byte) {
	t.total += len(p)
	t.lines += bytes.Count(p, []byte{'\n'})
	if !t.cut {
		t.kept = append(t.kept, p...)
		if len(t.kept) <= t.limit {
			return
		}
		t.cut = true
		head := utf8cut.Prefix(t.kept, t.head)
		t.tail = append([]byte(nil), t.kept[len(head):]...)
		t.kept = head
	} else {
		t.tail = append(t.tail, p...)
	}
	if room := t.tailRoom(); len(t.tail) > 2*room {
		t.tail = append(t.tail[:0:0], t.tail[len(t.tail)-room:]...)
	}
}

// tailRoom is how many bytes of the tail a view shows, with the marker between the
// head and the tail.
func (t *terminalText) tailRoom() int { return t.limit - len(t.kept) - streamMarker }

// view returns the text as it is now, the current line included (nothing changes:
// a live snapshot takes views too), with the gap of its cut, if it was cut.
func (t *terminalText) view() CutText {
	if !t.cut && len(t.kept)+len(t.line) <= t.limit {
		return CutText{Text: string(t.kept) + string(t.line)}
	}
	if !t.cut { // the current line alone takes it past the limit
		var cut bool
		return boundCut(CutText{Text: string(t.kept) + string(t.line)}, t.limit, t.head, &cut)
	}
	end := append(append([]byte(nil), t.tail...), t.line...)
	last := suffixUTF8(end, t.tailRoom())
	leftOut := t.total + len(t.line) - len(t.kept) - len(last)
	lines := t.lines - bytes.Count(t.kept, []byte{'\n'}) - bytes.Count(last, []byte{'\n'})
	marker := leftOutMarker(leftOut)
	return CutText{Text: string(t.kept) + marker + string(last),
		Gaps: []Gap{{At: len(t.kept), Marker: len(marker), Bytes: int64(leftOut), Lines: int64(max(lines, 0))}}}
}
