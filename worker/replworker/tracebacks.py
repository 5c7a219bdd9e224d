"""Tracebacks of the user's code and the source history they are drawn from.

A result's `error` shows only the user's frames: cell code (filename `<repl:RUN_ID>`) and
saved files whose source is retained. The worker's own modules have filenames of their
own (`<repl-mcp worker>/cells.py`, see bootstrap.py), so their frames never qualify."""

import asyncio
import builtins
import linecache
import sys

from .common import CELL_MODULE, is_worker_module
from .limits import (
    SOURCE_BYTES, SOURCE_RUNS, TRACEBACK_CAUSE_CHARS, TRACEBACK_CHAIN, TRACEBACK_CHARS, TRACEBACK_FRAMES,
    TRACEBACK_MESSAGE_CHARS, TRACEBACK_SOURCE_CHARS, TYPE_NAME_CHARS,
)
from .messages import (
    CHAIN_CAUSE, CHAIN_CONTEXT, CHAIN_ELIDED, GROUP_DEPTH_CUT, GROUP_MORE, GROUP_TRACEBACK_HEAD, INTERRUPTED,
    SOURCE_UNKNOWN, STR_FAILED, SYNTAX_NO_DETAIL, TRACEBACK_HEAD,
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
    return frames[-TRACEBACK_FRAMES:]


def _message(exc):
    try:
        return str(exc)
    except Exception:
        return STR_FAILED


def _notes(exc):
    """PEP 678 notes (Python 3.11+), one a line after the message, as Python prints them."""
    try:
        notes = exc.__notes__
    except Exception:
        return ''
    if type(notes) is not list:
        return ''
    return ''.join('\n' + note for note in notes if type(note) is str)


def _source_window(line, start, end):
    """At most TRACEBACK_SOURCE_CHARS of a long source line, around the columns [start, end)
    a caret marks: (the shown text, where it starts in `line`)."""
    if len(line) <= TRACEBACK_SOURCE_CHARS:
        return line, 0
    first = max(0, min(start - TRACEBACK_SOURCE_CHARS // 2, len(line) - TRACEBACK_SOURCE_CHARS))
    return line[first:first + TRACEBACK_SOURCE_CHARS], first


def _syntax_location(exc):
    """The lines Python prints for a SyntaxError before its message: `File ..., line N`,
    the source line and the caret line under the error (traceback's own rules, as of
    Python 3.13), and the suffix of the message when there is no line number."""
    lineno, filename = exc.lineno, exc.filename
    if type(filename) is str:
        filename = filename[:TRACEBACK_SOURCE_CHARS]
    if lineno is None:
        return [], f' ({filename})' if filename is not None else ''
    lines = [f'  File "{filename or "<string>"}", line {lineno}']
    text = exc.text
    if type(text) is not str:
        return lines, ''
    rtext = text.rstrip('\n')
    ltext = rtext.lstrip(' \n\f')
    spaces = len(rtext) - len(ltext)
    offset, end_offset = exc.offset, exc.end_offset
    if type(offset) is not int:
        lines.append('    ' + _source_window(ltext, 0, 0)[0])
        return lines, ''
    if exc.lineno == exc.end_lineno:
        end_offset = end_offset if type(end_offset) is int and end_offset != 0 else offset
    else:
        end_offset = len(rtext) + 1
    if offset > len(text):
        offset = len(rtext) + 1
    if end_offset > len(text):
        end_offset = len(rtext) + 1
    if offset >= end_offset or end_offset < 0:
        end_offset = offset + 1
    # 1-based columns into the line, to 0-based ones into its stripped text
    colno, end_colno = offset - 1 - spaces, end_offset - 1 - spaces
    shown, first = _source_window(ltext, colno, end_colno)
    lines.append('    ' + shown)
    if colno >= 0:
        colno, end_colno = colno - first, min(end_colno - first, len(shown))
        # Whitespace other than spaces (tabs) is kept, so the caret lines up.
        caretspace = ''.join(c if c.isspace() else ' ' for c in shown[:colno])
        lines.append('    ' + caretspace + '^' * max(end_colno - colno, 1))
    return lines, ''


def _describe(exc, limit):
    """`Type: message` for an exception (the message and its notes cut to `limit`
    characters), after the location of a SyntaxError as Python shows it."""
    name = exception_name(type(exc))
    location = []
    if isinstance(exc, SyntaxError):
        location, suffix = _syntax_location(exc)
        message = (str(exc.msg) if exc.msg else SYNTAX_NO_DETAIL) + suffix
    else:
        message = _message(exc)
    message = (message + _notes(exc))[:limit]
    return '\n'.join([*location, f'{name}: {message}' if message else name])


def _older(exc):
    """(the exception Python prints before `exc`, the separator between the two), or None."""
    if exc.__cause__ is not None:
        return exc.__cause__, CHAIN_CAUSE
    if exc.__context__ is not None and not exc.__suppress_context__:
        return exc.__context__, CHAIN_CONTEXT
    return None


def _chain(exc, sources):
    """The chain Python prints, newest first: [(exception, its separator from the next
    newer one)]. An exception that only repeats the one after it (the same type and
    message, and no frames of the user's: a library's `raise KeyError(key) from err`) is
    left out; the chain goes on with its own cause or context."""
    chain, seen = [(exc, None)], {id(exc)}
    newer, current = exc, exc
    while True:
        link = _older(current)
        if link is None or id(link[0]) in seen:
            return chain
        older, separator = link
        seen.add(id(older))
        current = older
        if type(older) is type(newer) and _message(older) == _message(newer) and not cell_frames(older, sources):
            continue
        chain.append((older, separator))
        newer = older


def _block(exc, room, limit, newest, sources):
    """One exception as Python prints it, within `room` characters (None when even its
    description does not fit): the head, the user's frames, innermost first to fit, and
    the description; an exception group with its sub-exceptions (_GroupLayout)."""
    if _sub_exceptions(exc) is not None:
        layout = _GroupLayout(sources, room)
        layout.one(exc, limit, newest)
        text = '\n'.join(layout.lines)
        return None if len(text) > room and not newest else text
    frames = cell_frames(exc, sources)
    last = _describe(exc, limit)
    # Python prints the head for an exception with a traceback; a cell that did not
    # compile has no frame of the user's and reads as Python prints a SyntaxError.
    head = [TRACEBACK_HEAD] if frames or (newest and not isinstance(exc, SyntaxError)) else []
    room -= len(last) + sum(len(line) + 1 for line in head)
    if room < 0 and not newest:
        return None
    kept = []
    for frame in reversed(frames):  # the innermost frames matter most
        if len(frame) + 1 > room:
            break
        kept.append(frame)
        room -= len(frame) + 1
    return '\n'.join([*head, *reversed(kept), last])


# Python's own bounds on an exception group's layout (traceback.TracebackException's
# max_group_width and max_group_depth).
GROUP_WIDTH = 15
GROUP_DEPTH = 10


def _group_types():
    """The exception-group base classes there are: the builtin one (Python 3.11+) and, on
    3.10, the `exceptiongroup` backport's once something imported it."""
    found = []
    builtin = getattr(builtins, 'BaseExceptionGroup', None)
    if builtin is not None:
        found.append(builtin)
    backport = getattr(sys.modules.get('exceptiongroup'), 'BaseExceptionGroup', None)
    if isinstance(backport, type) and backport not in found:
        found.append(backport)
    return tuple(found)


def _sub_exceptions(exc):
    """An exception group's sub-exceptions, or None for any other exception (or a group
    whose `exceptions` is not a sequence of exceptions)."""
    groups = _group_types()
    if not groups or not isinstance(exc, groups):
        return None
    try:
        subs = tuple(exc.exceptions)
    except Exception:
        return None
    return subs if all(isinstance(sub, BaseException) for sub in subs) else None


class _GroupLayout:
    """An exception group laid out as Python prints it (traceback.TracebackException.format,
    3.11+): its head, frames and description behind a `|` margin (`+` on the outermost
    head), each sub-exception with its own chain in a numbered section below, nested groups
    indented further, at most GROUP_WIDTH sections a group and GROUP_DEPTH levels. Only the
    user's frames are shown, as everywhere. Sections that would take the text past `room`
    characters are counted in an `and N more exceptions` section instead."""

    def __init__(self, sources, room):
        self.sources = sources
        self.room = room
        self.lines = []
        self.size = 0  # characters of self.lines joined
        self.depth = 0  # Python's exception_group_depth
        self.need_close = False

    def add(self, line):
        self.size += len(line) + (1 if self.lines else 0)
        self.lines.append(line)

    def emit(self, text, margin='|'):
        prefix = ' ' * (2 * self.depth) + (margin + ' ' if self.depth else '')
        for line in text.split('\n'):
            self.add(prefix + line)

    def chain(self, exc):
        """A sub-exception and its causes and contexts, oldest first."""
        for link, separator in reversed(_chain(exc, self.sources)):
            self.one(link, TRACEBACK_CAUSE_CHARS, False)
            if separator:
                self.emit(separator[1:-1])  # its outer newlines end and start the blocks

    def one(self, exc, limit, newest):
        frames = cell_frames(exc, self.sources)
        subs = _sub_exceptions(exc)
        if subs is None:
            if frames:
                self.emit(TRACEBACK_HEAD)
            for frame in frames:
                self.emit(frame)
            self.emit(_describe(exc, limit))
            return
        if self.depth > GROUP_DEPTH:
            self.emit(GROUP_DEPTH_CUT.format(GROUP_DEPTH))
            return
        outermost = self.depth == 0
        if outermost:
            self.depth += 1
        if frames or newest:
            self.emit(GROUP_TRACEBACK_HEAD, margin='+' if outermost else '|')
        for frame in frames:
            self.emit(frame)
        self.emit(_describe(exc, limit))
        self.sections(subs)
        if outermost:
            self.depth = 0

    def sections(self, subs):
        shown = min(len(subs), GROUP_WIDTH)
        self.need_close = False
        for i in range(shown + (len(subs) > shown)):
            last = i == shown + (len(subs) > shown) - 1
            mark, size = len(self.lines), self.size
            if i < shown:
                self.section(i, str(i + 1), last, lambda sub=subs[i]: self.chain(sub))
                if self.size <= self.room:
                    continue
                del self.lines[mark:]  # past the bound: this section and the rest are counted
                self.size = size
            remaining = len(subs) - i
            self.section(i, '...', True, lambda n=remaining: self.emit(GROUP_MORE.format(n, 's' if n > 1 else '')))
            return

    def section(self, i, title, last, body):
        self.add(' ' * (2 * self.depth) + ('+-' if i == 0 else '  ') + f'+---------------- {title} ----------------')
        self.depth += 1
        if last:
            self.need_close = True  # a nested group that ends this section closes it itself
        body()
        if last and self.need_close:
            self.add(' ' * (2 * self.depth) + '+------------------------------------')
            self.need_close = False
        self.depth -= 1


class RunFailure(Exception):
    """A failure reported by its message alone: a saved file refused before it ran, or one
    that exited with a non-zero status."""


def is_interrupt(exc):
    """Whether exc is how an interrupt stops a cell: at an await, or in its code. Its
    result's `error` is then the interrupt's message, and the result says `interrupted`
    (PROTOCOL.md, "The result object") so that the server need not read the words."""
    return isinstance(exc, (KeyboardInterrupt, asyncio.CancelledError))


def format_error(exc, run_id, sources):
    """The bounded traceback of the user's frames reported as the result's `error`: the
    chain of causes and contexts as Python prints it, the newest exception whole first and
    then as many older ones as fit."""
    if is_interrupt(exc):
        return INTERRUPTED.format(run_id)
    if isinstance(exc, RunFailure):
        return str(exc)
    chain = _chain(exc, sources)
    elided = max(len(chain) - TRACEBACK_CHAIN, 0)
    chain = chain[:TRACEBACK_CHAIN]
    reserve = len(CHAIN_ELIDED.format(len(chain) + elided)) if len(chain) > 1 or elided else 0
    room = TRACEBACK_CHARS - reserve
    blocks = []  # newest first, each followed by the separator from the next newer one
    for i, (link, separator) in enumerate(chain):
        newest = i == 0
        separator = separator or ''
        text = _block(link, room - len(separator), TRACEBACK_MESSAGE_CHARS if newest else TRACEBACK_CAUSE_CHARS, newest, sources)
        if text is None:
            elided += len(chain) - i
            break
        blocks.append(text + separator)
        room -= len(text) + len(separator)
    note = CHAIN_ELIDED.format(elided) if elided else ''
    return note + ''.join(reversed(blocks))

