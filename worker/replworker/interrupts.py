"""SIGINT (PROTOCOL.md, Signals): it stops the running cell, first by cancelling its task
at the current await, then, if the cell keeps running, by raising KeyboardInterrupt where
that is as safe as in plain Python; it is kept for a command on its way, and ignored
between cells."""

import os
import queue
import select
import signal
import threading
import time

from .bridge import await_reply
from .children import pump_pipes, shell_capture, stream_output
from .common import is_worker_module, module_name
from .limits import INTERRUPT_RETRY, STRAY_SIGINT_WAIT
from .output import INTERRUPTIBLE_CODE as OUTPUT_CODE

# Worker code where a KeyboardInterrupt is as safe as in user code: the sinks user code
# prints through (output.INTERRUPTIBLE_CODE), sh()'s and a !cmd line's wait for its
# process (pump_pipes, and the callbacks it calls, whose caller it is), and mcp's wait
# for a reply.
INTERRUPTIBLE_WORKER_CODE = frozenset({
    *OUTPUT_CODE, pump_pipes.__code__, shell_capture.__code__, stream_output.__code__, await_reply.__code__,
})

# Library code that runs on behalf of its caller: a SIGINT caught inside it is judged by the
# first frame up the stack that is not in one of these (json: the main thread encodes
# bridge frames, and an rpc_cancel must not be lost to a KeyboardInterrupt).
CALLER_JUDGED_MODULES = ('asyncio.', 'concurrent.futures.', 'selectors', 'threading', 'json')


def interrupt_site(frame):
    """Where a repeated SIGINT caught the main thread. 'idle': the loop is waiting in
    select(), so the cell is at an await and has its cancellation. 'user': user code, or
    library code it called (print sinks included), where KeyboardInterrupt may be raised as
    plain Python would. 'busy': the worker's own code (any module of its package), or
    library code it called, where an exception could tear bookkeeping or strand a task
    mid-step (the loop machinery and its call_soon run between and inside task steps)."""
    if frame is not None and module_name(frame) == 'selectors':
        return 'idle'
    while frame is not None:
        if frame.f_code in INTERRUPTIBLE_WORKER_CODE:
            return 'user'
        name = module_name(frame)
        if is_worker_module(name):
            return 'busy'
        if not name.startswith(CALLER_JUDGED_MODULES):
            return 'user'
        frame = frame.f_back
    return 'busy'


def _wake():
    """No-op callback: scheduling it thread-safely wakes a loop blocked in select()."""


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


class _StraySignals:
    """Brings a SIGINT that another thread took to the main thread. The server signals the
    worker process, and the kernel may hand a process-directed signal to any
    thread; Python's C handler then only marks it, and the Python handler runs when the
    main thread next executes bytecode. A cell blocked in time.sleep or a C call would
    not see its interrupt until that returned (its run timed out, and the worker with its
    state was lost). Seen under load with a cell's threads starting threads.

    The C handler, in whichever thread took the signal, also writes its number to the
    wakeup fd (signal.set_wakeup_fd). The main thread's handler drains that pipe
    (`handled`); a byte still there STRAY_SIGINT_WAIT after it came is a signal no
    handler ran for, and this thread sends SIGINT to the main thread itself, which wakes
    its blocking call. A cell that installs a wakeup fd of its own (loop.add_signal_handler
    does) replaces this one: interrupts then work as in plain Python."""

    def __init__(self, main_thread_id):
        self._main_thread_id = main_thread_id
        self._read_fd, write_fd = os.pipe()  # close-on-exec: no child or exec'd program holds it
        os.set_blocking(self._read_fd, False)
        os.set_blocking(write_fd, False)
        signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
        # A fork's child shares the pipe: its signals are not the worker's, and it must not
        # drain what the worker's main thread has yet to handle.
        os.register_at_fork(after_in_child=self._forget)
        threading.Thread(target=self._run, name='repl-mcp-stray-sigint', daemon=True).start()

    def handled(self):
        """Called by the main thread's handler: the signals written so far have been seen."""
        if self._read_fd < 0:
            return
        try:
            while len(os.read(self._read_fd, 512)) == 512:
                pass
        except OSError:
            pass  # BlockingIOError: nothing left; anything else: nothing to drain

    def _forget(self):
        self._read_fd = -1
        try:
            signal.set_wakeup_fd(-1)
        except ValueError:
            pass  # not the main thread of the child: its wakeup fd is then not ours to touch

    def _run(self):
        ready = select.poll()
        ready.register(self._read_fd, select.POLLIN)
        while True:
            ready.poll()
            time.sleep(STRAY_SIGINT_WAIT)
            try:
                data = os.read(self._read_fd, 512)
            except BlockingIOError:
                continue  # the main thread's handler ran
            if signal.SIGINT in data:
                signal.pthread_kill(self._main_thread_id, signal.SIGINT)


class Interrupts:
    """The SIGINT handler and what it needs to know: whether a command is taken or on its
    way, and which cell task may be interrupted now. Made on the main thread, which it
    installs its handler from."""

    def __init__(self, loop, channel):
        self._loop = loop
        self._channel = channel
        self._command_taken = False  # from taking a command until just before its result
        self._pending = False  # a SIGINT came for the command being prepared
        self._task = None  # the cell task, set only while cell code may be interrupted
        self._lock = threading.Lock()  # orders clearing _task with SIGINT retries
        self.cancelled = False  # whether a SIGINT already cancelled the running cell
        self._main_thread_id = threading.main_thread().ident
        self._retry = _InterruptRetry(self._redeliver)
        signal.signal(signal.SIGINT, self._on_sigint)
        self._strays = _StraySignals(self._main_thread_id)

    def command_taken(self):
        """Called before a command leaves the queue: a SIGINT always finds it somewhere."""
        self._command_taken = True

    def not_a_run(self):
        """The command taken was no run (a snapshot request): a SIGINT is only for one still
        incoming."""
        self._command_taken = False
        self._pending = self._pending and self._channel.command_incoming()

    def result_due(self):
        """From here on a SIGINT can only be for a command still incoming."""
        self._command_taken = self._pending = False

    def drive(self, task):
        """Run the cell task to completion on the persistent loop; only now may SIGINT
        interrupt anything."""
        self.cancelled = False
        self._task = task
        if self._pending:
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
            with self._lock:
                self._task = None

    def _cell_running(self):
        task = self._task
        return task is not None and not task.done()

    def _on_sigint(self, signum, frame):
        self._strays.handled()
        if not self._cell_running():
            # The server interrupts only a run it has dispatched: with a command taken or
            # incoming, the SIGINT is for that one and stops its cell as soon as it starts.
            # Between cells it is ignored.
            if self._command_taken or self._channel.command_incoming():
                self._pending = True
            return
        task = self._task
        if not self.cancelled:
            # First, cancel: CancelledError at the cell's current await is a safe point,
            # while a KeyboardInterrupt may land anywhere (even between acquiring a lock
            # and the `async with` that releases it). The retry covers a cell that is
            # not awaiting.
            self.cancelled = True
            task.cancel()
            self._loop.call_soon_threadsafe(_wake)
            self._retry.request(task)
            return
        site = interrupt_site(frame)
        if site == 'user':
            raise KeyboardInterrupt  # the cell kept running after the cancel: it is spinning
        if site == 'busy':
            self._retry.request(task)

    def _redeliver(self, task):
        # Under the lock the cell cannot end between the check and the signal, so a retry
        # never reaches the next cell.
        with self._lock:
            if self._task is task and not task.done():
                # A real signal (not interrupt_main) also wakes a blocking system call.
                signal.pthread_kill(self._main_thread_id, signal.SIGINT)
