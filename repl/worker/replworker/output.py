"""Output capture: sys.stdout and sys.stderr (text, and bytes through their .buffer),
each stream kept as a terminal would show it (a line rewritten with \\r shows its last
state) and bounded to its head and its tail; the complete text of a stream that passed
its bound, spooled to an unlinked file for its artifact; live `output` frames; what
and what threads of earlier cells print, kept apart for the next result. The
native-output pipe on fd 1 and fd 2 is native.py's."""

import codecs
import collections
import os
import re
import threading
import time

from .common import utf8_prefix
from .limits import (
    ARTIFACT_CHUNK, ARTIFACT_MAX_BYTES, BACKGROUND_BUDGET, BACKGROUND_HEAD, FLUSH_INTERVAL, LINE_CHARS, PUMP_LINGER,
    LIVE_PENDING_CHARS, SPOOL_BUFFER, SPOOL_HEAD, STREAM_BUDGET, STREAM_HEAD, STREAM_MARKER,
)
from .messages import LIVE_DROPPED, OUTPUT_LEFT_OUT
from .sinks import RAW_BATCH, Sink, SinkBuffer, transcode
from .threads import THREADS

# Bytes written to a sink's buffer that are not UTF-8 become U+FFFD, as with errors='replace'.
BYTES_ERRORS = 'replace'
_decode_utf8 = codecs.utf_8_decode  # (text, bytes consumed); a split last character is left
_CONTROL = re.compile('[\r\n]')  # what moves a terminal's cursor: to the line's start, to a new line
_SIZE_SLICE = 1 << 20  # characters encoded at a time to measure a long non-ASCII text
FINAL_BATCH = 8_192  # characters of final text a stream collects before it counts, keeps and spools them
STREAMS = ('stdout', 'stderr')
MAIN_THREAD = threading.main_thread().ident
get_ident = threading.get_ident


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


def _private_file():
    """A new file only this worker can reach: unlinked at once (O_TMPFILE where the system
    has it), so nothing stays on disk whatever happens to the worker; mode 0600, closed on exec."""
    directory = os.environ.get('TMPDIR') or '/tmp'
    flags = os.O_RDWR | os.O_CLOEXEC
    if hasattr(os, 'O_TMPFILE'):
        try:
            return os.open(directory, flags | os.O_TMPFILE, 0o600)
        except OSError:
            pass  # a file system without O_TMPFILE: the portable way below
    for _ in range(8):
        path = os.path.join(directory, f'.repl-mcp-output-{os.urandom(8).hex()}')
        try:
            fd = os.open(path, flags | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except FileExistsError:
            continue
        os.unlink(path)
        return fd
    raise FileExistsError(directory)


class Spool:
    """The complete text of one stream, as UTF-8 in a private unlinked file: all of it up to
    ARTIFACT_MAX_BYTES, and past that its first SPOOL_HEAD bytes and, in a ring, its latest
    ones. Memory stays at SPOOL_BUFFER bytes whatever the stream's size. Not thread-safe:
    its stream's lock serializes it."""

    RING = ARTIFACT_MAX_BYTES - SPOOL_HEAD - STREAM_MARKER  # the marker goes between head and ring

    def __init__(self):
        self._fd = _private_file()
        self._buffer = bytearray()
        self.size = 0  # bytes of complete output, buffered ones included

    def write(self, text):
        data = text.encode('utf-8', 'replace')
        self._buffer += data
        self.size += len(data)
        if len(self._buffer) >= SPOOL_BUFFER:
            self.flush()

    def flush(self):
        data, self._buffer = self._buffer, bytearray()
        offset = self.size - len(data)
        view = memoryview(data)
        while view:
            position, room = self._place(offset)
            written = os.pwrite(self._fd, view[:room], position)
            offset += written
            view = view[written:]

    def _place(self, offset):
        """(file position, contiguous bytes there) of the complete output's byte `offset`."""
        if offset < SPOOL_HEAD:
            return offset, SPOOL_HEAD - offset
        ring = (offset - SPOOL_HEAD) % self.RING
        return SPOOL_HEAD + ring, self.RING - ring

    @property
    def whole(self):
        """Whether the file holds all of the output (else its head and its latest bytes)."""
        return self.size <= SPOOL_HEAD + self.RING

    def pieces(self):
        """The file's text in order as UTF-8 pieces of at most ARTIFACT_CHUNK bytes: all of
        it, or its head, a marker saying how much is left out, and its latest bytes, each
        cut at a character boundary so the whole is valid UTF-8."""
        self.flush()
        if self.whole:
            yield from self._read(0, self.size)
            return
        head_end = SPOOL_HEAD
        while head_end > 0 and self._byte(head_end) & 0xC0 == 0x80:
            head_end -= 1  # the character at SPOOL_HEAD started before it
        oldest = self.size - self.RING
        start = oldest
        while start < self.size and self._byte(self._place(start)[0]) & 0xC0 == 0x80:
            start += 1
        yield from self._read(0, head_end)
        yield OUTPUT_LEFT_OUT.format(start - head_end).encode('utf-8')
        while start < self.size:
            position, room = self._place(start)
            length = min(room, self.size - start)
            yield from self._read(position, length)
            start += length

    def _byte(self, position):
        return os.pread(self._fd, 1, position)[0]

    def _read(self, position, length):
        end = position + length
        while position < end:
            data = os.pread(self._fd, min(ARTIFACT_CHUNK, end - position), position)
            if not data:
                raise OSError('output spool file ended early')
            position += len(data)
            yield data

    def close(self):
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)


class StreamText:
    """One stream's text as a terminal would show it, bounded. A `\\r` moves the cursor to
    the start of the line, and what follows overwrites it, so a progress bar that redraws
    itself keeps only its last state; a line is final at its `\\n` (or at LINE_CHARS
    characters). Final text is kept whole while it fits `budget` UTF-8 bytes; past that, its
    first `head` bytes and its latest ones, with a marker between them saying how many
    bytes were left out, `budget` bytes in all. With `spool`, the complete final text of a
    stream that passed its budget also goes to a Spool for its artifact.

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
        self.spool = None  # the Spool, once the stream passed its budget (and spool is on)
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
    def cut(self):
        return self._head is not None

    def write(self, text):
        if '\r' not in text:  # the usual text: whole lines, perhaps a line begun
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
            return
        position, end = 0, len(text)
        while position < end:
            match = _CONTROL.search(text, position)
            stop = end if match is None else match.start()
            if stop > position:
                self._put(text if position == 0 and stop == end else text[position:stop])
            if match is None:
                return
            if text[stop] == '\n':
                self._end_line('\n')
            else:
                self._column = 0
            position = stop + 1

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
            self._end_line('')  # too long to keep rewritable: final as written

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
                self.spool = Spool()
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


class Capture:
    """What one writer prints to stdout and stderr: a running cell (with live output and
    spools) or the background (threads of earlier cells, between two results).

    Bytes (from the sinks' buffers) are decoded as they come; a character split across two
    writes waits for the rest in `_partial`, and a text write or the end replaces what is
    left of it with U+FFFD, as a terminal would show the broken sequence."""

    def __init__(self, run_id, budget, head, live):
        self.run_id = run_id
        self.streams = {stream: StreamText(budget, head, spool=live) for stream in STREAMS}
        self._partial = {stream: b'' for stream in STREAMS}  # the start of a split UTF-8 character
        self._live = live
        self._pending = collections.deque()  # (stream, text) written and not yet sent, in order
        self._pending_chars = 0
        self._dropped = {stream: 0 for stream in STREAMS}  # characters not sent live
        self._raw = []  # (stream, text) written and not yet taken into the streams, in order
        self._raw_chars = 0
        self._lock = threading.Lock()  # written from any thread
        self.closed = False

    def write(self, stream, text):
        """Keep `text`; False when the capture is already over (write it elsewhere). Writes
        are only collected here, and taken into the streams RAW_BATCH characters at a
        time: a flood of prints costs little more than the appends."""
        with self._lock:
            if self.closed:
                return False
            if self._partial[stream]:
                text = self._end_partial(stream) + text
            self._raw.append((stream, text))
            self._raw_chars += len(text)
            if self._raw_chars >= RAW_BATCH:
                self._process()
        return True

    def write_bytes(self, stream, data):
        """Bytes (a 1-D memoryview of unsigned bytes) as text: False when the capture is over."""
        with self._lock:
            if self.closed:
                return False
            head = self._partial[stream] + data.tobytes()
            text, used = _decode_utf8(head, BYTES_ERRORS, False)
            self._partial[stream] = head[used:]
            self._raw.append((stream, text))
            self._raw_chars += len(text)
            if self._raw_chars >= RAW_BATCH:
                self._process()
        return True

    def _process(self):
        """Take the collected writes into the streams (and the live queue), consecutive
        writes to one stream as one text; the lock is held."""
        raw, self._raw = self._raw, []
        self._raw_chars = 0
        index, end = 0, len(raw)
        while index < end:
            stream = raw[index][0]
            stop = index + 1
            while stop < end and raw[stop][0] == stream:
                stop += 1
            text = raw[index][1] if stop == index + 1 else ''.join([piece for _, piece in raw[index:stop]])
            if text:
                self.streams[stream].write(text)
                if self._live:
                    self._queue_live(stream, text)
            index = stop

    def _queue_live(self, stream, text):
        """Queue text for the next output frames, consecutive pieces of a stream together.
        Past LIVE_PENDING_CHARS characters only the latest ones stay (a cell that floods its
        output is shown as it is now, not as it began); trimmed when twice that is queued,
        so that each character costs the same however it was written."""
        pending = self._pending
        if pending and pending[-1][0] == stream:
            pending[-1][1].append(text)
        else:
            pending.append((stream, [text]))
        self._pending_chars += len(text)
        if self._pending_chars > 2 * LIVE_PENDING_CHARS:
            self._trim_live()

    def _trim_live(self):
        kept, room = collections.deque(), LIVE_PENDING_CHARS
        while self._pending:
            stream, pieces = self._pending.pop()
            text = ''.join(pieces)
            if len(text) > room:
                self._dropped[stream] += len(text) - room
                if room:
                    kept.appendleft((stream, [text[-room:]]))
                room = 0
                break
            kept.appendleft((stream, [text]))
            room -= len(text)
        for stream, pieces in self._pending:
            self._dropped[stream] += sum(map(len, pieces))
        self._pending = kept
        self._pending_chars = LIVE_PENDING_CHARS - room

    def _end_partial(self, stream):
        partial, self._partial[stream] = self._partial[stream], b''
        return _decode_utf8(partial, BYTES_ERRORS, True)[0]

    def finish(self):
        """The capture is over: a split character left by its last bytes becomes U+FFFD,
        and each stream's last line is final. Later writes go elsewhere."""
        with self._lock:
            self.closed = True
            for stream in STREAMS:
                if self._partial[stream]:
                    self._raw.append((stream, self._end_partial(stream)))
            self._process()
            for stream in STREAMS:
                self.streams[stream].finish()

    def take_pending(self):
        """The live text to send now, in write order: [(stream, text)]."""
        with self._lock:
            self._process()
            pending, self._pending = self._pending, collections.deque()
            self._pending_chars = 0
            dropped = {stream: n for stream, n in self._dropped.items() if n}
            self._dropped = {stream: 0 for stream in STREAMS}
        return [(stream, LIVE_DROPPED.format(n)) for stream, n in dropped.items()] + [
            (stream, ''.join(pieces)) for stream, pieces in pending
        ]

    @property
    def empty(self):
        return not any(text.total for text in self.streams.values())

    def close(self):
        for text in self.streams.values():
            text.close()


def cell_capture(run_id):
    """The capture of a running cell: STREAM_BUDGET per stream, streamed live, spooled."""
    return Capture(run_id, STREAM_BUDGET, STREAM_HEAD, live=True)


def background_capture():
    """What threads of earlier cells print until the next result: BACKGROUND_BUDGET per stream."""
    return Capture(None, BACKGROUND_BUDGET, BACKGROUND_HEAD, live=False)


def coalesce(pending):
    """Merge consecutive pieces of the same stream into one frame's text."""
    merged = []
    for stream, text in pending:
        if merged and merged[-1][0] == stream:
            merged[-1][1].append(text)
        else:
            merged.append((stream, [text]))
    return [(stream, ''.join(parts)) for stream, parts in merged]


class Output:
    """Routes every write to the capture it belongs to, and streams the running cell's as
    `output` frames from a daemon thread, so the main thread never writes a frame while a
    SIGINT could interrupt it.

    A write belongs to the running cell when the thread making it works for that cell
    (threads.THREADS: the main thread, threads the cell started, its executor jobs);
    anything else (threads left by earlier cells, and every write between cells) goes to
    the background capture, which the next result reports and replaces."""

    def __init__(self, channel):
        self.cell = None  # Capture of the running cell
        self.background = background_capture()
        self._channel = channel
        # Set while the pump ticks: from a cell's start until PUMP_LINGER after the last
        # cell ended. Cleared only by the pump, under _arm_lock, and only with no cell set:
        # a cell never runs with the pump parked, and back-to-back cells never wake it (a
        # thread switch each).
        self._active = threading.Event()
        self._arm_lock = threading.Lock()
        self._send_lock = threading.Lock()
        threading.Thread(target=self._pump, name='repl-mcp-output', daemon=True).start()

    def begin(self, run_id):
        with self._arm_lock:
            self.cell = cell_capture(run_id)
            THREADS.active = run_id
            if not self._active.is_set():
                self._active.set()

    def end(self):
        """Stop capturing the cell; every piece of its live output has been sent when this
        returns its capture."""
        THREADS.active = None
        cell, self.cell = self.cell, None
        cell.finish()
        self._flush(cell)
        return cell

    def _capture(self):
        cell = self.cell
        if cell is not None and (get_ident() == MAIN_THREAD or THREADS.current_run() == cell.run_id):
            return cell  # the main thread runs only cell code while a cell is set
        return self.background

    def write(self, stream, text):
        # A capture that ended meanwhile refuses the write; the one that replaced it takes it.
        # (Sink.write has this inline: every print goes through it.)
        if not self._capture().write(stream, text):
            self._capture().write(stream, text)

    def write_bytes(self, stream, data):
        if not self._capture().write_bytes(stream, data):
            self._capture().write_bytes(stream, data)

    def take_background(self):
        """What threads of earlier cells printed since the last result, as a result's
        background_output and its `cuts` (the result's `background_cuts`), or None when
        they printed nothing. A new capture takes over."""
        taken, self.background = self.background, background_capture()
        taken.finish()
        if taken.empty:
            return None
        texts = taken.streams
        printed = {
            'stdout': texts['stdout'].text(), 'stderr': texts['stderr'].text(),
            'truncated': texts['stdout'].cut or texts['stderr'].cut,
        }
        cuts = {stream: texts[stream].gap for stream in STREAMS if texts[stream].gap}
        return printed, cuts

    def _pump(self):
        idle_ticks = 0
        linger = max(int(PUMP_LINGER / FLUSH_INTERVAL), 1)
        previous = None  # the cell of the last tick
        while True:
            self._active.wait()
            time.sleep(FLUSH_INTERVAL)
            cell = self.cell
            if cell is not None:
                idle_ticks = 0
                if cell is previous:
                    # Running for a whole interval: it may outlast a server that goes
                    # away or sends a bad frame, so the reader thread reads from now on.
                    self._channel.need_reader()
                previous = cell
                self._flush(cell)
                continue
            previous = None
            idle_ticks += 1
            if idle_ticks >= linger:
                with self._arm_lock:
                    if self.cell is None:
                        self._active.clear()
                        idle_ticks = 0

    def _flush(self, cell):
        if cell is None:
            return
        # One sender at a time: batches stay in order and all precede the `result` frame.
        with self._send_lock:
            for stream, text in coalesce(cell.take_pending()):
                self._channel.send({'type': 'output', 'id': cell.run_id, 'stream': stream, 'text': text})


# The capture code a print from the cell's own code runs through: a repeated SIGINT may
# raise KeyboardInterrupt in it as it would in the user's code (interrupts.py), which is
# what stops a cell that spends its time printing. Each step there tolerates that.
INTERRUPTIBLE_CODE = tuple(function.__code__ for function in (
    Sink.write, Sink.write_bytes, SinkBuffer.write, transcode, Output.write, Output.write_bytes, Output._capture,
    Capture.write, Capture.write_bytes, Capture._process, Capture._queue_live, Capture._trim_live,
    Capture._end_partial,
    StreamText.write, StreamText._put, StreamText._end_line, StreamText._flush, StreamText._cut,
    StreamText._to_spool, StreamText._keep_tail, Spool.write, Spool.flush, Spool._place, Spool.__init__,
    utf8_len, utf8_prefix, utf8_suffix, _private_file, type(THREADS).current_run,
))
