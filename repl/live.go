package repl

import (
	"fmt"
	"unicode/utf8"
)

// A run's live output, as python_run polls it and progress notifications report it
// (docs/contract.md §3.5, §3.1).

// liveStream is the bounded live copy of one output stream. It keeps the newest
// LiveLimit bytes, because a poller and a progress report want what is happening now,
// and it counts every byte the stream has had, so that an offset into the whole
// stream keeps its meaning after older bytes were dropped.
type liveStream struct {
	buf []byte // the newest bytes, beginning at a character; at most 2*LiveLimit
	end int64  // bytes the stream has had in all
}

func (l *liveStream) add(s string) {
	if s == "" {
		return
	}
	l.end += int64(len(s))
	if len(s) >= LiveLimit {
		l.buf = append(l.buf[:0], s[tailStart(s, LiveLimit):]...)
		return
	}
	l.buf = append(l.buf, s...)
	if len(l.buf) > 2*LiveLimit {
		// Compact now and then rather than on every add: a flood of small frames
		// costs one copy per LiveLimit bytes, not one per frame.
		l.buf = append(l.buf[:0], l.buf[tailStart(l.buf, LiveLimit):]...)
	}
}

// kept returns what python_run may show, the newest LiveLimit bytes at most, and the
// stream offset of its first byte.
func (l *liveStream) kept() ([]byte, int64) {
	b := l.buf[tailStart(l.buf, LiveLimit):]
	return b, l.end - int64(len(b))
}

// from returns the kept text at or after offset and the offset it starts at. That
// is later than offset when the bytes in between were dropped (cut), or when offset
// fell inside a character (the text then starts at the next whole one). An offset
// past the end is the caller's mistake: an *OffsetError.
func (l *liveStream) from(stream string, offset int64) (text string, start int64, cut bool, err error) {
	if offset > l.end {
		return "", 0, false, &OffsetError{Stream: stream, End: l.end}
	}
	b, start := l.kept()
	cut = offset < start
	if offset > start {
		i := int(offset - start)
		for i < len(b) && !utf8.RuneStart(b[i]) {
			i++
		}
		b, start = b[i:], start+int64(i)
	}
	return string(b), start, cut, nil
}

// tail is the kept text's newest limit bytes at most, and the stream offset where
// it starts: what a run that ended without a result reports as its output.
func (l *liveStream) tail(limit int) (string, int64) {
	b, start := l.kept()
	i := tailStart(b, limit)
	return string(b[i:]), start + int64(i)
}

// tailStart is the index where the newest limit bytes of b begin, moved forward to
// the start of a character.
func tailStart[T string | []byte](b T, limit int) int {
	i := max(len(b)-limit, 0)
	for i < len(b) && !utf8.RuneStart(b[i]) {
		i++
	}
	return i
}

// Offsets are how much of a run's stdout and stderr a poller has read already:
// python_run's stdout_offset and stderr_offset, in bytes of the whole stream, as the
// stdout_end and stderr_end of an earlier answer give them. Native is
// native_stderr_offset, which only a live snapshot has (a result's native output
// follows its stderr). Nil means not given.
type Offsets struct {
	Stdout, Stderr, Native *int64
}

// given reports offsets into a result's streams.
func (o Offsets) given() bool { return o.Stdout != nil || o.Stderr != nil }

func offsetOf(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// OffsetError is an offset past the end of what the run's stream has had so far:
// most likely an offset read from another run's answer.
type OffsetError struct {
	Stream string // "stdout", "stderr" or "native_stderr"
	End    int64  // bytes the stream has had
}

func (e *OffsetError) Error() string {
	return fmt.Sprintf("past the end of the run's %s (%d bytes so far); pass the %s_end of an earlier python_run answer about the same run_id", e.Stream, e.End, e.Stream)
}

// trimmed returns text (whose first byte is byte base of its stream) from offset on,
// the offset it starts at, and whether bytes from offset on were missing from text,
// by the rules of liveStream.from. end is where the stream ends in the offsets a
// poller was given: base+len(text) when text is the stream as it came, later when
// text is a terminal's rendering of a longer stream (carriage returns applied, the
// head and tail of a long one; docs/contract.md §5.5). A rendering is aligned at its
// end, where it and the stream agree: an offset past base gets the last end-offset
// bytes of text, and the whole text when it is shorter than that.
func trimmed(stream, text string, base, end, offset int64) (string, int64, bool, error) {
	end = max(end, base+int64(len(text)))
	if offset > end {
		return "", 0, false, &OffsetError{Stream: stream, End: end}
	}
	if offset <= base {
		return text, base, offset < base, nil
	}
	i := max(len(text)-int(end-offset), 0)
	for i < len(text) && !utf8.RuneStart(text[i]) {
		i++
	}
	return text[i:], end - int64(len(text)-i), false, nil
}

// From is the result as python_run returns it to a poller that has read its output
// up to offs: a copy whose stdout and stderr hold only what follows, with where
// each starts and ends in the run's streams. Without offsets it is the result
// itself, exactly as it was returned.
func (r *Result) From(offs Offsets) (*Result, error) {
	if !offs.given() {
		return r, nil
	}
	c := *r
	var err error
	var start, end [2]int64
	var cut [2]bool
	if c.Stdout, start[0], cut[0], err = trimmed("stdout", r.Stdout, r.stdoutBase, r.stdoutEnd, offsetOf(offs.Stdout)); err != nil {
		return nil, err
	}
	if c.Stderr, start[1], cut[1], err = trimmed("stderr", r.Stderr, r.stderrBase, r.stderrEnd, offsetOf(offs.Stderr)); err != nil {
		return nil, err
	}
	c.stdoutGaps = gapsOfSuffix(r.stdoutGaps, len(r.Stdout)-len(c.Stdout))
	c.stderrGaps = gapsOfSuffix(r.stderrGaps, len(r.Stderr)-len(c.Stderr))
	end[0] = max(r.stdoutEnd, r.stdoutBase+int64(len(r.Stdout)))
	end[1] = max(r.stderrEnd, r.stderrBase+int64(len(r.Stderr)))
	c.StdoutStart, c.StdoutEnd, c.StderrStart, c.StderrEnd = &start[0], &end[0], &start[1], &end[1]
	c.Truncated.Stdout = c.Truncated.Stdout || cut[0]
	c.Truncated.Stderr = c.Truncated.Stderr || cut[1]
	return &c, nil
}
