"""Which run each thread works for (docs/contract.md §5.10). A thread belongs to the run
whose code started it, directly or through threads that run started; a job of a thread
pool (the loop's default executor, any ThreadPoolExecutor) works for the run that
submitted it, whichever pooled thread runs it. The output sinks use this to keep what a
background thread prints out of a later cell's output, and the epilogue to find the work
a cell left running."""

import _thread
import os
import sys
import sysconfig
import threading
import types
import weakref
from concurrent.futures import ThreadPoolExecutor

from .common import MISSING


class _Threads:
    """Thread origins, recorded as each thread starts, and the run each pooled thread's
    current job works for. threading.Thread.start and ThreadPoolExecutor.submit are
    wrapped once, at the worker's start, so every thread (threading.Timer, a pool's
    workers, tqdm's monitor, a logging QueueListener) is known before its code runs. A
    thread started by other means (C code calling Python) works for no run."""

    def __init__(self):
        # Thread -> run id of the code that started it (None: the worker's own code).
        # Weak: a finished thread's entry goes with its Thread object. Only looked up,
        # never iterated, so threads starting meanwhile cannot disturb a reader.
        self._origins = weakref.WeakKeyDictionary()
        self._jobs = {}  # thread running a pool job -> run id the job works for
        self._jobs_lock = threading.Lock()
        self._local = threading.local()  # .run: the run the calling thread's job works for
        self._main = threading.main_thread()
        # Runs whose code (or whose threads') started a thread or submitted a pool job:
        # only these can have threads working for them when they end (started_any).
        self._starters = set()
        self.active = None  # run id of the cell the main thread runs now; None between cells
        self.on_start = None  # called before a thread starts or a pool job is submitted (output.py)
        self._own = {}  # ident -> the main thread and the worker's threads alone() found
        self._alone_count = None  # _thread._count() when alone() last found no other thread

    def install(self):
        """Wrap threading.Thread.start and ThreadPoolExecutor.submit (once, at the start)."""
        plain_start, plain_submit, plain_new = threading.Thread.start, ThreadPoolExecutor.submit, _thread.start_new_thread
        origins, starters, current_run, run_job = self._origins, self._starters, self.current_run, self.run_job

        def start(thread):
            # Recorded before the thread exists: its first print already knows its run.
            origins[thread] = run = current_run()
            starters.add(run)
            if self.on_start is not None:
                self.on_start()
            return plain_start(thread)

        def submit(executor, fn, /, *args, **kwargs):
            run = current_run()
            starters.add(run)
            if self.on_start is not None:
                self.on_start()
            return plain_submit(executor, run_job, run, fn, args, kwargs)

        def start_new_thread(*args, **kwargs):  # works for no run, but it prints
            if self.on_start is not None:
                self.on_start()
            return plain_new(*args, **kwargs)

        wrapped = ((start, plain_start), (submit, plain_submit), (start_new_thread, plain_new))
        for wrapper, plain in wrapped:
            wrapper.__doc__, wrapper.__name__, wrapper.__qualname__ = plain.__doc__, plain.__name__, plain.__qualname__
        threading.Thread.start = start
        ThreadPoolExecutor.submit = submit
        _thread.start_new_thread = start_new_thread

    def current_run(self):
        """The run the calling thread works for, or None."""
        run = getattr(self._local, 'run', MISSING)
        if run is not MISSING:
            return run
        thread = threading.current_thread()
        if thread is self._main:
            return self.active
        return self._origins.get(thread)

    def alone(self, thorough=False):
        """Whether no thread but the main thread and the worker's own (those started while no
        run was active: origin None) runs Python code now. Any other could print: a cell's,
        one started before the worker's, or by C code. Unless `thorough`, the count of
        threads _thread started stands for the look at every thread once the count was
        seen with no other (a cell's start: 0.1 against 3 us); a thread C code started is
        found only by a thorough look (the output pump's, at each tick)."""
        count = _thread._count()
        if not thorough and count == self._alone_count:
            return True
        frames = sys._current_frames()
        if len(frames) == 1:
            self._alone_count = count
            return True
        active, own = getattr(threading, '_active', {}), self._own
        for ident in frames:
            thread = active.get(ident)
            if thread is None or own.get(ident) is not thread:
                if thread is None or (thread is not self._main and self._origins.get(thread, MISSING) is not None):
                    return False
                own[ident] = thread  # the worker's own (or the main thread): found once
        self._alone_count = count
        return True

    def run_job(self, run_id, fn, args, kwargs):
        """Run a pool job on the calling thread, working for `run_id`."""
        thread = threading.current_thread()
        outer = getattr(self._local, 'run', MISSING)
        self._local.run = run_id
        with self._jobs_lock:
            self._jobs[thread] = run_id
        try:
            return fn(*args, **kwargs)
        finally:
            with self._jobs_lock:
                self._jobs.pop(thread, None)
            if outer is MISSING:
                del self._local.run
            else:  # a job that ran another pool's job inline (a pool's shutdown, say)
                self._local.run = outer
                with self._jobs_lock:
                    self._jobs[thread] = outer

    def started_any(self, run_id):
        """Whether code working for `run_id` started a thread or submitted a pool job since
        forget(run_id): if not, no thread works for it."""
        return run_id in self._starters

    def forget(self, run_id):
        """The run has ended and its threads were looked for: a thread it left that starts
        another records it again."""
        self._starters.discard(run_id)

    def working_for(self, run_id, idle_pooled=()):
        """The live threads working for `run_id`, in start order: those running its pool
        jobs, and those it started, except `idle_pooled` (threads of a pool that belong to
        no run while they wait for a job)."""
        with self._jobs_lock:
            jobs = {thread for thread, run in self._jobs.items() if run == run_id}
        return [
            thread for thread in threading.enumerate()
            if thread in jobs or (
                thread is not self._main and thread not in idle_pooled and self._origins.get(thread, MISSING) == run_id
            )
        ]


# Read from the types' own slots: a thread's class or target may be the user's, and
# must not run.
_type_module = type.__dict__['__module__'].__get__
_type_qualname = type.__dict__['__qualname__'].__get__
_function_module = types.FunctionType.__dict__['__module__'].__get__
_method_function = types.MethodType.__dict__['__func__'].__get__
_module_namespace = types.ModuleType.__dict__['__dict__'].__get__


_library_dirs_found = []  # read once, at the first thread a cell leaves: not at start


def _library_dirs():
    """Where installed libraries live (site-packages), as real paths. Not the standard
    library: its Thread subclasses (threading.Timer) and targets run the user's code."""
    if not _library_dirs_found:
        paths = sysconfig.get_paths()
        dirs = {paths.get(key) for key in ('purelib', 'platlib')}
        _library_dirs_found.append(tuple(os.path.realpath(d) + os.sep for d in dirs if d))
    return _library_dirs_found[0]

# The standard library's own housekeeping threads, by target: a multiprocessing queue's
# feeder, which a library's queue (Dask's nannies') starts.
_STDLIB_HOUSEKEEPING = frozenset({('multiprocessing.queues', 'Queue._feed')})
_function_qualname = types.FunctionType.__dict__['__qualname__'].__get__


def _module_dict(name):
    """The namespace of the already imported module `name`, or None; nothing is imported."""
    modules = sys.modules
    module = dict.get(modules, name) if type(modules) is dict and type(name) is str else None
    if type(module) is not types.ModuleType:
        return None
    namespace = _module_namespace(module)
    return namespace if type(namespace) is dict else None


def _library_module(name):
    """Whether the already imported module `name` is an installed library's (its file
    under site-packages), not the user's."""
    namespace = _module_dict(name)
    path = None if namespace is None else dict.get(namespace, '__file__')
    return type(path) is str and os.path.realpath(path).startswith(_library_dirs())


def _state(thread, name):
    """An attribute Thread.__init__ set, from the instance's own __dict__."""
    state = object.__getattribute__(thread, '__dict__')
    return dict.get(state, name) if type(state) is dict else None


def _target(thread):
    """The function an exact threading.Thread runs, or None."""
    target = _state(thread, '_target')
    if type(target) is types.MethodType:
        target = _method_function(target)
    return target if type(target) is types.FunctionType else None


def library_daemon(thread):
    """Whether `thread` is a library's own daemon thread (tqdm's monitor, Dask's IO loop
    and process watchers, multiprocessing's queue feeders): housekeeping the library
    starts and stops itself, not the user's work. A daemon whose class an installed
    library defines (a subclass of Thread in site-packages), or an exact Thread whose
    target an installed library's module defines (or is one of the standard library's
    housekeeping functions). Only slots and instance dicts are read."""
    if _state(thread, '_daemonic') is not True:
        return False
    cls = type(thread)
    if cls is not threading.Thread:
        module = _type_module(cls)
        namespace = _module_dict(module)
        return namespace is not None and dict.get(namespace, _type_qualname(cls)) is cls and _library_module(module)
    target = _target(thread)
    if target is None:
        return False
    module = _function_module(target)
    return _library_module(module) or (module, _function_qualname(target)) in _STDLIB_HOUSEKEEPING


THREADS = _Threads()
