"""Tests for worker.py, driven exactly as the Go server drives it: `python -u -c <source>`
with protocol pipes passed by fd number in REPL_MCP_WORKER_FDS, fd 0 on /dev/null and fds
1/2 on a "native output" pipe. Every wait is bounded (select with deadlines)."""

import base64
import hashlib
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import uuid

WORKER_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'worker.py')
with open(WORKER_PATH, encoding='utf-8') as _source_file:
    WORKER_SOURCE = _source_file.read()

MAX_FRAME = 1_048_576
RESULT_WAIT = 20.0  # generous: the suite runs on four interpreters in parallel
INTERRUPTED = 'Execution interrupted ({}); namespace preserved'
INVENTORY_NOTE = 'Namespace metadata; inspect structured value'
ARTIFACT_HELPERS = ('artifact', 'artifact_read', 'artifact_save', 'artifact_delete', 'artifact_forward')
HELPERS = ('sh', 'ShellResult', 'ShellError', 'checkpoint', 'restore', 'repl_history', 'repl_source', 'repl_namespace', *ARTIFACT_HELPERS)
MCP_FOREIGN = 'MCP calls must belong to their originating active cell; use mcp.acall for concurrency'
MCP_BAD_TIMEOUT = 'MCP timeout must be finite and between 0.01 and 3600 seconds'
MCP_BOTH_ARGUMENTS = 'Use either arguments={...} or keyword tool arguments, not both'
NO_STORE = 'No artifact store in this test'
ARTIFACT_UNSUPPORTED = 'Artifact supports only exact JSON builtins, bytes or explicit files'
CHUNK = 32_768


def process_state(pid):
    """The state letter of a process ('Z' for a zombie), or None once it is gone."""
    try:
        with open(f'/proc/{pid}/stat') as stat:
            return stat.read().rsplit(')', 1)[1].split()[0]
    except FileNotFoundError:
        return None


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
    """One worker subprocess plus the server's ends of its three pipes."""

    def __init__(self, cwd):
        command_r, command_w = os.pipe()
        event_r, event_w = os.pipe()
        native_r, native_w = os.pipe()
        env = dict(os.environ, REPL_MCP_WORKER_FDS=f'{command_r},{event_w}', REPL_MCP_NO_BRIDGE='1')
        self.proc = subprocess.Popen(
            [sys.executable, '-u', '-c', WORKER_SOURCE],
            stdin=subprocess.DEVNULL, stdout=native_w, stderr=native_w,
            pass_fds=(command_r, event_w), env=env, cwd=cwd,
        )
        for fd in (command_r, event_w, native_w):
            os.close(fd)
        self.command_fd, self.event_fd, self.native_fd = command_w, event_r, native_r
        self.child_fds = (command_r, event_w)  # pass_fds keeps the numbers in the child
        for fd in (event_r, native_r):
            os.set_blocking(fd, False)
        self.event_buffer = b''
        self.native = b''
        self.jobs = []  # job frames, which may come at any time
        self.open_fds = {event_r, native_r}
        try:
            self.ready = self.next_frame()
        except BaseException:
            self.close()
            raise

    # -- reading --------------------------------------------------------------------

    def _poll(self, timeout):
        """Read whatever either pipe has within `timeout`; returns False on timeout."""
        if not self.open_fds:
            time.sleep(min(timeout, 0.05))
            return False
        readable, _, _ = select.select(list(self.open_fds), [], [], max(timeout, 0))
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
        """The next frame other than `job` frames, which are kept in self.jobs."""
        deadline = time.monotonic() + timeout
        while True:
            frame = self._next_any_frame(deadline)
            if frame['type'] != 'job':
                return frame
            self.jobs.append(frame)

    def _next_any_frame(self, deadline):
        while b'\n' not in self.event_buffer:
            if self.event_fd not in self.open_fds:
                raise EOFError('worker closed its frame pipe')
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f'no frame in time; native output: {self.native[-2000:]!r}')
            self._poll(remaining)
        line, self.event_buffer = self.event_buffer.split(b'\n', 1)
        assert len(line) < MAX_FRAME
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
            if frame['type'] != 'job':
                raise AssertionError(f'unexpected frame {frame}')
            self.jobs.append(frame)

    def drain_native(self, timeout=0.2):
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
        """Frames up to the run's result: (result, [output frames]). The automatic artifact
        upload of a large trailing value is refused, as by a server without a store."""
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
            elif frame['type'] == 'result':
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
        for needle in ('<string>', 'worker.py', '_cell_main', 'asyncio'):
            self.assertNotIn(needle, error)


class StartupTests(WorkerTestCase):
    def test_ready_frame_is_first_and_complete(self):
        ready = self.worker.ready
        self.assertEqual(ready['type'], 'ready')
        self.assertEqual(ready['protocol'], 1)
        self.assertEqual(ready['pid'], self.worker.proc.pid)
        self.assertEqual(ready['python_version'], '%d.%d.%d' % sys.version_info[:3])
        self.assertEqual(os.path.realpath(ready['python_executable']), os.path.realpath(sys.executable))

    def test_startup_environment(self):
        code = (
            'import os, sys\n'
            '[os.environ.get("REPL_MCP_WORKER_FDS"), sys.argv, __name__, os.getcwd(), sys.stdin.read(),'
            ' __builtins__ is __import__("builtins")]'
        )
        self.assertEqual(self.worker.value(code), [None, [''], '__repl__', os.path.realpath(self.dir), '', True])

    def test_baseline_names_reinstalled_after_each_cell(self):
        result = self.worker.run('__name__ = "shadowed"\n__builtins__ = None\n__name__')
        self.assertEqual(result['value'], 'shadowed')
        self.assertEqual(self.worker.value('[__name__, __builtins__ is __import__("builtins")]'), ['__repl__', True])

    def test_protocol_fds_are_not_inheritable(self):
        read_fd, write_fd = self.worker.child_fds
        self.assertEqual(self.worker.value(f'import os\n[os.get_inheritable({read_fd}), os.get_inheritable({write_fd})]'), [False, False])


class ExecutionTests(WorkerTestCase):
    def test_two_plus_two(self):
        result = self.worker.run('2+2')
        self.assert_ok(result)
        self.assertEqual(result['return_value'], '4')
        self.assertEqual(result['value'], 4)
        self.assertEqual(result['stdout'], '')
        self.assertEqual(result['stderr'], '')
        self.assertIsNone(result['error'])
        self.assertEqual(result['truncated'], {'stdout': False, 'stderr': False, 'return': False})
        self.assertNotIn('background_tasks_cancelled', result)

    def test_statements_and_none_have_no_return_value(self):
        for code in ('x = 1', 'None', '', '# only a comment'):
            result = self.worker.run(code)
            self.assert_ok(result)
            self.assertIsNone(result['return_value'])
            self.assertNotIn('value', result)

    def test_persistent_state_and_loop_identity(self):
        self.assert_ok(self.worker.run('import asyncio\nx = 41\nloop = asyncio.get_event_loop()\nev = asyncio.Event()'))
        self.assertEqual(self.worker.value('x + 1'), 42)
        self.assertEqual(self.worker.value('asyncio.get_event_loop() is loop'), True)
        self.assertEqual(self.worker.value('asyncio.get_running_loop() is loop'), True)
        self.assertEqual(self.worker.value('ev.set()\nawait ev.wait()'), True)

    def test_top_level_await_and_lock_across_cells(self):
        self.assert_ok(self.worker.run('import asyncio\nlock = asyncio.Lock()\nawait asyncio.sleep(0)'))
        code = 'async def f():\n    await asyncio.sleep(0)\n    return 7\nasync with lock:\n    y = await f()\ny'
        self.assertEqual(self.worker.value(code), 7)
        self.assertEqual(self.worker.value('await f() + await asyncio.sleep(0, 1)'), 8)

    def test_stdout_and_stderr_captured_and_streamed(self):
        code = (
            'import sys, logging, traceback\n'
            'print("hello")\n'
            'print("oops", file=sys.stderr)\n'
            'logging.basicConfig(format="%(levelname)s %(message)s")\n'
            'logging.warning("careful")\n'
            'try:\n    1/0\nexcept ZeroDivisionError:\n    traceback.print_exc()\n'
            '[sys.stdout.isatty(), sys.stdout.encoding, sys.stdout.writable()]'
        )
        run_id = self.worker.start(code)
        result, outputs = self.worker.collect(run_id)
        self.assert_ok(result)
        self.assertEqual(result['value'], [False, 'utf-8', True])
        self.assertEqual(result['stdout'], 'hello\n')
        self.assertTrue(result['stderr'].startswith('oops\nWARNING careful\nTraceback'), result['stderr'])
        self.assertIn('ZeroDivisionError: division by zero', result['stderr'])
        self.assertNotIn('<string>', result['stderr'])  # traceback.print_exc shows no worker frame
        for stream in ('stdout', 'stderr'):
            streamed = ''.join(f['text'] for f in outputs if f['stream'] == stream)
            self.assertEqual(streamed, result[stream])

    def test_logging_handler_from_earlier_cell_writes_into_current_cell(self):
        self.assert_ok(self.worker.run('import logging\nlog = logging.getLogger("t")\nlog.addHandler(logging.StreamHandler())'))
        result = self.worker.run('log.warning("second cell")')
        self.assertEqual(result['stderr'], 'second cell\n')

    def test_output_streams_while_cell_runs(self):
        run_id = self.worker.start('import time\nprint("early")\ntime.sleep(1)\nprint("late")')
        first = self.worker.next_frame()
        self.assertEqual(first['type'], 'output')
        self.assertEqual(first['text'], 'early\n')
        result, outputs = self.worker.collect(run_id)
        self.assertEqual(''.join(f['text'] for f in outputs), 'late\n')
        self.assertEqual(result['stdout'], 'early\nlate\n')

    def test_syntax_error_reported_with_line(self):
        result = self.worker.run('x = 1\ny = (\n', 'syn-1')
        self.assertFalse(result['success'])
        self.assertEqual(result['state'], 'preserved')
        error = result['error']
        self.assertTrue(error.startswith('Traceback (most recent call last):'), error)
        self.assertIn('File "<repl:syn-1>", line 2', error)
        self.assertIn('y = (', error)
        self.assertIn('SyntaxError', error)
        self.assert_no_worker_frames(error)

    def test_system_exit_is_an_ordinary_failure(self):
        result = self.worker.run('x = 5\nraise SystemExit(3)')
        self.assertFalse(result['success'])
        self.assertEqual(result['state'], 'preserved')
        self.assertIn('SystemExit: 3', result['error'])
        self.assertEqual(self.worker.value('x'), 5)
        self.assertIsNone(self.worker.proc.poll())

    def test_flood_of_small_prints_stays_cheap(self):
        started = time.monotonic()
        result = self.worker.run('for i in range(10**6):\n    print(i)')
        self.assert_ok(result)
        self.assertEqual(len(result['stdout'].encode()), 50_000)
        self.assertTrue(result['truncated']['stdout'])
        self.assertLess(time.monotonic() - started, 15)


class TracebackTests(WorkerTestCase):
    def test_zero_division_traceback(self):
        result = self.worker.run('x = 1\n1/0', 'tb-1')
        self.assertFalse(result['success'])
        self.assertEqual(result['state'], 'preserved')
        self.assertIsNone(result['return_value'])
        error = result['error']
        self.assertTrue(error.startswith('Traceback (most recent call last):\n'), error)
        self.assertIn('  File "<repl:tb-1>", line 2, in <module>\n    1/0\n', error)
        self.assertTrue(error.endswith('ZeroDivisionError: division by zero'), error)
        self.assert_no_worker_frames(error)
        self.assertEqual(self.worker.value('x'), 1)

    def test_old_function_attributed_to_its_cell(self):
        self.assert_ok(self.worker.run('def f(n):\n    return 10 / n\n', 'old-cell'))
        self.assert_ok(self.worker.run('z = 3', 'middle'))
        result = self.worker.run('f(1)\nf(0)', 'new-cell')
        error = result['error']
        self.assertIn('File "<repl:new-cell>", line 2, in <module>\n    f(0)', error)
        self.assertIn('File "<repl:old-cell>", line 2, in f\n    return 10 / n', error)
        self.assertLess(error.index('new-cell'), error.index('old-cell'))
        self.assertEqual(self.worker.value('import inspect\ninspect.getsource(f)'), 'def f(n):\n    return 10 / n\n')

    def test_exception_names_follow_python(self):
        result = self.worker.run('class Oops(Exception):\n    pass\nraise Oops("mine")')
        self.assertTrue(result['error'].endswith('\nOops: mine'), result['error'])
        result = self.worker.run('import json\njson.loads("{")')
        self.assertIn('\njson.decoder.JSONDecodeError: Expecting', result['error'])
        self.assertNotIn('json/decoder.py', result['error'])

    def test_exception_chain_names_the_cause(self):
        result = self.worker.run('try:\n    {}["k"]\nexcept KeyError as e:\n    raise ValueError("bad") from e')
        self.assertIn("ValueError: bad\n(caused by KeyError: 'k')", result['error'])

    def test_traceback_is_bounded(self):
        code = 'def r(n):\n    return r(n + 1)\nr(0)'
        result = self.worker.run(code)
        error = result['error']
        self.assertLessEqual(len(error), 10_000)
        self.assertEqual(error.count('  File "<repl:'), 20)
        self.assertIn('RecursionError', error)
        # Long source lines: each shown line is cut to 500 characters and the innermost
        # frames that fit the 10,000-character bound are kept.
        long_line = '    return deep(n + 1)  # ' + 'c' * 600
        result = self.worker.run(f'def deep(n):\n{long_line}\ndeep(0)')
        error = result['error']
        self.assertLessEqual(len(error), 10_000)
        self.assertIn('return deep(n + 1)  # ' + 'c' * 478 + '\n', error)
        self.assertNotIn('c' * 479, error)
        self.assertLess(error.count('  File "<repl:'), 20)
        self.assertTrue(error.startswith('Traceback (most recent call last):\n  File'), error[:100])
        self.assertIn('\nRecursionError', error)
        result = self.worker.run('raise ValueError("m" * 100_000)')
        self.assertLessEqual(len(result['error']), 10_000)
        self.assertIn('ValueError: ' + 'm' * 4000, result['error'])
        self.assertNotIn('m' * 4001, result['error'])

    def test_source_history_evicts_after_64_runs(self):
        self.assert_ok(self.worker.run('def first():\n    raise RuntimeError("from first")', 'hist-0'))
        error = self.worker.run('first()')['error']
        self.assertIn('raise RuntimeError("from first")', error)
        for i in range(1, 65):
            self.assert_ok(self.worker.run(f'v{i} = {i}', f'hist-{i}'))
        error = self.worker.run('first()', 'hist-last')['error']
        self.assertIn('File "<repl:hist-0>", line 2, in first\n', error)
        self.assertNotIn('from first")', error)  # hist-0's source was evicted
        count = self.worker.value('import linecache\nsum(k.startswith("<repl:") for k in linecache.cache)')
        self.assertLessEqual(count, 64)
        self.assertEqual(self.worker.value('"<repl:hist-0>" in linecache.cache'), False)

    def test_source_history_evicts_by_memory_budget(self):
        filler = '# ' + 'x' * 98 + '\n'
        big = filler * 1000  # about 100 KB of source, more once held as lines
        self.assert_ok(self.worker.run(big + 'def early():\n    raise KeyError("early")', 'mem-0'))
        for i in range(1, 12):
            self.assert_ok(self.worker.run(big + f'w = {i}', f'mem-{i}'))
        self.assert_ok(self.worker.run(big + 'def late():\n    raise KeyError("late")', 'mem-last'))
        error = self.worker.run('early()')['error']
        self.assertIn('File "<repl:mem-0>", line 1002, in early\n', error)
        self.assertNotIn('raise KeyError("early")', error)
        self.assertIn('raise KeyError("late")', self.worker.run('late()')['error'])


class OutputBoundTests(WorkerTestCase):
    def test_huge_print_is_bounded_and_streamed(self):
        run_id = self.worker.start('print("a" * 2_000_000)\nprint("after")')
        result, outputs = self.worker.collect(run_id)
        self.assert_ok(result)
        self.assertEqual(result['stdout'], 'a' * 50_000)
        self.assertTrue(result['truncated']['stdout'])
        self.assertTrue(outputs)
        self.assertEqual(''.join(f['text'] for f in outputs), result['stdout'])

    def test_multibyte_bound_at_character_boundary(self):
        run_id = self.worker.start('print("Ж" * 2_000_000)')
        result, outputs = self.worker.collect(run_id)
        self.assertEqual(len(result['stdout'].encode('utf-8')), 50_000)
        self.assertEqual(result['stdout'], 'Ж' * 25_000)
        self.assertEqual(''.join(f['text'] for f in outputs), result['stdout'])
        # 3-byte characters: the budget ends inside one, which is dropped whole.
        result = self.worker.run('import sys\nsys.stdout.write("a" + "€" * 30_000)')
        self.assertEqual(result['stdout'], 'a' + '€' * 16_666)

    def test_lone_surrogate_becomes_question_mark(self):
        result = self.worker.run('print("a\\udc80b")\nimport sys\nsys.stderr.write("\\ud800")')
        self.assertEqual(result['stdout'], 'a?b\n')
        self.assertEqual(result['stderr'], '?')

    def test_native_fd_output_never_corrupts_frames(self):
        barrier = 'barrier-' + uuid.uuid4().hex
        run_id = self.worker.start('import os, sys\nos.write(1, b"not-json\\n")\nsys.__stdout__.write("raw\\n")\n1', barrier=barrier)
        result, _ = self.worker.collect(run_id)
        self.assert_ok(result)
        self.assertEqual(result['value'], 1)
        native = self.worker.drain_native(0)
        self.assertIn(b'not-json\n', native)
        self.assertIn(b'raw\n', native)

    def test_barrier_written_to_fd2_before_result(self):
        barrier = 'barrier-' + uuid.uuid4().hex
        run_id = self.worker.start('import os\nos.write(2, b"native-before")', barrier=barrier)
        result, _ = self.worker.collect(run_id)
        self.assert_ok(result)
        # The barrier was written before the result frame, so it is already in the pipe.
        native = self.worker.drain_native(0)
        marker = b'\x1e' + barrier.encode() + b'\x1e'
        self.assertIn(marker, native)
        self.assertLess(native.index(b'native-before'), native.index(marker))


class PreviewTests(WorkerTestCase):
    def test_json_builtins_convert(self):
        result = self.worker.run('{"a": (1, 2.5, None), "b": [True, "x"]}')
        self.assertEqual(result['return_value'], '{"a":[1,2.5,null],"b":[true,"x"]}')
        self.assertEqual(result['value'], {'a': [1, 2.5, None], 'b': [True, 'x']})
        self.assertFalse(result['truncated']['return'])

    def test_strings_are_json_quoted(self):
        result = self.worker.run('"hello"')
        self.assertEqual(result['return_value'], '"hello"')
        self.assertEqual(result['value'], 'hello')
        result = self.worker.run('"привет"')
        self.assertEqual(result['return_value'], '"привет"')

    def test_long_string_preview_is_bounded(self):
        result = self.worker.run('"hello" * 10_000')
        preview = result['return_value']
        self.assertTrue(preview.startswith('"hellohello'))
        self.assertLessEqual(len(preview.encode('utf-8')), 20_000)
        self.assertGreater(len(preview.encode('utf-8')), 19_000)
        self.assertTrue(result['truncated']['return'])
        self.assertNotIn('value', result)
        self.assertEqual(self.worker.value('"y" * 3000'), 'y' * 3000)

    def test_unsupported_values_are_omitted_with_type_and_length(self):
        cases = {
            'b"abc"': '<bytes; length=3; safe preview omitted>',
            '{1, 2}': '<set; length=2; safe preview omitted>',
            'list(range(101))': '<list; length=101; safe preview omitted>',
            '{1: "int key"}': '<dict; length=1; safe preview omitted>',
            '[[[[[[1]]]]]]': '<list; length=1; safe preview omitted>',
            'float("nan")': '<float; safe preview omitted>',
            '2 ** 5000': '<int; safe preview omitted>',
            'object()': '<object; safe preview omitted>',
            '["s" * 2001]': '<list; length=1; safe preview omitted>',
            '[list(range(60)), list(range(60))]': '<list; length=2; safe preview omitted>',
        }
        for code, expected in cases.items():
            result = self.worker.run(code)
            self.assertEqual(result['return_value'], expected, code)
            self.assertTrue(result['truncated']['return'], code)
            self.assertNotIn('value', result, code)
        self.assertEqual(self.worker.value('[[[[[1]]]]]'), [[[[[1]]]]])

    def test_custom_objects_never_run_user_code(self):
        marker = self.path('marker')
        code = f'''
MARK = {marker!r}
def trap(*args):
    open(MARK, "a").write("fired\\n")
    raise RuntimeError("trap")
class Meta(type):
    __name__ = property(trap)
    __getattribute__ = trap
    __eq__ = trap
    __hash__ = trap
    __repr__ = trap
class Evil(metaclass=Meta):
    __repr__ = trap
    __str__ = trap
    __len__ = trap
    __iter__ = trap
    __getattribute__ = trap
class Sub(dict):
    __iter__ = trap
    __len__ = trap
    keys = trap
    items = trap
    __repr__ = trap
class Text(str):
    __repr__ = trap
'''
        self.assert_ok(self.worker.run(code))
        expectations = {
            'Evil()': '<Evil; safe preview omitted>',
            'Evil': '<Meta; safe preview omitted>',
            'Sub(a=1)': '<Sub; safe preview omitted>',
            'Text("x")': '<Text; safe preview omitted>',
            '[Evil()]': '<list; length=1; safe preview omitted>',
            '{"k": Sub()}': '<dict; length=1; safe preview omitted>',
        }
        for expression, expected in expectations.items():
            result = self.worker.run(expression)
            self.assert_ok(result)
            self.assertEqual(result['return_value'], expected, expression)
            self.assertTrue(result['truncated']['return'])
        self.assertFalse(os.path.exists(marker), 'a user hook ran during a preview')


class InterruptTests(WorkerTestCase):
    def interrupt_when_printed(self, code):
        run_id = self.worker.start(code)
        self.worker.wait_for_output(run_id, 'started')
        time.sleep(0.05)
        os.kill(self.worker.proc.pid, signal.SIGINT)
        result, _ = self.worker.collect(run_id)
        return run_id, result

    def check_interrupt(self, code):
        run_id, result = self.interrupt_when_printed(code)
        self.assertFalse(result['success'])
        self.assertEqual(result['state'], 'preserved')
        self.assertEqual(result['error'], INTERRUPTED.format(run_id))
        self.assertEqual(self.worker.value('x'), 10)
        self.assertEqual(self.worker.value('import asyncio\nawait asyncio.sleep(0.01)\nasyncio.get_running_loop() is loop'), True)

    def test_sigint_interrupts_sync_loop(self):
        self.assert_ok(self.worker.run('import asyncio\nloop = asyncio.get_event_loop()'))
        self.check_interrupt('x = 10\nprint("started")\nwhile True:\n    pass')

    def test_sigint_interrupts_sleep(self):
        self.assert_ok(self.worker.run('import asyncio\nloop = asyncio.get_event_loop()'))
        self.check_interrupt('import time\nx = 10\nprint("started")\ntime.sleep(30)')

    def test_sigint_interrupts_awaiting_cell(self):
        self.assert_ok(self.worker.run('import asyncio\nloop = asyncio.get_event_loop()'))
        self.check_interrupt('x = 10\nprint("started")\nawait asyncio.sleep(30)')

    def test_sigint_interrupts_async_busy_loop(self):
        self.assert_ok(self.worker.run('import asyncio\nloop = asyncio.get_event_loop()'))
        self.check_interrupt('x = 10\nprint("started")\nwhile True:\n    await asyncio.sleep(0)')

    def test_sigint_first_cancels_at_an_await_wherever_it_lands(self):
        # The registered handler, called as the signal machinery would with the frame it
        # caught: user code, asyncio's own code, the worker's code. None may raise there
        # (a KeyboardInterrupt can land between acquiring a lock and the `async with`
        # that releases it); the cell is cancelled at its next await instead.
        frames = {
            'user': 'sys._getframe()',
            'asyncio': 'types.FunctionType((lambda get: get()).__code__, vars(asyncio.locks))(sys._getframe)',
            'worker': 'sys._getframe(1)',
        }
        for name, frame in frames.items():
            with self.subTest(frame=name):
                code = (
                    'import asyncio, signal, sys, types\nraised = False\n'
                    f'try:\n    signal.getsignal(signal.SIGINT)(signal.SIGINT, {frame})\n'
                    'except KeyboardInterrupt:\n    raised = True\n'
                    'await asyncio.sleep(5)'
                )
                run_id = self.worker.start(code)
                result, _ = self.worker.collect(run_id, timeout=4)
                self.assertEqual(result['error'], INTERRUPTED.format(run_id))
                self.assertEqual(self.worker.value('raised'), False)

    def test_interrupted_async_with_releases_lock(self):
        self.assert_ok(self.worker.run('import asyncio\nlock = asyncio.Lock()\nloop = asyncio.get_running_loop()'))
        for _ in range(8):
            run_id, result = self.interrupt_when_printed(
                'print("started")\nwhile True:\n    async with lock:\n        await asyncio.sleep(0)'
            )
            self.assertEqual(result['error'], INTERRUPTED.format(run_id))
            self.assertEqual(self.worker.value('lock.locked()'), False)

    def test_sigint_right_after_dispatch_interrupts_the_cell(self):
        # The signal may reach the worker while the frame is still in the pipe, being read,
        # queued or prepared: it is for that cell all the same (the server's grace is 2 s).
        self.assert_ok(self.worker.run('x = 10'))
        for delay in (0, 0, 0.001, 0.005, 0.02):
            started = time.monotonic()
            run_id = self.worker.start('import time; time.sleep(30)')
            time.sleep(delay)
            os.kill(self.worker.proc.pid, signal.SIGINT)
            result, _ = self.worker.collect(run_id, timeout=1.5)
            self.assertEqual(result['error'], INTERRUPTED.format(run_id))
            self.assertEqual(result['state'], 'preserved')
            self.assertLess(time.monotonic() - started, 1.5)
        self.assertEqual(self.worker.value('x'), 10)

    def test_sigint_interrupts_sh_and_kills_its_group(self):
        pidfile = self.path('shell-pid')
        run_id = self.worker.start(f'x = 10\nprint("started")\nsh("echo $$ > {pidfile}; exec sleep 30")')
        self.worker.wait_for_output(run_id, 'started')
        deadline = time.monotonic() + 5
        while not os.path.exists(pidfile) or not read_text(pidfile).strip():
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.01)
        os.kill(self.worker.proc.pid, signal.SIGINT)
        result, _ = self.worker.collect(run_id, timeout=2)
        self.assertEqual(result['error'], INTERRUPTED.format(run_id))
        self.assertTrue(wait_gone(int(read_text(pidfile))))
        self.assertEqual(self.worker.value('x'), 10)

    def test_sigint_between_cells_is_harmless(self):
        self.assert_ok(self.worker.run('x = 1'))
        for _ in range(3):
            os.kill(self.worker.proc.pid, signal.SIGINT)
            time.sleep(0.05)
        self.assertEqual(self.worker.value('x + 1'), 2)
        self.assertIsNone(self.worker.proc.poll())

    def test_interrupt_with_running_executor_work_clears_state(self):
        marker = self.path('late')
        code = (
            f'import asyncio, time\nx = 10\nprint("started")\n'
            f'def job():\n    time.sleep(1)\n    open({marker!r}, "w").close()\n'
            f'await asyncio.to_thread(job)'
        )
        _, result = self.interrupt_when_printed(code)
        self.assertEqual(result['state'], 'cleared')
        self.assertIn('Join threads', result['error'])
        self.assertEqual(self.worker.wait_exit(), 70)
        time.sleep(1.2)
        self.assertFalse(os.path.exists(marker))


class BackgroundWorkTests(WorkerTestCase):
    def test_background_task_cancelled_at_cell_end(self):
        code = (
            'import asyncio\nx = 0\n'
            'async def bump():\n    global x\n    await asyncio.sleep(0.3)\n    x = 1\n'
            'task = asyncio.create_task(bump())'
        )
        result = self.worker.run(code)
        self.assert_ok(result)
        self.assertEqual(result['background_tasks_cancelled'], 1)
        self.assertEqual(self.worker.value('await asyncio.sleep(0.5)\n[x, task.cancelled()]'), [0, True])

    def test_task_refusing_cancellation_clears_worker(self):
        code = (
            'import asyncio\n'
            'async def stubborn():\n'
            '    while True:\n'
            '        try:\n            await asyncio.sleep(10)\n'
            '        except asyncio.CancelledError:\n            pass\n'
            'task = asyncio.create_task(stubborn())\nawait asyncio.sleep(0)'
        )
        result = self.worker.run(code)
        self.assertFalse(result['success'])
        self.assertEqual(result['state'], 'cleared')
        self.assertEqual(result['error'], 'Background tasks refused cancellation; worker stopped and variables cleared')
        self.assertEqual(self.worker.wait_exit(), 70)

    def test_timer_callbacks_cannot_fire_under_later_cell(self):
        marker = self.path('timer')
        code = (
            f'import asyncio\nloop = asyncio.get_running_loop()\n'
            f'def touch(name):\n    open({marker!r} + name, "w").close()\n'
            f'loop.call_later(0.2, touch, "-later")\n'
            f'loop.call_at(loop.time() + 0.2, touch, "-at")\n'
            f'ticks = [0]\n'
            f'def tick():\n    ticks[0] += 1\n    loop.call_soon(tick)\n'
            f'loop.call_soon(tick)'
        )
        self.assert_ok(self.worker.run(code))
        # The self-rescheduling callback always has one call pending when the cell ends.
        self.assertEqual(self.worker.value('before = ticks[0]\nawait asyncio.sleep(0.5)\nticks[0] - before'), 0)
        for name in ('-later', '-at'):
            self.assertFalse(os.path.exists(marker + name), name)
        self.assertEqual(self.worker.value('h = loop.call_later(0.01, touch, "-inside")\nawait asyncio.sleep(0.1)\n1'), 1)
        self.assertTrue(os.path.exists(marker + '-inside'))

    def test_unjoined_thread_clears_worker(self):
        result = self.worker.run('import threading, time\nthreading.Thread(target=time.sleep, args=(2,)).start()')
        self.assertFalse(result['success'])
        self.assertEqual(result['state'], 'cleared')
        self.assertIn('Join threads before the cell ends', result['error'])
        self.assertTrue(result['error'].startswith('Cell left active background threads or executor work'))
        self.assertEqual(self.worker.wait_exit(), 70)

    def test_joined_thread_is_fine(self):
        result = self.worker.run('import threading\nt = threading.Thread(target=print, args=("hi",))\nt.start()\nt.join()')
        self.assert_ok(result)
        self.assertEqual(result['stdout'], 'hi\n')

    def test_finished_executor_work_preserves_state(self):
        code = (
            'import asyncio, socket\nlock = asyncio.Lock()\n'
            'n = await asyncio.to_thread(sum, [1, 2, 3])\n'
            'infos = await asyncio.get_running_loop().getaddrinfo("localhost", 80, type=socket.SOCK_STREAM)\n'
            'n'
        )
        result = self.worker.run(code)
        self.assert_ok(result)
        self.assertEqual(result['value'], 6)
        self.assertEqual(self.worker.value('async with lock:\n    m = await asyncio.to_thread(len, "abcd")\nm'), 4)

    def test_awaited_subprocess_and_finished_work_preserve_state(self):
        # asyncio's waitpid watcher thread (3.10/3.11) and an unawaited quick executor job
        # are finished, or just finishing, when the cell ends.
        for _ in range(5):
            result = self.worker.run(
                'import asyncio\nproc = await asyncio.create_subprocess_exec("true")\nawait proc.wait()\n'
                'asyncio.get_running_loop().run_in_executor(None, int)\nproc.returncode'
            )
            self.assert_ok(result)
            self.assertEqual(result['value'], 0)

    def test_default_executor_pending_limit(self):
        code = (
            'import asyncio, threading\nloop = asyncio.get_running_loop()\ngate = threading.Event()\n'
            'jobs = [loop.run_in_executor(None, gate.wait, 10) for _ in range(64)]\n'
            'try:\n    loop.run_in_executor(None, gate.wait, 10)\n    message = None\n'
            'except RuntimeError as exc:\n    message = str(exc)\n'
            'gate.set()\nawait asyncio.gather(*jobs)\nmessage'
        )
        result = self.worker.run(code)
        self.assert_ok(result)
        self.assertEqual(result['value'], 'Too many pending default executor jobs (limit 64)')


class LifecycleTests(WorkerTestCase):
    def test_eof_mid_cell_exits_promptly(self):
        run_id = self.worker.start('import time\nprint("started")\ntime.sleep(30)')
        self.worker.wait_for_output(run_id, 'started')
        self.worker.hang_up()
        started = time.monotonic()
        self.assertEqual(self.worker.wait_exit(3.0), 0)
        self.assertLess(time.monotonic() - started, 3.0)

    def test_shutdown_finishes_current_cell_then_exits(self):
        run_id = self.worker.start('import time\ntime.sleep(0.3)\n5')
        self.worker.send_raw(b'{"type":"shutdown"}\n')
        result, _ = self.worker.collect(run_id)
        self.assertEqual(result['value'], 5)
        self.assertEqual(self.worker.wait_exit(), 0)

    def check_protocol_error(self, data):
        try:
            self.worker.send_raw(data)
        except BrokenPipeError:
            pass
        self.assertEqual(self.worker.wait_exit(), 2)
        native = self.worker.drain_native()
        self.assertIn(b'protocol error', native)
        self.assertEqual(native.count(b'\n'), 1)

    def test_oversized_frame_exits_2(self):
        self.check_protocol_error(b'{"type":"execute","code":"' + b'x' * MAX_FRAME + b'"}\n')

    def test_garbage_frame_exits_2(self):
        self.check_protocol_error(b'not json at all\n')

    def test_unknown_frame_exits_2(self):
        self.check_protocol_error(b'{"type":"launch_missiles"}\n')

    def test_malformed_execute_exits_2(self):
        self.check_protocol_error(b'{"type":"execute","id":"a","code":42,"barrier":"b"}\n')

    def test_malformed_rpc_result_exits_2(self):
        self.check_protocol_error(b'{"type":"rpc_result","id":5,"result":null}\n')
        self.check_protocol_error(b'{"type":"rpc_result","id":"a","error":7}\n')

    def test_malformed_saved_file_fields_exit_2(self):
        self.check_protocol_error(b'{"type":"execute","id":"a","code":"","barrier":"b","source_path":"/x","argv":[1]}\n')

    def test_frame_of_exactly_max_size_is_accepted(self):
        frame = {'type': 'execute', 'id': 'big', 'code': '', 'timeout': 1, 'barrier': 'b'}
        padding = MAX_FRAME - len(json.dumps(frame).encode()) - 1  # newline included in the limit
        frame['code'] = '#' + 'p' * (padding - 1)
        data = json.dumps(frame).encode() + b'\n'
        self.assertEqual(len(data), MAX_FRAME)
        self.worker.send_raw(data)
        result, _ = self.worker.collect('big')
        self.assert_ok(result)


class SavedFileTests(WorkerTestCase):
    def setUp(self):
        super().setUp()
        os.mkdir(self.path('scripts'))

    def script(self, name, text, encoding='utf-8'):
        path = self.path(os.path.join('scripts', name))
        with open(path, 'w', encoding=encoding) as file:
            file.write(text)
        return path

    def test_encoding_sibling_import_argv_and_restoration(self):
        self.script('sibling.py', 'VALUE = "beside the script"\n')
        latin = self.script('latin.py', (
            '# -*- coding: latin-1 -*-\n'
            'import os, sys\n'
            'import sibling\n'
            'text = "caf\xe9"\n'
            'seen = [sys.argv, __name__, __file__, sys.path[0], sibling.VALUE, os.getcwd()]\n'
            'print(text)\n'
            'len(text)\n'
        ), encoding='latin-1')
        self.assert_ok(self.worker.run('import sys\nargv_object, path_object = sys.argv, sys.path\npath_before = list(sys.path)'))
        result = self.worker.run_file(latin, ['a b', '  spaced  ', '--flag=x y', ''])
        self.assert_ok(result)
        self.assertEqual(result['stdout'], 'café\n')
        self.assertEqual(result['value'], 4)
        self.assertNotIn('exit_code', result)
        seen = self.worker.value('[text, seen]')
        self.assertEqual(seen, ['café', [[latin, 'a b', '  spaced  ', '--flag=x y', ''], '__main__', latin,
                                         self.path('scripts'), 'beside the script', os.path.realpath(self.dir)]])
        restored = '[__name__, "__file__" in globals(), sys.argv is argv_object, sys.path is path_object, sys.path == path_before, sys.argv]'
        self.assertEqual(self.worker.value(restored), ['__repl__', False, True, True, True, ['']])
        # A __file__ the namespace had before comes back.
        self.assert_ok(self.worker.run('__file__ = "mine"'))
        self.assert_ok(self.worker.run_file(latin))
        self.assertEqual(self.worker.value('[__file__, __name__, seen[0]]'), ['mine', '__repl__', [latin]])

    def test_traceback_shows_real_file_and_lines(self):
        boom = self.script('boom.py', 'def f():\n    raise ValueError("from the file")\n\nf()\n')
        result = self.worker.run_file(boom)
        self.assertFalse(result['success'])
        self.assertEqual(result['state'], 'preserved')
        error = result['error']
        self.assertIn(f'  File "{boom}", line 4, in <module>\n    f()\n', error)
        self.assertIn(f'  File "{boom}", line 2, in f\n    raise ValueError("from the file")\n', error)
        self.assertTrue(error.endswith('ValueError: from the file'), error)
        self.assert_no_worker_frames(error)
        self.assertNotIn('exit_code', result)
        self.assertIn('raise ValueError', self.worker.value('import inspect\ninspect.getsource(f)'))
        broken = self.script('broken.py', 'x = 1\ny = (\n')
        error = self.worker.run_file(broken)['error']
        self.assertIn(f'File "{broken}", line 2', error)
        self.assertIn('SyntaxError', error)

    def test_exit_status_and_next_cell(self):
        exits = self.script('exits.py', (
            'import sys\nmarker = 42\ncode = sys.argv[1]\n'
            'sys.exit() if code == "none" else sys.exit(code if code == "stopped" else int(code))\n'
            'after_exit = True\n'
        ))
        cases = {'none': (0, ''), '0': (0, ''), '2': (2, ''), 'stopped': (1, 'stopped\n')}
        for argv, (status, stderr) in cases.items():
            with self.subTest(argv=argv):
                self.assert_ok(self.worker.run('marker = 0'))
                result = self.worker.run_file(exits, [argv])
                self.assertEqual(result['exit_code'], status)
                self.assertEqual(result['success'], status == 0)
                self.assertEqual(result['error'], None if status == 0 else f'Saved Python file exited with status {status}')
                self.assertEqual(result['stderr'], stderr)
                self.assertEqual(result['state'], 'preserved')
                self.assertEqual(self.worker.value('[marker, "after_exit" in globals()]'), [42, False])
        result = self.worker.run('raise SystemExit(0)')
        self.assertFalse(result['success'])
        self.assertNotIn('exit_code', result)
        self.assertIn('SystemExit: 0', result['error'])

    def test_bounded_input_validation(self):
        big = self.script('big.py', '#' * 262_144 + '\n')
        self.assertEqual(self.worker.run_file(big)['error'], 'Python source file exceeds 256 KiB')
        exact = self.script('exact.py', '#' * 262_143 + '\n')
        self.assert_ok(self.worker.run_file(exact))
        result = self.worker.run_file(exact, ['a'] * 129)
        self.assertEqual(result['error'], 'argv must contain at most 128 strings')
        self.assert_ok(self.worker.run_file(exact, ['a'] * 128))
        self.assertEqual(self.worker.run_file(exact, ['é' * 16_385])['error'], 'argv exceeds 32 KiB')
        missing = self.path('scripts/missing.py')
        result = self.worker.run_file(missing)
        self.assertFalse(result['success'])
        self.assertIn(missing, result['error'])
        fifo = self.path('scripts/fifo.py')
        os.mkfifo(fifo)
        self.assertIn('not a regular file', self.worker.run_file(fifo)['error'])
        self.assertEqual(self.worker.value('"next cell fine"'), 'next cell fine')


class InventoryTests(WorkerTestCase):
    def inventory(self):
        run_id = self.worker.start('', inventory=True)
        result, outputs = self.worker.collect(run_id)
        self.assert_ok(result)
        self.assertEqual(outputs, [])
        self.assertEqual(result['return_value'], INVENTORY_NOTE)
        return run_id, result['value']

    def test_names_types_and_lengths_without_user_hooks(self):
        marker = self.path('trap')
        setup = f'''
def trap(*args):
    open({marker!r}, "a").write("fired\\n")
class Meta(type):
    __name__ = property(trap)
    def __getattribute__(cls, name):
        trap()
        return type.__getattribute__(cls, name)
    __eq__ = __hash__ = __repr__ = trap
class Hostile(metaclass=Meta):
    __repr__ = __len__ = __getattribute__ = trap
h = Hostile()
numbers = [1, 2, 3]
name = "abc"
blob = b"xy"
__file__ = "reserved"
'''
        self.assert_ok(self.worker.run(setup, 'setup-run'))
        self.assert_ok(self.worker.run('del trap'))
        run_id, inventory = self.inventory()
        self.assertEqual(inventory['variables'], [
            {'name': 'Meta', 'type': 'type'},
            {'name': 'Hostile', 'type': 'Meta'},
            {'name': 'h', 'type': 'Hostile'},
            {'name': 'numbers', 'type': 'list', 'length': 3},
            {'name': 'name', 'type': 'str', 'length': 3},
            {'name': 'blob', 'type': 'bytes', 'length': 2},
        ])
        bridge_names = 2  # mcp and ToolError (the artifact helpers are in HELPERS)
        self.assertEqual(inventory['total_namespace_entries'], 2 + len(HELPERS) + bridge_names + 7)
        self.assertEqual(inventory['omitted_including_helpers'], 2 + len(HELPERS) + bridge_names + 1)
        self.assertIs(inventory['values_included'], False)
        self.assertFalse(os.path.exists(marker), 'a user hook ran during the inventory')
        self.assertEqual(self.worker.value('repl_namespace()["variables"][3]'), {'name': 'numbers', 'type': 'list', 'length': 3})
        history = self.worker.value('[entry["run_id"] for entry in repl_history()]')
        self.assertIn('setup-run', history)
        self.assertNotIn(run_id, history)

    def test_bounds(self):
        code = (
            'for i in range(1100):\n    globals()["v%04d_" % i + "n" * 250] = i\n'
            'globals()["x" * 257] = 1\nglobals()[7] = "not a name"\n'
            'Long = type("T" * 300, (), {})\nlong_instance = Long()\ndel i'
        )
        self.assert_ok(self.worker.run(code))
        _, inventory = self.inventory()
        listed = inventory['variables']
        size = len(json.dumps(inventory, ensure_ascii=False, separators=(',', ':')).encode())
        self.assertLessEqual(size, 60_000)
        self.assertGreater(len(listed), 150)
        self.assertLess(len(listed), 512)
        self.assertEqual(inventory['omitted_including_helpers'], inventory['total_namespace_entries'] - len(listed))
        self.assert_ok(self.worker.run('for name in [k for k in globals() if type(k) is str and k.startswith("v")]:\n    del globals()[name]'))
        self.assert_ok(self.worker.run('for i in range(600):\n    globals()["w%d" % i] = i\ndel i'))
        listed = self.inventory()[1]['variables']
        self.assertEqual(len(listed), 512)
        names = [entry['name'] for entry in listed]
        self.assertNotIn('x' * 257, names)
        self.assertEqual(listed[names.index('long_instance')]['type'], 'T' * 128)


class HelperTests(WorkerTestCase):
    def test_sh_result_status_error_and_preview(self):
        result = self.worker.run('sh("printf hello")')
        self.assertEqual(result['value'], 'hello')
        self.assertEqual(result['return_value'], '"hello"')
        code = 'r = sh("echo out; echo err >&2; exit 3", check=False)\n[str(r), r.stdout, r.stderr, r.returncode, r.ok, r.truncated, type(r.stdout) is str]'
        self.assertEqual(self.worker.value(code), ['out\n', 'out\n', 'err\n', 3, False, False, True])
        result = self.worker.run('sh("exit 4")')
        self.assertTrue(result['error'].endswith('\nShellError: Shell exited with status 4; inspect exception.stderr'), result['error'])
        self.assert_no_worker_frames(result['error'])
        code = 'try:\n    sh("echo bad >&2; exit 5")\nexcept ShellError as e:\n    caught = [e.returncode, e.stderr, e.result.ok, isinstance(e, RuntimeError)]\ncaught'
        self.assertEqual(self.worker.value(code), [5, 'bad\n', False, True])

    def test_sh_timeout_cwd_and_env(self):
        started = time.monotonic()
        result = self.worker.run('sh("sleep 5", timeout=0.2)')
        self.assertIn('TimeoutExpired', result['error'])
        self.assertLess(time.monotonic() - started, 3)
        for timeout in ('-1', '0', 'float("inf")', 'float("nan")', '"1"'):
            self.assertIn('ValueError', self.worker.run(f'sh("true", timeout={timeout})')['error'], timeout)
        os.mkdir(self.path('sub'))
        code = 'import os\nos.chdir("sub")\nos.environ["BASE"] = "b"\n[sh("pwd").strip(), sh("echo $BASE $EXTRA", env={"EXTRA": "e"}).strip(), sh("pwd", cwd="~").strip()]'
        self.assertEqual(self.worker.value(code), [os.path.realpath(self.path('sub')), 'b e', os.path.expanduser('~')])

    def test_sh_output_bounds(self):
        code = 'r = sh("head -c 1000000 /dev/zero | tr \'\\\\0\' x")\n[len(r), len(r.encode()), r.truncated]'
        self.assertEqual(self.worker.value(code), [50_000, 50_000, True])
        code = 'r = sh("head -c 60000 /dev/zero | tr \'\\\\0\' \'\\\\377\'")\n[len(r.encode()), set(r) == {"\\ufffd"}, r.truncated]'
        self.assertEqual(self.worker.value(code), [49_998, True, True])

    def test_sh_kills_background_descendants_and_limits_concurrency(self):
        pid = self.worker.value('int(sh("sleep 60 >/dev/null 2>&1 & echo $!").strip())')
        self.assertTrue(wait_gone(pid))
        # 64 shells wait for a gate file; the 65th call fails at once, and only then is the
        # gate opened.
        code = (
            'import os, threading, time\nresults = []\n'
            'def run():\n    try:\n        results.append(sh("until [ -e gate ]; do sleep 0.01; done").ok)\n'
            '    except RuntimeError as exc:\n        results.append(str(exc))\n'
            'threads = [threading.Thread(target=run) for _ in range(65)]\n'
            'for t in threads:\n    t.start()\n'
            'while not results:\n    time.sleep(0.01)\n'
            'open("gate", "w").close()\n'
            'for t in threads:\n    t.join()\n'
            '[results.count(True), [r for r in results if r is not True]]'
        )
        self.assertEqual(self.worker.value(code), [64, ['Too many active sh processes (limit 64)']])

    def test_helpers_come_back_after_shadowing(self):
        shadow = '\n'.join(f'{name} = None' for name in HELPERS) + '\n[sh, repl_source]'
        self.assertEqual(self.worker.value(shadow), [None, None])
        self.assertEqual(self.worker.value(f'[callable(v) for v in [{", ".join(HELPERS)}]]'), [True] * len(HELPERS))

    def test_checkpoint_restore_and_recovery(self):
        code = (
            'import os\nclass Custom: pass\nx = 41\ndata = {"k": [1, 2.5, None, True], "t": (1, 2)}\n'
            'obj = Custom()\nlong_text = "s" * 3000\ncp = checkpoint("snap.json")\n'
            '[cp, oct(os.stat("snap.json").st_mode & 0o777), sorted(os.listdir("."))]'
        )
        saved, mode, files = self.worker.value(code)
        self.assertEqual(saved['saved'], 2)
        self.assertEqual(saved['omitted'], 0)
        self.assertEqual(saved['skipped'], {'os': 'custom object', 'Custom': 'custom object', 'obj': 'custom object', 'long_text': 'large string'})
        self.assertEqual(mode, '0o600')
        self.assertEqual(files, ['snap.json'])
        with open(self.path('snap.json')) as file:
            document = json.load(file)
        self.assertEqual(document['format'], 'repl-checkpoint-v1')
        self.assertEqual(document['values'], {'x': 41, 'data': {'k': [1, 2.5, None, True], 't': [1, 2]}})
        fresh = WorkerProcess(self.dir)
        self.addCleanup(fresh.close)
        self.assertEqual(fresh.value('y = 1\nrestore("snap.json")'), {'restored': 2, 'state': 'merged'})
        self.assertEqual(fresh.value('[x, data, y]'), [41, {'k': [1, 2.5, None, True], 't': [1, 2]}, 1])

    def test_restore_validates_whole_file_first(self):
        bad_files = {
            'evil.json': ({'format': 'repl-checkpoint-v1', 'values': {'x': 999, 'sh': 'hijack'}}, 'Checkpoint contains invalid or reserved variable names'),
            'file.json': ({'format': 'repl-checkpoint-v1', 'values': {'x': 999, '__file__': 'f'}}, 'Checkpoint contains invalid or reserved variable names'),
            'deep.json': ({'format': 'repl-checkpoint-v1', 'values': {'x': 999, 'd': [[[[[[1]]]]]]}}, 'not a small exact JSON value'),
            'other.json': ({'format': 'other', 'values': {'x': 999}}, 'Unsupported checkpoint format; expected repl-checkpoint-v1'),
            'many.json': ({'format': 'repl-checkpoint-v1', 'values': {f'v{i}': i for i in range(257)}}, 'at most 256 variables'),
        }
        for name, (document, message) in bad_files.items():
            with open(self.path(name), 'w') as file:
                json.dump(document, file)
        with open(self.path('big.json'), 'w') as file:
            file.write('{' + ' ' * 300_000 + '}')
        bad_files['big.json'] = (None, 'Checkpoint exceeds 256 KiB')
        self.assert_ok(self.worker.run('x = 41'))
        for name, (_, message) in bad_files.items():
            with self.subTest(file=name):
                result = self.worker.run(f'restore({name!r})')
                self.assertIn(message, result['error'])
        self.assertEqual(self.worker.value('[x, callable(sh), "d" in globals()]'), [41, True, False])

    def test_failed_checkpoint_leaves_no_temporary_file(self):
        os.mkdir(self.path('taken'))
        result = self.worker.run('x = 1\ncheckpoint("taken")')
        self.assertIn('IsADirectoryError', result['error'])
        self.assertEqual(os.listdir(self.dir), ['taken'])

    def test_repl_history_and_source(self):
        self.assert_ok(self.worker.run('a = 1\r\nb = 2', 'first'))
        self.assertEqual(self.worker.value('repl_source("first")'), 'a = 1\r\nb = 2')
        history = self.worker.value('repl_history()')
        self.assertEqual(history[0], {'run_id': 'first', 'lines': 2})
        self.assertEqual([entry['lines'] for entry in history], [2, 1, 1])
        self.assertIn('ValueError: Run source unknown or evicted (source history: 64 runs / 1 MiB)', self.worker.run('repl_source("nope")')['error'])
        for i in range(64):
            self.assert_ok(self.worker.run('pass', f'fill-{i}'))
        result = self.worker.run('repl_history()', 'last')
        self.assertEqual(len(result['value']), 64)
        self.assertEqual(result['value'][-1], {'run_id': 'last', 'lines': 1})
        self.assertIn('evicted', self.worker.run('repl_source("first")')['error'])


def envelope(*texts, is_error=False):
    content = [{'type': 'text', 'text': text} for text in texts]
    return {'content': content, 'structuredContent': {'count': len(texts)}, 'isError': is_error, '_meta': {'m': 1}}


class BridgeTests(WorkerTestCase):
    """The test plays the server: it reads `rpc` frames and answers with `rpc_result`."""

    def call_params(self, tool, arguments=None, timeout=120.0, server='fix'):
        return {'server': server, 'tool': tool, 'arguments': arguments or {}, 'timeout': timeout}

    def assert_refused(self, code, message):
        """The cell fails with `message` and no rpc frame is sent."""
        run_id = self.worker.start(code)
        result, events = self.worker.events_until_result(run_id)
        self.assertIn(message, str(result['error']) + str(result.get('value')), code)
        self.assertEqual(events, [], code)

    def test_sync_call_returns_full_envelope(self):
        run_id = self.worker.start('r = mcp.call("fix", "echo", text="hi")\nr')
        rpc = self.worker.next_rpc(run_id)
        self.assertEqual(rpc['op'], 'call')
        self.assertEqual(rpc['params'], self.call_params('echo', {'text': 'hi'}))
        reply = envelope('first', 'second')
        reply['content'].insert(1, {'type': 'image', 'data': 'AA==', 'mimeType': 'image/png'})
        self.worker.reply(rpc['id'], reply)
        result, events = self.worker.events_until_result(run_id)
        self.assert_ok(result)
        self.assertEqual(events, [])
        self.assertEqual(result['value'], reply)
        self.assertEqual(json.loads(result['return_value']), reply)
        code = '[mcp.text(r), type(r).__name__, isinstance(r, dict), r["_meta"]]'
        self.assertEqual(self.worker.value(code), ['first\nsecond', 'McpResult', True, {'m': 1}])
        self.assertIn('TypeError', self.worker.run('mcp.text("not an envelope")')['error'])

    def test_awaited_sync_call_dispatches_once(self):
        run_id = self.worker.start('await mcp.call("fix", "echo", arguments={"timeout": 7})')
        rpc = self.worker.next_rpc(run_id)
        self.assertEqual(rpc['params'], self.call_params('echo', {'timeout': 7}))
        self.worker.reply(rpc['id'], envelope('once'))
        result, events = self.worker.events_until_result(run_id)
        self.assert_ok(result)
        self.assertEqual(events, [])
        self.assertEqual(result['value'], envelope('once'))

    def test_multiplexed_async_calls_and_tool_error(self):
        run_id = self.worker.start('import asyncio\nawait asyncio.gather(mcp.acall("fix", "a"), mcp.acall("fix", "b", timeout=5))')
        first, second = self.worker.next_rpc(run_id), self.worker.next_rpc(run_id)
        self.assertEqual([first['params'], second['params']], [self.call_params('a'), self.call_params('b', timeout=5)])
        self.worker.reply(second['id'], envelope('B'))
        self.worker.reply(first['id'], envelope('A'))
        result, events = self.worker.events_until_result(run_id)
        self.assertEqual(events, [])
        self.assertEqual(result['value'], [envelope('A'), envelope('B')])

        run_id = self.worker.start('mcp.call("fix", "bad")')
        self.worker.reply(self.worker.next_rpc(run_id)['id'], envelope('bad arguments', is_error=True))
        result, _ = self.worker.events_until_result(run_id)
        self.assertTrue(result['error'].endswith('\nToolError: MCP tool failed: bad arguments'), result['error'])
        self.assert_no_worker_frames(result['error'])

        code = (
            'try:\n    await mcp.acall("fix", "bad")\nexcept ToolError as e:\n'
            '    caught = [str(e), e.result["isError"], isinstance(e, RuntimeError)]\ncaught'
        )
        run_id = self.worker.start(code)
        self.worker.reply(self.worker.next_rpc(run_id)['id'], envelope('one', 'two', is_error=True))
        self.assertEqual(self.worker.collect(run_id)[0]['value'], ['MCP tool failed: one\ntwo', True, True])

        code = 'try:\n    mcp.call("fix", "x")\nexcept ToolError as e:\n    caught = [str(e), e.result]\ncaught'
        run_id = self.worker.start(code)
        self.worker.reply(self.worker.next_rpc(run_id)['id'], error='Too many outstanding MCP calls')
        self.assertEqual(self.worker.collect(run_id)[0]['value'], ['Too many outstanding MCP calls', None])

    def test_invalid_bridge_arguments_have_no_side_effects(self):
        for timeout in ('-1', '0', '0.001', '3601', 'float("inf")', 'float("nan")', '"1"', 'True', 'None'):
            with self.subTest(timeout=timeout):
                self.assert_refused(f'mcp.call("fix", "echo", timeout={timeout})', MCP_BAD_TIMEOUT)
        self.assert_refused('await mcp.acall("fix", "echo", timeout=-1)', MCP_BAD_TIMEOUT)
        self.assert_refused('mcp.list_tools("fix", timeout=0)', MCP_BAD_TIMEOUT)
        self.assert_refused('mcp.help("fix", timeout=4000)', MCP_BAD_TIMEOUT)
        self.assert_refused('mcp.call("fix", "echo", arguments={"a": 1}, b=2)', MCP_BOTH_ARGUMENTS)
        self.assert_refused('await mcp.acall("fix", "echo", arguments={}, b=2)', MCP_BOTH_ARGUMENTS)
        self.assert_refused('mcp.call("fix", "echo", arguments=[1])', 'arguments must be a dict')
        self.assert_refused('mcp.call("fix", "echo", x=float("nan"))', 'ValueError')
        self.assert_refused('mcp.call("fix", "echo", x=object())', 'TypeError')
        self.assert_refused('mcp.call("fix", "echo", x="y" * 1_100_000)', 'Worker frame exceeds 1 MiB')
        self.assertEqual(self.worker.value('1'), 1)

    def test_threads_and_old_contexts_cannot_borrow_a_cell(self):
        code = (
            'import threading\nerrors = []\n'
            'def borrow():\n    try:\n        mcp.call("fix", "echo")\n'
            '    except RuntimeError as exc:\n        errors.append(str(exc))\n'
            't = threading.Thread(target=borrow)\nt.start()\nt.join()\nerrors'
        )
        self.assert_refused(code, MCP_FOREIGN)
        self.assert_refused('import asyncio\nawait asyncio.to_thread(mcp.call, "fix", "echo")', MCP_FOREIGN)
        self.assert_ok(self.worker.run('import contextvars\nold = contextvars.copy_context()\nbridge = mcp'))
        self.assert_refused('old.run(mcp.call, "fix", "echo")', MCP_FOREIGN)
        self.assert_refused('old.run(bridge.servers)', MCP_FOREIGN)
        # An old bridge object still works from the running cell's own code.
        run_id = self.worker.start('bridge.servers()')
        rpc = self.worker.next_rpc(run_id)
        self.assertEqual([rpc['op'], rpc['params']], ['servers', {}])
        self.worker.reply(rpc['id'], {'servers': ['a', 'b']})
        self.assertEqual(self.worker.collect(run_id)[0]['value'], ['a', 'b'])

    def test_cancelling_one_async_rpc_signals_only_its_origin(self):
        code = (
            'import asyncio\n'
            'a = asyncio.ensure_future(mcp.acall("fix", "a"))\n'
            'b = asyncio.ensure_future(mcp.acall("fix", "b"))\n'
            'await asyncio.sleep(0)\n'
            'a.cancel()\n'
            'r = await b\n'
            '[a.cancelled(), r]'
        )
        run_id = self.worker.start(code)
        first, second = self.worker.next_rpc(run_id), self.worker.next_rpc(run_id)
        self.assertEqual(self.worker.next_event(), {'type': 'rpc_cancel', 'id': first['id'], 'run_id': run_id})
        self.worker.reply(second['id'], envelope('B'))
        self.worker.reply(first['id'], envelope('late'))
        result, events = self.worker.events_until_result(run_id)
        self.assertEqual(events, [])
        self.assertEqual(result['value'], [True, envelope('B')])
        self.assertEqual(self.worker.value('1 + 1'), 2)

    def test_cancelled_rpc_late_result_does_not_poison_next_run(self):
        self.assert_ok(self.worker.run('x = 10'))
        run_id = self.worker.start('mcp.call("fix", "slow")')
        rpc = self.worker.next_rpc(run_id)
        time.sleep(0.05)
        os.kill(self.worker.proc.pid, signal.SIGINT)
        result, events = self.worker.events_until_result(run_id, timeout=5)
        self.assertEqual(result['error'], INTERRUPTED.format(run_id))
        self.assertEqual(result['state'], 'preserved')
        self.assertEqual(events, [{'type': 'rpc_cancel', 'id': rpc['id'], 'run_id': run_id}])
        self.worker.reply(rpc['id'], envelope('late'))
        self.worker.reply(uuid.uuid4().hex, envelope('unknown'))
        self.assertEqual(self.worker.value('x'), 10)
        run_id = self.worker.start('mcp.call("fix", "next")')
        rpc = self.worker.next_rpc(run_id)
        self.worker.reply(rpc['id'], envelope('fresh'))
        result, events = self.worker.events_until_result(run_id)
        self.assertEqual([result['value'], events], [envelope('fresh'), []])

    def test_sync_wait_bounded_by_timeout_plus_one(self):
        started = time.monotonic()
        run_id = self.worker.start('mcp.call("fix", "slow", timeout=0.01)')
        rpc = self.worker.next_rpc(run_id)
        result, events = self.worker.events_until_result(run_id)
        self.assertGreaterEqual(time.monotonic() - started, 1.0)
        self.assertIn('ToolError: MCP call got no reply within 1.01 seconds', result['error'])
        self.assertEqual(events, [{'type': 'rpc_cancel', 'id': rpc['id'], 'run_id': run_id}])

    def test_pending_rpcs_cancelled_at_cell_end(self):
        run_id = self.worker.start('import asyncio\nt = asyncio.ensure_future(mcp.acall("fix", "slow"))\nawait asyncio.sleep(0)')
        rpc = self.worker.next_rpc(run_id)
        result, events = self.worker.events_until_result(run_id)
        self.assert_ok(result)
        self.assertEqual(result['background_tasks_cancelled'], 1)
        self.assertEqual(events, [{'type': 'rpc_cancel', 'id': rpc['id'], 'run_id': run_id}])
        self.worker.reply(rpc['id'], envelope('late'))
        self.assertEqual(self.worker.value('t.cancelled()'), True)

    def test_pending_call_limit(self):
        code = (
            'import asyncio\n'
            'tasks = [asyncio.ensure_future(mcp.acall("fix", "t", n=i)) for i in range(65)]\n'
            'await asyncio.sleep(0)\n'  # every task has made its request: replies cannot free a slot first
            'print("requested")\n'
            'results = await asyncio.gather(*tasks, return_exceptions=True)\n'
            '[sum(type(r).__name__ == "McpResult" for r in results), [str(r) for r in results if isinstance(r, Exception)]]'
        )
        run_id = self.worker.start(code)
        rpcs = [self.worker.next_rpc(run_id) for _ in range(64)]
        self.assertEqual([rpc['params']['arguments']['n'] for rpc in rpcs], list(range(64)))
        self.worker.wait_for_output(run_id, 'requested')
        for rpc in rpcs:
            self.worker.reply(rpc['id'], envelope('ok'))
        result, events = self.worker.events_until_result(run_id)
        self.assertEqual(events, [])
        self.assertEqual(result['value'], [64, ['Too many pending MCP calls (limit 64)']])

    def test_named_help_uses_single_catalogue_deadline(self):
        tools = [{'name': 'other', 'inputSchema': {}}, {'name': 'echo', 'inputSchema': {'type': 'object'}}]
        run_id = self.worker.start('mcp.help("fixture", "echo", timeout=0.5)')
        rpc = self.worker.next_rpc(run_id)
        self.assertEqual([rpc['op'], rpc['params']], ['tools', {'server': 'fixture', 'timeout': 0.5}])
        self.worker.reply(rpc['id'], {'tools': tools})
        result, events = self.worker.events_until_result(run_id)
        self.assertEqual([result['value'], events], [tools[1], []])
        run_id = self.worker.start('mcp.help("fixture", "nope")')
        rpc = self.worker.next_rpc(run_id)
        self.assertEqual(rpc['params'], {'server': 'fixture', 'timeout': 30.0})
        self.worker.reply(rpc['id'], {'tools': tools})
        self.assertIn("ValueError: Unknown tool 'nope'; use mcp.list_tools(server)", self.worker.collect(run_id)[0]['error'])

    def test_other_ops(self):
        cases = [
            ('mcp.help()', 'servers', {}, {'servers': ['s']}, ['s']),
            ('mcp.list_tools("s")', 'tools', {'server': 's', 'timeout': 30.0}, {'tools': []}, []),
            ('mcp.refresh()', 'refresh', {}, {'healthy': True}, {'healthy': True}),
            ('mcp.journal()', 'journal', {}, {'records': [{'tool': 't'}]}, [{'tool': 't'}]),
            ('await mcp.ajournal()', 'journal', {}, {'records': []}, []),
            ('mcp.explain("s", "t")', 'explain', {'server': 's', 'tool': 't'}, {'status': 'ready'}, {'status': 'ready'}),
            ('mcp.explain("s")', 'explain', {'server': 's', 'tool': None}, {'status': 'ready'}, {'status': 'ready'}),
        ]
        for code, op, params, reply, value in cases:
            with self.subTest(code=code):
                run_id = self.worker.start(code)
                rpc = self.worker.next_rpc(run_id)
                self.assertEqual([rpc['op'], rpc['params']], [op, params])
                self.worker.reply(rpc['id'], reply)
                self.assertEqual(self.worker.collect(run_id)[0]['value'], value)
        run_id = self.worker.start('mcp.servers()')
        self.worker.reply(self.worker.next_rpc(run_id)['id'], ['not', 'wrapped'])
        self.assertIn('ToolError: MCP bridge returned a malformed servers result', self.worker.collect(run_id)[0]['error'])

    def test_mcp_comes_back_new_after_shadowing(self):
        self.assertEqual(self.worker.value('first = mcp\nmcp = None\nToolError = 1\n[mcp, ToolError]'), [None, 1])
        code = '[type(mcp).__name__, mcp is first, issubclass(ToolError, RuntimeError), "mcp" in repr(mcp)]'
        self.assertEqual(self.worker.value(code), ['McpBridge', False, True, True])
        names = [v['name'] for v in self.worker.value('repl_namespace()')['variables']]
        self.assertEqual(names, ['first'])


def reference(data, fmt, artifact_id=None):
    return {
        'id': artifact_id or str(uuid.uuid4()), 'size': len(data), 'format': fmt,
        'sha256': hashlib.sha256(data).hexdigest(), 'lifetime': 'server', 'eviction': 'oldest-first',
    }


class ArtifactTests(WorkerTestCase):
    """The test plays the server's artifact store: it answers the artifact.* rpc frames."""

    def serve_upload(self, run_id, fmt, upload_id='upload-1'):
        """Answer one upload: begin, every append (checking its offset), commit. Returns
        (uploaded bytes, [(offset, raw length)] of the appends, the reference sent)."""
        begin = self.worker.next_rpc(run_id)
        self.assertEqual([begin['op'], begin['params']], ['artifact.begin', {'format': fmt}])
        self.worker.reply(begin['id'], {'upload_id': upload_id, 'chunk_bytes': CHUNK, 'max_bytes': 16_777_216})
        data, appends = bytearray(), []
        while True:
            rpc = self.worker.next_rpc(run_id)
            if rpc['op'] != 'artifact.append':
                break
            params = rpc['params']
            self.assertEqual(sorted(params), ['data', 'offset', 'upload_id'])
            self.assertEqual([params['upload_id'], params['offset']], [upload_id, len(data)])
            chunk = base64.b64decode(params['data'], validate=True)
            appends.append((params['offset'], len(chunk)))
            data += chunk
            self.worker.reply(rpc['id'], {'upload_id': upload_id, 'size': len(data)})
        self.assertEqual([rpc['op'], rpc['params']], ['artifact.commit', {'upload_id': upload_id}])
        ref = reference(bytes(data), fmt)
        self.worker.reply(rpc['id'], ref)
        return bytes(data), appends, ref

    def assert_chunked(self, appends, total):
        self.assertEqual(appends, [(offset, min(CHUNK, total - offset)) for offset in range(0, total, CHUNK)])

    def upload_cell(self, code, fmt):
        """Run a cell whose upload is served; returns (data, appends, reference, result)."""
        run_id = self.worker.start(code)
        data, appends, ref = self.serve_upload(run_id, fmt)
        result, events = self.worker.events_until_result(run_id)
        self.assertEqual(events, [])
        return data, appends, ref, result

    def assert_refused(self, code, message):
        """The cell fails with `message` and sends no rpc frame."""
        run_id = self.worker.start(code)
        result, events = self.worker.events_until_result(run_id)
        self.assertIn(message, str(result['error']), code)
        self.assertEqual(events, [], code)

    def test_str_value_streams_in_chunks(self):
        text = 'Жx' * 34_000  # 102,000 UTF-8 bytes; chunks split characters
        data, appends, ref, result = self.upload_cell('ref = artifact("Жx" * 34_000)\nref', 'text')
        self.assert_ok(result)
        self.assertEqual(data, text.encode('utf-8'))
        self.assert_chunked(appends, 102_000)
        self.assertEqual(len(appends), 4)
        self.assertEqual(result['value'], ref)
        self.assertNotIn('artifact', result)

    def test_json_value_streams_compact_utf8_json(self):
        code = (
            'value = {"rows": [{"i": i, "name": f"строка {i}", "f": i / 3, "ok": i % 2 == 0, "none": None}'
            ' for i in range(2000)], "t": (1, -2, 2 ** 4095), "nested": [[["deep"]]], "esc": "q\\"\\\\\\n\\u0001"}\n'
            'artifact(value)'
        )
        data, appends, ref, result = self.upload_cell(code, 'json')
        self.assert_ok(result)
        value = {
            'rows': [{'i': i, 'name': f'строка {i}', 'f': i / 3, 'ok': i % 2 == 0, 'none': None} for i in range(2000)],
            't': [1, -2, 2 ** 4095], 'nested': [[['deep']]], 'esc': 'q"\\\n\x01',
        }
        self.assertEqual(json.loads(data), value)
        self.assertEqual(data, json.dumps(value, ensure_ascii=False, separators=(',', ':')).encode())
        self.assert_chunked(appends, len(data))
        self.assertEqual(result['value'], ref)
        # A str may be uploaded as JSON on request.
        data, appends, _, result = self.upload_cell('artifact("ü\\n", format="json")', 'json')
        self.assertEqual([data, appends], ['"ü\\n"'.encode(), [(0, 6)]])

    def test_bytes_value(self):
        data, appends, ref, result = self.upload_cell('artifact(bytes(range(256)) * 300)', 'binary')
        self.assert_ok(result)
        self.assertEqual(data, bytes(range(256)) * 300)
        self.assert_chunked(appends, 76_800)
        self.assertEqual(result['value'], ref)

    def test_unsupported_values_refused_without_user_code_or_rpc(self):
        setup = (
            'flag = []\n'
            'class Custom:\n'
            '    def __repr__(self):\n        flag.append("repr")\n        return "x"\n'
            '    def __eq__(self, other):\n        flag.append("eq")\n        return False\n'
            '    __hash__ = object.__hash__\n'
            '    def __iter__(self):\n        flag.append("iter")\n        return iter([])\n'
            '    @property\n    def __class__(self):\n        flag.append("class")\n        return dict\n'
            'class D(dict):\n'
            '    def items(self):\n        flag.append("items")\n        return {}.items()\n'
            'class S(str):\n'
            '    def __str__(self):\n        flag.append("str")\n        return "s"\n'
            'class I(int):\n    pass\n'
            'deep = 0\nfor _ in range(33):\n    deep = [deep]\n'
        )
        self.assert_ok(self.worker.run(setup))
        refused = [
            'Custom()', '[Custom()]', '{"k": Custom()}', 'Custom(), format="json"', 'D(a=1)', '[D()]', 'S("s")',
            '[S("s")]', 'I(1)', 'bytearray(b"x")', 'float("nan")', '[float("inf")]', '{1, 2}', '[frozenset()]',
            '{1: "int key"}', '{("t",): 1}', '2 ** 4096', '[-(2 ** 4096)]', 'deep', '[0] * 100_000',
            '["x" * (4 * 1024 * 1024 + 1)]', '{"k" * (2 * 1024 * 1024 + 1): "v" * (2 * 1024 * 1024)}',
        ]
        for args in refused:
            with self.subTest(args=args):
                self.assert_refused(f'artifact({args})', f'ValueError: {ARTIFACT_UNSUPPORTED}')
        self.assertEqual(self.worker.value('flag'), [])
        # Just within the budgets: the check passes and the upload begins.
        accepted = ['2 ** 4095', 'deep[0]', '[0] * 99_999', '["x" * (4 * 1024 * 1024)]', '{"k" * (2 * 1024 * 1024): "v" * (2 * 1024 * 1024)}']
        for args in accepted:
            with self.subTest(args=args):
                run_id = self.worker.start(f'artifact({args})')
                rpc = self.worker.next_rpc(run_id)
                self.assertEqual([rpc['op'], rpc['params']], ['artifact.begin', {'format': 'json'}])
                self.worker.reply(rpc['id'], error='Artifact I/O capacity exhausted; retry after active jobs complete')
                result, events = self.worker.events_until_result(run_id)
                self.assertEqual(events, [])
                self.assertTrue(result['error'].endswith('\nToolError: Artifact I/O capacity exhausted; retry after active jobs complete'), result['error'])
                self.assert_no_worker_frames(result['error'])

    def test_bad_arguments_refused_before_any_rpc(self):
        cases = [
            ('artifact()', 'ValueError: artifact() needs exactly one of value or path='),
            ('artifact(None)', 'ValueError: artifact() needs exactly one of value or path='),
            ('artifact("v", path="p")', 'ValueError: artifact() needs exactly one of value or path='),
            ('artifact(path="p", format="csv")', 'ValueError: Artifact format must be json, text or binary'),
            ('artifact(path=3)', 'TypeError'),
            ('artifact("s", format="binary")', "ValueError: Artifact format 'binary' does not fit a str value"),
            ('artifact(b"s", format="text")', "ValueError: Artifact format 'text' does not fit a bytes value"),
            ('artifact(b"s", format="json")', "ValueError: Artifact format 'json' does not fit a bytes value"),
            ('artifact([1], format="text")', "ValueError: Artifact format 'text' does not fit a list value"),
            ('artifact("s", format=1)', 'ValueError: Artifact format must be json, text or binary'),
            ('artifact(b"x" * (16 * 1024 * 1024 + 1))', 'ValueError: Artifact exceeds 16 MiB'),
            ('artifact("Ж" * (8 * 1024 * 1024 + 1))', 'ValueError: Artifact exceeds 16 MiB'),
            ('artifact([2 ** 4095] * 20_000)', 'ValueError: Artifact exceeds 16 MiB'),
            ('artifact_read(1)', 'TypeError: artifact_id must be a str, not int'),
            ('artifact_read("a", offset=-1)', 'ValueError: offset must not be negative'),
            ('artifact_read("a", offset=True)', 'TypeError: offset must be an int, not bool'),
            ('artifact_read("a", length=1.0)', 'TypeError: length must be an int, not float'),
            ('artifact_read("a", length=65_537)', 'ValueError: artifact_read length must be between 0 and 65536 bytes'),
            ('artifact_read("a", encoding="utf-8")', 'ValueError: artifact_read encoding must be text, base64 or hex'),
            ('artifact_save("a", "out", overwrite=1)', 'TypeError: overwrite must be True or False'),
            ('artifact_save(None, "out")', 'TypeError: artifact_id must be a str, not NoneType'),
            ('artifact_save("a", None)', 'TypeError'),
            ('artifact_delete(b"a")', 'TypeError: artifact_id must be a str, not bytes'),
            ('artifact_forward("a", "s", "t", 3)', 'TypeError: argument must be a str, not int'),
            ('artifact_forward("a", None, "t", "x")', 'TypeError: server must be a str, not NoneType'),
            ('artifact_forward("a", "s", "t", "x", format="binary")', 'ValueError: Forward format must be json, text or explicit base64'),
        ]
        for code, message in cases:
            with self.subTest(code=code):
                self.assert_refused(code, message)

    def test_helpers_only_from_the_active_cell(self):
        code = (
            'import threading\nerrors = []\n'
            'def borrow():\n    try:\n        artifact("x")\n'
            '    except RuntimeError as exc:\n        errors.append(str(exc))\n'
            't = threading.Thread(target=borrow)\nt.start()\nt.join()\nerrors'
        )
        run_id = self.worker.start(code)
        result, events = self.worker.events_until_result(run_id)
        self.assertEqual([result['value'], events], [[MCP_FOREIGN], []])

    def test_failed_append_aborts_the_upload(self):
        run_id = self.worker.start('artifact("x" * 100_000)')
        begin = self.worker.next_rpc(run_id)
        self.worker.reply(begin['id'], {'upload_id': 'u', 'chunk_bytes': CHUNK, 'max_bytes': 16_777_216})
        first = self.worker.next_rpc(run_id)
        self.assertEqual([first['op'], first['params']['offset']], ['artifact.append', 0])
        self.worker.reply(first['id'], {'upload_id': 'u', 'size': CHUNK})
        second = self.worker.next_rpc(run_id)
        self.assertEqual([second['op'], second['params']['offset']], ['artifact.append', CHUNK])
        self.worker.reply(second['id'], error='Artifact upload offset mismatch; do not replay an append')
        abort = self.worker.next_rpc(run_id)
        self.assertEqual([abort['op'], abort['params']], ['artifact.abort', {'upload_id': 'u'}])
        self.worker.reply(abort['id'], {'upload_id': 'u', 'aborted': True})
        result, events = self.worker.events_until_result(run_id)
        self.assertEqual(events, [])
        self.assertTrue(result['error'].endswith('\nToolError: Artifact upload offset mismatch; do not replay an append'), result['error'])
        # A failed commit aborts too, and an abort that fails does not hide the first error.
        run_id = self.worker.start('artifact("{", format="text")')
        self.worker.reply(self.worker.next_rpc(run_id)['id'], {'upload_id': 'v', 'chunk_bytes': CHUNK, 'max_bytes': 16_777_216})
        append = self.worker.next_rpc(run_id)
        self.worker.reply(append['id'], {'upload_id': 'v', 'size': 1})
        commit = self.worker.next_rpc(run_id)
        self.assertEqual(commit['op'], 'artifact.commit')
        self.worker.reply(commit['id'], error='Text/JSON artifact must be UTF-8')
        abort = self.worker.next_rpc(run_id)
        self.assertEqual([abort['op'], abort['params']], ['artifact.abort', {'upload_id': 'v'}])
        self.worker.reply(abort['id'], error='Artifact upload unknown')
        result, events = self.worker.events_until_result(run_id)
        self.assertEqual(events, [])
        self.assertTrue(result['error'].endswith('\nToolError: Text/JSON artifact must be UTF-8'), result['error'])

    def test_path_is_expanded_and_absolute(self):
        home = os.path.expanduser('~')
        cwd = os.path.realpath(self.dir)
        cases = [
            ('artifact(path="~/data.bin")', {'path': os.path.join(home, 'data.bin'), 'format': 'binary'}),
            ('artifact(path="sub/../rows.json", format="json")', {'path': os.path.join(cwd, 'rows.json'), 'format': 'json'}),
            ('import pathlib\nartifact(path=pathlib.Path("notes.txt"), format="text")', {'path': os.path.join(cwd, 'notes.txt'), 'format': 'text'}),
        ]
        for code, params in cases:
            with self.subTest(code=code):
                run_id = self.worker.start(code)
                rpc = self.worker.next_rpc(run_id)
                self.assertEqual([rpc['op'], rpc['params']], ['artifact.create', params])
                ref = reference(b'{}', params['format'])
                self.worker.reply(rpc['id'], ref)
                result, events = self.worker.events_until_result(run_id)
                self.assertEqual([result['value'], events], [ref, []])
        run_id = self.worker.start('artifact(path="/no/such/file")')
        self.worker.reply(self.worker.next_rpc(run_id)['id'], error='Artifact input must be a regular file')
        self.assertIn('ToolError: Artifact input must be a regular file', self.worker.collect(run_id)[0]['error'])

    def test_read_save_delete_forward_ops(self):
        home = os.path.expanduser('~')
        cwd = os.path.realpath(self.dir)
        ref = reference(b'[1,2]', 'json', 'a-1')
        read = {'artifact': ref, 'offset': 1, 'length': 3, 'encoding': 'hex', 'content': '312c32', 'has_more': True}
        cases = [
            ('artifact_read("a-1")', 'artifact.read', {'id': 'a-1', 'offset': 0, 'length': 65_536, 'encoding': 'text'}, read),
            ('artifact_read("a-1", offset=1, length=3, encoding="hex")', 'artifact.read', {'id': 'a-1', 'offset': 1, 'length': 3, 'encoding': 'hex'}, read),
            ('artifact_save("a-1", "~/out.json")', 'artifact.save', {'id': 'a-1', 'path': os.path.join(home, 'out.json'), 'overwrite': False},
             {'artifact': ref, 'saved': True, 'path': os.path.join(home, 'out.json')}),
            ('artifact_save("a-1", "out.json", overwrite=True)', 'artifact.save', {'id': 'a-1', 'path': os.path.join(cwd, 'out.json'), 'overwrite': True},
             {'artifact': ref, 'saved': True, 'path': os.path.join(cwd, 'out.json')}),
            ('artifact_delete("a-1")', 'artifact.delete', {'id': 'a-1'}, {'id': 'a-1', 'deleted': True}),
            ('r = artifact_forward("a-1", "fix", "echo", "payload")\n[type(r).__name__, r]', 'artifact.forward',
             {'id': 'a-1', 'server': 'fix', 'tool': 'echo', 'argument': 'payload', 'format': 'json'}, envelope('ok')),
            ('artifact_forward("a-1", "fix", "echo", "payload", format="base64")', 'artifact.forward',
             {'id': 'a-1', 'server': 'fix', 'tool': 'echo', 'argument': 'payload', 'format': 'base64'}, envelope('ok')),
        ]
        for code, op, params, reply in cases:
            with self.subTest(code=code):
                run_id = self.worker.start(code)
                rpc = self.worker.next_rpc(run_id)
                self.assertEqual([rpc['op'], rpc['params']], [op, params])
                self.worker.reply(rpc['id'], reply)
                result, events = self.worker.events_until_result(run_id)
                self.assertEqual(events, [])
                expected = ['McpResult', reply] if code.startswith('r = ') else reply
                self.assertEqual(result['value'], expected)
        run_id = self.worker.start('artifact_read("gone")')
        self.worker.reply(self.worker.next_rpc(run_id)['id'], error='Artifact unknown, expired, evicted or belongs to another session')
        self.assertTrue(self.worker.collect(run_id)[0]['error'].endswith(
            '\nToolError: Artifact unknown, expired, evicted or belongs to another session'))
        run_id = self.worker.start('artifact_delete("a-1")')
        self.worker.reply(self.worker.next_rpc(run_id)['id'], ['not', 'an', 'object'])
        self.assertIn('ToolError: MCP bridge returned a malformed artifact.delete result', self.worker.collect(run_id)[0]['error'])

    def test_forward_tool_error_raises_tool_error(self):
        code = (
            'try:\n    artifact_forward("a-1", "fix", "strict", "payload", format="text")\n'
            'except ToolError as e:\n    caught = [str(e), e.result]\ncaught'
        )
        run_id = self.worker.start(code)
        rpc = self.worker.next_rpc(run_id)
        self.assertEqual(rpc['params']['format'], 'text')
        failed = envelope('bad arguments', is_error=True)
        self.worker.reply(rpc['id'], failed)
        self.assertEqual(self.worker.collect(run_id)[0]['value'], ['MCP tool failed: bad arguments', failed])
        run_id = self.worker.start('artifact_forward("a-1", "fix", "strict", "payload")')
        self.worker.reply(self.worker.next_rpc(run_id)['id'], envelope('bad arguments', is_error=True))
        result = self.worker.collect(run_id)[0]
        self.assertTrue(result['error'].endswith('\nToolError: MCP tool failed: bad arguments'), result['error'])
        self.assert_no_worker_frames(result['error'])

    def test_automatic_json_artifact_for_large_list(self):
        code = '[{"id": i, "name": f"row {i}", "score": i * 0.5, "tags": ["a", "b"]} for i in range(3000)]'
        data, appends, ref, result = self.upload_cell(code, 'json')
        self.assert_ok(result)
        self.assertEqual(json.loads(data), [{'id': i, 'name': f'row {i}', 'score': i * 0.5, 'tags': ['a', 'b']} for i in range(3000)])
        self.assert_chunked(appends, len(data))
        self.assertEqual(result['artifact'], ref)
        self.assertNotIn('value', result)
        self.assertNotIn('artifact_error', result)
        self.assertEqual(result['return_value'], '<list; length=3000; safe preview omitted>')
        self.assertTrue(result['truncated']['return'])
        # The namespace is untouched and the next cell runs as usual.
        self.assertEqual(self.worker.value('1 + 1'), 2)

    def test_automatic_text_artifact_for_large_str(self):
        data, appends, ref, result = self.upload_cell("'Ж' * 100000", 'text')
        self.assert_ok(result)
        self.assertEqual(data, ('Ж' * 100_000).encode())
        self.assert_chunked(appends, 200_000)
        self.assertEqual(result['artifact'], ref)
        self.assertNotIn('value', result)
        self.assertTrue(result['return_value'].startswith('"ЖЖЖ'))
        self.assertLessEqual(len(result['return_value'].encode()), 20_000)
        self.assertTrue(result['truncated']['return'])

    def test_automatic_artifact_for_bytes_and_envelope(self):
        data, _, ref, result = self.upload_cell('b"abc"', 'binary')  # bytes have no preview at all
        self.assertEqual([data, result['artifact'], result['return_value']], [b'abc', ref, '<bytes; length=3; safe preview omitted>'])
        run_id = self.worker.start('mcp.call("fix", "big")')
        big = envelope(*[f'line {i}' for i in range(200)])
        self.worker.reply(self.worker.next_rpc(run_id)['id'], big)
        data, _, ref, = self.serve_upload(run_id, 'json')
        result, events = self.worker.events_until_result(run_id)
        self.assertEqual([json.loads(data), result['artifact'], events], [big, ref, []])
        self.assertEqual(result['return_value'], '<McpResult; safe preview omitted>')

    def test_automatic_artifact_error_keeps_the_cell_successful(self):
        run_id = self.worker.start('x = 5\n"y" * 30_000')
        begin = self.worker.next_rpc(run_id)
        self.assertEqual([begin['op'], begin['params']], ['artifact.begin', {'format': 'text'}])
        self.worker.reply(begin['id'], error='At most four unfinished artifact uploads are allowed')
        result, events = self.worker.events_until_result(run_id)
        self.assertEqual(events, [])
        self.assert_ok(result)
        self.assertEqual(result['artifact_error'], 'Automatic artifact upload failed: At most four unfinished artifact uploads are allowed')
        self.assertNotIn('artifact', result)
        self.assertNotIn('value', result)
        self.assertTrue(result['return_value'].startswith('"yyy'))
        self.assertTrue(result['truncated']['return'])
        self.assertEqual(self.worker.value('x'), 5)
        # A failure after begin aborts the upload first.
        run_id = self.worker.start('"z" * 40_000')
        self.worker.reply(self.worker.next_rpc(run_id)['id'], {'upload_id': 'w', 'chunk_bytes': CHUNK, 'max_bytes': 16_777_216})
        self.worker.reply(self.worker.next_rpc(run_id)['id'], error='Artifact exceeds 16 MiB')
        abort = self.worker.next_rpc(run_id)
        self.assertEqual([abort['op'], abort['params']], ['artifact.abort', {'upload_id': 'w'}])
        self.worker.reply(abort['id'], {'upload_id': 'w', 'aborted': True})
        result, events = self.worker.events_until_result(run_id)
        self.assertEqual([result['success'], result['artifact_error'], events], [True, 'Automatic artifact upload failed: Artifact exceeds 16 MiB', []])
        # Surely over 16 MiB, or over a budget: the reason, and no rpc.
        run_id = self.worker.start('"x" * (16 * 1024 * 1024 + 1)')
        result, events = self.worker.events_until_result(run_id)
        self.assertEqual([result['success'], result['artifact_error'], events], [True, 'Automatic artifact upload failed: Artifact exceeds 16 MiB', []])
        run_id = self.worker.start('v = 0\nfor _ in range(40):\n    v = [v]\nv')
        result, events = self.worker.events_until_result(run_id)
        self.assertEqual(events, [])
        self.assert_ok(result)
        self.assertEqual(result['artifact_error'], f'Automatic artifact upload failed: {ARTIFACT_UNSUPPORTED} (nesting deeper than 32)')
        # A saved file's trailing value is handled like a cell's.
        with open(self.path('big.py'), 'w') as file:
            file.write('"q" * 30_000\n')
        run_id = self.worker.start('', source_path=self.path('big.py'))
        data, _, ref = self.serve_upload(run_id, 'text')
        result, events = self.worker.events_until_result(run_id)
        self.assertEqual([data, result['artifact'], events], [b'q' * 30_000, ref, []])

    def test_no_automatic_artifact_for_small_or_unsupported_values(self):
        cases = {
            '"x" * 100': 'x' * 100,
            '[{"a": 1}] * 10': [{'a': 1}] * 10,
            'None': None,
        }
        for code, value in cases.items():
            with self.subTest(code=code):
                run_id = self.worker.start(code)
                result, events = self.worker.events_until_result(run_id)
                self.assertEqual(events, [])
                self.assertEqual(result.get('value'), value)
                self.assertNotIn('artifact', result)
                self.assertNotIn('artifact_error', result)
        # Too big for the preview but not exact JSON (or not a supported type): today's preview.
        for code in ('[{1, 2}] * 200', '{1: "x" * 30_000}', '[float("nan")] * 200', '{1, 2}', 'bytearray(30_000)', 'object()'):
            with self.subTest(code=code):
                run_id = self.worker.start(code)
                result, events = self.worker.events_until_result(run_id)
                self.assertEqual(events, [])
                self.assert_ok(result)
                self.assertIn('safe preview omitted', result['return_value'])
                self.assertNotIn('artifact', result)
                self.assertNotIn('artifact_error', result)
        # A failing cell uploads nothing.
        run_id = self.worker.start('big = "x" * 30_000\nbig + 1')
        result, events = self.worker.events_until_result(run_id)
        self.assertEqual([result['success'], events], [False, []])
        self.assertNotIn('artifact_error', result)

    def test_interrupt_during_automatic_upload(self):
        run_id = self.worker.start('"x" * 100_000')
        self.worker.reply(self.worker.next_rpc(run_id)['id'], {'upload_id': 'i', 'chunk_bytes': CHUNK, 'max_bytes': 16_777_216})
        append = self.worker.next_rpc(run_id)
        self.assertEqual(append['op'], 'artifact.append')
        os.kill(self.worker.proc.pid, signal.SIGINT)  # unanswered, as a server stopping the run
        self.assertEqual(self.worker.next_event(timeout=5), {'type': 'rpc_cancel', 'id': append['id'], 'run_id': run_id})
        abort = self.worker.next_rpc(run_id, timeout=5)
        self.assertEqual([abort['op'], abort['params']], ['artifact.abort', {'upload_id': 'i'}])
        self.worker.reply(abort['id'], error=MCP_FOREIGN)  # what a server says once the run is stopping
        result, events = self.worker.events_until_result(run_id, timeout=5)
        self.assertEqual(events, [])
        self.assertEqual([result['success'], result['state'], result['artifact_error']], [True, 'preserved', 'Automatic artifact upload skipped: the run was interrupted'])
        self.assertNotIn('artifact', result)
        self.assertEqual(self.worker.value('2 + 2'), 4)

    def test_interrupted_cell_gets_no_automatic_artifact(self):
        code = (
            'import asyncio\nprint("sleeping", flush=True)\n'
            'try:\n    await asyncio.sleep(10)\nexcept asyncio.CancelledError:\n    pass\n'
            '"x" * 30_000'
        )
        run_id = self.worker.start(code)
        self.worker.wait_for_output(run_id, 'sleeping')
        os.kill(self.worker.proc.pid, signal.SIGINT)
        result, events = self.worker.events_until_result(run_id, timeout=5)
        self.assertEqual(events, [])
        self.assertEqual(result['artifact_error'], 'Automatic artifact upload skipped: the run was interrupted')
        self.assertNotIn('artifact', result)

    def test_helpers_are_reserved_and_come_back(self):
        shadow = '\n'.join(f'{name} = None' for name in ARTIFACT_HELPERS) + '\n[artifact, artifact_forward]'
        self.assertEqual(self.worker.value(shadow), [None, None])
        names = ', '.join(ARTIFACT_HELPERS)
        self.assertEqual(self.worker.value(f'[callable(v) for v in [{names}]]'), [True] * len(ARTIFACT_HELPERS))
        self.assertEqual(self.worker.value('repl_namespace()["variables"]'), [])
        self.assertEqual(self.worker.value('checkpoint("cp.json")["saved"]'), 0)


class ChildProcessTests(WorkerTestCase):
    def test_finished_children_reaped_without_losing_status(self):
        code = (
            'import subprocess\nfor _ in range(1000):\n    subprocess.Popen(["true"])\n'
            'kept = [subprocess.Popen(["sh", "-c", "exit 3"]) for _ in range(20)]'
        )
        self.assert_ok(self.worker.run(code))
        deadline = time.monotonic() + 5
        while zombie_children(self.worker.proc.pid):
            self.assertLess(time.monotonic(), deadline, 'zombies left')
            time.sleep(0.05)
        code = '[[p.wait() for p in kept] == [3] * 20, all(p.returncode == 3 for p in kept), subprocess.run(["sh", "-c", "exit 5"]).returncode]'
        self.assertEqual(self.worker.value(code), [True, True, 5])
        self.assertEqual(self.worker.jobs, [])
        code = 'import asyncio\nproc = await asyncio.create_subprocess_exec("sh", "-c", "exit 4")\nawait proc.wait()'
        self.assertEqual(self.worker.value(code), 4)  # asyncio reaps its own children

    def test_detached_job_reported_and_its_group_killed(self):
        background = self.path('background')
        code = (
            'import subprocess\n'
            f'p = subprocess.Popen(["sh", "-c", "sleep 30 & echo $! > {background}; sleep 0.3"], start_new_session=True)\n'
            'plain = subprocess.Popen(["true"])\nplain.wait()\np.pid'
        )
        run_id = self.worker.start(code)
        result, _ = self.worker.collect(run_id)
        pid = result['value']
        self.assertEqual(self.worker.jobs, [{'type': 'job', 'id': run_id, 'pid': pid, 'action': 'started'}])
        finished = self.worker.wait_for_job(pid, 'finished', timeout=5)
        self.assertEqual(finished['id'], run_id)
        self.assertTrue(wait_gone(int(read_text(background))))
        self.assertEqual(self.worker.value('p.wait()'), 0)
        if sys.version_info >= (3, 11):
            pid = self.worker.value('subprocess.Popen(["true"], process_group=0).pid')
            self.worker.wait_for_job(pid, 'started', timeout=1)
            self.worker.wait_for_job(pid, 'finished', timeout=5)
        self.assertEqual(len(self.worker.jobs), 4 if sys.version_info >= (3, 11) else 2)

    def test_multiprocessing_spawn_works(self):
        code = (
            'import multiprocessing\nctx = multiprocessing.get_context("spawn")\n'
            'p = ctx.Process(target=print, args=("from-child",))\np.start()\np.join(60)\np.exitcode'
        )
        self.assertEqual(self.worker.value(code), 0)
        self.assertIn(b'from-child', self.worker.drain_native())

    def test_exit_kills_children(self):
        code = (
            'import subprocess\nplain = subprocess.Popen(["sleep", "30"])\n'
            'job = subprocess.Popen(["sh", "-c", "sleep 30 & sleep 30"], start_new_session=True)\n'
            '[plain.pid, job.pid]'
        )
        for stop in ('eof', 'shutdown'):
            with self.subTest(stop=stop):
                worker = WorkerProcess(self.dir)
                self.addCleanup(worker.close)
                pids = worker.value(code)
                if stop == 'eof':
                    worker.hang_up()
                else:
                    worker.send_raw(b'{"type":"shutdown"}\n')
                self.assertEqual(worker.wait_exit(), 0)
                for pid in pids:
                    self.assertTrue(wait_gone(pid, 2), pid)
                deadline = time.monotonic() + 2
                while group_members(pids[1]):
                    self.assertLess(time.monotonic(), deadline, 'the job left its group running')
                    time.sleep(0.02)


if __name__ == '__main__':
    unittest.main()
