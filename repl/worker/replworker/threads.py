"""Which run each thread works for (docs/contract.md §5.10). A thread belongs to the run
whose code started it, directly or through threads that run started; a job of a thread
pool (the loop's default executor, any ThreadPoolExecutor) works for the run that
submitted it, whichever pooled thread runs it. The output sinks use this to keep what a
background thread prints out of a later cell's output, and the epilogue to find the work
a cell left running."""

import threading
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
        self.active = None  # run id of the cell the main thread runs now; None between cells

    def install(self):
        """Wrap threading.Thread.start and ThreadPoolExecutor.submit (once, at the start)."""
        plain_start, plain_submit = threading.Thread.start, ThreadPoolExecutor.submit
        origins, current_run, run_job = self._origins, self.current_run, self.run_job

        def start(thread):
            # Recorded before the thread exists: its first print already knows its run.
            origins[thread] = current_run()
            return plain_start(thread)

        def submit(executor, fn, /, *args, **kwargs):
            return plain_submit(executor, run_job, current_run(), fn, args, kwargs)

        for wrapper, plain in ((start, plain_start), (submit, plain_submit)):
            wrapper.__doc__, wrapper.__name__, wrapper.__qualname__ = plain.__doc__, plain.__name__, plain.__qualname__
        threading.Thread.start = start
        ThreadPoolExecutor.submit = submit

    def current_run(self):
        """The run the calling thread works for, or None."""
        run = getattr(self._local, 'run', MISSING)
        if run is not MISSING:
            return run
        thread = threading.current_thread()
        if thread is self._main:
            return self.active
        return self._origins.get(thread)

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


THREADS = _Threads()
