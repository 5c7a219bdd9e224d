"""sys.stdout and sys.stderr in the worker (the sinks), their .buffer, and input(): the
file-like surface of the capture in output.py, down to reconfigure()."""

import codecs
import io
import threading

from .common import type_name
from .limits import LANE_CHUNK
from .messages import INPUT_NO_STDIN, NO_NATIVE_FD, WRITE_NOT_BYTES, WRITE_NOT_STR
from .threads import THREADS

MAIN_THREAD = threading.main_thread().ident
get_ident = threading.get_ident
RAW_BATCH = 16_384  # characters a capture collects before it takes them into its streams
NEWLINES = (None, '', '\n', '\r', '\r\n')  # what TextIOWrapper takes as newline=
_UNCHANGED = object()  # reconfigure(newline=None) means universal newlines, not "keep"


def no_input(prompt=''):
    """input() in the worker: a cell has no stdin to read (it is /dev/null), so this fails at
    once and says so, instead of an EOFError that reads as if stdin had ended. The prompt is
    still written, so the output shows what was asked."""
    if prompt:
        print(prompt, end='', flush=True)
    raise EOFError(INPUT_NO_STDIN)


class Sink(io.TextIOBase):
    """sys.stdout / sys.stderr in the worker, installed for good at its start. Each write goes
    to the capture of the thread that makes it (Output.write): the running cell's, or the
    background's. So a stream kept by a long-lived object (say a logging.StreamHandler made
    in an earlier cell) writes into whichever cell is running when the cell's own code
    logs, and into the background when a thread of an earlier cell does.

    As in plain Python, `buffer` takes bytes and fileno() is a descriptor of the
    native-output pipe (fd 1 or 2 while it still is the pipe), whose bytes the server
    appends to the run's stderr. Unencodable characters (lone surrogates) become '?'.
    reconfigure() works as on a text stream (see there)."""

    # Class attributes, so that instances may set them: io.TextIOBase's own are read-only.
    encoding = 'utf-8'
    errors = 'replace'

    def __init__(self, stream, fd, output, native):
        super().__init__()
        self.name = f'<{stream}>'
        self.buffer = SinkBuffer(self)
        self._stream = stream
        self._fd = fd
        self._output = output
        self._native = native
        self.newline = None
        self.line_buffering = False
        self.write_through = True  # nothing waits in a buffer: every write is captured at once
        self._transcoding = None  # transcode()'s arguments once reconfigured, else None
        self._lane = None  # stdout's fast lane: the C write that lane_on() makes this sink's `write`
        if stream == 'stdout':
            self._chunks = []  # what the lane gathered, LANE_CHUNK bytes of UTF-8 a piece
            wrapper = io.TextIOWrapper(_LaneBuffer(self._chunks), encoding='utf-8', errors='replace', newline='\n')
            wrapper._CHUNK_SIZE = LANE_CHUNK
            self._wrapper, self._lane = wrapper, wrapper.write

    def reconfigure(self, *, encoding=None, errors=None, newline=_UNCHANGED, line_buffering=None,
                    write_through=None):
        """As TextIOWrapper.reconfigure. line_buffering and write_through are kept (every
        write reaches the capture at once either way). A text encoding, an error handler and
        a newline change what is captured as a terminal reading that encoding would show it:
        each write is encoded with them (raising as a real stream would, say
        UnicodeEncodeError under errors='strict') and decoded back. An encoding given without
        errors resets errors to 'strict', as TextIOWrapper does. Bytes written to .buffer are
        still read as UTF-8."""
        if encoding is not None:
            if not isinstance(encoding, str):
                raise TypeError(f"reconfigure() argument 'encoding' must be str or None, not {type_name(type(encoding))}")
            if not codecs.lookup(encoding)._is_text_encoding:
                raise LookupError(f'{encoding!r} is not a text encoding; use codecs.open() to handle arbitrary codecs')
        if errors is not None:
            if not isinstance(errors, str):
                raise TypeError(f"reconfigure() argument 'errors' must be str or None, not {type_name(type(errors))}")
            codecs.lookup_error(errors)  # LookupError: unknown error handler name
        if newline is not _UNCHANGED and newline is not None and not isinstance(newline, str):
            raise TypeError(f"reconfigure() argument 'newline' must be str or None, not {type_name(type(newline))}")
        if newline is not _UNCHANGED and newline not in NEWLINES:
            raise ValueError(f'illegal newline value: {newline}')
        if encoding is not None:
            self.encoding, self.errors = encoding, errors or 'strict'
        elif errors is not None:
            self.errors = errors
        if newline is not _UNCHANGED:
            self.newline = newline
        if line_buffering is not None:
            self.line_buffering = bool(line_buffering)
        if write_through is not None:
            self.write_through = bool(write_through)
        self._transcoding = _transcoding(self.encoding, self.errors, self.newline)
        if self._transcoding is not None:
            self.lane_off()  # every write from now on is transcoded

    # The fast lane. A print calls sys.stdout.write twice, and a call of Python code from
    # print costs four times what print itself does: so while only the main thread can
    # print for the running cell (no thread of the user's is alive: Output.begin, and
    # threads.py's on_start turns it off before one starts), stdout's `write` is an
    # instance attribute, the C write of a TextIOWrapper whose buffer's `write` is a
    # list's append. The capture takes what it gathered (lane_take) before any other write
    # of the cell's, at each tick of the output pump and at the cell's end, so order,
    # bounds, markers and counts are the plain path's; a write that is not str raises
    # TextIOWrapper's TypeError, which is WRITE_NOT_STR.

    def lane_on(self):
        """Give `write` the fast lane; False when this sink has none, is reconfigured, or
        already has a `write` of the user's own."""
        if self._lane is None or self._transcoding is not None or 'write' in self.__dict__:
            return False
        self.__dict__['write'] = self._lane
        return True

    def lane_off(self):
        if self._lane is not None and self.__dict__.get('write') is self._lane:  # not one the user set
            del self.__dict__['write']

    @property
    def lane_is_on(self):
        return self._lane is not None and self.__dict__.get('write') is self._lane

    def lane_take(self):
        """The text the lane gathered since the last take, or ''. Each step is one call of C
        code, which a print on another thread cannot split: the taken chunks are the first
        ones, and a print meanwhile appends after them."""
        if self._lane is None:
            return ''
        self._wrapper.flush()
        chunks = self._chunks
        count = len(chunks)
        if not count:
            return ''
        data = chunks[0] if count == 1 else b''.join(chunks[:count])
        del chunks[:count]
        return data.decode('utf-8', 'replace')  # whole characters: the wrapper encodes whole writes

    def write(self, text):
        if not isinstance(text, str):
            raise TypeError(WRITE_NOT_STR.format(type_name(type(text))))
        if self._transcoding is not None:
            text = transcode(text, *self._transcoding)
        # Output.write and Capture.write, inline: every print goes through here.
        output = self._output
        cell = output.cell
        capture = cell if cell is not None and (
            get_ident() == MAIN_THREAD or THREADS.current_run() == cell.run_id
        ) else output.background
        with capture._lock:
            if not capture.closed and not capture._partial[self._stream]:
                if capture.lane is not None:
                    capture.take_lane()  # what the fast lane gathered comes first
                capture._raw.append((self._stream, text))
                capture._raw_chars += len(text)
                if capture._raw_chars >= RAW_BATCH:
                    capture._process()
                return len(text)
        output.write(self._stream, text)  # a split character to end first, or a capture that ended
        return len(text)

    def write_bytes(self, data):
        self._output.write_bytes(self._stream, data)

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


class _LaneBuffer(io.RawIOBase):
    """What the fast lane's TextIOWrapper writes its encoded text to: `write` is the chunk
    list's own append, so no Python code runs for a print. Flushing and closing are
    io.IOBase's, in C too."""

    def __init__(self, chunks):
        super().__init__()
        self.write = chunks.append

    def writable(self):
        return True


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


def _transcoding(encoding, errors, newline):
    """The arguments of transcode() for a reconfigured stream, or None when its text stays as
    it is (UTF-8, errors='replace', no newline translation: the sinks' own defaults)."""
    translate = newline if newline not in (None, '', '\n') else None
    if codecs.lookup(encoding).name == 'utf-8' and errors == 'replace' and translate is None:
        return None
    return encoding, errors, translate


def transcode(text, encoding, errors, newline):
    """text as a terminal reading `encoding` shows it once written with `errors` and
    `newline` (None: no translation)."""
    if newline is not None:
        text = text.replace('\n', newline)
    return text.encode(encoding, errors).decode(encoding, 'replace')
