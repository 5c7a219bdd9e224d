"""Tracebacks of the user's code and the source history they are drawn from.

A result's `error` shows only the user's frames: cell code (filename `<repl:RUN_ID>`) and
saved files whose source is retained. The worker's own modules have filenames of their
own (`<repl-mcp worker>/cells.py`, see bootstrap.py), so their frames never qualify."""

import asyncio
import linecache
import sys

from .common import CELL_MODULE, is_worker_module
from .limits import (
    SOURCE_BYTES, SOURCE_RUNS, TRACEBACK_CAUSE_CHARS, TRACEBACK_CHARS, TRACEBACK_FRAMES,
    TRACEBACK_MESSAGE_CHARS, TRACEBACK_SOURCE_CHARS, TYPE_NAME_CHARS,
)
from .messages import (
    CAUSED_BY, INTERRUPTED, RAISED_WHILE_HANDLING, SOURCE_UNKNOWN, STR_FAILED, TRACEBACK_HEAD,
)

_type_qualname_slot = type.__dict__['__qualname__'].__get__
_type_module_slot = type.__dict__['__module__'].__get__


def exception_name(cls):
    """`module.QualName` as Python's own tracebacks print it (bare for builtins, for classes
    defined in cells and for the worker's own, ToolError say), read from the type's slots."""
    name = _type_qualname_slot(cls)
    module = _type_module_slot(cls)
    if type(module) is str and module not in ('builtins', '__main__', CELL_MODULE) and not is_worker_module(module):
        name = f'{module}.{name}'
    return name[:TYPE_NAME_CHARS]


def source_lines(source):
    """Lines as the compiler numbers them (\\n, \\r\\n and \\r end a line; str.splitlines
    would also split on form feeds and other separators)."""
    lines = source.replace('\r\n', '\n').replace('\r', '\n').split('\n')
    if lines[-1] == '':
        lines.pop()
    return [line + '\n' for line in lines]


class SourceHistory:
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
        lines = source_lines(source)
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


def cell_frames(exc, sources):
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
            message = STR_FAILED
    name = exception_name(type(exc))
    return f'{name}: {message[:limit]}' if message else name


def _chain_note(exc, sources):
    if exc.__cause__ is not None:
        return CAUSED_BY.format(_describe(exc.__cause__, TRACEBACK_CAUSE_CHARS, sources))
    if exc.__context__ is not None and not exc.__suppress_context__:
        return RAISED_WHILE_HANDLING.format(_describe(exc.__context__, TRACEBACK_CAUSE_CHARS, sources))
    return ''


class RunFailure(Exception):
    """A failure reported by its message alone: a saved file refused before it ran, or one
    that exited with a non-zero status."""


def format_error(exc, run_id, sources):
    """The bounded traceback of the user's frames reported as the result's `error`."""
    if isinstance(exc, (KeyboardInterrupt, asyncio.CancelledError)):
        return INTERRUPTED.format(run_id)
    if isinstance(exc, RunFailure):
        return str(exc)
    head = TRACEBACK_HEAD
    last = _describe(exc, TRACEBACK_MESSAGE_CHARS, sources) + _chain_note(exc, sources)
    room = TRACEBACK_CHARS - len(head) - len(last) - 2
    kept = []
    for frame in reversed(cell_frames(exc, sources)):  # the innermost frames matter most
        if len(frame) + 1 > room:
            break
        kept.append(frame)
        room -= len(frame) + 1
    return '\n'.join([head, *reversed(kept), last])

