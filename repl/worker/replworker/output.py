"""Output capture: sys.stdout and sys.stderr while a cell runs (text, and bytes through
their .buffer), bounded per cell and streamed as `output` frames; and the native-output
pipe on fd 1 and fd 2, which the worker writes its barrier to and knows by identity."""

import codecs
import fcntl
import io
import os
import threading
import time

from .common import type_name, utf8_prefix
from .limits import FLUSH_INTERVAL, STREAM_BUDGET
from .messages import NO_NATIVE_FD, WRITE_NOT_BYTES, WRITE_NOT_STR

# Bytes written to a sink's buffer that are not UTF-8 become U+FFFD, as with errors='replace'.
BYTES_ERRORS = 'replace'
_decode_utf8 = codecs.utf_8_decode  # (text, bytes consumed); a split last character is left


class CellOutput:
    """One cell's captured stdout/stderr: at most STREAM_BUDGET UTF-8 bytes per stream, plus
    the kept text not yet sent as `output` frames (in write order across both streams).

    Bytes (from the sinks' buffers) are decoded as they come; a character split across two
    writes waits for the rest in `_partial`, and a text write or the cell's end replaces
    what is left of it with U+FFFD, as a terminal would show the broken sequence."""

    def __init__(self, run_id):
        self.run_id = run_id
        self.truncated = {'stdout': False, 'stderr': False}
        self._room = {'stdout': STREAM_BUDGET, 'stderr': STREAM_BUDGET}
        self._kept = {'stdout': [], 'stderr': []}
        self._partial = {'stdout': b'', 'stderr': b''}  # the start of a split UTF-8 character
        self._pending = []
        self._lock = threading.Lock()  # sinks are written from any thread

    def write(self, stream, text):
        if self._room[stream] <= 0:
            # Budget spent: a write only sets a flag, so floods of prints stay cheap.
            if text:
                self.truncated[stream] = True
            return
        with self._lock:
            if self._partial[stream]:
                text = self._end_partial(stream) + text
            self._keep(stream, text)

    def write_bytes(self, stream, data):
        """Bytes (a 1-D memoryview of unsigned bytes) as text under the same budget: at most
        the budget's worth of them is decoded, so a huge write costs no more than a text one."""
        if self._room[stream] <= 0:
            if len(data):
                self.truncated[stream] = True
            return
        with self._lock:
            room = self._room[stream]
            head = self._partial[stream] + bytes(data[:room])
            text, used = _decode_utf8(head, BYTES_ERRORS, False)
            self._partial[stream] = head[used:]
            if len(data) > room:
                # Cut here: what follows a split character is gone, so it stays split.
                self.truncated[stream] = True
                self._partial[stream] = b''
            self._keep(stream, text)

    def finish(self):
        """The cell is over: a character left split by its last bytes becomes U+FFFD."""
        with self._lock:
            for stream, partial in self._partial.items():
                if partial:
                    self._keep(stream, self._end_partial(stream))

    def _end_partial(self, stream):
        partial, self._partial[stream] = self._partial[stream], b''
        return _decode_utf8(partial, BYTES_ERRORS, True)[0]

    def _keep(self, stream, text):
        """Keep what of `text` fits the stream's room; the lock is held."""
        kept, used, complete = utf8_prefix(text, self._room[stream])
        self._room[stream] -= used
        if not complete:
            self.truncated[stream] = True
        if kept:
            self._kept[stream].append(kept)
            self._pending.append((stream, kept))

    def take_pending(self):
        with self._lock:
            pending, self._pending = self._pending, []
        return pending

    def text(self, stream):
        return ''.join(self._kept[stream])


class Sink(io.TextIOBase):
    """sys.stdout / sys.stderr while a cell runs. The two sinks persist across cells, so a
    stream kept by a long-lived object (say a logging.StreamHandler made in an earlier cell)
    writes into whichever cell is running, or to the real stream between cells.

    As in plain Python, `buffer` takes bytes and fileno() is a descriptor of the
    native-output pipe (fd 1 or 2 while it still is the pipe), whose bytes the server
    appends to the run's stderr. Unencodable characters (lone surrogates) become '?'."""

    encoding = 'utf-8'
    errors = 'replace'

    def __init__(self, stream, fd, real, output, native):
        super().__init__()
        self.name = f'<{stream}>'
        self.buffer = SinkBuffer(self)
        self._stream = stream
        self._fd = fd
        self._real = real
        self._output = output
        self._native = native

    def write(self, text):
        if not isinstance(text, str):
            raise TypeError(WRITE_NOT_STR.format(type_name(type(text))))
        cell = self._output.cell
        if cell is None:
            return self._real.write(text)
        cell.write(self._stream, text)
        return len(text)

    def write_bytes(self, data):
        cell = self._output.cell
        if cell is None:
            self._real.flush()
            self._real.buffer.write(data)
            return
        cell.write_bytes(self._stream, data)

    def writable(self):
        return True

    def fileno(self):
        fd = self._native.descriptor(self._fd)
        if fd is None:
            raise io.UnsupportedOperation(NO_NATIVE_FD.format(self.name, self._stream))
        return fd

    def close(self):
        """Ignored: the sinks serve every later cell, so closing one must not break them."""

    def isatty(self):
        return False


class SinkBuffer(io.BufferedIOBase):
    """sys.stdout.buffer / sys.stderr.buffer: bytes written here are captured with the
    sink's text, in write order and under the same budget, decoded as UTF-8 (see
    BYTES_ERRORS). io.TextIOWrapper(sys.stdout.buffer) works; closing it, or this, is
    ignored like closing the sink."""

    mode = 'wb'

    def __init__(self, sink):
        super().__init__()
        self.name = sink.name
        self._sink = sink

    def write(self, data):
        try:
            view = memoryview(data)
        except TypeError:
            raise TypeError(WRITE_NOT_BYTES.format(type_name(type(data)))) from None
        if not view.c_contiguous:
            view = memoryview(view.tobytes())
        view = view.cast('B')
        self._sink.write_bytes(view)
        return len(view)

    def writable(self):
        return True

    def fileno(self):
        return self._sink.fileno()

    def close(self):
        """Ignored, like closing the sink."""

    def isatty(self):
        return False


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
    """Captures the running cell's output and streams it as `output` frames from a daemon
    thread, so the main thread never writes a frame while a SIGINT could interrupt it."""

    def __init__(self, channel):
        self.cell = None  # CellOutput of the running cell
        self._channel = channel
        self._active = threading.Event()
        self._send_lock = threading.Lock()
        threading.Thread(target=self._pump, name='repl-mcp-output', daemon=True).start()

    def begin(self, run_id):
        self.cell = CellOutput(run_id)
        self._active.set()

    def end(self):
        """Stop capturing; every kept piece has been sent when this returns the capture."""
        cell, self.cell = self.cell, None
        self._active.clear()
        cell.finish()
        self._flush(cell)
        return cell

    def _pump(self):
        while True:
            self._active.wait()
            time.sleep(FLUSH_INTERVAL)
            self._flush(self.cell)

    def _flush(self, cell):
        if cell is None:
            return
        # One sender at a time: batches stay in order and all precede the `result` frame.
        with self._send_lock:
            for stream, text in coalesce(cell.take_pending()):
                self._channel.send({'type': 'output', 'id': cell.run_id, 'stream': stream, 'text': text})


def _identity(fd):
    """(st_dev, st_ino) of what `fd` refers to, or None when it is not open."""
    try:
        st = os.fstat(fd)
    except (OSError, ValueError):
        return None
    return st.st_dev, st.st_ino


def _private_copy(fd):
    """A duplicate of `fd` above the standard descriptors, closed on exec (no child gets it)."""
    try:
        return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    except OSError:
        return None


class NativeOutput:
    """fd 1 and fd 2 as the worker found them at start (the native-output pipe), known by
    identity. A cell may close either and open a file that takes its number: the worker
    then never writes there. It checks a descriptor's identity before each write of its
    own, and keeps a private duplicate of the pipe so that its barrier still reaches the
    server when the cell has closed both. A duplicate that stopped being the pipe (the
    cell closed its number too) is forgotten, never closed: the number is someone else's."""

    def __init__(self):
        self._start = {fd: _identity(fd) for fd in (1, 2)}
        self._copies = {}  # identity -> private duplicate
        for fd, identity in self._start.items():
            if identity is not None and identity not in self._copies:
                copy = _private_copy(fd)
                if copy is not None:
                    self._copies[identity] = copy

    def descriptor(self, fd):
        """A descriptor that is still what `fd` (1 or 2) was at start: `fd` itself while it
        is, else the private duplicate; None when there is none."""
        identity = self._start.get(fd)
        if identity is None:
            return None
        if _identity(fd) == identity:
            return fd
        return self._find(identity)

    def mark(self, data):
        """Write `data` (the run's barrier) in one write to what fd 2 was at start; skipped
        when no descriptor is that any more (the server's wait for it is bounded)."""
        identity = self._start[2]
        fd = self._find(identity) if identity is not None else None
        if fd is None:
            return
        try:
            os.write(fd, data)
        except OSError:
            pass  # the server's bounded barrier wait covers this

    def _find(self, identity):
        """The private duplicate of `identity`, else fd 2 or 1 if one still is it (the
        duplicate is then made again from it); None when none is."""
        copy = self._copies.get(identity)
        if copy is not None:
            if _identity(copy) == identity:
                return copy
            del self._copies[identity]
        for fd in (2, 1):
            if _identity(fd) == identity:
                copy = _private_copy(fd)
                if copy is not None:
                    self._copies[identity] = copy
                return fd
        return None
