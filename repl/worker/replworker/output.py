"""Output capture: sys.stdout and sys.stderr while a cell runs, bounded per cell and
streamed as `output` frames."""

import io
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
