package repl

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func i64(v int64) *int64 { return &v }

// The live copy keeps the newest LiveLimit bytes, at a character, and counts them all:
// offsets into the whole stream keep their meaning after a cut, and the cut shows as
// a start later than the offset asked for.
func TestLiveStreamWindow(t *testing.T) {
	var l liveStream
	l.add("héllo\n")
	text, start, cut, err := l.from("stdout", 0)
	if text != "héllo\n" || start != 0 || cut || err != nil {
		t.Fatalf("from(0) = %q, %d, %v, %v", text, start, cut, err)
	}
	// An offset inside é moves on to the next whole character.
	if text, start, _, _ = l.from("stdout", 2); text != "llo\n" || start != 3 {
		t.Fatalf("from(2) = %q, %d; want the text from the next character", text, start)
	}
	if text, start, _, _ = l.from("stdout", 7); text != "" || start != 7 {
		t.Fatalf("from(end) = %q, %d; want nothing new at the end", text, start)
	}
	var past *OffsetError
	if _, _, _, err = l.from("stdout", 8); !errors.As(err, &past) || past.End != 7 || past.Stream != "stdout" {
		t.Fatalf("from(end+1) err = %v, want an OffsetError at 7", err)
	}

	// Many small frames, then one larger than the window.
	for range 3000 {
		l.add(strings.Repeat("ab", 25) + "\n") // 51 bytes
	}
	total := int64(7 + 3000*51)
	if l.end != total || len(l.buf) > 2*LiveLimit {
		t.Fatalf("end %d (want %d), buffer %d bytes (bound %d)", l.end, total, len(l.buf), 2*LiveLimit)
	}
	text, start, cut, _ = l.from("stdout", 100)
	if len(text) != LiveLimit || start != total-LiveLimit || !cut {
		t.Fatalf("after a flood: %d bytes from %d (cut %v), want the newest %d from %d, cut", len(text), start, cut, LiveLimit, total-LiveLimit)
	}
	text, start, cut, _ = l.from("stdout", total-51)
	if text != strings.Repeat("ab", 25)+"\n" || start != total-51 || cut {
		t.Fatalf("the last frame: %q from %d (cut %v)", text, start, cut)
	}
	huge := strings.Repeat("é", LiveLimit) // 2*LiveLimit bytes
	l.add(huge)
	text, start, _, _ = l.from("stdout", 0)
	if len(text) != LiveLimit || !utf8.ValidString(text) || start != total+int64(len(huge))-LiveLimit {
		t.Fatalf("after a huge frame: %d bytes, valid %v, from %d", len(text), utf8.ValidString(text), start)
	}
	if tail, at := l.tail(10); tail != strings.Repeat("é", 5) || at != l.end-10 {
		t.Fatalf("tail(10) = %q at %d", tail, at)
	}
	if tail, _ := l.tail(9); tail != strings.Repeat("é", 4) {
		t.Fatalf("tail(9) = %q, want 4 whole characters", tail)
	}
}

// A retained result read with offsets is trimmed to what follows them, says where
// its streams start and end, and refuses an offset past the end; without offsets it
// is the result itself.
func TestResultFrom(t *testing.T) {
	res := &Result{RunID: "r", Success: true, Stdout: "one\ntwo\n", Stderr: "warn\n"}
	if got, err := res.From(Offsets{}); got != res || err != nil {
		t.Fatalf("From without offsets = %p, %v; want the result itself", got, err)
	}
	got, err := res.From(Offsets{Stdout: i64(4)})
	if err != nil {
		t.Fatal(err)
	}
	if got == res || got.Stdout != "two\n" || got.Stderr != "warn\n" || *got.StdoutStart != 4 || *got.StdoutEnd != 8 || *got.StderrStart != 0 || *got.StderrEnd != 5 {
		t.Fatalf("From(stdout 4) = %+v", got)
	}
	if res.Stdout != "one\ntwo\n" || res.StdoutStart != nil {
		t.Fatal("From changed the retained result")
	}
	var past *OffsetError
	if _, err := res.From(Offsets{Stderr: i64(6)}); !errors.As(err, &past) || past.Stream != "stderr" || past.End != 5 {
		t.Fatalf("From(stderr 6) err = %v", err)
	}
	// A result made from a live copy that had dropped its oldest bytes.
	lost := &Result{Stdout: "newest", stdoutBase: 1000}
	got, _ = lost.From(Offsets{Stdout: i64(10)})
	if got.Stdout != "newest" || *got.StdoutStart != 1000 || !got.Truncated.Stdout {
		t.Fatalf("From before the kept bytes = %+v, want all of them, marked cut", got)
	}
	got, _ = lost.From(Offsets{Stdout: i64(1003)})
	if got.Stdout != "est" || got.Truncated.Stdout {
		t.Fatalf("From inside the kept bytes = %+v", got)
	}
}

// A finished result's text is a terminal's rendering of its stream, shorter than what
// a poller of the live stream was given: an offset up to the live end stays valid,
// and gets the end of the rendering, where the two agree.
func TestResultFromARendering(t *testing.T) {
	// "\r0/30\r1/30...\r29/30\n" live: 146 bytes; the worker's text keeps the last state.
	done := &Result{Stdout: "29/30\n", stdoutEnd: 146}
	for _, c := range []struct {
		offset     int64
		text       string
		start, end int64
	}{
		{0, "29/30\n", 0, 146},
		{140, "29/30\n", 140, 146},
		{143, "30\n", 143, 146},
		{146, "", 146, 146},
		{20, "29/30\n", 140, 146}, // before the rendering's aligned start: all of it
	} {
		got, err := done.From(Offsets{Stdout: i64(c.offset)})
		if err != nil || got.Stdout != c.text || *got.StdoutStart != c.start || *got.StdoutEnd != c.end {
			t.Errorf("From(%d) = %q [%d, %d), %v; want %q [%d, %d)", c.offset, got.Stdout, *got.StdoutStart, *got.StdoutEnd, err, c.text, c.start, c.end)
		}
	}
	var past *OffsetError
	if _, err := done.From(Offsets{Stdout: i64(147)}); !errors.As(err, &past) || past.End != 146 {
		t.Fatalf("From(147) err = %v, want an OffsetError at 146", err)
	}
}
