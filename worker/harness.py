"""What the worker's tests share: the bundle the server sends (built here from the package
directory, in the format worker/embed.go builds it, which TestBundleMatchesHarness
checks), a worker started exactly as the Go server starts one, and process helpers.
Every wait is bounded (select with deadlines).

`python harness.py bundle` writes the bundle to stdout; `python harness.py modules` the
modules a fresh worker has loaded, one a line."""

import atexit
import ctypes
import hashlib
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import uuid

sys.dont_write_bytecode = True  # no __pycache__ in the package directory the Go build embeds

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE_DIR = os.path.join(HERE, 'replworker')
with open(os.path.join(HERE, 'bootstrap.py'), encoding='utf-8') as _file:
    BOOTSTRAP = _file.read()

# The variable that gives a worker the limits it shares with the server
# (PROTOCOL.md, The process). The Go test that runs this suite sets it
# (repl.WorkerLimitsEnv), and every WorkerProcess inherits it, as a server's worker
# gets it.
LIMITS_VAR = 'REPL_MCP_WORKER_LIMITS'
RESULT_WAIT = 20.0  # generous: the suite runs on four interpreters in parallel
INTERRUPTED = 'Execution interrupted ({}); namespace preserved'
INVENTORY_NOTE = 'Namespace metadata; inspect structured value'
THREADS_INTERRUPTED = (
    'Interrupted cell left active background threads or executor work ({}); worker stopped and '
    'variables cleared. Threads cannot be interrupted: give a long-running thread a stop flag '
    '(threading.Event) and join it before the cell ends.'
)
ARTIFACT_HELPERS = ('artifact', 'artifact_read', 'artifact_save', 'artifact_delete', 'artifact_forward')
HELPERS = ('sh', 'ShellResult', 'ShellError', 'checkpoint', 'restore', 'repl_history', 'repl_source', 'repl_namespace', *ARTIFACT_HELPERS, 'display', 'repl_export')
MCP_FOREIGN = 'MCP calls must belong to their originating active cell; use mcp.acall for concurrency'
MCP_BAD_TIMEOUT = 'MCP timeout must be finite and between 0.01 and 3600 seconds'
MCP_BOTH_ARGUMENTS = 'Use either arguments={...} or keyword tool arguments, not both'
NO_STORE = 'No artifact store in this test'
ARTIFACT_UNSUPPORTED = 'Artifact supports only exact JSON builtins, bytes or explicit files'
CHUNK = 32_768


# The library tests (test classes named Library*: previews of pandas, numpy, matplotlib,
# polars and xarray values) run on interop/.venv-data only, the venv of the pinned data libraries, where a
# missing library is an error: worker_test.go runs them there with
# REPL_MCP_DATA_LIBS=required, and `interop/.venv-data/bin/python -m unittest ...` runs them
# too (with REPL_MCP_WORKER_LIMITS set: `go test ./worker -run TestWorkerLibraries` sets
# it). On any other interpreter they skip with a reason starting LIBRARY_SKIP, which the Go
# test counts, so that nothing else is ever skipped unnoticed.
DATA_LIBS = ('numpy', 'pandas', 'matplotlib', 'polars', 'xarray')
DATA_VENV = os.path.realpath(os.path.join(HERE, '..', 'interop', '.venv-data'))
LIBRARY_SKIP = 'library test:'


def library_test(cls):
    """Class decorator of a Library* test class (see DATA_LIBS)."""
    required = os.environ.get('REPL_MCP_DATA_LIBS') == 'required'
    if not required and os.path.realpath(sys.prefix) != DATA_VENV:
        return unittest.skip(f'{LIBRARY_SKIP} runs on interop/.venv-data only (make data-deps)')(cls)
    import importlib.util
    missing = [name for name in DATA_LIBS if importlib.util.find_spec(name) is None]
    if missing:
        raise ImportError(f'{sys.executable} is the data venv but lacks {", ".join(missing)}: run make data-deps')
    return cls


def server_limits():
    """The limits the server gives a worker, by name, from this process's environment."""
    text = os.environ.get(LIMITS_VAR)
    if text is None:
        raise RuntimeError(f'{LIMITS_VAR} is not set: run the worker\'s tests with go test ./worker')
    return json.loads(text)


def build_bundle(package_dir=PACKAGE_DIR):
    """(bundle bytes with their header, digest): the modules of `package_dir` in file-name
    order, as PROTOCOL.md (The bundle) describes and worker.Bundle() builds it."""
    index, sources = [], []
    for name in sorted(os.listdir(package_dir)):
        if not name.endswith('.py'):
            continue
        with open(os.path.join(package_dir, name), 'rb') as file:
            source = file.read()
        index.append(f'{name[:-3]} {len(source)}')
        sources.append(source)
    payload = ' '.join(index).encode('ascii') + b'\n' + b''.join(sources)
    digest = hashlib.sha256(payload).hexdigest()[:24]
    return f'{len(payload)} {digest}\n'.encode('ascii') + payload, digest


BUNDLE, DIGEST = build_bundle()

# One code cache for the workers of this test process, as a server keeps one: the first
# start compiles and stores, the others load. Tests of the cache itself use their own.
CODE_CACHE = tempfile.mkdtemp(prefix='repl-mcp-test-cache-')
atexit.register(shutil.rmtree, CODE_CACHE, True)


def process_state(pid):
    """The state letter of a process ('Z' for a zombie), or None once it is gone."""
    try:
        with open(f'/proc/{pid}/stat') as stat:
            return stat.read().rsplit(')', 1)[1].split()[0]
    except FileNotFoundError:
        return None


def signal_other_thread(pid, signum):
    """Send `signum` to a thread of process `pid` other than its main thread, as the kernel
    may deliver the signal the server sends the worker's process group. Linux (tgkill);
    elsewhere the process itself is signalled."""
    if not sys.platform.startswith('linux'):
        os.kill(pid, signum)
        return
    others = sorted(int(tid) for tid in os.listdir(f'/proc/{pid}/task') if int(tid) != pid)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.tgkill(pid, others[0], signum) != 0:
        raise OSError(ctypes.get_errno(), f'tgkill {pid} {others[0]}')


def wait_gone(pid, timeout=3.0):
    """Whether `pid` ends (gone, or a zombie its new parent has yet to reap) within `timeout`."""
    deadline = time.monotonic() + timeout
    while process_state(pid) not in (None, 'Z'):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


def read_text(path):
    with open(path) as file:
        return file.read()


def processes():
    """(state, parent pid, group id) of every process."""
    for entry in filter(str.isdigit, os.listdir('/proc')):
        try:
            with open(f'/proc/{entry}/stat') as stat:
                fields = stat.read().rsplit(')', 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        yield fields[0], int(fields[1]), int(fields[2])


def zombie_children(parent):
    return sum(state == 'Z' and ppid == parent for state, ppid, _ in processes())


def group_members(pgid):
    """How many live (not zombie) processes are in process group `pgid`."""
    return sum(state != 'Z' and group == pgid for state, _, group in processes())


class WorkerProcess:
    """One worker subprocess plus the server's ends of its three pipes, started as the
    server starts one: `python -u -c <bootstrap.py>`, the bundle written to the command
    pipe first. `cache` is the code-cache directory (None: none); `bundle` replaces the
    real bundle (bytes, header included) to test the bootstrap's checks; without
    `wait_ready` the ready frame is left unread (self.ready is None); `python` is the
    interpreter (this one unless given); `env` holds variables set (or, as None, unset) in
    the worker's environment."""

    def __init__(self, cwd, cache=CODE_CACHE, bundle=None, wait_ready=True, python=None, env=None):
        self.max_frame = server_limits()['MAX_FRAME']
        command_r, command_w = os.pipe()
        event_r, event_w = os.pipe()
        native_r, native_w = os.pipe()
        extra = env or {}
        env = dict(os.environ, REPL_MCP_WORKER_FDS=f'{command_r},{event_w}', REPL_MCP_NO_BRIDGE='1')
        env.pop('REPL_MCP_WORKER_CACHE', None)
        for name, value in extra.items():
            if value is None:
                env.pop(name, None)
            else:
                env[name] = value
        if cache is not None:
            env['REPL_MCP_WORKER_CACHE'] = cache
        self.proc = subprocess.Popen(
            [python or sys.executable, '-u', '-c', BOOTSTRAP],
            stdin=subprocess.DEVNULL, stdout=native_w, stderr=native_w,
            pass_fds=(command_r, event_w), env=env, cwd=cwd,
        )
        for fd in (command_r, event_w, native_w):
            os.close(fd)
        self.command_fd, self.event_fd, self.native_fd = command_w, event_r, native_r
        try:
            # The bootstrap reads all of it before the ready frame; one that fails first
            # closes the pipe, and the ready frame's absence says why.
            self.send_raw(BUNDLE if bundle is None else bundle)
        except BrokenPipeError:
            pass
        self.child_fds = (command_r, event_w)  # pass_fds keeps the numbers in the child
        for fd in (event_r, native_r):
            os.set_blocking(fd, False)
        self.event_buffer = b''
        self.native = b''
        self.jobs = []  # job frames, which may come at any time
        self.processes = []  # process frames: the other children the worker reports
        self.images = []  # image frames collect() read, in order
        self.open_fds = {event_r, native_r}
        # While set, the native pipe is left unread: what a cell writes there is still in
        # the pipe when it ends, so the worker must write its barrier.
        self.hold_native = False
        self.barrier_written = None  # whether the last result came after its barrier
        self.ready = None
        try:
            if wait_ready:
                self.ready = self.next_frame()
        except BaseException:
            self.close()
            raise

    # -- reading --------------------------------------------------------------------

    def _poll(self, timeout):
        """Read whatever either pipe has within `timeout`; returns False on timeout."""
        if not self.open_fds:
            time.sleep(max(min(timeout, 0.05), 0))
            return False
        fds = [fd for fd in self.open_fds if not (self.hold_native and fd == self.native_fd)]
        readable, _, _ = select.select(fds, [], [], max(timeout, 0))
        for fd in readable:
            data = os.read(fd, 1 << 20)
            if not data:
                self.open_fds.discard(fd)
            elif fd == self.event_fd:
                self.event_buffer += data
            else:
                self.native += data
        return bool(readable)

    def next_frame(self, timeout=RESULT_WAIT):
        """The next frame other than `job` and `process` frames, which are kept in
        self.jobs and self.processes."""
        deadline = time.monotonic() + timeout
        while True:
            frame = self._next_any_frame(deadline)
            if not self._keep_child(frame):
                return frame

    def _keep_child(self, frame):
        """Keep a `job` or `process` frame; False for any other."""
        if frame['type'] == 'job':
            self.jobs.append(frame)
        elif frame['type'] == 'process':
            self.processes.append(frame)
        else:
            return False
        return True

    def _next_any_frame(self, deadline):
        while b'\n' not in self.event_buffer:
            if self.event_fd not in self.open_fds:
                raise EOFError('worker closed its frame pipe')
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f'no frame in time; native output: {self.native[-2000:]!r}')
            self._poll(remaining)
        line, self.event_buffer = self.event_buffer.split(b'\n', 1)
        assert len(line) < self.max_frame
        return json.loads(line)

    def wait_for_job(self, pid, action, timeout=RESULT_WAIT):
        """The job frame for `pid` and `action`, reading (and keeping) frames until it comes."""
        deadline = time.monotonic() + timeout
        while True:
            for job in self.jobs:
                if job['pid'] == pid and job['action'] == action:
                    return job
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f'no {action} job frame for {pid}; jobs: {self.jobs}')
            if b'\n' not in self.event_buffer:
                self._poll(remaining)
                continue
            frame = self._next_any_frame(deadline)
            if not self._keep_child(frame):
                raise AssertionError(f'unexpected frame {frame}')

    def drain_native(self, timeout=0.2):
        self.hold_native = False
        deadline = time.monotonic() + timeout
        while self._poll(deadline - time.monotonic()):
            pass
        return self.native

    # -- commands -------------------------------------------------------------------

    def send_raw(self, data):
        view = memoryview(data)
        while view:
            view = view[os.write(self.command_fd, view):]

    def start(self, code, run_id=None, barrier=None, **fields):
        run_id = run_id or uuid.uuid4().hex
        frame = {'type': 'execute', 'id': run_id, 'code': code, 'timeout': 30, 'barrier': barrier or uuid.uuid4().hex, **fields}
        self.send_raw(json.dumps(frame).encode() + b'\n')
        return run_id

    def collect(self, run_id, timeout=RESULT_WAIT):
        """Frames up to the run's result: (result, [output frames]); its image frames go to
        self.images. The automatic artifact upload of a large trailing value is refused, as
        by a server without a store."""
        outputs = []
        deadline = time.monotonic() + timeout
        while True:
            frame = self.next_frame(deadline - time.monotonic())
            if frame['type'] == 'rpc' and frame['op'] == 'artifact.begin':
                assert frame['run_id'] == run_id, frame
                self.reply(frame['id'], error=NO_STORE)
                continue
            assert frame['id'] == run_id, frame
            if frame['type'] == 'output':
                outputs.append(frame)
            elif frame['type'] == 'image':
                self.images.append(frame)
            elif frame['type'] == 'result':
                self.barrier_written = frame.get('barrier', True)
                return frame['result'], outputs
            else:
                raise AssertionError(f'unexpected frame {frame}')

    def run(self, code, run_id=None, **fields):
        run_id = self.start(code, run_id, **fields)
        return self.collect(run_id)[0]

    def run_file(self, path, argv=(), run_id=None):
        return self.run('', run_id, source_path=path, argv=list(argv))

    def value(self, code):
        result = self.run(code)
        assert result['success'], result
        return result.get('value')

    def next_event(self, timeout=RESULT_WAIT):
        """The next frame other than `output` and `job` frames."""
        deadline = time.monotonic() + timeout
        while True:
            frame = self.next_frame(deadline - time.monotonic())
            if frame['type'] != 'output':
                return frame

    def next_rpc(self, run_id, timeout=RESULT_WAIT):
        frame = self.next_event(timeout)
        assert frame['type'] == 'rpc' and frame['run_id'] == run_id, frame
        assert len(frame['id']) == 32 and int(frame['id'], 16) >= 0, frame
        return frame

    def events_until_result(self, run_id, timeout=RESULT_WAIT):
        """(result, [rpc and rpc_cancel frames before it])."""
        deadline = time.monotonic() + timeout
        events = []
        while True:
            frame = self.next_event(deadline - time.monotonic())
            if frame['type'] == 'result':
                assert frame['id'] == run_id, frame
                return frame['result'], events
            events.append(frame)

    def reply(self, rpc_id, result=None, error=None):
        self.send_raw(json.dumps({'type': 'rpc_result', 'id': rpc_id, 'result': result, 'error': error}).encode() + b'\n')

    def wait_for_output(self, run_id, text, timeout=RESULT_WAIT):
        deadline = time.monotonic() + timeout
        seen = ''
        while text not in seen:
            frame = self.next_frame(deadline - time.monotonic())
            assert frame['type'] == 'output' and frame['id'] == run_id, frame
            seen += frame['text']

    def wait_exit(self, timeout=5.0):
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None:
            if time.monotonic() >= deadline:
                raise TimeoutError(f'worker still running after {timeout}s')
            self._poll(0.05)
        return self.proc.returncode

    def hang_up(self):
        """Close the server's end of the command pipe: the worker sees EOF."""
        if self.command_fd is not None:
            os.close(self.command_fd)
            self.command_fd = None

    def close(self):
        self.hang_up()
        try:
            self.wait_exit(3.0)
        except TimeoutError:
            self.proc.kill()
            self.proc.wait(5)
        for fd in (self.event_fd, self.native_fd):
            os.close(fd)


class WorkerTestCase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        self.worker = WorkerProcess(self.dir)
        self.addCleanup(self.tmp.cleanup)
        self.addCleanup(self.worker.close)

    def path(self, name):
        return os.path.join(self.dir, name)

    def assert_ok(self, result):
        self.assertTrue(result['success'], result)
        self.assertEqual(result['state'], 'preserved', result)

    def assert_no_worker_frames(self, error):
        for needle in ('<string>', 'worker.py', '<repl-mcp worker>', 'replworker', 'cell_main', 'asyncio'):
            self.assertNotIn(needle, error)


def worker_modules():
    """The names in a fresh worker's sys.modules, one a line."""
    with tempfile.TemporaryDirectory() as cwd:
        worker = WorkerProcess(cwd)
        try:
            return worker.value('import sys\n"\\n".join(sorted(sys.modules))')
        finally:
            worker.close()


if __name__ == '__main__':
    if sys.argv[1:] == ['bundle']:
        sys.stdout.buffer.write(BUNDLE)
    elif sys.argv[1:] == ['modules']:
        print(worker_modules())
    else:
        sys.exit('usage: python harness.py bundle|modules')
