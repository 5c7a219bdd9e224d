"""Output capture: sys.stdout and sys.stderr (text, and bytes through their .buffer),
each stream kept as a terminal would show it and bounded (terminal.py's StreamText);
stdout's fast lane taken and left (sinks.py); the complete text of a stream that passed
its bound, spooled to an unlinked file for its artifact; live `output` frames; what
and what threads of earlier cells print, kept apart for the next result. The
native-output pipe on fd 1 and fd 2 is native.py's."""

import codecs
import collections
import os
import threading
import time

from .common import utf8_prefix
from .limits import (
    ARTIFACT_CHUNK, ARTIFACT_MAX_BYTES, BACKGROUND_BUDGET, BACKGROUND_HEAD, FLUSH_INTERVAL, PUMP_LINGER,
    LIVE_PENDING_CHARS, SPOOL_BUFFER, SPOOL_HEAD, STREAM_BUDGET, STREAM_HEAD, STREAM_MARKER,
)
from .messages import LIVE_DROPPED, OUTPUT_LEFT_OUT
from .sinks import RAW_BATCH, Sink, SinkBuffer, transcode
from .terminal import StreamText, utf8_len, utf8_suffix
from .threads import THREADS

# Bytes written to a sink's buffer that are not UTF-8 become U+FFFD, as with errors='replace'.
BYTES_ERRORS = 'replace'
_decode_utf8 = codecs.utf_8_decode  # (text, bytes consumed); a split last character is left
STREAMS = ('stdout', 'stderr')
MAIN_THREAD = threading.main_thread().ident
get_ident = threading.get_ident


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


class Capture:
    """What one writer prints to stdout and stderr: a running cell (with live output and
    spools) or the background (threads of earlier cells, between two results).

    Bytes (from the sinks' buffers) are decoded as they come; a character split across two
    writes waits for the rest in `_partial`, and a text write or the end replaces what is
    left of it with U+FFFD, as a terminal would show the broken sequence."""

    def __init__(self, run_id, budget, head, live):
        self.run_id = run_id
        self.streams = {stream: StreamText(budget, head, spool=Spool if live else None) for stream in STREAMS}
        self._partial = {stream: b'' for stream in STREAMS}  # the start of a split UTF-8 character
        self._live = live
        self._pending = collections.deque()  # (stream, text) written and not yet sent, in order
        self._pending_chars = 0
        self._dropped = {stream: 0 for stream in STREAMS}  # characters not sent live
        self._raw = []  # (stream, text) written and not yet taken into the streams, in order
        self._raw_chars = 0
        self._lock = threading.Lock()  # written from any thread
        self.closed = False
        self.lane = None  # the stdout sink whose fast lane gathers the cell's prints (Output.begin)

    def write(self, stream, text):
        """Keep `text`; False when the capture is already over (write it elsewhere). Writes
        are only collected here, and taken into the streams RAW_BATCH characters at a
        time: a flood of prints costs little more than the appends."""
        with self._lock:
            if self.closed:
                return False
            if self.lane is not None:
                self.take_lane()
            if self._partial[stream] and text:  # an empty write writes nothing, as on a terminal
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
            if self.lane is not None:
                self.take_lane()
            head = self._partial[stream] + data.tobytes()
            text, used = _decode_utf8(head, BYTES_ERRORS, False)
            self._partial[stream] = head[used:]
            self._raw.append((stream, text))
            self._raw_chars += len(text)
            if self._raw_chars >= RAW_BATCH:
                self._process()
        return True

    def blank(self):
        """Whether nothing has been written to it."""
        with self._lock:
            return not self._raw and not any(self._partial.values()) and all(
                text.blank for text in self.streams.values())

    def take_lane(self):
        """Collect what the fast lane gathered (sinks.Sink.lane_on), ahead of what is written
        next; the lock is held. Not interruptible code: a KeyboardInterrupt here would lose
        the text taken from the lane."""
        text = self.lane.lane_take()
        if text:
            if self._partial['stdout']:  # bytes that ended inside a character came before
                text = self._end_partial('stdout') + text
            self._raw.append(('stdout', text))
            self._raw_chars += len(text)

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
            if self.lane is not None:
                self.take_lane()
                self.lane = None
            for stream in STREAMS:
                if self._partial[stream]:
                    self._raw.append((stream, self._end_partial(stream)))
            self._process()
            for stream in STREAMS:
                self.streams[stream].finish()

    def take_pending(self):
        """The live text to send now, in write order: [(stream, text)]."""
        with self._lock:
            if self.lane is not None:
                self.take_lane()
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
        self._lane = None  # the stdout sink, whose fast lane the cell's prints take when they can
        THREADS.on_start = self._thread_starting
        threading.Thread(target=self._pump, name='repl-mcp-output', daemon=True).start()

    def attach_lane(self, sink):
        self._lane = sink

    def begin(self, run_id):
        with self._arm_lock:
            self.cell = cell = cell_capture(run_id)
            THREADS.active = run_id
            lane = self._lane
            if lane is not None:
                # Taken from even when it stays closed: a `write` the user set may call the
                # lane's, which it found on sys.stdout in an earlier cell.
                cell.lane = lane
                if THREADS.alone():
                    lane.lane_on()
            if not self._active.is_set():
                self._active.set()

    def end(self):
        """Stop capturing the cell; every piece of its live output has been sent when this
        returns its capture."""
        THREADS.active = None
        cell, self.cell = self.cell, None
        if cell.lane is not None:
            cell.lane.lane_off()
        cell.finish()
        self._flush(cell)
        return cell

    def _thread_starting(self):
        """A thread is about to start (threads.py): what it prints must be told from the main
        thread's, so the cell's prints leave the fast lane first."""
        cell = self.cell
        if cell is not None and cell.lane is not None:
            cell.lane.lane_off()

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
        they printed nothing. A new capture takes over, unless nothing was written: the
        usual case, which then costs no capture made and finished a cell."""
        if self.background.blank():
            return None
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
                lane = cell.lane
                if lane is not None and lane.lane_is_on and not THREADS.alone(thorough=True):
                    lane.lane_off()  # a thread that C code started, or _thread's
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
    StreamText.write, StreamText._write_lines, StreamText._rewrite, StreamText._put, StreamText._wrap, StreamText._end_line, StreamText._flush, StreamText._cut,
    StreamText._to_spool, StreamText._keep_tail, Spool.write, Spool.flush, Spool._place, Spool.__init__,
    utf8_len, utf8_prefix, utf8_suffix, _private_file, type(THREADS).current_run,
))
