package repl

import (
	"strings"
	"testing"
)

// TestCutTextCountsAgainstTheWholeStream: a text cut again where it was cut before
// keeps one gap, which counts what both cuts left out, newlines included; the gaps
// after it move with the text.
func TestCutTextCountsAgainstTheWholeStream(t *testing.T) {
	// A stream of 10,000 lines of 10 bytes, cut by the worker to its first 100 lines,
	// a marker, and its last 100.
	line := func(i int) string { return strings.Repeat("x", 5) + string(rune('0'+i%10)) + "abc\n" }
	var head, tail strings.Builder
	for i := range 100 {
		head.WriteString(line(i))
		tail.WriteString(line(9900 + i))
	}
	marker := leftOutMarker(98000)
	worker := CutText{head.String() + marker + tail.String(), []Gap{{At: 1000, Marker: len(marker), Bytes: 98000, Lines: 9800}}}
	if !worker.valid() {
		t.Fatal("the worker's gap is not valid")
	}
	native := CutText{Text: "native\n"}
	joined := worker.Join(native)
	// Cut again from byte 500 to 500 bytes before the end: through the worker's marker.
	again := joined.Remove(500, len(joined.Text)-500, func(bytes, lines int64) string {
		return leftOutMarker(int(bytes))
	})
	if len(again.Gaps) != 1 {
		t.Fatalf("gaps %+v, want one", again.Gaps)
	}
	g := again.Gaps[0]
	// Left out: 500 bytes of the head, the worker's 98,000, and the tail's 1,000 + 7 less
	// the 500 kept: 98,000 + 500 + 507.
	if g.At != 500 || g.Bytes != 99007 || g.Lines != 50+9800+50 {
		t.Fatalf("gap %+v, want at 500, 99,007 bytes, 9,900 lines", g)
	}
	if got := again.Text[g.At : g.At+g.Marker]; got != leftOutMarker(99007) || !again.valid() {
		t.Fatalf("marker %q", got)
	}
	// A cut that would split a marker takes all of it.
	edge := worker.Remove(1005, 1500, func(bytes, lines int64) string { return leftOutMarker(int(bytes)) })
	if len(edge.Gaps) != 1 || edge.Gaps[0].At != 1000 || edge.Gaps[0].Bytes != 98000+1500-1000-int64(len(marker)) {
		t.Fatalf("a cut inside a marker: %+v", edge.Gaps)
	}
	// A gap that does not fit its text is dropped: its marker reads as text.
	if bad := (CutText{"short", []Gap{{At: 2, Marker: 10}}}).checked(); bad.Gaps != nil || bad.Text != "short" {
		t.Fatalf("an invalid gap kept: %+v", bad)
	}
	// Bounding a cut text counts against the whole stream too: every byte of it is
	// shown or counted by exactly one gap.
	var flag bool
	bounded := boundCut(CutText{Text: strings.Repeat("y\n", 30000)}.Join(joined), StreamLimit, streamHead, &flag)
	total := int64(60000 + len(head.String()) + 98000 + len(tail.String()) + len("native\n"))
	shown, counted := int64(len(bounded.Text)), int64(0)
	for _, g := range bounded.Gaps {
		shown -= int64(g.Marker)
		counted += g.Bytes
	}
	if !flag || len(bounded.Gaps) != 2 || shown+counted != total || len(bounded.Text) > StreamLimit || !bounded.valid() {
		t.Fatalf("bounded: flag %v, %d bytes, gaps %+v; %d shown and %d counted of %d", flag, len(bounded.Text), bounded.Gaps, shown, counted, total)
	}
}

// TestRemoveLinesCountsWhatTheReaderMisses: a cut that keeps whole lines shows the
// newline ending the line before it as its marker's first newline, so that newline is
// not counted as left out: what the text shows before and after the marker line, and
// what the marker counts, are the stream, byte for byte. A cut inside a line counts all
// it removed; a worker's marker at the cut's start is no newline of the stream.
func TestRemoveLinesCountsWhatTheReaderMisses(t *testing.T) {
	stream := "one\ntwo\nthree\nfour\n"
	mark := func(bytes, lines int64) string { return "\n[... " + withCommas(int(bytes)) + " bytes left out ...]\n" }
	whole := CutText{Text: stream}.RemoveLines(3, len("one\ntwo\nthree\n"), mark) // keeps "one", "four\n"
	g := whole.Gaps[0]
	if g.Bytes != int64(len("two\nthree\n")) || g.Lines != 2 {
		t.Errorf("whole lines: %+v, want the 10 bytes and 2 newlines of two and three", g)
	}
	reader := whole.Text[:g.At] + "\n" + whole.Text[g.At+g.Marker:] // the marker's first newline ends "one"
	if int64(len(reader))+g.Bytes != int64(len(stream)) {
		t.Errorf("the reader sees %q and is told of %d bytes more, of a %d-byte stream", reader, g.Bytes, len(stream))
	}
	mid := CutText{Text: stream}.RemoveLines(2, 10, mark) // "on" + marker + "hree\nfour\n"
	if g := mid.Gaps[0]; g.Bytes != 8 || g.Lines != 2 {
		t.Errorf("inside lines: %+v, want all 8 bytes and 2 newlines", g)
	}
	if g := (CutText{Text: stream}).Remove(3, 14, mark).Gaps[0]; g.Bytes != 11 || g.Lines != 3 {
		t.Errorf("Remove, which inserts its marker's newlines: %+v, want 11 bytes and 3 newlines", g)
	}
	marker := leftOutMarker(5)
	cut := CutText{Text: "ab" + marker + "cd\nef\n", Gaps: []Gap{{At: 2, Marker: len(marker), Bytes: 5, Lines: 1}}}
	if g := cut.RemoveLines(2, 2+len(marker)+3, mark).Gaps[0]; g.Bytes != 5+3 || g.Lines != 2 {
		t.Errorf("a cut starting at a worker's marker: %+v, want its 5 bytes and cd's 3", g)
	}
}
