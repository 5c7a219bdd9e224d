"""repl-mcp Python worker: one persistent CPython namespace driven over the wire protocol
described in PROTOCOL.md (next to this file).

The Go server embeds this file and runs it as `python -u -c <source>`, so it must stay a
single self-contained, standard-library-only file: it cannot import itself, and everything
below lives in the `__main__` module (filename `<string>`). Cell code runs in a separate
namespace dict whose code objects are named `<repl:RUN_ID>` (a saved file's, its path);
those names are how worker frames are kept out of user tracebacks. The helpers cells see
(sh, checkpoint, ...) are worker functions, so their frames stay out too.
"""

import signal

# Until the cell-aware handler is installed, a SIGINT sent to the process group must not
# kill a worker that is still starting.
signal.signal(signal.SIGINT, signal.SIG_IGN)

import ast
import asyncio
import base64
import builtins
import collections
import contextvars
import inspect
import io
import itertools
import json
import linecache
import math
import os
import platform
import queue
import select
import stat
import subprocess
import sys
import threading
import time
import tokenize
import traceback
import uuid
import weakref
from concurrent import futures
from concurrent.futures import ThreadPoolExecutor

PROTOCOL_VERSION = 1
MAX_FRAME = 1_048_576  # bytes per frame, newline included
INBOX_SLOTS = 2
READ_CHUNK = 65_536
EXIT_PROTOCOL_ERROR = 2
EXIT_STATE_CLEARED = 70

STREAM_BUDGET = 50_000  # UTF-8 bytes kept per stream per cell
FLUSH_INTERVAL = 0.05  # seconds between output frames while a cell runs (protocol: <= 0.1)

PREVIEW_BYTES = 20_000
PREVIEW_NODES = 100
PREVIEW_DEPTH = 5
PREVIEW_ITEMS = 100
PREVIEW_STR_CHARS = 2_000
PREVIEW_INT_BITS = 4_096

TRACEBACK_FRAMES = 20
TRACEBACK_SOURCE_CHARS = 500
TRACEBACK_MESSAGE_CHARS = 4_000
TRACEBACK_CAUSE_CHARS = 500
TRACEBACK_CHARS = 10_000
TYPE_NAME_CHARS = 200

SOURCE_RUNS = 64
SOURCE_BYTES = 1_048_576

SOURCE_FILE_BYTES = 262_144
ARGV_ITEMS = 128
ARGV_BYTES = 32_768
EXIT_STATUS_BITS = 31  # a SystemExit int beyond a signed 32-bit status is reported like a message
EXIT_MESSAGE_CHARS = 4_000

INVENTORY_SCANNED = 1_024
INVENTORY_LISTED = 512
INVENTORY_BYTES = 60_000
INVENTORY_ENVELOPE = 256  # bytes kept for everything but the listed variables
NAME_CHARS = 256  # longest variable name an inventory lists or a checkpoint holds
INVENTORY_TYPE_CHARS = 128
HISTORY_PREVIEW_NODES = 512

CHECKPOINT_FORMAT = 'repl-checkpoint-v1'
CHECKPOINT_BYTES = 262_144
CHECKPOINT_RESERVE = 16_384  # bytes kept for the envelope beyond the saved and skipped entries
CHECKPOINT_VARIABLES = 256

SHELL_CAPTURE = 50_000  # bytes kept per stream, while reading and again as UTF-8 text
SHELL_PROCESSES = 64
SHELL_TIMEOUT = 120.0
SHELL_EXIT_CHECK = 0.05  # seconds between checks whether the shell itself has exited
SHELL_DRAIN = 1_048_576  # bytes read after the shell exited, from descendants still writing

REAP_INTERVAL = 0.05  # seconds between sweeps that reap finished children
CHILD_EXIT_WAIT = 1.0  # seconds an exiting worker waits for the children it killed

TASK_CANCEL_GRACE = 0.25
BACKGROUND_EXIT_GRACE = 0.1  # seconds for threads and executor jobs that are just finishing
INTERRUPT_RETRY = 0.05  # seconds before SIGINT is delivered again to a cell it did not stop
EXECUTOR_PENDING_JOBS = 64

RPC_PENDING = 64  # bridge calls awaiting their rpc_result at once
MCP_TIMEOUT_MIN, MCP_TIMEOUT_MAX = 0.01, 3600.0
MCP_CALL_TIMEOUT = 120.0
MCP_CATALOGUE_TIMEOUT = 30.0
MCP_REPLY_SLACK = 1.0  # seconds a wait adds to the timeout the server enforces itself
MCP_OP_WAIT = 35.0  # seconds to wait for ops without a timeout of their own
TOOL_ERROR_CHARS = 2_000

INTERRUPTED = 'Execution interrupted ({}); namespace preserved'
TASKS_REFUSED = 'Background tasks refused cancellation; worker stopped and variables cleared'
THREADS_LEFT = (
    'Cell left active background threads or executor work; worker stopped and variables '
    'cleared. Join threads before the cell ends; use mcp.acall for concurrent bridge calls.'
)
EXECUTOR_FULL = f'Too many pending default executor jobs (limit {EXECUTOR_PENDING_JOBS})'
FILE_TOO_LARGE = 'Python source file exceeds 256 KiB'
ARGV_TOO_MANY = f'argv must contain at most {ARGV_ITEMS} strings'
ARGV_TOO_LARGE = 'argv exceeds 32 KiB'
FILE_EXITED = 'Saved Python file exited with status {}'
INVENTORY_NOTE = 'Namespace metadata; inspect structured value'
SOURCE_UNKNOWN = 'Run source unknown or evicted (source history: 64 runs / 1 MiB)'
SHELL_BUSY = f'Too many active sh processes (limit {SHELL_PROCESSES})'
SHELL_FAILED = 'Shell exited with status {}; inspect exception.stderr'
SHELL_BAD_TIMEOUT = 'sh() timeout must be a finite positive number of seconds'
CHECKPOINT_TOO_LARGE = 'Checkpoint exceeds 256 KiB'
CHECKPOINT_UNSUPPORTED = f'Unsupported checkpoint format; expected {CHECKPOINT_FORMAT}'
CHECKPOINT_TOO_MANY = f'Checkpoint values must be an object of at most {CHECKPOINT_VARIABLES} variables'
CHECKPOINT_BAD_NAMES = 'Checkpoint contains invalid or reserved variable names'
CHECKPOINT_BAD_VALUE = 'Checkpoint value {!r} is not a small exact JSON value'
MCP_FOREIGN = 'MCP calls must belong to their originating active cell; use mcp.acall for concurrency'
MCP_BUSY = f'Too many pending MCP calls (limit {RPC_PENDING})'
MCP_BAD_TIMEOUT = 'MCP timeout must be finite and between 0.01 and 3600 seconds'
MCP_BOTH_ARGUMENTS = 'Use either arguments={...} or keyword tool arguments, not both'
MCP_FRAME_TOO_LARGE = 'Worker frame exceeds 1 MiB; reduce code/arguments/result'
MCP_NO_REPLY = 'MCP {} got no reply within {:g} seconds; call may have completed. Inspect mcp.journal()'
MCP_MALFORMED = 'MCP bridge returned a malformed {} result'
MCP_UNKNOWN_TOOL = "Unknown tool '{}'; use mcp.list_tools(server)"
TOOL_FAILED = 'MCP tool failed: {}'

ARTIFACT_CHUNK = 32_768  # raw bytes per artifact.append (base64 in the frame)
ARTIFACT_MAX_BYTES = 16_777_216
ARTIFACT_JSON_DEPTH = 32
ARTIFACT_JSON_NODES = 100_000
ARTIFACT_STRING_BUDGET = 16_777_216  # counted as 4 bytes per character
ARTIFACT_TEXT_SLICE = 8_192  # characters encoded to UTF-8 at a time (at most one chunk)
ARTIFACT_ABORT_WAIT = 5.0  # seconds a best-effort artifact.abort may take
ARTIFACT_ERROR_BYTES = 1_000
ARTIFACT_FORMATS = ('json', 'text', 'binary')
ARTIFACT_READ_ENCODINGS = ('text', 'base64', 'hex')
ARTIFACT_FORWARD_FORMATS = ('json', 'text', 'base64')
ARTIFACT_READ_MAX = 65_536
ARTIFACT_UNSUPPORTED = 'Artifact supports only exact JSON builtins, bytes or explicit files'
ARTIFACT_ONE_SOURCE = 'artifact() needs exactly one of value or path='
ARTIFACT_BAD_FORMAT = 'Artifact format must be json, text or binary'
ARTIFACT_FORMAT_MISMATCH = "Artifact format '{}' does not fit a {} value (text needs str, binary needs bytes, json a JSON value)"
ARTIFACT_TOO_LARGE = 'Artifact exceeds 16 MiB'
ARTIFACT_BAD_ENCODING = 'artifact_read encoding must be text, base64 or hex'
ARTIFACT_BAD_LENGTH = 'artifact_read length must be between 0 and 65536 bytes'
ARTIFACT_BAD_FORWARD_FORMAT = 'Forward format must be json, text or explicit base64'
ARTIFACT_AUTO_FAILED = 'Automatic artifact upload failed: {}'
ARTIFACT_AUTO_INTERRUPTED = 'Automatic artifact upload skipped: the run was interrupted'

# Names every cell starts from; re-installed after each cell so user shadowing lasts only
# for that cell. The helpers (sh, checkpoint, ...) join this mapping in _Worker._helpers.
BASELINE_NAMES = {'__name__': '__repl__', '__builtins__': builtins}
# Names that belong to the worker besides the baseline ones: inventories skip them and
# checkpoints never restore them.
# `mcp` is reserved too, though not in the baseline: each cell gets a new bridge object.
RESERVED_NAMES = frozenset({'__file__', '__repl_result__', 'mcp'})

# The run id of the cell whose code is running in this context. Tasks, callbacks and
# executor jobs inherit it, which is how they are attributed to their originating cell.
_RUN_ID = contextvars.ContextVar('repl_mcp_run_id', default=None)
_WORKER_GLOBALS = globals()
_MISSING = object()  # "no value", distinct from None
_CELL_FLAGS = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
_type_name_slot = type.__dict__['__name__'].__get__
_type_qualname_slot = type.__dict__['__qualname__'].__get__
_type_module_slot = type.__dict__['__module__'].__get__


def _type_name(cls):
    """The type's builtin name slot: metaclass properties and __getattribute__ never run."""
    return _type_name_slot(cls)[:TYPE_NAME_CHARS]


def _exception_name(cls):
    """`module.QualName` as Python's own tracebacks print it (bare for builtins and for
    classes defined in cells), read from the type's slots."""
    name = _type_qualname_slot(cls)
    module = _type_module_slot(cls)
    if type(module) is str and module not in ('builtins', '__main__', BASELINE_NAMES['__name__']):
        name = f'{module}.{name}'
    return name[:TYPE_NAME_CHARS]


def _exit_now(status):
    """Exit without interpreter shutdown: atexit hooks, finalizers of user objects and
    non-daemon user threads must not delay or outlive a worker that is being stopped. The
    children cells started go first: nothing else would stop those in a group of their own."""
    try:
        _CHILDREN.kill_all()
    finally:
        os._exit(status)


def _protocol_error(message):
    try:
        os.write(2, f'repl-mcp worker: protocol error: {message}\n'.encode('utf-8', 'replace'))
    finally:
        _exit_now(EXIT_PROTOCOL_ERROR)


def _encode_frame(frame):
    # Lone surrogates (from user strings) become '?', which keeps the line valid UTF-8 JSON;
    # NaN and infinities (say in bridge arguments) are refused, as JSON has none.
    text = json.dumps(frame, ensure_ascii=False, separators=(',', ':'), allow_nan=False)
    return text.encode('utf-8', 'replace') + b'\n'


def _parse_command(line):
    try:
        frame = json.loads(line.decode('utf-8'))
    except (ValueError, RecursionError):
        _protocol_error('frame is not UTF-8 JSON')
    kind = frame.get('type') if isinstance(frame, dict) else None
    if kind == 'shutdown':
        return frame
    if kind == 'execute' and _valid_execute(frame):
        return frame
    if kind == 'rpc_result' and isinstance(frame.get('id'), str) and isinstance(frame.get('error', ''), (str, type(None))):
        return frame
    _protocol_error(f'unknown or malformed frame (type {repr(kind)[:100]})')


def _valid_execute(frame):
    argv = frame.get('argv', [])
    return (
        all(isinstance(frame.get(key), str) for key in ('id', 'code', 'barrier'))
        and isinstance(frame.get('source_path', ''), str)
        and isinstance(argv, list)
        and all(isinstance(arg, str) for arg in argv)
        and isinstance(frame.get('inventory', False), bool)
    )


class _Channel:
    """The two protocol fds. Outgoing frames are written whole under one lock; incoming frames
    are bounded, parsed and queued by a daemon reader thread.

    A command is always somewhere command_incoming() looks, from the moment its first byte is
    in the pipe until the main thread takes it: a SIGINT the server sends right after a
    command must not be mistaken for one between cells."""

    def __init__(self):
        spec = os.environ.pop('REPL_MCP_WORKER_FDS', '')
        try:
            read_fd, write_fd = (int(part) for part in spec.split(','))
            # User subprocesses must never hold the protocol pipes.
            os.set_inheritable(read_fd, False)
            os.set_inheritable(write_fd, False)
        except (ValueError, OSError) as exc:
            _protocol_error(f'REPL_MCP_WORKER_FDS={spec!r} is not two open fds "R,W": {exc}')
        self._read_fd = read_fd
        self._writer = open(write_fd, 'wb', buffering=0)
        self._write_lock = threading.Lock()
        self._commands = collections.deque()  # parsed and not yet taken; at most INBOX_SLOTS
        self._arrived = threading.Condition(threading.Lock())
        self._receiving = False  # the reader holds bytes of a command it has not queued yet

    def send(self, frame):
        self.send_encoded(_encode_frame(frame))

    def send_encoded(self, data):
        data = memoryview(data)
        with self._write_lock:
            try:
                while data:
                    data = data[self._writer.write(data):]
            except OSError:
                _exit_now(0)  # the server closed its end: there is nobody left to report to

    def start_reader(self):
        threading.Thread(target=self._read_forever, name='repl-mcp-reader', daemon=True).start()

    def wait_for_command(self):
        with self._arrived:
            while not self._commands:
                self._arrived.wait()

    def take_command(self):
        return self._commands.popleft()

    def command_incoming(self):
        """Whether a command the main thread has not taken is in the pipe, being read or
        queued. Checked in the order a command moves, so one moving meanwhile is still seen."""
        pipe = select.poll()
        pipe.register(self._read_fd, select.POLLIN)
        return bool(pipe.poll(0)) or self._receiving or bool(self._commands)

    def _read_forever(self):
        ready = select.poll()
        ready.register(self._read_fd, select.POLLIN)
        received = bytearray()
        while True:
            ready.poll()
            # Set while the bytes are still in the pipe, and cleared only once they are
            # queued (see command_incoming).
            self._receiving = True
            try:
                data = os.read(self._read_fd, READ_CHUNK)
            except OSError:
                data = b''
            if not data:
                _exit_now(0)  # EOF, even in the middle of a cell: the server is gone or stopping us
            received += data
            self._queue_frames(received)
            self._receiving = bool(received)

    def _queue_frames(self, received):
        """Queue every complete frame of `received`, leaving a partial one in it."""
        start = 0
        end = received.find(b'\n')
        while end >= 0:
            if end - start >= MAX_FRAME:
                _protocol_error('frame exceeds 1 MiB')
            frame = _parse_command(bytes(received[start:end]))
            if frame['type'] == 'rpc_result':
                _RPCS.resolve(frame)  # never queued: the main thread may be waiting for it
            else:
                self._queue(frame)
            start = end + 1
            end = received.find(b'\n', start)
        del received[:start]
        if len(received) >= MAX_FRAME:
            _protocol_error('frame exceeds 1 MiB')

    def _queue(self, command):
        with self._arrived:
            if len(self._commands) >= INBOX_SLOTS:
                _protocol_error(f'more than {INBOX_SLOTS} commands queued')
            self._commands.append(command)
            self._arrived.notify()


def _utf8_prefix(text, room):
    """(kept text, its UTF-8 size, whether all of `text` fit) for at most `room` bytes.

    Only the first `room` characters are encoded (every character takes at least one
    byte), so a huge write costs no more than the budget. Lone surrogates become '?'."""
    head = text[:room]
    data = head.encode('utf-8', 'replace')
    if len(data) > room:
        cut = room
        while data[cut] & 0xC0 == 0x80:  # step back to the first byte of the split character
            cut -= 1
        return data[:cut].decode('utf-8'), cut, False
    return data.decode('utf-8'), len(data), len(head) == len(text)


class _CellOutput:
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
            kept, used, complete = _utf8_prefix(text, self._room[stream])
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


class _Sink(io.TextIOBase):
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
            raise TypeError(f'write() argument must be str, not {_type_name(type(text))}')
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


def _coalesce(pending):
    """Merge consecutive pieces of the same stream into one frame's text."""
    merged = []
    for stream, text in pending:
        if merged and merged[-1][0] == stream:
            merged[-1][1].append(text)
        else:
            merged.append((stream, [text]))
    return [(stream, ''.join(parts)) for stream, parts in merged]


class _Output:
    """Captures the running cell's output and streams it as `output` frames from a daemon
    thread, so the main thread never writes a frame while a SIGINT could interrupt it."""

    def __init__(self, channel):
        self.cell = None  # _CellOutput of the running cell
        self._channel = channel
        self._active = threading.Event()
        self._send_lock = threading.Lock()
        threading.Thread(target=self._pump, name='repl-mcp-output', daemon=True).start()

    def begin(self, run_id):
        self.cell = _CellOutput(run_id)
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
            for stream, text in _coalesce(cell.take_pending()):
                self._channel.send({'type': 'output', 'id': cell.run_id, 'stream': stream, 'text': text})


def _wake():
    """No-op callback: scheduling it thread-safely wakes a loop blocked in select()."""


class _CellLoop(asyncio.SelectorEventLoop):
    """The one persistent event loop. It remembers the callbacks and timers scheduled from a
    cell's context so the epilogue can cancel those that have not run: nothing a cell
    scheduled may fire under a later cell."""

    def __init__(self):
        super().__init__()
        # id(weak reference) -> weak reference to a handle scheduled by cell code; an entry
        # goes away when its handle dies. Keyed by identity because timer handles compare
        # equal by schedule; plain dict operations keep this safe from other threads and
        # from the SIGINT handler, which may schedule while the main thread is in here.
        self._cell_handles = {}

    def call_soon(self, callback, *args, context=None):
        return self._track(super().call_soon(callback, *args, context=context), context)

    def call_soon_threadsafe(self, callback, *args, context=None):
        return self._track(super().call_soon_threadsafe(callback, *args, context=context), context)

    def call_at(self, when, callback, *args, context=None):  # call_later goes through here
        return self._track(super().call_at(when, callback, *args, context=context), context)

    def _track(self, handle, context):
        run_id = _RUN_ID.get() if context is None else context.get(_RUN_ID)
        if run_id is not None:
            ref = weakref.ref(handle, self._forget_handle)
            self._cell_handles[id(ref)] = ref
        return handle

    def _forget_handle(self, ref):
        self._cell_handles.pop(id(ref), None)

    def cancel_cell_callbacks(self):
        handles, self._cell_handles = self._cell_handles, {}
        for ref in list(handles.values()):
            handle = ref()
            if handle is not None:
                handle.cancel()


class _CellExecutor(ThreadPoolExecutor):
    """The loop's default executor (run_in_executor, to_thread, getaddrinfo). It remembers
    which run submitted each unfinished job, so idle worker threads may outlive a cell while
    work still running at the end of its cell is detected."""

    def __init__(self):
        super().__init__(max_workers=min(32, (os.cpu_count() or 1) + 4), thread_name_prefix='repl-mcp-executor')
        self._jobs = {}  # unfinished future -> run id of the submitting context
        self._jobs_lock = threading.Lock()

    def submit(self, fn, /, *args, **kwargs):
        with self._jobs_lock:
            if len(self._jobs) >= EXECUTOR_PENDING_JOBS:
                raise RuntimeError(EXECUTOR_FULL)
            job = super().submit(fn, *args, **kwargs)
            self._jobs[job] = _RUN_ID.get()
        job.add_done_callback(self._finished)
        return job

    def _finished(self, job):
        with self._jobs_lock:
            self._jobs.pop(job, None)

    def busy(self, run_id):
        with self._jobs_lock:
            return any(owner == run_id for owner in self._jobs.values())

    def threads(self):
        return set(self._threads)


def _source_lines(source):
    """Lines as the compiler numbers them (\\n, \\r\\n and \\r end a line; str.splitlines
    would also split on form feeds and other separators)."""
    lines = source.replace('\r\n', '\n').replace('\r', '\n').split('\n')
    if lines[-1] == '':
        lines.pop()
    return [line + '\n' for line in lines]


class _SourceHistory:
    """Run sources for tracebacks and repl_source(), also registered in linecache so
    traceback, inspect and friends work on cell code: at most SOURCE_RUNS runs and
    SOURCE_BYTES (measured as the retained objects' sizes), oldest evicted first together
    with its linecache entry. A saved file is retained under its real path, for its latest
    run only."""

    def __init__(self):
        self._runs = {}  # run id -> (filename, source, lines, size), oldest first
        self._files = {}  # filename -> run id whose source it is
        self._total = 0

    def add(self, run_id, filename, source):
        self._forget(run_id)
        self._forget(self._files.get(filename))
        lines = _source_lines(source)
        size = sys.getsizeof(source) + sys.getsizeof(lines) + sum(map(sys.getsizeof, lines))
        self._runs[run_id] = (filename, source, lines, size)
        self._files[filename] = run_id
        self._total += size
        # mtime None marks a non-file entry that linecache.checkcache leaves alone.
        linecache.cache[filename] = (len(source), None, lines, filename)
        while len(self._runs) > 1 and (len(self._runs) > SOURCE_RUNS or self._total > SOURCE_BYTES):
            self._forget(next(iter(self._runs)))

    def shows(self, filename):
        """Whether traceback frames of `filename` are the user's: cell code, even once
        evicted, or a saved file whose source is retained."""
        return type(filename) is str and (filename.startswith('<repl:') or filename in self._files)

    def line(self, filename, lineno):
        run_id = self._files.get(filename)
        lines = self._runs[run_id][2] if run_id is not None else ()
        if isinstance(lineno, int) and 1 <= lineno <= len(lines):
            return lines[lineno - 1].strip()[:TRACEBACK_SOURCE_CHARS]
        return ''

    def history(self):
        return [{'run_id': run_id, 'lines': len(run[2])} for run_id, run in self._runs.items()]

    def source(self, run_id):
        run = self._runs.get(run_id) if type(run_id) is str else None
        if run is None:
            raise ValueError(SOURCE_UNKNOWN)
        return run[1]

    def _forget(self, run_id):
        run = self._runs.pop(run_id, None)
        if run is not None:
            del self._files[run[0]]
            self._total -= run[3]
            linecache.cache.pop(run[0], None)


def _frame_text(sources, filename, lineno, function=None):
    where = f'  File "{filename}", line {lineno if lineno is not None else "?"}'
    if function is not None:
        where += f', in {function}'
    source = sources.line(filename, lineno)
    return f'{where}\n    {source}' if source else where


def _cell_frames(exc, sources):
    """Traceback entries of the user's code only (worker and library frames are dropped)."""
    frames = []
    tb = exc.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if sources.shows(code.co_filename):
            frames.append(_frame_text(sources, code.co_filename, tb.tb_lineno, code.co_name))
        tb = tb.tb_next
    if isinstance(exc, SyntaxError) and sources.shows(exc.filename):
        frames.append(_frame_text(sources, exc.filename, exc.lineno))
    return frames[-TRACEBACK_FRAMES:]


def _describe(exc, limit, sources):
    """`Type: message` for an exception, the message cut to `limit` characters."""
    if isinstance(exc, SyntaxError) and sources.shows(exc.filename):
        message = str(exc.msg)  # the location is already shown as a frame
    else:
        try:
            message = str(exc)
        except Exception:
            message = '<exception str() failed>'
    name = _exception_name(type(exc))
    return f'{name}: {message[:limit]}' if message else name


def _chain_note(exc, sources):
    if exc.__cause__ is not None:
        return f'\n(caused by {_describe(exc.__cause__, TRACEBACK_CAUSE_CHARS, sources)})'
    if exc.__context__ is not None and not exc.__suppress_context__:
        return f'\n(raised while handling {_describe(exc.__context__, TRACEBACK_CAUSE_CHARS, sources)})'
    return ''


class _RunFailure(Exception):
    """A failure reported by its message alone: a saved file refused before it ran, or one
    that exited with a non-zero status."""


def _format_error(exc, run_id, sources):
    """The bounded traceback of the user's frames reported as the result's `error`."""
    if isinstance(exc, (KeyboardInterrupt, asyncio.CancelledError)):
        return INTERRUPTED.format(run_id)
    if isinstance(exc, _RunFailure):
        return str(exc)
    head = 'Traceback (most recent call last):'
    last = _describe(exc, TRACEBACK_MESSAGE_CHARS, sources) + _chain_note(exc, sources)
    room = TRACEBACK_CHARS - len(head) - len(last) - 2
    kept = []
    for frame in reversed(_cell_frames(exc, sources)):  # the innermost frames matter most
        if len(frame) + 1 > room:
            break
        kept.append(frame)
        room -= len(frame) + 1
    return '\n'.join([head, *reversed(kept), last])


class _NotPreviewable(Exception):
    """The value, or a part of it, is not a small exact JSON builtin."""


def _json_text(value):
    return json.dumps(value, ensure_ascii=False, separators=(',', ':'))


def _plain_json(value, depth, budget):
    """A copy of `value` made of exact JSON builtins (tuples become lists). Only exact
    builtin types are touched, so no user code (repr, iter, len, properties) can run."""
    budget[0] -= 1
    if budget[0] < 0:
        raise _NotPreviewable
    cls = type(value)
    if value is None or cls is bool:
        return value
    if cls is int:
        if value.bit_length() > PREVIEW_INT_BITS:
            raise _NotPreviewable
        return value
    if cls is float:
        if not math.isfinite(value):
            raise _NotPreviewable
        return value
    if cls is str:
        if len(value) > PREVIEW_STR_CHARS:
            raise _NotPreviewable
        return value
    if depth >= PREVIEW_DEPTH:
        raise _NotPreviewable
    if cls is list or cls is tuple or cls is ReplHistory:
        if len(value) > PREVIEW_ITEMS:
            raise _NotPreviewable
        return [_plain_json(item, depth + 1, budget) for item in value]
    if cls is dict or cls is McpResult:
        if len(value) > PREVIEW_ITEMS:
            raise _NotPreviewable
        plain = {}
        for key, item in value.items():
            if type(key) is not str or len(key) > PREVIEW_STR_CHARS:
                raise _NotPreviewable
            plain[key] = _plain_json(item, depth + 1, budget)
        return plain
    raise _NotPreviewable


_LENGTH_SHOWN = (str, bytes, list, tuple, dict, set, frozenset)


def _has_length(cls):
    # Identity checks only: `in` would run a metaclass __eq__.
    return any(cls is shown for shown in _LENGTH_SHOWN)


def _omitted(value):
    cls = type(value)
    name = _type_name(cls)
    if _has_length(cls):
        return f'<{name}; length={len(value)}; safe preview omitted>'
    return f'<{name}; safe preview omitted>'


def _preview(value):
    """(return_value, JSON value or _MISSING, truncated) without running user code."""
    if value is None:
        return None, _MISSING, False
    cls = type(value)
    if cls is str or cls is ShellResult:
        value = str.__str__(value)  # a ShellResult previews as its stdout, an exact str
        shown, _, complete = _utf8_prefix(_json_text(value[:PREVIEW_BYTES]), PREVIEW_BYTES)
        if complete and len(value) <= PREVIEW_BYTES:
            return shown, value, False
        return shown, _MISSING, True
    try:
        plain = _plain_json(value, 0, [HISTORY_PREVIEW_NODES if cls is ReplHistory else PREVIEW_NODES])
    except _NotPreviewable:
        return _omitted(value), _MISSING, True
    text = _json_text(plain)
    if _utf8_size(text) <= PREVIEW_BYTES:
        return text, plain, False
    return _omitted(value), _MISSING, True


def _utf8_size(text):
    return len(text.encode('utf-8', 'replace'))


def _inventory(namespace, reserved):
    """repl_namespace(): names, exact type names and builtin lengths of the user's variables.
    No value is read beyond its type slot and the length of exact builtins."""
    variables = []
    room = INVENTORY_BYTES - INVENTORY_ENVELOPE
    for name, value in list(itertools.islice(namespace.items(), INVENTORY_SCANNED)):
        if len(variables) >= INVENTORY_LISTED:
            break
        if type(name) is not str or len(name) > NAME_CHARS or name in reserved:
            continue
        cls = type(value)
        entry = {'name': name, 'type': _type_name(cls)[:INVENTORY_TYPE_CHARS]}
        if _has_length(cls):
            entry['length'] = len(value)
        room -= _utf8_size(_json_text(entry)) + 1
        if room < 0:
            break
        variables.append(entry)
    return {
        'variables': variables,
        'total_namespace_entries': len(namespace),
        'omitted_including_helpers': len(namespace) - len(variables),
        'values_included': False,
    }


class ReplHistory(list):
    """What repl_history() returns: a list whose preview may hold every retained run."""


def _read_prefix(path, limit):
    """At most limit + 1 bytes of a regular file (one byte more tells that it is bigger).
    Opened without blocking, so a FIFO or device at `path` is refused instead of waited on."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    with open(fd, 'rb') as file:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f'{path} is not a regular file')
        return file.read(limit + 1)


def _read_source(path):
    """A saved file's text, decoded as Python decodes source files (PEP 263, BOM)."""
    try:
        data = _read_prefix(path, SOURCE_FILE_BYTES)
    except OSError as exc:
        raise _RunFailure(f'Cannot read Python source file: {exc}') from None
    if len(data) > SOURCE_FILE_BYTES:
        raise _RunFailure(FILE_TOO_LARGE)
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode(encoding)
    except (SyntaxError, UnicodeDecodeError) as exc:
        raise _RunFailure(f'Cannot decode Python source file {path}: {exc}') from None


def _check_argv(argv):
    if len(argv) > ARGV_ITEMS:
        raise _RunFailure(ARGV_TOO_MANY)
    if sum(len(arg.encode('utf-8', 'surrogatepass')) for arg in argv) > ARGV_BYTES:
        raise _RunFailure(ARGV_TOO_LARGE)


def _checkpoint_json(value):
    # ASCII escapes keep any string (lone surrogates included) exact through a restore.
    return json.dumps(value, separators=(',', ':'))


def _skip_reason(value):
    cls = type(value)
    if cls is str:
        return 'large string'
    if any(cls is plain for plain in (int, float, list, tuple, dict)):
        return 'value too large or not plain JSON'
    return 'custom object'


def _checkpoint(namespace, reserved, path):
    """checkpoint(): the namespace's small exact-JSON variables, written atomically to
    `path`. Nothing is pickled and no user code runs; the rest is listed in `skipped` or
    counted in `omitted`."""
    target = os.path.abspath(os.path.expanduser(os.fspath(path)))
    values, skipped, omitted, considered = {}, {}, 0, 0
    room = CHECKPOINT_BYTES - CHECKPOINT_RESERVE
    for name, value in list(namespace.items()):
        if type(name) is str and name in reserved:
            continue
        if type(name) is not str or len(name) > NAME_CHARS or considered >= CHECKPOINT_VARIABLES:
            omitted += 1
            continue
        considered += 1
        try:
            plain, reason = _plain_json(value, 0, [PREVIEW_NODES]), None
        except _NotPreviewable:
            plain, reason = None, _skip_reason(value)
        if reason is None:
            size = len(_checkpoint_json({name: plain}))
            if size <= room:
                values[name] = plain
                room -= size
                continue
            reason = 'snapshot byte limit'
        size = len(_checkpoint_json({name: reason}))
        if size <= room:
            skipped[name] = reason
            room -= size
        else:
            omitted += 1
    document = {'format': CHECKPOINT_FORMAT, 'values': values, 'skipped': skipped, 'omitted': omitted}
    _write_atomically(target, _checkpoint_json(document).encode('ascii'))
    return {'saved': len(values), 'skipped': skipped, 'omitted': omitted}


def _write_atomically(target, data):
    """Replace `target` with `data` whole or not at all: an exclusive 0600 temporary file
    beside it, fsynced, renamed over it, and the directory fsynced; the temporary file is
    removed on failure."""
    temporary = f'{target}.{os.urandom(8).hex()}.part'
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        with open(fd, 'wb') as file:
            file.write(data)
            file.flush()
            os.fsync(fd)
        os.rename(temporary, target)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
    _fsync_directory(os.path.dirname(target))


def _fsync_directory(path):
    """Make a rename in `path` durable; best effort, as some filesystems refuse to."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError:
        pass


def _restore(namespace, reserved, path):
    """restore(): validate a whole checkpoint file, then merge its values into the namespace."""
    data = _read_prefix(os.path.abspath(os.path.expanduser(os.fspath(path))), CHECKPOINT_BYTES)
    if len(data) > CHECKPOINT_BYTES:
        raise ValueError(CHECKPOINT_TOO_LARGE)
    try:
        document = json.loads(data)
    except (ValueError, RecursionError):
        raise ValueError(CHECKPOINT_UNSUPPORTED) from None
    if type(document) is not dict or document.get('format') != CHECKPOINT_FORMAT:
        raise ValueError(CHECKPOINT_UNSUPPORTED)
    values = document.get('values')
    if type(values) is not dict or len(values) > CHECKPOINT_VARIABLES:
        raise ValueError(CHECKPOINT_TOO_MANY)
    if not all(len(name) <= NAME_CHARS and name not in reserved for name in values):
        raise ValueError(CHECKPOINT_BAD_NAMES)
    for name, value in values.items():
        try:
            _plain_json(value, 0, [PREVIEW_NODES])
        except _NotPreviewable:
            raise ValueError(CHECKPOINT_BAD_VALUE.format(name)) from None
    namespace.update(values)
    return {'restored': len(values), 'state': 'merged'}


def _leads_group(pid):
    """Whether a child runs in a process group of its own (start_new_session, process_group=0,
    setsid in preexec_fn): killing the worker's group misses it, so it is reported as a job.
    Popen returns only once the child has exec'd, so the group is already set."""
    try:
        return os.getpgid(pid) == pid
    except OSError:
        return False


def _kill_group(pgid):
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass  # already gone


# CPython's own reaping of Popen objects dropped while their child ran (an internal
# function; without it there is nothing of that kind to do).
_reap_dropped_popens = getattr(subprocess, '_cleanup', lambda: None)


class _Children:
    """Every child started through subprocess.Popen, tracked weakly. A daemon thread reaps
    the finished ones every REAP_INTERVAL (Popen.poll keeps the status for wait() and
    .returncode), so no zombie accumulates even for dropped Popen objects. A child leading
    its own process group is a job: reported `started` at once, and once it has finished its
    group is killed and it is reported `finished`, so the server knows which groups to kill."""

    def __init__(self):
        self._channel = None
        # id(weak reference) -> (weak reference, pid, run id, job?, reaped here?), until the
        # child is seen finished or its Popen object is gone.
        self._live = {}
        # (pid, run id) of jobs whose Popen object is gone, to report from a sweep: a weak
        # reference callback may run inside any code, even code holding the write lock.
        # Popen keeps an object alive (in subprocess._active) while its child runs, so such a
        # job has finished, unless its Popen was lost in a reference cycle; its group is then
        # killed like that of a finished job.
        self._dropped_jobs = collections.deque()

    def start(self, channel):
        self._channel = channel
        subprocess.Popen = Popen
        threading.Thread(target=self._reap_forever, name='repl-mcp-reaper', daemon=True).start()

    def add(self, proc, reaped_elsewhere):
        run_id = _RUN_ID.get() or ''
        job = _leads_group(proc.pid)
        if job:
            self._channel.send({'type': 'job', 'id': run_id, 'pid': proc.pid, 'action': 'started'})
        ref = weakref.ref(proc, self._forget)
        self._live[id(ref)] = (ref, proc.pid, run_id, job, not reaped_elsewhere)

    def _forget(self, ref):
        entry = self._live.pop(id(ref), None)
        if entry is not None and entry[3]:
            self._dropped_jobs.append(entry[1:3])

    def sweep(self):
        """Reap the children that have exited and report the jobs among them. Safe from any
        thread: each finished child is claimed by one pop."""
        for key, (ref, pid, run_id, job, reap) in list(self._live.items()):
            proc = ref()
            if proc is None:
                continue
            if reap:
                _PlainPopen.poll(proc)  # the base method: a user subclass's poll() is not ours to run
            if proc.returncode is not None and self._live.pop(key, None) is not None and job:
                self._finished(pid, run_id)
        while True:
            try:
                pid, run_id = self._dropped_jobs.popleft()
            except IndexError:  # empty, perhaps emptied by the other sweeping thread
                break
            self._finished(pid, run_id)
        _reap_dropped_popens()

    def _finished(self, pid, run_id):
        _kill_group(pid)  # what the job left behind in its group
        self._channel.send({'type': 'job', 'id': run_id, 'pid': pid, 'action': 'finished'})

    def _reap_forever(self):
        while True:
            time.sleep(REAP_INTERVAL)
            self.sweep()

    def kill_all(self):
        """SIGKILL every child still running (a job with its whole group) and reap them,
        waiting at most CHILD_EXIT_WAIT: the worker is exiting."""
        running = []
        for ref, pid, _, job, _ in list(self._live.values()):
            proc = ref()
            if proc is not None and proc.returncode is None:
                running.append(proc)
                try:
                    (os.killpg if job else os.kill)(pid, signal.SIGKILL)
                except OSError:
                    pass
        deadline = time.monotonic() + CHILD_EXIT_WAIT
        for proc in running:
            try:
                _PlainPopen.wait(proc, max(deadline - time.monotonic(), 0))
            except subprocess.TimeoutExpired:
                pass


_PlainPopen = subprocess.Popen


class Popen(_PlainPopen):
    """subprocess.Popen inside the worker (_Children.start installs it): each child is
    tracked, so it is reaped without losing its status, reported when it is a job, and killed
    when the worker exits."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # asyncio's subprocess transport reaps its children itself: reaping them here would
        # take the status its child watcher waits for.
        caller = _module_name(sys._getframe(1))
        _CHILDREN.add(self, reaped_elsewhere=caller.startswith('asyncio.'))


_CHILDREN = _Children()


class ShellResult(str):
    """What sh() returns: the str value is the command's stdout. Attributes: stdout (the same
    text), stderr, returncode, ok (returncode == 0), truncated (a stream was bounded)."""

    def __new__(cls, stdout='', stderr='', returncode=0, truncated=False):  # defaults let copy/pickle rebuild it
        result = super().__new__(cls, stdout)
        result.stdout, result.stderr, result.returncode = stdout, stderr, returncode
        result.ok, result.truncated = returncode == 0, truncated
        return result


class ShellError(RuntimeError):
    """sh() with check=True saw a non-zero status. Attributes: result (the ShellResult),
    returncode, stdout, stderr."""

    def __init__(self, result):
        super().__init__(SHELL_FAILED.format(result.returncode))
        self.result, self.returncode = result, result.returncode
        self.stdout, self.stderr = result.stdout, result.stderr


_SHELL_SLOTS = threading.BoundedSemaphore(SHELL_PROCESSES)


def sh(cmd, *, check=True, timeout=SHELL_TIMEOUT, cwd=None, env=None):
    """Run `cmd` with the shell in a new process group and return a ShellResult: its stdout,
    with .stderr, .returncode, .ok and .truncated (each stream keeps 50,000 bytes).
    check=True raises ShellError on a non-zero status; after `timeout` seconds it raises
    subprocess.TimeoutExpired. cwd (~ expanded) defaults to the current directory; env is
    merged over os.environ. When sh returns, the whole process group is killed."""
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout < math.inf:
        raise ValueError(SHELL_BAD_TIMEOUT)
    if not _SHELL_SLOTS.acquire(blocking=False):
        raise RuntimeError(SHELL_BUSY)
    try:
        result = _shell_run(cmd, timeout, cwd, env)
    finally:
        _SHELL_SLOTS.release()
    if check and result.returncode != 0:
        raise ShellError(result)
    return result


def _shell_run(cmd, timeout, cwd, env):
    proc = Popen(
        cmd, shell=True, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        start_new_session=True, cwd=None if cwd is None else os.path.expanduser(cwd),
        env=None if env is None else {**os.environ, **env},
    )
    try:
        out, err, cut = _shell_capture(proc, cmd, timeout)
    finally:
        _kill_group(proc.pid)  # background descendants of the shell go with it
        proc.stdout.close()
        proc.stderr.close()
        proc.wait()
    stdout, stdout_cut = _shell_text(out)
    stderr, stderr_cut = _shell_text(err)
    return ShellResult(stdout, stderr, proc.returncode, cut or stdout_cut or stderr_cut)


def _shell_capture(proc, cmd, timeout):
    """(stdout bytes, stderr bytes, whether either was cut) of a sh() process: read until
    the shell exits, then what its descendants already wrote (at most SHELL_DRAIN bytes),
    or until both pipes close. Each stream keeps SHELL_CAPTURE bytes; the rest is read and
    dropped so the shell never blocks on a full pipe. A KeyboardInterrupt may land anywhere
    in here (see _interrupt_site): every piece of state is local, and the caller kills the
    group."""
    kept = {proc.stdout.fileno(): bytearray(), proc.stderr.fileno(): bytearray()}
    pipes = select.poll()
    for fd in kept:
        pipes.register(fd, select.POLLIN)
    open_pipes, cut = len(kept), False
    deadline = time.monotonic() + timeout
    drain = None  # bytes still to read once the shell has exited
    while open_pipes and (drain is None or drain > 0):
        if drain is None and _exited(proc.pid):
            drain = SHELL_DRAIN
        remaining = deadline - time.monotonic()
        if drain is None and remaining <= 0:
            out, err = kept.values()
            raise subprocess.TimeoutExpired(cmd, timeout, bytes(out), bytes(err))
        events = pipes.poll(0 if drain is not None else min(remaining, SHELL_EXIT_CHECK) * 1000)
        if not events and drain is not None:
            break
        for fd, _ in events:
            data = os.read(fd, READ_CHUNK)
            if not data:
                pipes.unregister(fd)
                open_pipes -= 1
            if drain is not None:
                drain -= len(data)
            room = SHELL_CAPTURE - len(kept[fd])
            kept[fd] += data[:room]
            cut = cut or len(data) > room
    out, err = kept.values()
    return bytes(out), bytes(err), cut


def _exited(pid):
    """Whether a child has exited, without reaping it: its Popen still collects the status."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True  # already reaped, by the reaper thread


def _shell_text(data):
    """Captured bytes as text (invalid UTF-8 replaced), bounded again as UTF-8: replacement
    characters take more bytes than what they replace. Returns (text, whether it was cut)."""
    text, _, complete = _utf8_prefix(data.decode('utf-8', 'replace'), SHELL_CAPTURE)
    return text, not complete


class ToolError(RuntimeError):
    """A bridge call failed. .result is the complete CallToolResult envelope when the tool
    itself reported an error (isError), else None (the broker or the transport failed)."""

    def __init__(self, message, result=None):
        super().__init__(message)
        self.result = result


class McpResult(dict):
    """The complete CallToolResult envelope mcp.call returns. Awaiting it gives the envelope
    itself, so legacy `await mcp.call(...)` works after its single dispatch."""

    def __await__(self):
        return self
        yield  # a generator: awaiting it finishes at once


def _await_reply(future, wait):
    """Block the cell until the reply or `wait` seconds; a SIGINT interrupts it like user
    code (see _INTERRUPTIBLE_WORKER_CODE)."""
    return future.result(wait)


class _Rpcs:
    """The bridge transport: `rpc` frames out, each answered by an `rpc_result` that the
    reader thread routes to the call's pending future. Only the running cell's own code may
    call, on the main thread with the cell's run id in its context: a thread or a context
    saved from an earlier cell would otherwise act for a cell that has ended."""

    def __init__(self):
        self._channel = None
        self._pending = {}  # rpc id -> (run id, future) until answered or abandoned
        self._lock = threading.Lock()  # the reader thread resolves while the main thread calls
        self._active = None  # run id of the cell whose code may call now
        self._main_thread = threading.main_thread().ident

    def start(self, channel):
        self._channel = channel

    def begin(self, run_id):
        self._active = run_id

    def end(self):
        """The cell is over: later calls are refused and the pending ones abandoned."""
        self._active = None
        with self._lock:
            pending = [future for _, future in self._pending.values()]
        for future in pending:
            future.cancel()  # its callback sends the rpc_cancel

    def call(self, op, params, wait):
        """The result of `op`, waiting at most `wait` seconds; blocks the cell."""
        future = self._request(op, params)
        try:
            return _await_reply(future, wait)
        except futures.TimeoutError:
            raise ToolError(MCP_NO_REPLY.format(op, wait)) from None
        finally:
            future.cancel()  # a no-op once answered; otherwise the server drops the call

    async def acall(self, op, params, wait):
        """The result of `op`, awaited; cancelling the awaiting task cancels this call only."""
        future = self._request(op, params)
        try:
            # Cancelling the wrapper cancels `future`, whose callback sends the rpc_cancel.
            return await asyncio.wait_for(asyncio.wrap_future(future), wait)
        except asyncio.TimeoutError:
            raise ToolError(MCP_NO_REPLY.format(op, wait)) from None
        finally:
            future.cancel()

    def _request(self, op, params):
        """Send one `rpc` frame and return its pending future. Every refusal comes before
        anything is sent or registered."""
        run_id = _RUN_ID.get()
        if run_id is None or run_id != self._active or threading.get_ident() != self._main_thread:
            raise RuntimeError(MCP_FOREIGN)
        rpc_id = uuid.uuid4().hex
        data = _encode_frame({'type': 'rpc', 'id': rpc_id, 'run_id': run_id, 'op': op, 'params': params})
        if len(data) > MAX_FRAME:
            raise ValueError(MCP_FRAME_TOO_LARGE)
        future = futures.Future()
        future.add_done_callback(lambda done: done.cancelled() and self._abandon(rpc_id))
        with self._lock:
            if len(self._pending) >= RPC_PENDING:
                raise RuntimeError(MCP_BUSY)
            self._pending[rpc_id] = (run_id, future)
        self._channel.send_encoded(data)
        return future

    def _abandon(self, rpc_id):
        with self._lock:
            entry = self._pending.pop(rpc_id, None)
        if entry is not None:  # not yet answered: tell the server to drop that call only
            self._channel.send({'type': 'rpc_cancel', 'id': rpc_id, 'run_id': entry[0]})

    def resolve(self, frame):
        """Called by the reader thread with an `rpc_result`. Replies for unknown or abandoned
        calls are dropped: a late reply must not reach a later cell."""
        with self._lock:
            entry = self._pending.pop(frame['id'], None)
        if entry is None:
            return
        try:
            if frame.get('error'):
                entry[1].set_exception(ToolError(frame['error']))
            else:
                entry[1].set_result(frame.get('result'))
        except futures.InvalidStateError:
            pass  # cancelled meanwhile; the server already answered, so nothing to cancel


_RPCS = _Rpcs()


def _check_timeout(timeout):
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise ValueError(MCP_BAD_TIMEOUT)
    if not MCP_TIMEOUT_MIN <= timeout <= MCP_TIMEOUT_MAX:  # NaN fails too
        raise ValueError(MCP_BAD_TIMEOUT)


def _call_params(server, tool, arguments, timeout, kwargs):
    """The `call` op's params; every check comes before the rpc is sent."""
    if arguments is not None and kwargs:
        raise ValueError(MCP_BOTH_ARGUMENTS)
    if arguments is not None and not isinstance(arguments, dict):
        raise TypeError('arguments must be a dict')
    _check_timeout(timeout)
    return {'server': server, 'tool': tool, 'arguments': kwargs if arguments is None else arguments, 'timeout': timeout}


def _envelope_text(envelope):
    """mcp.text(): the text of every `text` block of an envelope, joined with newlines."""
    if not isinstance(envelope, dict):
        raise TypeError(f'mcp.text() expects a CallToolResult dict, not {_type_name(type(envelope))}')
    content = envelope.get('content')
    blocks = content if isinstance(content, list) else []
    return '\n'.join(
        block['text'] for block in blocks
        if isinstance(block, dict) and block.get('type') == 'text' and isinstance(block.get('text'), str)
    )


def _envelope(result):
    """A `call` result as the envelope mcp.call returns; a tool error raises ToolError."""
    if type(result) is not dict:
        raise ToolError(MCP_MALFORMED.format('call'))
    envelope = McpResult(result)
    if envelope.get('isError') is True:
        raise ToolError(TOOL_FAILED.format(_envelope_text(envelope)[:TOOL_ERROR_CHARS]), result=envelope)
    return envelope


def _field(op, result, key):
    if type(result) is not dict or key not in result:
        raise ToolError(MCP_MALFORMED.format(op))
    return result[key]


class McpBridge:
    """`mcp`: the session's downstream MCP servers, reached through the repl-mcp server. Calls
    are legal only from the running cell's own code path (not from threads or later cells);
    use acall for concurrency. Failures raise ToolError.

    call(server, tool, *, arguments=None, timeout=120.0, **kwargs) -> the full CallToolResult
        envelope; tool arguments come from arguments={...} or keywords, not both (use
        arguments= for tool parameters named timeout, server, tool or arguments)
    acall(...) -> the same, awaitable; cancelling the task cancels only that call
    servers(), list_tools(server, *, timeout=30.0), help(server=None, tool=None, *, timeout=30.0),
    refresh(), journal(), ajournal(), explain(server, tool=None), text(envelope)"""

    text = staticmethod(_envelope_text)

    def __init__(self, rpcs):
        self._rpcs = rpcs

    def __repr__(self):
        return '<mcp bridge; help(mcp) describes it, mcp.help() lists servers>'

    def call(self, server, tool, *, arguments=None, timeout=MCP_CALL_TIMEOUT, **kwargs):
        params = _call_params(server, tool, arguments, timeout, kwargs)
        return _envelope(self._rpcs.call('call', params, timeout + MCP_REPLY_SLACK))

    async def acall(self, server, tool, *, arguments=None, timeout=MCP_CALL_TIMEOUT, **kwargs):
        params = _call_params(server, tool, arguments, timeout, kwargs)
        return _envelope(await self._rpcs.acall('call', params, timeout + MCP_REPLY_SLACK))

    def servers(self):
        return _field('servers', self._rpcs.call('servers', {}, MCP_OP_WAIT), 'servers')

    def list_tools(self, server, *, timeout=MCP_CATALOGUE_TIMEOUT):
        _check_timeout(timeout)
        result = self._rpcs.call('tools', {'server': server, 'timeout': timeout}, timeout + MCP_REPLY_SLACK)
        return _field('tools', result, 'tools')

    def help(self, server=None, tool=None, *, timeout=MCP_CATALOGUE_TIMEOUT):
        """No server: the server names. A server: its tool definitions. A tool too: its
        definition. One rpc each."""
        if server is None:
            return self.servers()
        tools = self.list_tools(server, timeout=timeout)
        if tool is None:
            return tools
        for definition in tools:
            if isinstance(definition, dict) and definition.get('name') == tool:
                return definition
        raise ValueError(MCP_UNKNOWN_TOOL.format(tool))

    def refresh(self):
        return self._rpcs.call('refresh', {}, MCP_OP_WAIT)

    def journal(self):
        return _field('journal', self._rpcs.call('journal', {}, MCP_OP_WAIT), 'records')

    async def ajournal(self):
        return _field('journal', await self._rpcs.acall('journal', {}, MCP_OP_WAIT), 'records')

    def explain(self, server, tool=None):
        return self._rpcs.call('explain', {'server': server, 'tool': tool}, MCP_OP_WAIT)


# -- Artifacts -------------------------------------------------------------------------
# Values and files the server keeps for the session outside the result (contract 7.7,
# 9). A value is streamed in ARTIFACT_CHUNK raw chunks (artifact.begin, artifact.append
# with the running offset, artifact.commit) and never copied whole: memory stays bounded
# by about one chunk beyond the value itself.


class _NotArtifact(Exception):
    """A value artifact() refuses. `budget`: a size limit was passed (depth, nodes,
    string budget, int size, 16 MiB), as opposed to a type JSON does not have."""

    def __init__(self, detail, budget, message=None):
        super().__init__(message or f'{ARTIFACT_UNSUPPORTED} ({detail})')
        self.budget = budget


class _JsonBudget:
    __slots__ = ('nodes', 'string_bytes', 'size')

    def __init__(self):
        self.nodes = ARTIFACT_JSON_NODES
        self.string_bytes = ARTIFACT_STRING_BUDGET
        self.size = 0  # a lower bound of the encoded JSON's size in bytes


def _check_artifact_json(value):
    """Raise _NotArtifact unless `value` is made of exact JSON builtins within the budgets.
    Type identity checks only, and the containers' own builtin iteration: no user code
    (repr, __eq__, __iter__, __class__, properties) runs."""
    budget = _JsonBudget()
    _check_json_node(value, 0, budget)
    if budget.size > ARTIFACT_MAX_BYTES:
        raise _NotArtifact(None, True, ARTIFACT_TOO_LARGE)  # its JSON text surely would


def _count_string(text, budget):
    budget.string_bytes -= 4 * len(text)
    if budget.string_bytes < 0:
        raise _NotArtifact('strings exceed the 16 MiB budget at 4 bytes per character', True)
    budget.size += len(text) + 2


def _check_json_node(value, depth, budget):
    budget.nodes -= 1
    if budget.nodes < 0:
        raise _NotArtifact(f'more than {ARTIFACT_JSON_NODES:,} values', True)
    cls = type(value)
    if value is None or cls is bool:
        budget.size += 4
    elif cls is int:
        bits = value.bit_length()
        if bits > PREVIEW_INT_BITS:
            raise _NotArtifact(f'int over {PREVIEW_INT_BITS} bits', True)
        budget.size += bits * 3 // 10 + 1  # decimal digits, at least
    elif cls is float:
        if not math.isfinite(value):
            raise _NotArtifact('NaN or infinite float', False)
        budget.size += 3
    elif cls is str:
        _count_string(value, budget)
    elif cls is list or cls is tuple:
        if depth >= ARTIFACT_JSON_DEPTH:
            raise _NotArtifact(f'nesting deeper than {ARTIFACT_JSON_DEPTH}', True)
        budget.size += 1 + len(value)
        for item in value:
            _check_json_node(item, depth + 1, budget)
    elif cls is dict or cls is McpResult:
        if depth >= ARTIFACT_JSON_DEPTH:
            raise _NotArtifact(f'nesting deeper than {ARTIFACT_JSON_DEPTH}', True)
        budget.size += 1 + len(value)
        for key, item in dict.items(value):
            if type(key) is not str:
                raise _NotArtifact(f'dict key of type {_type_name(type(key))}', False)
            _count_string(key, budget)
            _check_json_node(item, depth + 1, budget)
    else:
        raise _NotArtifact(f'found {_type_name(cls)}', False)


def _artifact_format(value, format):
    """The upload format of artifact(value, format=...); refuses before anything is sent."""
    if format is not None and not (type(format) is str and format in ARTIFACT_FORMATS):
        raise ValueError(ARTIFACT_BAD_FORMAT)
    cls = type(value)
    natural = 'text' if cls is str else 'binary' if cls is bytes else 'json'
    format = format or natural
    if format == 'json':
        if cls is bytes:
            raise ValueError(ARTIFACT_FORMAT_MISMATCH.format(format, 'bytes'))
        _check_artifact_json(value)  # raises _NotArtifact, which artifact() reports as ValueError
    elif format != natural:
        raise ValueError(ARTIFACT_FORMAT_MISMATCH.format(format, _type_name(cls)))
    return format


def _text_pieces(text):
    """UTF-8 of `text`, a slice at a time (lone surrogates become '?', as in frames)."""
    for start in range(0, len(text), ARTIFACT_TEXT_SLICE):
        yield text[start:start + ARTIFACT_TEXT_SLICE].encode('utf-8', 'replace')


def _json_pieces(value):
    """UTF-8 of the compact JSON of a checked value, produced incrementally."""
    encoder = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(',', ':'))
    batch, size = [], 0
    for text in encoder.iterencode(value):
        if len(text) > ARTIFACT_TEXT_SLICE:  # a long string: its bytes go a slice at a time
            if batch:
                yield ''.join(batch).encode('utf-8', 'replace')
                batch, size = [], 0
            yield from _text_pieces(text)
            continue
        batch.append(text)
        size += len(text)
        if size >= ARTIFACT_TEXT_SLICE:
            yield ''.join(batch).encode('utf-8', 'replace')
            batch, size = [], 0
    if batch:
        yield ''.join(batch).encode('utf-8', 'replace')


def _binary_pieces(data):
    view = memoryview(data)
    for start in range(0, len(view), ARTIFACT_CHUNK):
        yield view[start:start + ARTIFACT_CHUNK]


def _value_pieces(value, format):
    if format == 'binary':
        return _binary_pieces(value)
    if format == 'text':
        return _text_pieces(value)
    return _json_pieces(value)


def _artifact_call(op, params, wait=MCP_OP_WAIT):
    """One artifact op from the running cell's code path; its result must be an object."""
    result = _RPCS.call(op, params, wait)
    if type(result) is not dict:
        raise ToolError(MCP_MALFORMED.format(op))
    return result


def _upload_value(value, format):
    """Stream a checked value into a new artifact; returns its reference. Once begun, any
    failure (an interrupt included) aborts the upload, best effort, before it propagates."""
    if _known_too_large(value, format):
        raise ValueError(ARTIFACT_TOO_LARGE)
    begun = _artifact_call('artifact.begin', {'format': format})
    upload_id = begun.get('upload_id')
    if type(upload_id) is not str:
        raise ToolError(MCP_MALFORMED.format('artifact.begin'))
    try:
        chunk, limit = begun.get('chunk_bytes', ARTIFACT_CHUNK), begun.get('max_bytes', ARTIFACT_MAX_BYTES)
        if type(chunk) is not int or type(limit) is not int or chunk <= 0:
            raise ToolError(MCP_MALFORMED.format('artifact.begin'))
        chunk = min(chunk, ARTIFACT_CHUNK)
        offset, pending = 0, bytearray()
        for piece in _value_pieces(value, format):
            pending += piece
            while len(pending) >= chunk:
                offset = _append_chunk(upload_id, offset, pending[:chunk], limit)
                del pending[:chunk]
        if pending:
            offset = _append_chunk(upload_id, offset, pending, limit)
        return _artifact_call('artifact.commit', {'upload_id': upload_id})
    except BaseException:
        _abort_upload(upload_id)
        raise


def _known_too_large(value, format):
    """Whether a str or bytes value surely exceeds 16 MiB, found before anything is sent.
    Text of up to 4 Mi characters always fits; longer non-ASCII text is measured a slice
    at a time."""
    if format == 'json':
        return False  # _check_artifact_json has bounded it already
    if len(value) > ARTIFACT_MAX_BYTES:
        return True  # at least a byte per character
    if format == 'binary' or 4 * len(value) <= ARTIFACT_MAX_BYTES or value.isascii():
        return False
    return sum(map(len, _text_pieces(value))) > ARTIFACT_MAX_BYTES


def _append_chunk(upload_id, offset, data, limit):
    """Send one chunk at `offset`; returns the offset after it."""
    end = offset + len(data)
    if end > limit:
        raise ValueError(ARTIFACT_TOO_LARGE)
    params = {'upload_id': upload_id, 'offset': offset, 'data': base64.b64encode(data).decode('ascii')}
    size = _artifact_call('artifact.append', params).get('size', end)
    if size != end:
        raise ToolError(MCP_MALFORMED.format('artifact.append'))
    return end


def _abort_upload(upload_id):
    try:
        _RPCS.call('artifact.abort', {'upload_id': upload_id}, ARTIFACT_ABORT_WAIT)
    except Exception:
        pass  # best effort: the server also aborts a run's uploads when the run ends


def _absolute_path(path, name='path'):
    path = os.fspath(path)
    if type(path) is not str:
        raise TypeError(f'{name} must be a str path')
    return os.path.abspath(os.path.expanduser(path))


def _check_str(value, name):
    if type(value) is not str:
        raise TypeError(f'{name} must be a str, not {_type_name(type(value))}')


def _check_count(value, name):
    if type(value) is not int:
        raise TypeError(f'{name} must be an int, not {_type_name(type(value))}')
    if value < 0:
        raise ValueError(f'{name} must not be negative')


def artifact(value=None, *, path=None, format=None):
    """Keep a value or a file as a server-side artifact of this session and return its
    reference {"id", "size", "format", "sha256", "lifetime", "eviction"}. Exactly one of:
    value: exact bytes (format "binary"), exact str ("text") or exact JSON builtins
    ("json": None, bool, int, finite float, str, list, tuple, dict with str keys; depth
    <= 32, <= 100,000 values), at most 16 MiB; path=: a file (~ expanded), copied by the
    server (format "binary" unless given). Read it with artifact_read, save it with
    artifact_save, pass it to a tool with artifact_forward."""
    if (value is None) == (path is None):
        raise ValueError(ARTIFACT_ONE_SOURCE)
    if path is not None:
        if format is None:
            format = 'binary'
        if not (type(format) is str and format in ARTIFACT_FORMATS):
            raise ValueError(ARTIFACT_BAD_FORMAT)
        return _artifact_call('artifact.create', {'path': _absolute_path(path), 'format': format})
    try:
        format = _artifact_format(value, format)
    except _NotArtifact as exc:
        raise ValueError(str(exc)) from None
    return _upload_value(value, format)


def artifact_read(artifact_id, *, offset=0, length=ARTIFACT_READ_MAX, encoding='text'):
    """A range of an artifact: {"artifact", "offset", "length", "encoding", "content",
    "has_more"}. length <= 65536 bytes; encoding "text" (the range must be whole UTF-8),
    "base64" or "hex"."""
    _check_str(artifact_id, 'artifact_id')
    _check_count(offset, 'offset')
    _check_count(length, 'length')
    if length > ARTIFACT_READ_MAX:
        raise ValueError(ARTIFACT_BAD_LENGTH)
    if not (type(encoding) is str and encoding in ARTIFACT_READ_ENCODINGS):
        raise ValueError(ARTIFACT_BAD_ENCODING)
    params = {'id': artifact_id, 'offset': offset, 'length': length, 'encoding': encoding}
    return _artifact_call('artifact.read', params)


def artifact_save(artifact_id, path, *, overwrite=False):
    """Write an artifact to `path` (~ expanded, mode 0600) after verifying its SHA-256; an
    existing file is replaced only with overwrite=True. Returns {"artifact", "saved",
    "path"}."""
    _check_str(artifact_id, 'artifact_id')
    if type(overwrite) is not bool:
        raise TypeError('overwrite must be True or False')
    params = {'id': artifact_id, 'path': _absolute_path(path), 'overwrite': overwrite}
    return _artifact_call('artifact.save', params)


def artifact_delete(artifact_id):
    """Drop an artifact; returns {"id", "deleted": true}."""
    _check_str(artifact_id, 'artifact_id')
    return _artifact_call('artifact.delete', {'id': artifact_id})


def artifact_forward(artifact_id, server, tool, argument, *, format='json'):
    """Call `tool` of MCP server `server` with the artifact's content as the tool argument
    named `argument`: parsed JSON (format "json"), UTF-8 text ("text") or a base64 string
    ("base64"); at most 512 KiB. Returns the CallToolResult envelope like mcp.call; a tool
    error raises ToolError with .result."""
    for value, name in ((artifact_id, 'artifact_id'), (server, 'server'), (tool, 'tool'), (argument, 'argument')):
        _check_str(value, name)
    if not (type(format) is str and format in ARTIFACT_FORWARD_FORMATS):
        raise ValueError(ARTIFACT_BAD_FORWARD_FORMAT)
    params = {'id': artifact_id, 'server': server, 'tool': tool, 'argument': argument, 'format': format}
    return _envelope(_RPCS.call('artifact.forward', params, MCP_OP_WAIT))


ARTIFACT_HELPERS = {
    'artifact': artifact, 'artifact_read': artifact_read, 'artifact_save': artifact_save,
    'artifact_delete': artifact_delete, 'artifact_forward': artifact_forward,
}


def _auto_artifact_format(value):
    """The format of an automatic artifact for a trailing value, or None when its type
    never becomes one (contract 9.4)."""
    cls = type(value)
    if cls is str:
        return 'text'
    if cls is bytes:
        return 'binary'
    if cls is list or cls is tuple or cls is dict or cls is McpResult:
        return 'json'
    return None


async def _auto_upload(value, format):
    """The task that uploads a trailing value (see _Worker._auto_artifact)."""
    return _upload_value(value, format)


def _artifact_error(message):
    return _utf8_prefix(message, ARTIFACT_ERROR_BYTES)[0]


def _compile_cell(source, filename):
    """Code for the body and, when the cell ends with an expression, for that expression;
    compiled apart so its value is kept as an object (no implicit repr)."""
    module = ast.parse(source, filename, 'exec')
    tail = None
    if module.body and isinstance(module.body[-1], ast.Expr):
        expression = ast.Expression(module.body.pop().value)
        tail = compile(expression, filename, 'eval', _CELL_FLAGS, dont_inherit=True)
    return compile(module, filename, 'exec', _CELL_FLAGS, dont_inherit=True), tail


async def _cell_main(body, tail, namespace):
    """The cell task: run the body, then evaluate the trailing expression, awaiting either
    when it uses top-level await."""
    result = eval(body, namespace)
    if body.co_flags & inspect.CO_COROUTINE:
        await result
    if tail is None:
        return _MISSING
    value = eval(tail, namespace)
    if tail.co_flags & inspect.CO_COROUTINE:
        value = await value
    return value


# Worker code where a KeyboardInterrupt is as safe as in user code: the sinks user code
# prints through, sh()'s wait for its process and mcp's wait for a reply.
_INTERRUPTIBLE_WORKER_CODE = frozenset({
    _Sink.write.__code__, _CellOutput.write.__code__, _utf8_prefix.__code__, _shell_capture.__code__,
    _await_reply.__code__,
})


# Library code that runs on behalf of its caller: a SIGINT caught inside it is judged by the
# first frame up the stack that is not in one of these (json: the main thread encodes
# bridge frames, and an rpc_cancel must not be lost to a KeyboardInterrupt).
_CALLER_JUDGED_MODULES = ('asyncio.', 'concurrent.futures.', 'selectors', 'threading', 'json', 'uuid')


def _module_name(frame):
    name = dict.get(frame.f_globals, '__name__')
    return name if type(name) is str else ''


def _interrupt_site(frame):
    """Where a repeated SIGINT caught the main thread. 'idle': the loop is waiting in
    select(), so the cell is at an await and has its cancellation. 'user': user code, or
    library code it called (print sinks included), where KeyboardInterrupt may be raised as
    plain Python would. 'busy': the worker's own code, or library code it called, where an
    exception could tear bookkeeping or strand a task mid-step (the loop machinery and its
    call_soon run between and inside task steps)."""
    if frame is not None and _module_name(frame) == 'selectors':
        return 'idle'
    while frame is not None:
        if frame.f_code in _INTERRUPTIBLE_WORKER_CODE:
            return 'user'
        if frame.f_globals is _WORKER_GLOBALS:
            return 'busy'
        if not _module_name(frame).startswith(_CALLER_JUDGED_MODULES):
            return 'user'
        frame = frame.f_back
    return 'busy'


class _InterruptRetry:
    """Delivers SIGINT to the main thread again shortly after a delivery that did not stop
    the cell, until the cell ends: a cell spinning synchronously never reaches the await
    where cancellation would stop it."""

    def __init__(self, deliver):
        self._deliver = deliver  # called from this thread with the task to interrupt
        # SimpleQueue.put is reentrant, so the signal handler may request at any point.
        self._requests = queue.SimpleQueue()
        threading.Thread(target=self._run, name='repl-mcp-interrupt', daemon=True).start()

    def request(self, task):
        self._requests.put(task)

    def _run(self):
        while True:
            task = self._requests.get()
            time.sleep(INTERRUPT_RETRY)
            self._deliver(task)


class _Worker:
    """Runs cells and saved files one at a time in one namespace on one event loop, and
    reports each."""

    def __init__(self, channel):
        self._channel = channel
        self._namespace = {}  # filled below: the helpers hold on to this very dict
        self._sources = _SourceHistory()
        self._baseline = {**BASELINE_NAMES, **self._helpers()}
        self._reserved = frozenset(self._baseline) | RESERVED_NAMES
        self._install_baseline()
        self._output = _Output(channel)
        self._real_streams = (sys.stdout, sys.stderr)
        self._sinks = (_Sink('stdout', sys.stdout, self._output), _Sink('stderr', sys.stderr, self._output))
        self._executor = _CellExecutor()
        self._loop = _CellLoop()
        self._loop.set_default_executor(self._executor)
        self._command_taken = False  # from taking a command until just before its result
        self._interrupt_pending = False  # a SIGINT came for the command being prepared
        self._cell_task = None  # set only while cell code may be interrupted
        self._cell_lock = threading.Lock()  # orders clearing _cell_task with SIGINT retries
        self._cell_cancelled = False  # whether a SIGINT already cancelled the running cell
        self._main_thread_id = threading.main_thread().ident
        self._interrupt_retry = _InterruptRetry(self._redeliver_sigint)
        signal.signal(signal.SIGINT, self._on_sigint)

    def _helpers(self):
        """The helpers every cell finds in its namespace; those below work on this worker's
        namespace and sources."""
        namespace, sources = self._namespace, self._sources

        def checkpoint(path):
            """Save the variables that are small exact JSON builtins to `path` (~ expanded),
            atomically, mode 0600, format repl-checkpoint-v1; nothing is pickled. Returns
            {"saved": n, "skipped": {name: reason}, "omitted": n}."""
            return _checkpoint(namespace, self._reserved, path)

        def restore(path):
            """Merge the variables of a checkpoint file into the namespace; the whole file is
            validated first. Returns {"restored": n, "state": "merged"}."""
            return _restore(namespace, self._reserved, path)

        def repl_history():
            """The retained run sources, oldest first, as [{"run_id", "lines"}]
            (source history: 64 runs / 1 MiB)."""
            return ReplHistory(sources.history())

        def repl_source(run_id):
            """The source of a retained run (see repl_history())."""
            return sources.source(run_id)

        def repl_namespace():
            """Names, types and builtin lengths of the namespace's variables; no value is
            read or shown."""
            return _inventory(namespace, self._reserved)

        return {
            'sh': sh, 'ShellResult': ShellResult, 'ShellError': ShellError,
            'checkpoint': checkpoint, 'restore': restore,
            'repl_history': repl_history, 'repl_source': repl_source, 'repl_namespace': repl_namespace,
            'ToolError': ToolError, **ARTIFACT_HELPERS,
        }

    def _install_baseline(self):
        self._namespace.update(self._baseline)
        # A new bridge each cell: attributes a cell set on `mcp` do not outlive it.
        self._namespace['mcp'] = McpBridge(_RPCS)

    def serve(self):
        while True:
            self._channel.wait_for_command()
            # Marked before the command leaves the queue: a SIGINT always finds it somewhere.
            self._command_taken = True
            command = self._channel.take_command()
            if command['type'] == 'shutdown':
                _exit_now(0)
            if command.get('inventory'):
                self._report_inventory(command)
            else:
                self._execute(command)

    def _report_inventory(self, command):
        """Answer at once: no loop, no user code, no source history."""
        result = {
            'success': True,
            'stdout': '',
            'stderr': '',
            'return_value': INVENTORY_NOTE,
            'value': _inventory(self._namespace, self._reserved),
            'error': None,
            'truncated': {'stdout': False, 'stderr': False, 'return': False},
            'state': 'preserved',
        }
        self._deliver(command['id'], command['barrier'], result)

    def _execute(self, command):
        run_id = command['id']
        threads_before = set(threading.enumerate())
        self._output.begin(run_id)
        _RPCS.begin(run_id)
        sys.stdout, sys.stderr = self._sinks
        exit_code = None
        if command.get('source_path'):
            value, exc, exit_code = self._run_file(run_id, command['source_path'], command.get('argv', []))
        else:
            value, exc = self._run_cell(run_id, command['code'], f'<repl:{run_id}>')
        interrupted = self._cell_cancelled  # a SIGINT reached the cell: the run is being stopped
        cancelled, policy_error = self._epilogue(run_id, threads_before)
        preview = extra = None
        if exc is None and policy_error is None and value is not _MISSING:
            preview = _preview(value)
            if preview[2]:  # too big (or not shown) for the preview: perhaps an artifact
                extra = self._auto_artifact(run_id, value, interrupted)
        sys.stdout, sys.stderr = self._real_streams
        self._install_baseline()
        captured = self._output.end()
        _CHILDREN.sweep()  # `finished` for the jobs that ended in the run comes before its result
        result = self._result(run_id, preview, exc, captured, policy_error)
        if extra:
            result.update(extra)
        if exit_code is not None:
            result['exit_code'] = exit_code
        if cancelled:
            result['background_tasks_cancelled'] = cancelled
        self._deliver(run_id, command['barrier'], result)

    def _run_file(self, run_id, path, argv):
        """Run a saved file as `python PATH ARGV...` would, in the namespace; returns (trailing
        value or _MISSING, exception or None, exit code or None). SystemExit ends the run with
        an exit code instead of an error."""
        try:
            source = _read_source(path)
            _check_argv(argv)
        except _RunFailure as exc:
            return _MISSING, exc, None
        saved = (sys.argv, sys.path, self._namespace.get('__file__', _MISSING))
        sys.argv = [path, *argv]
        sys.path = [os.path.dirname(path), *sys.path]
        self._namespace.update({'__name__': '__main__', '__file__': path})
        try:
            value, exc = self._run_cell(run_id, source, path)
        finally:
            # The same list objects again (the run only rebound the names); __name__ comes
            # back with the baseline.
            sys.argv, sys.path, saved_file = saved
            if saved_file is _MISSING:
                self._namespace.pop('__file__', None)
            else:
                self._namespace['__file__'] = saved_file
        if not isinstance(exc, SystemExit):
            return value, exc, None
        status = self._exit_status(exc.code)
        return _MISSING, (_RunFailure(FILE_EXITED.format(status)) if status else None), status

    def _exit_status(self, code):
        """The status `python script.py` exits with for SystemExit(code): None is 0, an int is
        itself; anything else is written to the run's stderr and is 1."""
        if code is None:
            return 0
        if isinstance(code, int):
            status = int(code)
            if -(1 << EXIT_STATUS_BITS) <= status < 1 << EXIT_STATUS_BITS:
                return status
        try:
            message = str(code)
        except Exception:
            message = '<exit code str() failed>'
        self._sinks[1].write(message[:EXIT_MESSAGE_CHARS] + '\n')
        return 1

    def _run_cell(self, run_id, source, filename):
        """Run one cell; returns (trailing value or _MISSING, exception or None)."""
        self._sources.add(run_id, filename, source)
        try:
            body, tail = _compile_cell(source, filename)
        except Exception as exc:  # SyntaxError, or the parser's ValueError/RecursionError/MemoryError
            return _MISSING, exc
        context = contextvars.copy_context()
        context.run(_RUN_ID.set, run_id)
        task = context.run(self._loop.create_task, _cell_main(body, tail, self._namespace))
        self._drive(task)
        if task.cancelled():
            return _MISSING, asyncio.CancelledError()
        exc = task.exception()
        return (_MISSING, exc) if exc is not None else (task.result(), None)

    def _drive(self, task):
        """Run the cell task to completion on the persistent loop; only now may SIGINT
        interrupt anything."""
        self._cell_cancelled = False
        self._cell_task = task
        if self._interrupt_pending:
            self._on_sigint(signal.SIGINT, None)  # it came while the command was prepared
        try:
            while not task.done():
                try:
                    self._loop.run_until_complete(task)
                except BaseException:
                    # Raised outside the cell's own code (an interrupted background task or
                    # callback, a stopped loop): end the cell itself too.
                    if not task.done():
                        task.cancel()
        finally:
            with self._cell_lock:
                self._cell_task = None

    def _cell_running(self):
        task = self._cell_task
        return task is not None and not task.done()

    def _on_sigint(self, signum, frame):
        if not self._cell_running():
            # The server interrupts only a run it has dispatched: with a command taken or
            # incoming, the SIGINT is for that one and stops its cell as soon as it starts.
            # Between cells it is ignored.
            if self._command_taken or self._channel.command_incoming():
                self._interrupt_pending = True
            return
        task = self._cell_task
        if not self._cell_cancelled:
            # First, cancel: CancelledError at the cell's current await is a safe point,
            # while a KeyboardInterrupt may land anywhere (even between acquiring a lock
            # and the `async with` that releases it). The retry covers a cell that is
            # not awaiting.
            self._cell_cancelled = True
            task.cancel()
            self._loop.call_soon_threadsafe(_wake)
            self._interrupt_retry.request(task)
            return
        site = _interrupt_site(frame)
        if site == 'user':
            raise KeyboardInterrupt  # the cell kept running after the cancel: it is spinning
        if site == 'busy':
            self._interrupt_retry.request(task)

    def _redeliver_sigint(self, task):
        # Under the lock the cell cannot end between the check and the signal, so a retry
        # never reaches the next cell.
        with self._cell_lock:
            if self._cell_task is task and not task.done():
                # A real signal (not interrupt_main) also wakes a blocking system call.
                signal.pthread_kill(self._main_thread_id, signal.SIGINT)

    def _epilogue(self, run_id, threads_before):
        """Stop what the cell left behind; returns (tasks cancelled, policy error or None).
        A policy error means the worker cannot vouch for its state and will exit."""
        cancelled, refused = self._cancel_tasks()
        _RPCS.end()  # after the tasks: a cancelled acall has sent its own rpc_cancel
        self._loop.cancel_cell_callbacks()
        if refused:
            return cancelled, TASKS_REFUSED
        if self._background_work_left(run_id, threads_before):
            return cancelled, THREADS_LEFT
        return cancelled, None

    def _cancel_tasks(self):
        """Cancel the tasks the cell left pending and give them TASK_CANCEL_GRACE to finish.
        Returns (how many were cancelled, whether any is still alive)."""
        deadline = time.monotonic() + TASK_CANCEL_GRACE
        cancelled, waiters = set(), set()
        while True:
            pending = asyncio.all_tasks(self._loop) - waiters
            remaining = deadline - time.monotonic()
            if not pending or remaining <= 0:
                return len(cancelled), bool(pending)
            for task in pending - cancelled:
                task.cancel()
            cancelled |= pending
            waiter = self._loop.create_task(asyncio.wait(pending, timeout=remaining))
            waiters.add(waiter)
            try:
                self._loop.run_until_complete(waiter)
            except BaseException:
                pass  # a task let SystemExit/KeyboardInterrupt escape the loop; it is done now

    def _background_work_left(self, run_id, threads_before):
        """Whether the cell left threads (other than the executor's idle ones) or executor
        jobs running. Work that is just finishing gets a short grace: asyncio's waitpid
        thread, say, wakes the cell and then needs a moment to exit."""
        deadline = time.monotonic() + BACKGROUND_EXIT_GRACE
        while self._executor.busy(run_id) or self._new_threads(threads_before):
            if time.monotonic() >= deadline:
                return True
            time.sleep(0.005)
        return False

    def _new_threads(self, before):
        executor_threads = self._executor.threads()
        # enumerate() drops a thread once its Python code has finished.
        return [t for t in threading.enumerate() if t not in before and t not in executor_threads]

    def _auto_artifact(self, run_id, value, interrupted):
        """Upload a trailing value too big for its preview (contract 9.4): {"artifact":
        reference}, {"artifact_error": why} or None (a type that never becomes one, or a
        value that is not exact JSON). Runs after the cell's code and its epilogue but
        before the result, while the run is active on both sides, as a task on the loop so
        a SIGINT stops it as it would stop a cell."""
        format = _auto_artifact_format(value)
        if format is None:
            return None
        if format == 'json':
            try:
                _check_artifact_json(value)
            except _NotArtifact as exc:
                return {'artifact_error': _artifact_error(ARTIFACT_AUTO_FAILED.format(exc))} if exc.budget else None
            except Exception as exc:  # MemoryError, say: the run's result matters more
                return {'artifact_error': _artifact_error(ARTIFACT_AUTO_FAILED.format(_type_name(type(exc))))}
        if interrupted:
            return {'artifact_error': ARTIFACT_AUTO_INTERRUPTED}
        context = contextvars.copy_context()
        context.run(_RUN_ID.set, run_id)
        _RPCS.begin(run_id)  # the epilogue closed the bridge; the run is still active
        try:
            task = context.run(self._loop.create_task, _auto_upload(value, format))
            self._drive(task)
        finally:
            _RPCS.end()
            self._loop.cancel_cell_callbacks()
        if task.cancelled():
            return {'artifact_error': ARTIFACT_AUTO_INTERRUPTED}
        exc = task.exception()
        if isinstance(exc, KeyboardInterrupt):
            return {'artifact_error': ARTIFACT_AUTO_INTERRUPTED}
        if exc is not None:
            try:
                message = str(exc)
            except Exception:
                message = _type_name(type(exc))
            return {'artifact_error': _artifact_error(ARTIFACT_AUTO_FAILED.format(message))}
        return {'artifact': task.result()}

    def _result(self, run_id, preview, exc, captured, policy_error):
        result = {
            'success': exc is None and policy_error is None,
            'stdout': captured.text('stdout'),
            'stderr': captured.text('stderr'),
            'return_value': None,
            'error': None,
            'truncated': {'stdout': captured.truncated['stdout'], 'stderr': captured.truncated['stderr'], 'return': False},
            'state': 'cleared' if policy_error else 'preserved',
        }
        if policy_error:
            result['error'] = policy_error
        elif exc is not None:
            result['error'] = _format_error(exc, run_id, self._sources)
        elif preview is not None:
            shown, plain, truncated = preview
            result['return_value'] = shown
            result['truncated']['return'] = truncated
            if plain is not _MISSING:
                result['value'] = plain
        return result

    def _deliver(self, run_id, barrier, result):
        # From here on a SIGINT can only be for a command still incoming.
        self._command_taken = self._interrupt_pending = False
        try:
            # One write: once the server sees it, it holds every native byte of the run.
            os.write(2, b'\x1e' + barrier.encode('utf-8', 'replace') + b'\x1e')
        except OSError:
            pass  # the cell closed fd 2; the server's bounded barrier wait covers this
        self._channel.send({'type': 'result', 'id': run_id, 'result': result})
        if result['state'] == 'cleared':
            _exit_now(EXIT_STATE_CLEARED)


def _main():
    channel = _Channel()
    worker = _Worker(channel)
    _CHILDREN.start(channel)
    _RPCS.start(channel)
    sys.argv = ['']
    # The bootstrap took the project directory off sys.path while the worker imported
    # the standard library (a project's queue.py must not replace queue); cells get it
    # back, as in a Python REPL.
    path0 = globals().pop('_REPL_MCP_PATH0', None)
    if path0 is not None:
        sys.path.insert(0, path0)
    channel.send({
        'type': 'ready',
        'protocol': PROTOCOL_VERSION,
        'pid': os.getpid(),
        'python_version': platform.python_version(),
        'python_executable': sys.executable,
    })
    channel.start_reader()
    worker.serve()


if __name__ == '__main__':
    try:
        _main()
    except BaseException:
        # A worker bug must surface as a crash the server can see, not a half-working
        # worker (or one that user threads keep alive).
        traceback.print_exc(file=sys.__stderr__)
        _exit_now(1)
