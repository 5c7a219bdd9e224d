"""Child processes: every subprocess.Popen a cell starts is tracked, reaped and reported
when it leads a process group of its own (a job); sh() and a cell's leading !cmd and %pip
lines run shell commands in a group of their own; and the worker exits only after killing
what is still running."""

import codecs
import collections
import importlib
import importlib.util
import math
import os
import _posixsubprocess
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
import weakref

from .common import RUN_ID, module_name, utf8_prefix
from .threads import THREADS
from .limits import (
    CHILD_EXIT_WAIT, READ_CHUNK, REAP_INTERVAL, SHELL_CAPTURE, SHELL_DRAIN, SHELL_ERROR_TAIL,
    SHELL_EXIT_CHECK, SHELL_PROCESSES, SHELL_TIMEOUT,
)
from .messages import (
    COMMAND_ECHO, PIP_MISSING, SHELL_BAD_TIMEOUT, SHELL_BUSY, SHELL_CAPTURE_CUT, SHELL_FAILED, SHELL_FAILED_TAIL,
    SHELL_LINE_FAILED,
)


def exit_now(status):
    """Exit without interpreter shutdown: atexit hooks, finalizers of user objects and
    non-daemon user threads must not delay or outlive a worker that is being stopped. The
    children cells started go first: nothing else would stop those in a group of their own."""
    try:
        CHILDREN.kill_all()
    finally:
        os._exit(status)


def leads_group(pid):
    """Whether a child runs in a process group of its own (start_new_session, process_group=0,
    setsid in preexec_fn): killing the worker's group misses it, so it is reported as a job.
    Popen returns only once the child has exec'd, so the group is already set."""
    try:
        return os.getpgid(pid) == pid
    except OSError:
        return False


def kill_group(pgid):
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
        self._forked = False  # in the child of a bare os.fork()
        # Whether a child may have started since take_spawned last said: it holds the
        # native pipe of its time (native.py).
        self._spawned = False
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
        os.register_at_fork(after_in_child=self._forget_all)
        subprocess.Popen = Popen
        for module, name in _SPAWNERS:
            plain = getattr(module, name, None)
            if plain is not None:
                setattr(module, name, _reporting(plain))
        os.system = _marking(os.system)
        threading.Thread(target=self._reap_forever, name='repl-mcp-reaper', daemon=True).start()

    def take_spawned(self):
        """Whether a child started (or may have) since the last call; it says so once."""
        spawned, self._spawned = self._spawned, False
        return spawned

    def spawning(self):
        """A child is about to start, by a way that does not report it (os.system)."""
        self._spawned = True

    def add(self, proc, reaped_elsewhere):
        self._spawned = True
        run_id = _run_now()
        job = leads_group(proc.pid)
        # A job's frame names its run too; any other child is reported as a process.
        self._send({'type': 'job' if job else 'process', 'id': run_id, 'pid': proc.pid, 'action': 'started'})
        ref = weakref.ref(proc, self._forget)
        self._live[id(ref)] = (ref, proc.pid, run_id, job, not reaped_elsewhere)

    def started(self, pid):
        """Report a child started other than through Popen (a fork, a spawn) with its run."""
        self._spawned = True
        self._send({'type': 'process', 'id': _run_now(), 'pid': pid, 'action': 'started'})

    def _send(self, frame):
        if not self._forked:  # a forked child's frames would reach nobody
            self._channel.send(frame)

    def _forget_all(self):
        """In a forked child: the worker's children are not its own to reap, report or
        kill when it exits, and its own are nobody's to hear of."""
        self._forked = True
        self._live = {}
        self._dropped_jobs = collections.deque()

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
        kill_group(pid)  # what the job left behind in its group
        self._send({'type': 'job', 'id': run_id, 'pid': pid, 'action': 'finished'})

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


def _run_now():
    """The run the calling code works for (threads.THREADS: a thread's, a pool job's, the
    running cell's on the main thread), or '' for none: what a child it starts is
    reported with."""
    run_id = THREADS.current_run()
    return run_id if run_id is not None else (RUN_ID.get() or '')


# Where else a child process can start, besides subprocess.Popen: bare forks (the fork
# context of multiprocessing, pty), multiprocessing's spawn and forkserver (fork_exec),
# and posix_spawn. Each is wrapped to report the child with its run (`process` frames),
# so the server can tell the children an interrupted cell started from those of earlier
# cells (docs/contract.md §5.6). A child C code forks by itself is not reported: the
# server judges it by its start time.
_SPAWNERS = ((os, 'fork'), (os, 'forkpty'), (os, 'posix_spawn'), (os, 'posix_spawnp'), (_posixsubprocess, 'fork_exec'))
_IN_POPEN = threading.local()  # .active: Popen reports its child itself, once it knows whether it is a job


def _reporting(spawn):
    """`spawn` made to report, in the parent, every child it starts."""
    def reporting(*args, **kwargs):
        result = spawn(*args, **kwargs)
        pid = result[0] if type(result) is tuple else result
        if pid and not getattr(_IN_POPEN, 'active', False):
            CHILDREN.started(pid)
        return result

    reporting.__name__, reporting.__qualname__, reporting.__doc__ = spawn.__name__, spawn.__qualname__, spawn.__doc__
    return reporting


def _marking(system):
    """os.system made to say that a child starts: it forks in C, and a command it puts in
    the background (`cmd &`) holds the native pipe (native.py). Its pid is never known."""
    def marking(command):
        CHILDREN.spawning()
        return system(command)

    marking.__name__, marking.__qualname__, marking.__doc__ = system.__name__, system.__qualname__, system.__doc__
    return marking


_PlainPopen = subprocess.Popen


class Popen(_PlainPopen):
    """subprocess.Popen inside the worker (CHILDREN.start installs it): each child is
    tracked, so it is reaped without losing its status, reported (as a job when it leads a
    group of its own, else as a process), and killed when the worker exits."""

    def __init__(self, *args, **kwargs):
        _IN_POPEN.active = True
        try:
            super().__init__(*args, **kwargs)
        finally:
            _IN_POPEN.active = False
        # asyncio's subprocess transport reaps its children itself: reaping them here would
        # take the status its child watcher waits for.
        caller = module_name(sys._getframe(1))
        CHILDREN.add(self, reaped_elsewhere=caller.startswith('asyncio.'))


CHILDREN = _Children()


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
    returncode, stdout, stderr. The message ends with the last lines of stderr (at most
    2,000 characters), which usually say what went wrong."""

    def __init__(self, result, message=None):
        super().__init__(message or shell_failure(result.returncode, result.stderr))
        self.result, self.returncode = result, result.returncode
        self.stdout, self.stderr = result.stdout, result.stderr


def shell_failure(returncode, stderr):
    """ShellError's message: the status, then the end of stderr when it has any."""
    tail = stderr.rstrip()
    if not tail:
        return SHELL_FAILED.format(returncode)
    if len(tail) > SHELL_ERROR_TAIL:
        tail = '...' + tail[-SHELL_ERROR_TAIL:]
    return SHELL_FAILED_TAIL.format(returncode, tail)


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
        out, err, cut = shell_capture(proc, cmd, timeout)
    finally:
        kill_group(proc.pid)  # background descendants of the shell go with it
        proc.stdout.close()
        proc.stderr.close()
        proc.wait()
    stdout, stdout_cut = _shell_text(out)
    stderr, stderr_cut = _shell_text(err)
    return ShellResult(stdout, stderr, proc.returncode, cut or stdout_cut or stderr_cut)


def pump_pipes(proc, on_data, deadline=None):
    """Read proc's stdout and stderr as they come, calling on_data(fd, data) for every
    read (b'' once when a pipe closes), until the shell has exited and its descendants'
    output already written is read (at most SHELL_DRAIN bytes), or both pipes close.
    Returns False when deadline (a time.monotonic() value) passed first. A
    KeyboardInterrupt may land anywhere in here (see interrupts.interrupt_site): every
    piece of state is local, and the caller kills the group."""
    pipes = select.poll()
    fds = (proc.stdout.fileno(), proc.stderr.fileno())
    for fd in fds:
        pipes.register(fd, select.POLLIN)
    open_pipes = len(fds)
    drain = None  # bytes still to read once the shell has exited
    while open_pipes and (drain is None or drain > 0):
        if drain is None and _exited(proc.pid):
            drain = SHELL_DRAIN
        wait = SHELL_EXIT_CHECK
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if drain is None and remaining <= 0:
                return False
            wait = min(remaining, wait)
        events = pipes.poll(0 if drain is not None else wait * 1000)
        if not events and drain is not None:
            break
        for fd, _ in events:
            data = os.read(fd, READ_CHUNK)
            if not data:
                pipes.unregister(fd)
                open_pipes -= 1
            if drain is not None:
                drain -= len(data)
            on_data(fd, data)
    return True


def shell_capture(proc, cmd, timeout):
    """(stdout bytes, stderr bytes, whether either was cut) of a sh() process, read by
    pump_pipes. Each stream keeps SHELL_CAPTURE bytes; the rest is read and dropped so the
    shell never blocks on a full pipe. Past timeout, subprocess.TimeoutExpired with what
    was kept."""
    kept = {proc.stdout.fileno(): bytearray(), proc.stderr.fileno(): bytearray()}
    cut = False

    def keep(fd, data):
        nonlocal cut
        room = SHELL_CAPTURE - len(kept[fd])
        kept[fd] += data[:room]
        cut = cut or len(data) > room

    if not pump_pipes(proc, keep, time.monotonic() + timeout):
        out, err = kept.values()
        raise subprocess.TimeoutExpired(cmd, timeout, bytes(out), bytes(err))
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
    text, _, complete = utf8_prefix(data.decode('utf-8', 'replace'), SHELL_CAPTURE)
    return text, not complete



def shell_quote(text):
    """`text` as one word for sh, whatever it holds."""
    return "'" + text.replace("'", "'\"'\"'") + "'"


def pip_command(arguments):
    """The shell command of a `%pip ARGS` line, for the worker's own interpreter: its pip;
    where it has none (a venv made by `uv venv`), uv's pip aimed at it when uv is on PATH;
    else None, and run_line says how to add pip instead of running a pip that is not there."""
    python = shell_quote(sys.executable)
    if importlib.util.find_spec('pip') is not None:
        return f'{python} -m pip {arguments}'.rstrip()
    uv = shutil.which('uv')
    if uv is None:
        return None
    words = arguments.split(None, 1)
    if words and not words[0].startswith('-'):  # `uv pip install --python X ARGS`
        return f'{shell_quote(uv)} pip {words[0]} --python {python} {"".join(words[1:])}'.rstrip()
    return f'{shell_quote(uv)} pip {arguments}'.rstrip()


def run_line(command, pip=False, capture=False):
    """Run a cell's `!cmd` line (`%pip ...` with pip=True; `x = !cmd` with capture=True,
    returning the list of its stdout's lines): say so on stdout (not for a capture), run it
    with sh in a new process group (killed when it ends, like sh()), and stream its stderr,
    and its stdout unless captured, into the cell's as they come. A non-zero status raises
    ShellError (whose message leaves stderr to the cell's stderr, where it already is), so
    the rest of the cell does not run after a failed install. After %pip the import system
    forgets its directory caches, so what was installed imports at once."""
    if command is None:  # %pip with neither pip nor uv: see pip_command
        raise RuntimeError(PIP_MISSING.format(shell_quote(sys.executable)))
    if not capture:
        sys.stdout.write(COMMAND_ECHO.format(command))
    if not _SHELL_SLOTS.acquire(blocking=False):
        raise RuntimeError(SHELL_BUSY)
    kept = [] if capture else None
    try:
        proc = Popen(
            command, shell=True, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True,
        )
        try:
            stderr_tail = stream_output(proc, kept)
        finally:
            kill_group(proc.pid)
            proc.stdout.close()
            proc.stderr.close()
            proc.wait()
    finally:
        _SHELL_SLOTS.release()
    if pip:
        importlib.invalidate_caches()
    if proc.returncode != 0:
        # Its stderr was streamed into the cell's: the error does not say it again.
        raise ShellError(ShellResult('', stderr_tail, proc.returncode), SHELL_LINE_FAILED.format(proc.returncode))
    if not capture:
        return None
    text, cut = _shell_text(b''.join(kept))
    if cut:
        sys.stderr.write(SHELL_CAPTURE_CUT)
    return text.splitlines()


def stream_output(proc, kept=None):
    """Copy a command's stdout and stderr into sys.stdout and sys.stderr as they come, as
    UTF-8 (invalid bytes replaced), read by pump_pipes; with a list `kept`, stdout's bytes
    go there instead, at most SHELL_CAPTURE of them and one byte more, which says that some
    were dropped. Returns the last SHELL_ERROR_TAIL characters of stderr."""
    streams = {
        proc.stdout.fileno(): ('stdout', codecs.getincrementaldecoder('utf-8')('replace')),
        proc.stderr.fileno(): ('stderr', codecs.getincrementaldecoder('utf-8')('replace')),
    }
    tail = ''
    room = SHELL_CAPTURE + 1

    def copy(fd, data):
        nonlocal tail, room
        name, decoder = streams[fd]
        if kept is not None and name == 'stdout':
            kept.append(data[:room])
            room -= len(kept[-1])
            return
        text = decoder.decode(data, final=not data)
        if text:
            getattr(sys, name).write(text)
            if name == 'stderr':
                tail = (tail + text)[-SHELL_ERROR_TAIL:]

    pump_pipes(proc, copy)
    return tail
