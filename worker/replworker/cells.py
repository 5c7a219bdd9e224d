"""The cell loop: one persistent event loop and its default executor, cells and saved
files run on it one at a time in one namespace, the epilogue that stops what a cell left
behind, and the result each run reports."""

import ast
import asyncio
import builtins
import contextvars
import inspect
import io
import os
import sys
import threading
import time
import tokenize
import weakref
from concurrent.futures import ThreadPoolExecutor

from .artifacts import (
    ARTIFACT_HELPERS, NotArtifact, artifact_error, auto_artifact_format, auto_upload, check_artifact_json,
    output_upload, repl_export,
)
from .bridge import RPCS, ToolError
from .checkpoint import checkpoint as checkpoint_namespace, restore as restore_namespace
from . import shelllines
from .children import CHILDREN, ShellError, ShellResult, exit_now, sh
from .common import CELL_MODULE, MISSING, RUN_ID, read_prefix, type_name, utf8_prefix
from .display import IMAGES, display
from .interrupts import Interrupts
from .limits import (
    ARGV_BYTES, ARGV_ITEMS, BACKGROUND_EXIT_GRACE, BACKGROUND_THREAD_NAMES, EXECUTOR_PENDING_JOBS,
    EXIT_MESSAGE_CHARS, EXIT_STATUS_BITS, SOURCE_FILE_BYTES, SPOOL_HEAD, TASK_CANCEL_GRACE, THREAD_NAME_BYTES,
)
from .messages import (
    ARGV_TOO_LARGE, ARGV_TOO_MANY, ARTIFACT_AUTO_FAILED, ARTIFACT_AUTO_INTERRUPTED, ARTIFACT_AUTO_NOT_MADE, EXECUTOR_FULL,
    EXECUTOR_JOB_QUEUED, EXIT_CODE_STR_FAILED, FILE_EXITED, FILE_TOO_LARGE, FILE_UNDECODABLE, FILE_UNREADABLE, INVENTORY_NOTE,
    OUTPUT_INTERRUPTED, OUTPUT_NOT_SAVED, OUTPUT_SAVED, OUTPUT_SAVED_PART, TASKS_REFUSED, THREADS_INTERRUPTED, THREADS_MORE,
)
from .native import NativeOutput
from .output import STREAMS, Output, Spool
from .sinks import Sink, no_input
from .previews import ReplHistory, inventory, preview as value_preview
from .restore import run_restore
from .snapshots import Snapshots
from .nbdata import builtin_repr, pandas_html
from .threads import THREADS, library_daemon
from .toolfuncs import McpBridge, alearn
from .tracebacks import RunFailure, SourceHistory, format_error, is_interrupt

EXIT_STATE_CLEARED = 70

# Names every cell starts from; re-installed after each cell so user shadowing lasts only
# for that cell. The helpers (sh, checkpoint, ...) join this mapping in Worker._helpers.
BASELINE_NAMES = {'__name__': CELL_MODULE, '__builtins__': builtins}
# Names that belong to the worker besides the baseline ones: inventories skip them and
# checkpoints never restore them.
# `mcp` is reserved too, though not in the baseline: each cell gets a new bridge object.
RESERVED_NAMES = frozenset({'__file__', '__repl_result__', 'mcp'})
_CELL_FLAGS = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
# First characters of a line that is no expression statement at column 0: indentation
# (an error), a comment, and the shell lines of shelllines.
_NOT_AN_EXPRESSION_START = frozenset(' \t\f#!%')


class CellLoop(asyncio.SelectorEventLoop):
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
        run_id = RUN_ID.get() if context is None else context.get(RUN_ID)
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


class CellExecutor(ThreadPoolExecutor):
    """The loop's default executor (run_in_executor, to_thread, getaddrinfo). It remembers
    which run submitted each unfinished job, for its bound and for the jobs still queued
    when their cell ends; like every thread pool's (threads.THREADS), a job works for its
    run whichever pooled thread runs it, and idle pooled threads belong to no cell."""

    def __init__(self):
        super().__init__(max_workers=min(32, (os.cpu_count() or 1) + 4), thread_name_prefix='repl-mcp-executor')
        self._jobs = {}  # unfinished future -> run id of the submitting context
        self._jobs_lock = threading.Lock()

    def submit(self, fn, /, *args, **kwargs):
        with self._jobs_lock:
            if len(self._jobs) >= EXECUTOR_PENDING_JOBS:
                raise RuntimeError(EXECUTOR_FULL)
            job = super().submit(fn, *args, **kwargs)
            self._jobs[job] = RUN_ID.get()
        job.add_done_callback(self._finished)
        return job

    def _finished(self, job):
        with self._jobs_lock:
            self._jobs.pop(job, None)

    def has_jobs(self):
        """Whether any submitted job is unfinished."""
        return bool(self._jobs)

    def queued(self, run_id):
        """How many jobs `run_id` submitted that no thread has taken yet."""
        with self._jobs_lock:
            return sum(1 for job, owner in self._jobs.items() if owner == run_id and not job.running())

    def threads(self):
        return set(self._threads)


def _thread_name(thread):
    """A thread's name as Thread's own property reads it (a subclass's property does not
    run), bounded."""
    name = threading.Thread.name.fget(thread)
    return utf8_prefix(name if type(name) is str else '?', THREAD_NAME_BYTES)[0]


def _reason(message):
    """Why a cut stream's complete output was not saved, short enough for its marker."""
    return (message or 'unknown error')[:120]


def _read_source(path):
    """A saved file's text, decoded as Python decodes source files (PEP 263, BOM)."""
    try:
        data = read_prefix(path, SOURCE_FILE_BYTES)
    except OSError as exc:
        raise RunFailure(FILE_UNREADABLE.format(exc)) from None
    if len(data) > SOURCE_FILE_BYTES:
        raise RunFailure(FILE_TOO_LARGE)
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode(encoding)
    except (SyntaxError, UnicodeDecodeError) as exc:
        raise RunFailure(FILE_UNDECODABLE.format(path, exc)) from None


def _check_argv(argv):
    if len(argv) > ARGV_ITEMS:
        raise RunFailure(ARGV_TOO_MANY)
    if sum(len(arg.encode('utf-8', 'surrogatepass')) for arg in argv) > ARGV_BYTES:
        raise RunFailure(ARGV_TOO_LARGE)


def _one_line_expression(source, filename):
    """The code of a cell that is one expression on one line (`df.shape`, `x`), compiled
    from its text at once, or None. It is the code the parse and compile below make of
    it (a test holds them equal), without the syntax tree in Python objects between. Any
    other cell, and one this cannot compile, takes the long way, which gives the errors."""
    if not source or source[0] in _NOT_AN_EXPRESSION_START or '\n' in source.rstrip('\n') or '\r' in source:
        return None
    try:
        return compile(source, filename, 'eval', _CELL_FLAGS, dont_inherit=True)
    except Exception:  # SyntaxError (a statement), ValueError (a NUL byte): the long way says which
        return None


def compile_cell(source, filename, commands=False):
    """Code for the body and, when the cell ends with an expression, for that expression;
    compiled apart so its value is kept as an object (no implicit repr). With `commands`,
    the cell's shell lines (`!cmd`, `x = !cmd`, `%pip`) are calls of the worker's helper
    (shelllines), and a shell line is never the trailing value. The body is None when the
    expression is all there is: a cell like `df.shape` is parsed once and compiled once."""
    tail = _one_line_expression(source, filename)
    if tail is not None:
        return None, tail
    text, originals = shelllines.transform(source) if commands else (source, {})
    try:
        module = ast.parse(text, filename, 'exec')
    except SyntaxError as exc:
        if commands:
            shelllines.explain(exc, source, originals)
        raise
    tail = None
    if module.body and isinstance(module.body[-1], ast.Expr) and not shelllines.is_shell_call(module.body[-1]):
        expression = ast.Expression(module.body.pop().value)
        tail = compile(expression, filename, 'eval', _CELL_FLAGS, dont_inherit=True)
    if tail is not None and not module.body:
        return None, tail
    return compile(module, filename, 'exec', _CELL_FLAGS, dont_inherit=True), tail


async def cell_main(body, tail, namespace):
    """The cell task: run the body (if any), then evaluate the trailing expression,
    awaiting either when it uses top-level await."""
    if body is not None:
        result = eval(body, namespace)
        if body.co_flags & inspect.CO_COROUTINE:
            await result
    if tail is None:
        return MISSING
    value = eval(tail, namespace)
    if tail.co_flags & inspect.CO_COROUTINE:
        value = await value
    return value


class Worker:
    """Runs cells and saved files one at a time in one namespace on one event loop, and
    reports each."""

    def __init__(self, channel):
        self._channel = channel
        self._namespace = {}  # filled below: the helpers hold on to this very dict
        self._sources = SourceHistory()
        self._baseline = {**BASELINE_NAMES, **self._helpers()}
        self._reserved = frozenset(self._baseline) | RESERVED_NAMES
        self._install_baseline()
        THREADS.install()  # before any user code starts a thread
        self._output = Output(channel)
        self._native = NativeOutput()
        # For good, not only while a cell runs: what threads print between cells is kept too.
        self._sinks = (
            Sink('stdout', 1, self._output, self._native),
            Sink('stderr', 2, self._output, self._native),
        )
        sys.stdout, sys.stderr = self._sinks
        self._output.attach_lane(self._sinks[0])
        builtins.input = no_input
        self._executor = CellExecutor()
        self._loop = CellLoop()
        self._loop.set_default_executor(self._executor)
        self._snapshots = Snapshots(channel, self._namespace, self._reserved, self._sources)
        self._interrupts = Interrupts(self._loop, channel)  # last: it installs the SIGINT handler

    def _helpers(self):
        """The helpers every cell finds in its namespace; those below work on this worker's
        namespace and sources."""
        namespace, sources = self._namespace, self._sources

        def checkpoint(path):
            """Save the variables that are small exact JSON builtins to `path` (~ expanded),
            atomically, mode 0600, format repl-checkpoint-v1; nothing is pickled. Returns
            {"saved": n, "skipped": {name: reason}, "omitted": n}."""
            return checkpoint_namespace(namespace, self._reserved, path)

        def restore(path):
            """Merge the variables of a checkpoint file into the namespace; the whole file is
            validated first. Returns {"restored": n, "state": "merged"}."""
            return restore_namespace(namespace, self._reserved, path)

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
            return inventory(namespace, self._reserved)

        return {
            'sh': sh, 'ShellResult': ShellResult, 'ShellError': ShellError,
            'checkpoint': checkpoint, 'restore': restore,
            'repl_history': repl_history, 'repl_source': repl_source, 'repl_namespace': repl_namespace,
            'ToolError': ToolError, **ARTIFACT_HELPERS, 'display': display, 'repl_export': repl_export,
            shelllines.HELPER: shelllines.shell,
        }

    def _install_baseline(self):
        self._namespace.update(self._baseline)
        # A new bridge each cell: attributes a cell set on `mcp` do not outlive it.
        self._namespace['mcp'] = McpBridge(RPCS)

    def serve(self):
        while True:
            self._channel.wait_for_command()
            # Marked before the command leaves the queue: a SIGINT always finds it somewhere.
            self._interrupts.command_taken()
            command = self._channel.take_command()
            if command['type'] == 'snapshot':  # saved on a thread while no command comes
                self._interrupts.not_a_run()
                self._snapshots.start(command)
                continue
            self._snapshots.stop()  # any command stops a snapshot at once
            if command['type'] == 'shutdown':
                exit_now(0)
            if command['type'] == 'undecodable':
                self._report_undecodable(command)
            elif command.get('inventory'):
                self._report_inventory(command)
            elif command.get('restore'):
                run_restore(self, command)
            else:
                self._execute(command)

    def _report_inventory(self, command):
        """Answer at once: no loop, no user code, no source history."""
        result = {
            'success': True,
            'stdout': '',
            'stderr': '',
            'return_value': INVENTORY_NOTE,
            'value': inventory(self._namespace, self._reserved),
            'error': None,
            'truncated': {'stdout': False, 'stderr': False, 'return': False},
            'state': 'preserved',
        }
        self._deliver(command['id'], command['barrier'], result)

    def _report_undecodable(self, command):
        """An execute frame that could not be decoded (channel.undecodable) fails; no barrier."""
        result = {'success': False, 'stdout': '', 'stderr': '', 'return_value': None, 'error': command['error'],
                  'truncated': {'stdout': False, 'stderr': False, 'return': False}, 'state': 'preserved'}
        self._deliver(command['id'], None, result)

    def _execute(self, command):
        run_id = command['id']
        self._output.begin(run_id)
        RPCS.begin(run_id)
        IMAGES.begin(run_id)
        sys.stdout, sys.stderr = self._sinks
        exit_code = None
        if command.get('source_path'):
            value, exc, exit_code = self._run_file(run_id, command['source_path'], command.get('argv', []))
        else:
            value, exc = self._run_cell(run_id, command['code'], f'<repl:{run_id}>', commands=True)
        interrupted = self._interrupts.cancelled  # a SIGINT reached the cell: the run is being stopped
        cancelled, policy_error, background = self._epilogue(run_id, interrupted)
        interrupted = self._show_figures(run_id, interrupted)
        preview = extra = None
        notebook = {}  # for the session's notebook only (PROTOCOL.md, The result object)
        if exc is None and policy_error is None and value is not MISSING:
            if type(value) is McpBridge and not interrupted:
                self._upload(run_id, alearn(value))  # its preview names its servers and tools
            preview = value_preview(value)
            notebook = {'html': pandas_html(value)}
            # Only a value the preview had to cut may become an artifact: one that fits the
            # preview is shown whole (a 4-item list, b'abc'), and one that has no preview of
            # its own (a custom object) is not cut either.
            if preview[2]:
                extra = self._auto_artifact(run_id, value, interrupted)
                interrupted = interrupted or extra == {'artifact_error': ARTIFACT_AUTO_INTERRUPTED}
        sys.stdout, sys.stderr = self._sinks
        self._install_baseline()
        captured = self._output.end()
        texts, saved = self._save_outputs(run_id, captured, interrupted)
        CHILDREN.sweep()  # `finished` for the jobs that ended in the run comes before its result
        result = self._result(run_id, value, preview, exc, captured, texts, policy_error)
        if extra:
            result.update(extra)
        result.update((key, text) for key, text in notebook.items() if text is not None)
        result.update(IMAGES.end())
        if saved:
            result['output_artifacts'] = saved
        if exit_code is not None:
            result['exit_code'] = exit_code
        if cancelled:
            result['background_tasks_cancelled'] = cancelled
        if background:
            result['background_threads'] = background
        if command.get('bindings'):  # what the run bound, for the snapshot's manifest
            self._snapshots.note_run(run_id)
        printed = self._output.take_background()
        if printed:
            result['background_output'], cuts = printed
            if cuts:
                result['background_cuts'] = cuts
        self._deliver(run_id, command['barrier'], result)

    def _run_file(self, run_id, path, argv):
        """Run a saved file as `python PATH ARGV...` would, in the namespace; returns (trailing
        value or MISSING, exception or None, exit code or None). SystemExit ends the run with
        an exit code instead of an error."""
        try:
            source = _read_source(path)
            _check_argv(argv)
        except RunFailure as exc:
            return MISSING, exc, None
        saved = (sys.argv, sys.path, self._namespace.get('__file__', MISSING))
        sys.argv = [path, *argv]
        sys.path = [os.path.dirname(path), *sys.path]
        self._namespace.update({'__name__': '__main__', '__file__': path})
        try:
            value, exc = self._run_cell(run_id, source, path)
        finally:
            # The same list objects again (the run only rebound the names); __name__ comes
            # back with the baseline.
            sys.argv, sys.path, saved_file = saved
            if saved_file is MISSING:
                self._namespace.pop('__file__', None)
            else:
                self._namespace['__file__'] = saved_file
        if not isinstance(exc, SystemExit):
            return value, exc, None
        status = self._exit_status(exc.code)
        return MISSING, (RunFailure(FILE_EXITED.format(status)) if status else None), status

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
            message = EXIT_CODE_STR_FAILED
        self._sinks[1].write(message[:EXIT_MESSAGE_CHARS] + '\n')
        return 1

    def _run_cell(self, run_id, source, filename, commands=False):
        """Run one cell (with `commands`, its leading !cmd and %pip lines first); returns
        (trailing value or MISSING, exception or None)."""
        self._sources.add(run_id, filename, source)
        try:
            body, tail = compile_cell(source, filename, commands)
        except Exception as exc:  # SyntaxError, or the parser's ValueError/RecursionError/MemoryError
            return MISSING, exc
        context = contextvars.copy_context()
        context.run(RUN_ID.set, run_id)
        task = context.run(self._loop.create_task, cell_main(body, tail, self._namespace))
        self._interrupts.drive(task)
        if task.cancelled():
            return MISSING, asyncio.CancelledError()
        exc = task.exception()
        return (MISSING, exc) if exc is not None else (task.result(), None)

    def _epilogue(self, run_id, interrupted):
        """Stop what the cell left behind; returns (tasks cancelled, policy error or None,
        names of the threads still working for the cell). A policy error means the worker
        cannot vouch for its state and will exit.

        Threads (and executor jobs) the cell left running are the session's background
        work when the cell ended on its own: its variables stay. When it was interrupted
        (a timeout, a cancel) they are not: a thread cannot be interrupted, and work the
        caller asked to stop must not go on changing the namespace, so the worker stops."""
        cancelled, refused = self._cancel_tasks()
        RPCS.end()  # after the tasks: a cancelled acall has sent its own rpc_cancel
        self._loop.cancel_cell_callbacks()
        if refused:
            return cancelled, TASKS_REFUSED, []
        background = self._background_work(run_id)
        if background and interrupted:
            return cancelled, THREADS_INTERRUPTED.format(', '.join(background)), background
        return cancelled, None, background

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

    def _background_work(self, run_id):
        """The names of the threads still working for the run when it ends: those its code
        started (directly or through threads it started; threads.THREADS), other than the
        default executor's idle pooled ones, the threads running its pool jobs, and one
        entry for each of its default-executor jobs still queued. Work that is just finishing gets a short grace: asyncio's waitpid thread, say,
        wakes the cell and then needs a moment to exit. At most BACKGROUND_THREAD_NAMES
        names, then how many more."""
        if not THREADS.started_any(run_id) and not self._executor.has_jobs():
            return []  # nothing started a thread or submitted a job for the run: none works for it
        THREADS.forget(run_id)
        deadline = time.monotonic() + BACKGROUND_EXIT_GRACE
        while True:
            # enumerate() drops a thread once its Python code has finished.
            threads = [
                thread for thread in THREADS.working_for(run_id, idle_pooled=self._executor.threads())
                if not library_daemon(thread)  # tqdm's monitor, Dask's loop: the library's own
            ]
            queued = self._executor.queued(run_id)
            if not threads and not queued:
                return []
            if time.monotonic() >= deadline:
                break
            time.sleep(0.005)
        names = [_thread_name(thread) for thread in threads] + [EXECUTOR_JOB_QUEUED] * queued
        if len(names) > BACKGROUND_THREAD_NAMES:
            names[BACKGROUND_THREAD_NAMES:] = [THREADS_MORE.format(len(names) - BACKGROUND_THREAD_NAMES)]
        return names

    def _show_figures(self, run_id, interrupted):
        """Show the figures the run left open, as a task of the run (its rpcs may upload an
        image too large to show; a SIGINT stops it like a cell), unless the run was
        interrupted; then close them all. Returns whether the run was interrupted."""
        if not IMAGES.figures_open():
            return interrupted
        if not interrupted:
            context = contextvars.copy_context()
            context.run(RUN_ID.set, run_id)
            RPCS.begin(run_id)  # the epilogue closed the bridge; the run is still active
            try:
                task = context.run(self._loop.create_task, IMAGES.show_figures())
                self._interrupts.drive(task)
            finally:
                RPCS.end()
                self._loop.cancel_cell_callbacks()
            interrupted = self._interrupts.cancelled or task.cancelled() or task.exception() is not None
        IMAGES.close_figures()
        return interrupted

    def _auto_artifact(self, run_id, value, interrupted):
        """Upload a trailing value too big for its preview, whose preview was cut
        (docs/contract.md §9.4): {"artifact": reference}, {"artifact_error": why} or None (a
        type that never becomes one, or a value that is not exact JSON). Runs after the cell's code and its epilogue but
        before the result, while the run is active on both sides, as a task on the loop so
        a SIGINT stops it as it would stop a cell."""
        format = auto_artifact_format(value)
        if format is None:
            return None
        if format == 'json':
            try:
                check_artifact_json(value)
            except NotArtifact as exc:
                return {'artifact_error': artifact_error(ARTIFACT_AUTO_NOT_MADE.format(exc))} if exc.budget else None
            except Exception as exc:  # MemoryError, say: the run's result matters more
                return {'artifact_error': artifact_error(ARTIFACT_AUTO_FAILED.format(type_name(type(exc))))}
        if interrupted:
            return {'artifact_error': ARTIFACT_AUTO_INTERRUPTED}
        outcome, detail = self._upload(run_id, auto_upload(value, format))
        if outcome == 'interrupted':
            return {'artifact_error': ARTIFACT_AUTO_INTERRUPTED}
        if outcome == 'failed':
            return {'artifact_error': artifact_error(ARTIFACT_AUTO_FAILED.format(detail))}
        return {'artifact': detail}

    def _save_outputs(self, run_id, captured, interrupted):
        """The final text of each stream, and the artifacts of the streams that were cut:
        ({stream: text}, {stream: reference}). A cut stream's complete text (its spool)
        is uploaded as a `text` artifact, as the trailing value's would be, and the marker
        between its head and tail says where it went, or why it did not: an interrupted run
        uploads nothing."""
        texts, saved = {}, {}
        try:
            for stream in STREAMS:
                text = captured.streams[stream]
                if not text.cut:
                    texts[stream] = text.text()
                elif interrupted:
                    texts[stream] = text.text(OUTPUT_NOT_SAVED, OUTPUT_INTERRUPTED)
                elif text.spool is None:
                    texts[stream] = text.text(OUTPUT_NOT_SAVED, _reason(text.spool_error))
                else:
                    spool = text.spool
                    outcome, detail = self._upload(run_id, output_upload(spool))
                    if outcome == 'interrupted':
                        interrupted = True
                        texts[stream] = text.text(OUTPUT_NOT_SAVED, OUTPUT_INTERRUPTED)
                    elif outcome == 'failed':
                        texts[stream] = text.text(OUTPUT_NOT_SAVED, _reason(detail))
                    elif spool.whole:
                        saved[stream] = detail
                        texts[stream] = text.text(OUTPUT_SAVED, spool.size, stream)
                    else:
                        saved[stream] = detail
                        texts[stream] = text.text(OUTPUT_SAVED_PART, stream, SPOOL_HEAD, Spool.RING, spool.size)
        finally:
            captured.close()
        return texts, saved

    def _upload(self, run_id, upload):
        """Run an upload coroutine (artifacts.auto_upload, output_upload) as a task on the
        loop with the run still active, so a SIGINT stops it as it would stop a cell.
        Returns ('done', reference), ('interrupted', None) or ('failed', message)."""
        context = contextvars.copy_context()
        context.run(RUN_ID.set, run_id)
        RPCS.begin(run_id)  # the epilogue closed the bridge; the run is still active
        try:
            task = context.run(self._loop.create_task, upload)
            self._interrupts.drive(task)
        finally:
            RPCS.end()
            self._loop.cancel_cell_callbacks()
        if task.cancelled():
            return 'interrupted', None
        exc = task.exception()
        if isinstance(exc, KeyboardInterrupt):
            return 'interrupted', None
        if exc is not None:
            try:
                message = str(exc)
            except Exception:
                message = type_name(type(exc))
            return 'failed', message
        return 'done', task.result()

    def _result(self, run_id, value, preview, exc, captured, texts, policy_error):
        cut = {stream: captured.streams[stream].cut for stream in STREAMS}
        result = {
            'success': exc is None and policy_error is None,
            'stdout': texts['stdout'],
            'stderr': texts['stderr'],
            'return_value': None,
            'error': None,
            'truncated': {'stdout': cut['stdout'], 'stderr': cut['stderr'], 'return': False},
            'state': 'cleared' if policy_error else 'preserved',
        }
        cuts = {stream: captured.streams[stream].gap for stream in STREAMS if captured.streams[stream].gap}
        if cuts:
            result['cuts'] = cuts
        if policy_error:
            result['error'] = policy_error
        elif exc is not None:
            result['error'] = format_error(exc, run_id, self._sources)
            if is_interrupt(exc):
                result['interrupted'] = True
        elif preview is not None:
            shown, plain, truncated = preview
            result['return_value'] = shown
            result['truncated']['return'] = truncated
            if plain is not MISSING:
                result['value'] = plain
                # For the text form and the notebook, which read values as Python
                # shows them; the contract's `value` and `return_value` stay JSON.
                # Left out where it reads the same (42).
                text = builtin_repr(value)
                if text is not None and text != shown:
                    result['return_repr'] = text
        return result

    def _deliver(self, run_id, barrier, result):
        # From here on a SIGINT can only be for a command still incoming.
        self._interrupts.result_due()
        self._channel.park_reader()  # the main thread reads the next command itself
        # One write: once the server sees it, it holds every native byte of the run. Not
        # written when the pipe holds no byte the server has yet to read, as after a cell
        # that wrote none: the result says so, and the server does not wait for it.
        frame = {'type': 'result', 'id': run_id, 'result': result}
        # After a run that started a child, the children keep the pipe and the next cells
        # get a new one (native.py): what they write later is theirs, not a later cell's.
        # A run whose execute frame could not be decoded has no barrier and ran nothing.
        marked, rotated = (False, False) if barrier is None else self._native.mark_and_rotate(
            b'\x1e' + barrier.encode('utf-8', 'replace') + b'\x1e', CHILDREN.take_spawned(),
        )
        if not marked:
            frame['barrier'] = False
        if rotated:
            frame['native_pipe'] = True
        self._channel.send(frame)
        if result['state'] == 'cleared':
            exit_now(EXIT_STATE_CLEARED)
