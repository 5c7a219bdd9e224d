"""One stream's text as a terminal would show it, bounded (StreamText): a line rewritten
with \\r shows its last state, and the text is kept to its head and its tail with a marker
between them. output.py captures sys.stdout and sys.stderr into it; the server keeps native
output the same way (repl/terminal.go), and both pass repl/testdata/terminal_cases.json."""

import collections

from .common import utf8_prefix
from .limits import LINE_CHARS, STREAM_MARKER
from .messages import OUTPUT_LEFT_OUT

_SIZE_SLICE = 1 << 20  # characters encoded at a time to measure a long non-ASCII text
FINAL_BATCH = 8_192  # characters of final text a stream collects before it counts, keeps and spools them


def utf8_len(text):
    """The UTF-8 size of `text` as it is sent (a lone surrogate is one '?'), measured
    without encoding a long text at once."""
    if text.isascii():
        return len(text)
    return sum(
        len(text[start:start + _SIZE_SLICE].encode('utf-8', 'replace'))
        for start in range(0, len(text), _SIZE_SLICE)
    )


def utf8_suffix(text, room):
    """(the longest end of `text` within `room` UTF-8 bytes, cut at a character boundary,
    lone surrogates as '?'; its size). Only the last `room` characters are encoded."""
    end = text[-room:] if len(text) > room else text
    data = end.encode('utf-8', 'replace')
    cut = max(len(data) - room, 0)
    while cut < len(data) and data[cut] & 0xC0 == 0x80:  # a continuation byte: the character is split
        cut += 1
    return data[cut:].decode('utf-8'), len(data) - cut


class StreamText:
    """One stream's text as a terminal would show it, bounded. A `\\r` moves the cursor to
    the start of the line, and what follows overwrites it, so a progress bar that redraws
    itself keeps only its last state; a line is final at its `\\n`, and its first LINE_CHARS
    characters are once it is longer (as if wrapped there). Final text is kept whole while it fits `budget` UTF-8 bytes; past that, its
    first `head` bytes and its latest ones, with a marker between them saying how many
    bytes were left out, `budget` bytes in all. With `spool` (output.Spool), the complete
    final text of a stream that passed its budget also goes to one for its artifact. How
    the text was split into writes changes none of this.

    Final text is handled in batches of FINAL_BATCH characters, so a flood of short prints
    costs a list append each. `cut`, `total` and text() are exact once finish() was called.

    Not thread-safe: its capture's lock serializes it. A KeyboardInterrupt may land
    anywhere in here (the main thread prints through it): each step leaves a state the
    next write and finish() accept, at the price of part of the interrupted write.

    The server keeps native output the same way (repl/terminal.go): both pass the cases
    of repl/testdata/terminal_cases.json."""

    def __init__(self, budget, head, spool):
        self._budget = budget
        self._head_budget = head
        self._tail_budget = budget - head - STREAM_MARKER
        self._spooling = spool
        self.spool = None  # a `spool`, once the stream passed its budget (and spool was given)
        self.spool_error = None  # why the complete text could not be kept (an OSError's text)
        self._line = []  # the current line, not yet final, as pieces
        self._line_chars = 0
        self._column = 0  # where the next character goes; below _line_chars after a \r
        self._batch = []  # final text not yet counted, kept or spooled
        self._batch_chars = 0
        self._kept = []  # final text, while all of it fits the budget
        self._kept_bytes = 0
        self._head = None  # once past the budget: the head's text; the tail follows
        self._head_bytes = 0
        self._tail = collections.deque()  # (text, UTF-8 size): the latest final text
        self._tail_bytes = 0
        self.total = 0  # UTF-8 bytes of final text
        self.lines = 0  # newlines in the final text
        self.gap = None  # once text() cut: where its marker is and what it stands for (gap())

    @property
    def blank(self):
        """Whether no text was written at all, final or not."""
        return not self.total and not self._line and not self._batch

    @property
    def cut(self):
        return self._head is not None

    def write(self, text):
        if '\r' not in text:
            self._write_lines(text)
            return
        # Lines without a \r go as whole lines; each line with one, a piece at a time.
        position, end = 0, len(text)
        while position < end:
            rewind = text.find('\r', position)
            if rewind < 0:
                self._write_lines(text[position:])
                return
            newline = text.rfind('\n', position, rewind)
            if newline >= 0:
                self._write_lines(text[position:newline + 1])
                position = newline + 1
            stop = text.find('\n', rewind)
            pieces = text[position:end if stop < 0 else stop].split('\r')
            if pieces[0]:
                self._put(pieces[0])
            self._rewrite(pieces[1:])
            if stop < 0:
                return
            self._end_line('\n')
            position = stop + 1

    def _write_lines(self, text):
        """Text with no \r: whole lines, perhaps a line begun."""
        last = text.rfind('\n')
        if last < 0:
            if text:
                self._put(text)
            return
        start = 0
        if self._column < self._line_chars:  # after a \r, its first line overwrites
            start = text.find('\n') + 1
            if start > 1:
                self._put(text[:start - 1])
            self._end_line('\n')
        if start <= last:
            self._line.append(text[start:last + 1])
            self._line_chars += last + 1 - start
            self._end_line('')
        if last + 1 < len(text):
            self._put(text[last + 1:])

    def _rewrite(self, pieces):
        """Write each of `pieces` from the line's start, as each follows a \r. A progress
        line redrawn a thousand times in one write is folded at once: each column shows the
        last piece that reaches it, or the line as it was. A piece past LINE_CHARS may end
        the line midway, so then each goes through _put."""
        if not pieces:
            return
        self._column = 0
        if max(map(len, pieces)) > LINE_CHARS:
            for piece in pieces:
                self._column = 0
                if piece:
                    self._put(piece)
            return
        parts, covered = [], 0
        for piece in reversed(pieces):
            if len(piece) > covered:
                parts.append(piece[covered:])
                covered = len(piece)
        if not covered:
            return
        if self._line_chars > covered:
            parts.append(''.join(self._line)[covered:])
        line = ''.join(parts)
        self._line, self._line_chars, self._column = [line], len(line), len(pieces[-1])

    def _put(self, piece):
        if self._column >= self._line_chars:
            self._line.append(piece)
            self._line_chars += len(piece)
            self._column = self._line_chars
        else:  # after a \r: overwrite in place, as a terminal does
            line = ''.join(self._line)
            column = min(self._column, len(line))
            line = line[:column] + piece + line[column + len(piece):]
            self._line = [line]
            self._line_chars = len(line)
            self._column = column + len(piece)
        if self._line_chars > LINE_CHARS:
            self._wrap()

    def _wrap(self):
        """A line longer than LINE_CHARS: its first LINE_CHARS characters are final (a
        terminal of that width would have wrapped them), the rest stays rewritable. Exactly
        there, wherever the writes were split, so batching never changes the text."""
        line = ''.join(self._line)
        while len(line) > LINE_CHARS:
            self._line, self._line_chars = [line[:LINE_CHARS]], LINE_CHARS
            self._end_line('')
            line = line[LINE_CHARS:]
        self._line, self._line_chars, self._column = [line] if line else [], len(line), len(line)

    def _end_line(self, ending):
        line, self._line = self._line, []
        chars, self._line_chars, self._column = self._line_chars, 0, 0
        batch = self._batch
        batch += line
        if ending:
            batch.append(ending)
        self._batch_chars += chars + len(ending)
        if self._batch_chars >= FINAL_BATCH:
            self._flush()

    def finish(self):
        """The stream is over: its current line is final as the terminal shows it."""
        if self._line:
            self._end_line('')
        self._flush()

    def _flush(self):
        batch, self._batch = self._batch, []
        self._batch_chars = 0
        text = ''.join(batch)
        if not text:
            return
        size = utf8_len(text)
        self.total += size
        self.lines += text.count('\n')
        if self.spool is not None:
            self._to_spool(text)
        if self._head is None:
            self._kept.append(text)
            self._kept_bytes += size
            if self._kept_bytes > self._budget:
                self._cut()
        else:
            self._keep_tail(text, size)

    def _cut(self):
        """Past the budget: keep the head and the tail from now on, and start the spool."""
        text, self._kept = ''.join(self._kept), []
        head, head_bytes, _ = utf8_prefix(text, self._head_budget)
        self._head, self._head_bytes = head, head_bytes
        rest = text[len(head):]  # utf8_prefix keeps one character for each one it took
        self._keep_tail(rest, utf8_len(rest))
        if self._spooling and self.spool_error is None:
            try:
                self.spool = self._spooling()
            except OSError as exc:
                self.spool_error = str(exc)
            else:
                self._to_spool(text)

    def _to_spool(self, text):
        try:
            self.spool.write(text)
        except OSError as exc:  # a full disk, say: the result's head and tail are unaffected
            self.spool_error = str(exc)
            self.spool.close()
            self.spool = None

    def _keep_tail(self, text, size):
        if size > self._tail_budget:
            text, size = utf8_suffix(text, self._tail_budget)
            self._tail.clear()
            self._tail_bytes = 0
        self._tail.append((text, size))
        self._tail_bytes += size
        while len(self._tail) > 1 and self._tail_bytes - self._tail[0][1] >= self._tail_budget:
            self._tail_bytes -= self._tail.popleft()[1]

    def text(self, marker=OUTPUT_LEFT_OUT, *args):
        """The kept text: all of it, or head, marker and tail. `marker` is a template of the
        bytes left out, then `args` (what the run did with the complete text). A cut text
        also sets `gap`: the marker's UTF-8 offset and size in the text, and the bytes and
        newlines of the stream it stands for, so a later cut can count against the whole
        stream (the result's `cuts`)."""
        self._flush()
        if self._head is None:
            text = ''.join(self._kept)
            return text if text.isascii() else text.encode('utf-8', 'replace').decode('utf-8')
        tail, tail_bytes = utf8_suffix(''.join(text for text, _ in self._tail), self._tail_budget)
        left_out = max(self.total - self._head_bytes - tail_bytes, 0)
        note, note_bytes, _ = utf8_prefix(marker.format(left_out, *args), STREAM_MARKER)
        lines = self.lines - self._head.count('\n') - tail.count('\n')
        self.gap = {'at': self._head_bytes, 'marker': note_bytes, 'bytes': left_out, 'lines': max(lines, 0)}
        return self._head + note + tail

    def close(self):
        if self.spool is not None:
            self.spool.close()
            self.spool = None
