"""repl-mcp Python worker: one persistent CPython namespace driven over the wire protocol
described in PROTOCOL.md (next to this file).

The Go server embeds this file and runs it as `python -u -c <source>`, so it must stay a
single self-contained, standard-library-only file: it cannot import itself, and everything
below lives in the `__main__` module (filename `<string>`). Cell code runs in a separate
namespace dict whose code objects are named `<repl:RUN_ID>`; that prefix is how worker
frames are kept out of user tracebacks.
"""

import signal

# Until the cell-aware handler is installed, a SIGINT sent to the process group must not
# kill a worker that is still starting.
signal.signal(signal.SIGINT, signal.SIG_IGN)

import ast
import asyncio
import builtins
import contextvars
import inspect
import io
import json
import linecache
import math
import os
import platform
import queue
import sys
import threading
import time
import weakref
from concurrent.futures import ThreadPoolExecutor

PROTOCOL_VERSION = 1
MAX_FRAME = 1_048_576  # bytes per frame, newline included
INBOX_SLOTS = 2
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

TASK_CANCEL_GRACE = 0.25
BACKGROUND_EXIT_GRACE = 0.1  # seconds for threads and executor jobs that are just finishing
INTERRUPT_RETRY = 0.05  # seconds before SIGINT is delivered again to a cell it did not stop
EXECUTOR_PENDING_JOBS = 64

INTERRUPTED = 'Execution interrupted ({}); namespace preserved'
TASKS_REFUSED = 'Background tasks refused cancellation; worker stopped and variables cleared'
THREADS_LEFT = (
    'Cell left active background threads or executor work; worker stopped and variables '
    'cleared. Join threads before the cell ends; use mcp.acall for concurrent bridge calls.'
)
EXECUTOR_FULL = f'Too many pending default executor jobs (limit {EXECUTOR_PENDING_JOBS})'

# Names every cell starts from; re-installed after each cell so user shadowing lasts only
# for that cell. Helpers (sh, mcp, ...) join this mapping.
BASELINE_NAMES = {'__name__': '__repl__', '__builtins__': builtins}

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
    non-daemon user threads must not delay or outlive a worker that is being stopped."""
    os._exit(status)


def _protocol_error(message):
    try:
        os.write(2, f'repl-mcp worker: protocol error: {message}\n'.encode('utf-8', 'replace'))
    finally:
        _exit_now(EXIT_PROTOCOL_ERROR)


def _encode_frame(frame):
    # Lone surrogates (from user strings) become '?', which keeps the line valid UTF-8 JSON.
    text = json.dumps(frame, ensure_ascii=False, separators=(',', ':'))
    return text.encode('utf-8', 'replace') + b'\n'


def _parse_command(line):
    try:
        frame = json.loads(line.decode('utf-8'))
    except (ValueError, RecursionError):
        _protocol_error('frame is not UTF-8 JSON')
    kind = frame.get('type') if isinstance(frame, dict) else None
    if kind == 'shutdown':
        return frame
    if kind == 'execute' and all(isinstance(frame.get(key), str) for key in ('id', 'code', 'barrier')):
        return frame
    _protocol_error(f'unknown or malformed frame (type {repr(kind)[:100]})')


class _Channel:
    """The two protocol fds. Outgoing frames are written whole under one lock; incoming frames
    are bounded, parsed and queued by a daemon reader thread."""

    def __init__(self):
        spec = os.environ.pop('REPL_MCP_WORKER_FDS', '')
        try:
            read_fd, write_fd = (int(part) for part in spec.split(','))
            # User subprocesses must never hold the protocol pipes.
            os.set_inheritable(read_fd, False)
            os.set_inheritable(write_fd, False)
        except (ValueError, OSError) as exc:
            _protocol_error(f'REPL_MCP_WORKER_FDS={spec!r} is not two open fds "R,W": {exc}')
        self._reader = open(read_fd, 'rb')
        self._writer = open(write_fd, 'wb', buffering=0)
        self._write_lock = threading.Lock()
        self.inbox = queue.Queue(INBOX_SLOTS)

    def send(self, frame):
        data = memoryview(_encode_frame(frame))
        with self._write_lock:
            try:
                while data:
                    data = data[self._writer.write(data):]
            except OSError:
                _exit_now(0)  # the server closed its end: there is nobody left to report to

    def start_reader(self):
        threading.Thread(target=self._read_forever, name='repl-mcp-reader', daemon=True).start()

    def _read_forever(self):
        while True:
            try:
                line = self._reader.readline(MAX_FRAME + 1)
            except OSError:
                line = b''
            if len(line) > MAX_FRAME:
                _protocol_error('frame exceeds 1 MiB')
            if not line.endswith(b'\n'):
                _exit_now(0)  # EOF, even in the middle of a cell: the server is gone or stopping us
            try:
                self.inbox.put_nowait(_parse_command(line))
            except queue.Full:
                _protocol_error(f'more than {INBOX_SLOTS} commands queued')


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
    """Cell sources for tracebacks, also registered in linecache so traceback, inspect and
    friends work on cell code: at most SOURCE_RUNS runs and SOURCE_BYTES (measured as the
    retained objects' sizes), oldest evicted first together with its linecache entry."""

    def __init__(self):
        self._lines = {}  # filename -> lines, oldest first
        self._sizes = {}
        self._total = 0

    def add(self, filename, source):
        self._forget(filename)
        lines = _source_lines(source)
        size = sys.getsizeof(lines) + sum(map(sys.getsizeof, lines))
        self._lines[filename] = lines
        self._sizes[filename] = size
        self._total += size
        # mtime None marks a non-file entry that linecache.checkcache leaves alone.
        linecache.cache[filename] = (len(source), None, lines, filename)
        while len(self._lines) > 1 and (len(self._lines) > SOURCE_RUNS or self._total > SOURCE_BYTES):
            self._forget(next(iter(self._lines)))

    def line(self, filename, lineno):
        lines = self._lines.get(filename, ())
        if isinstance(lineno, int) and 1 <= lineno <= len(lines):
            return lines[lineno - 1].strip()[:TRACEBACK_SOURCE_CHARS]
        return ''

    def _forget(self, filename):
        if filename in self._lines:
            del self._lines[filename]
            self._total -= self._sizes.pop(filename)
            linecache.cache.pop(filename, None)


def _is_repl_file(name):
    return type(name) is str and name.startswith('<repl:')


def _frame_text(sources, filename, lineno, function=None):
    where = f'  File "{filename}", line {lineno if lineno is not None else "?"}'
    if function is not None:
        where += f', in {function}'
    source = sources.line(filename, lineno)
    return f'{where}\n    {source}' if source else where


def _cell_frames(exc, sources):
    """Traceback entries of cell code only (worker and library frames are dropped)."""
    frames = []
    tb = exc.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if _is_repl_file(code.co_filename):
            frames.append(_frame_text(sources, code.co_filename, tb.tb_lineno, code.co_name))
        tb = tb.tb_next
    if isinstance(exc, SyntaxError) and _is_repl_file(exc.filename):
        frames.append(_frame_text(sources, exc.filename, exc.lineno))
    return frames[-TRACEBACK_FRAMES:]


def _describe(exc, limit):
    """`Type: message` for an exception, the message cut to `limit` characters."""
    if isinstance(exc, SyntaxError) and _is_repl_file(exc.filename):
        message = str(exc.msg)  # the location is already shown as a frame
    else:
        try:
            message = str(exc)
        except Exception:
            message = '<exception str() failed>'
    name = _exception_name(type(exc))
    return f'{name}: {message[:limit]}' if message else name


def _chain_note(exc):
    if exc.__cause__ is not None:
        return f'\n(caused by {_describe(exc.__cause__, TRACEBACK_CAUSE_CHARS)})'
    if exc.__context__ is not None and not exc.__suppress_context__:
        return f'\n(raised while handling {_describe(exc.__context__, TRACEBACK_CAUSE_CHARS)})'
    return ''


def _format_error(exc, run_id, sources):
    """The bounded, cell-only traceback reported as the result's `error`."""
    if isinstance(exc, (KeyboardInterrupt, asyncio.CancelledError)):
        return INTERRUPTED.format(run_id)
    head = 'Traceback (most recent call last):'
    last = _describe(exc, TRACEBACK_MESSAGE_CHARS) + _chain_note(exc)
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
    if cls is list or cls is tuple:
        if len(value) > PREVIEW_ITEMS:
            raise _NotPreviewable
        return [_plain_json(item, depth + 1, budget) for item in value]
    if cls is dict:
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


def _omitted(value):
    cls = type(value)
    name = _type_name(cls)
    # Identity checks only: `in` would run a metaclass __eq__.
    if any(cls is shown for shown in _LENGTH_SHOWN):
        return f'<{name}; length={len(value)}; safe preview omitted>'
    return f'<{name}; safe preview omitted>'


def _preview(value):
    """(return_value, JSON value or _MISSING, truncated) without running user code."""
    if value is None:
        return None, _MISSING, False
    if type(value) is str:
        shown, _, complete = _utf8_prefix(_json_text(value[:PREVIEW_BYTES]), PREVIEW_BYTES)
        if complete and len(value) <= PREVIEW_BYTES:
            return shown, value, False
        return shown, _MISSING, True
    try:
        plain = _plain_json(value, 0, [PREVIEW_NODES])
    except _NotPreviewable:
        return _omitted(value), _MISSING, True
    text = _json_text(plain)
    if len(text.encode('utf-8', 'replace')) <= PREVIEW_BYTES:
        return text, plain, False
    return _omitted(value), _MISSING, True


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


_INTERRUPTIBLE_WORKER_CODE = frozenset({_Sink.write.__code__, _CellOutput.write.__code__, _utf8_prefix.__code__})


# Library code that runs on behalf of its caller: a SIGINT caught inside it is judged by the
# first frame up the stack that is not in one of these.
_CALLER_JUDGED_MODULES = ('asyncio.', 'concurrent.futures.', 'selectors', 'threading')


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
    """Runs cells one at a time in one namespace on one event loop, and reports each."""

    def __init__(self, channel):
        self._channel = channel
        self._namespace = dict(BASELINE_NAMES)
        self._sources = _SourceHistory()
        self._output = _Output(channel)
        self._real_streams = (sys.stdout, sys.stderr)
        self._sinks = (_Sink('stdout', sys.stdout, self._output), _Sink('stderr', sys.stderr, self._output))
        self._executor = _CellExecutor()
        self._loop = _CellLoop()
        self._loop.set_default_executor(self._executor)
        self._cell_task = None  # set only while cell code may be interrupted
        self._cell_lock = threading.Lock()  # orders clearing _cell_task with SIGINT retries
        self._cell_cancelled = False  # whether a SIGINT already cancelled the running cell
        self._main_thread_id = threading.main_thread().ident
        self._interrupt_retry = _InterruptRetry(self._redeliver_sigint)
        signal.signal(signal.SIGINT, self._on_sigint)

    def serve(self):
        while True:
            command = self._channel.inbox.get()
            if command['type'] == 'shutdown':
                _exit_now(0)
            self._execute(command)

    def _execute(self, command):
        run_id = command['id']
        threads_before = set(threading.enumerate())
        self._output.begin(run_id)
        sys.stdout, sys.stderr = self._sinks
        value, exc = self._run_cell(run_id, command['code'])
        cancelled, policy_error = self._epilogue(run_id, threads_before)
        sys.stdout, sys.stderr = self._real_streams
        self._namespace.update(BASELINE_NAMES)
        captured = self._output.end()
        result = self._result(run_id, value, exc, captured, policy_error)
        if cancelled:
            result['background_tasks_cancelled'] = cancelled
        self._deliver(run_id, command['barrier'], result)

    def _run_cell(self, run_id, source):
        """Run one cell; returns (trailing value or _MISSING, exception or None)."""
        filename = f'<repl:{run_id}>'
        self._sources.add(filename, source)
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
        self._cell_task = task
        self._cell_cancelled = False
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
            return  # between cells, or while the worker itself works: ignored
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

    def _result(self, run_id, value, exc, captured, policy_error):
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
        elif value is not _MISSING:
            shown, plain, truncated = _preview(value)
            result['return_value'] = shown
            result['truncated']['return'] = truncated
            if plain is not _MISSING:
                result['value'] = plain
        return result

    def _deliver(self, run_id, barrier, result):
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
    sys.argv = ['']
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
        import traceback

        traceback.print_exc(file=sys.__stderr__)
        _exit_now(1)
