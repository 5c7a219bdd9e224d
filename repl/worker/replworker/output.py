"""Output capture: sys.stdout and sys.stderr while a cell runs, bounded per cell and
streamed as `output` frames; and the native-output pipe on fd 1 and fd 2, which the
worker writes its barrier to and knows by identity."""

import fcntl
import io
import os
import threading
import time

from .common import type_name, utf8_prefix
from .limits import FLUSH_INTERVAL, STREAM_BUDGET
from .messages import WRITE_NOT_STR


class CellOutput:
    """One cell's captured stdout/stderr: at most STREAM_BUDGET UTF-8 bytes per stream, plus
    the kept text not yet sent as `output` frames (in write order across both streams)."""

    def __init__(self, run_id):
        self.run_id = run_id
        self.truncated = {'stdout': False, 'stderr': False}
        self._room = {'stdout': STREAM_BUDGET, 'stderr': STREAM_BUDGET}
        self._kept = {'stdout': [], 'stderr': []}
        self._pending = []
        self._lock = threading.Lock()  # sinks are written from any thread

    def write(self, stream, text):
        if self._room[stream] <= 0:
            # Budget spent: a write only sets a flag, so floods of prints stay cheap.
            if text:
                self.truncated[stream] = True
            return
        with self._lock:
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
    writes into whichever cell is running, or to the real stream between cells."""

    encoding = 'utf-8'

    def __init__(self, stream, real, output):
        super().__init__()
        self.name = f'<{stream}>'
        self._stream = stream
        self._real = real
        self._output = output

    def write(self, text):
        if not isinstance(text, str):
            raise TypeError(WRITE_NOT_STR.format(type_name(type(text))))
        cell = self._output.cell
        if cell is None:
            return self._real.write(text)
        cell.write(self._stream, text)
        return len(text)

    def writable(self):
        return True

    def close(self):
        """Ignored: the sinks serve every later cell, so closing one must not break them."""

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
