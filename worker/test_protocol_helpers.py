"""The cell helpers (sh, checkpoint, the source history) and child processes.
Every worker is started through the real bootstrap with the bundle the server sends
(harness.WorkerProcess)."""

import base64
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
import unittest
import zipfile

from harness import (
    HELPERS, HERE, WorkerProcess, WorkerTestCase, group_members, library_test, read_text, wait_gone, zombie_children,
)
from replworker.messages import SHELL_FORM_UNSUPPORTED

# The real uv, which interop/.venv-uv holds beside the data venv (make interop-deps).
UV = os.path.realpath(os.path.join(HERE, '..', 'interop', '.venv-uv', 'bin', 'uv'))


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

    def test_a_forked_child_never_speaks_for_the_worker(self):
        # A bare os.fork() in a cell: the child lives on (blocked on a pipe) while later
        # cells run, then finishes its copy of the cell and must end instead of reading
        # commands; every answer comes from the worker itself.
        worker = self.worker.ready['pid']
        code = (
            'import os, time\nrelease_r, release_w = os.pipe()\nforked = os.fork()\n'
            'if forked == 0:\n    os.close(release_w)\n    os.read(release_r, 1)\n'
            'else:\n    os.close(release_r)\n'
            'os.getpid()'
        )
        self.assertEqual(self.worker.value(code), worker)
        child = self.worker.value('forked')
        self.assertNotEqual(child, worker)
        for _ in range(3):
            self.assertEqual(self.worker.value('[os.getpid(), os.waitpid(forked, os.WNOHANG)]'), [worker, [0, 0]])
        code = (
            'os.write(release_w, b"x")\ndeadline = time.monotonic() + 10\n'
            'while (status := os.waitpid(forked, os.WNOHANG)) == (0, 0) and time.monotonic() < deadline:\n'
            '    time.sleep(0.01)\n'
            '"still running" if status == (0, 0) else os.waitstatus_to_exitcode(status[1])'
        )
        self.assertEqual(self.worker.value(code), 0)
        for n in range(20):
            self.assertEqual(self.worker.value(f'[os.getpid(), {n}]'), [worker, n])

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
        for name, (document, _message) in bad_files.items():
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


def tiny_wheel(directory):
    """A wheel of the package `tinypkg` (VALUE = "installed"), made by hand: pip installs it
    offline, with no build step."""
    files = {
        'tinypkg/__init__.py': b'VALUE = "installed"\n',
        'tinypkg-1.0.dist-info/METADATA': b'Metadata-Version: 2.1\nName: tinypkg\nVersion: 1.0\n',
        'tinypkg-1.0.dist-info/WHEEL': b'Wheel-Version: 1.0\nGenerator: repl-mcp-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n',
    }
    record = ''.join(
        f'{name},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()},{len(data)}\n'
        for name, data in files.items()
    ) + 'tinypkg-1.0.dist-info/RECORD,,\n'
    path = os.path.join(directory, 'tinypkg-1.0-py3-none-any.whl')
    with zipfile.ZipFile(path, 'w') as wheel:
        for name, data in {**files, 'tinypkg-1.0.dist-info/RECORD': record.encode()}.items():
            wheel.writestr(name, data)
    return path


class ShellLineTests(WorkerTestCase):
    """A cell's `!cmd`, `x = !cmd` and `%pip ...` lines (docs/contract.md §7.1)."""

    def test_commands_run_where_they_stand_after_python_and_in_blocks(self):
        code = ('df = {"rows": 3}\n!echo after python\nfor n in (1, 2):\n    !echo in a loop\n'
                '    if n == 2:\n        names = !printf "a\\nb\\n"; echo err >&2\n'
                'def f():\n    !echo from f\n    return 7\n[df["rows"], names, f()]')
        result = self.worker.run(code)
        self.assert_ok(result)
        self.assertEqual(result['value'], [3, ['a', 'b'], 7])
        self.assertEqual(result['stdout'], (
            '$ echo after python\nafter python\n$ echo in a loop\nin a loop\n$ echo in a loop\nin a loop\n'
            '$ echo from f\nfrom f\n'
        ))
        self.assertEqual(result['stderr'], 'err\n', 'a captured command still streams its stderr')
        self.assertEqual(self.worker.value('df'), {'rows': 3}, 'nothing of the cell is lost')

    def test_an_unsupported_magic_fails_at_its_line_in_one_line(self):
        run_id = self.worker.start('before = 1\n%timeit before\nafter = 2')
        result, _ = self.worker.collect(run_id)
        self.assertFalse(result['success'])
        self.assertEqual(result['state'], 'preserved')
        error = result['error']
        self.assertIn(f'File "<repl:{run_id}>", line 2, in <module>\n    %timeit before', error)
        self.assertTrue(error.endswith('RuntimeError: ' + SHELL_FORM_UNSUPPORTED.format('%timeit before')), error)
        self.assertNotIn('SyntaxError', error)
        self.assertEqual(self.worker.value('before'), 1, 'the lines before it ran')
        self.assertIn('NameError', self.worker.run('after')['error'])

    def test_commands_run_first_and_say_so(self):
        result = self.worker.run("!echo one; echo two >&2\n\n!printf 'x\\ny'\nz = 5\nz * 2")
        self.assert_ok(result)
        self.assertEqual(result['stdout'], "$ echo one; echo two >&2\none\n$ printf 'x\\ny'\nx\ny")
        self.assertEqual(result['stderr'], 'two\n')
        self.assertEqual(result['value'], 10)

    def test_a_failed_command_stops_the_cell_at_its_line(self):
        run_id = self.worker.start('# first\n!echo "no such package" >&2; exit 3\nz = 1')
        result, _ = self.worker.collect(run_id)
        self.assertFalse(result['success'])
        self.assertEqual(result['state'], 'preserved')
        error = result['error']
        self.assertIn(f'File "<repl:{run_id}>", line 2, in <module>\n    !echo "no such package" >&2; exit 3', error)
        self.assertTrue(error.endswith(
            "ShellError: Shell exited with status 3; its stderr is the cell's stderr; the rest of the cell did not run"
        ), error)
        self.assertEqual(result['stderr'], 'no such package\n', 'said once, where it was written')
        self.assertIn('NameError', self.worker.run('z')['error'])  # the rest did not run

    def test_an_interrupt_stops_the_command_and_kills_its_group(self):
        pidfile = self.path('pid')
        run_id = self.worker.start(f'!echo started; echo $$ > {pidfile}; exec sleep 30\nz = 1')
        self.worker.wait_for_output(run_id, 'started')
        os.kill(self.worker.proc.pid, signal.SIGINT)
        result, _ = self.worker.collect(run_id)
        self.assertFalse(result['success'])
        self.assertEqual(result['state'], 'preserved')
        self.assertTrue(wait_gone(int(read_text(pidfile))))
        self.assertEqual(self.worker.value('1 + 1'), 2)

    def test_pip_installs_into_the_workers_interpreter(self):
        venv = self.path('venv')
        subprocess.run([sys.executable, '-m', 'venv', '--without-pip', '--system-site-packages', venv], check=True, timeout=60)
        python = os.path.join(venv, 'bin', 'python')
        wheel = tiny_wheel(self.dir)
        worker = WorkerProcess(self.dir, python=python)
        self.addCleanup(worker.close)
        run_id = worker.start(f'%pip install --no-index --no-deps --disable-pip-version-check {wheel}\nimport tinypkg, sys\n[tinypkg.VALUE, tinypkg.__file__.startswith(sys.prefix)]')
        result, _ = worker.collect(run_id, timeout=120)
        self.assertTrue(result['success'], result)
        self.assertEqual(result['value'], ['installed', True])
        self.assertTrue(result['stdout'].startswith(f"$ '{python}' -m pip install --no-index"), result['stdout'][:200])
        self.assertIn('Successfully installed tinypkg-1.0', result['stdout'])
        self.assertEqual(worker.run('%pip --version')['stdout'].count(' from '), 1)

    def test_pip_without_pip_or_uv_says_how_to_add_pip(self):
        venv = self.path('venv')
        subprocess.run([sys.executable, '-m', 'venv', '--without-pip', venv], check=True, timeout=60)
        python = os.path.join(venv, 'bin', 'python')
        path = os.pathsep.join(d for d in os.environ['PATH'].split(os.pathsep) if not os.path.exists(os.path.join(d, 'uv')))
        worker = WorkerProcess(self.dir, python=python, env={'PATH': path})
        self.addCleanup(worker.close)
        result = worker.run('%pip install tinypkg\nz = 1')
        self.assertFalse(result['success'])
        self.assertEqual((result['stdout'], result['stderr']), ('', ''), 'no pip was run, nothing printed')
        self.assertTrue(result['error'].endswith(
            f"RuntimeError: %pip: '{python}' has no pip (a venv made by `uv venv` has none) and uv is not on PATH; "
            f"add pip with `!'{python}' -m ensurepip`, or put uv on PATH"
        ), result['error'])
        self.assertEqual(result['error'].count('has no pip'), 1)
        self.assertIn('NameError', worker.run('z')['error'])  # the rest did not run

    def test_input_fails_at_once_and_says_why(self):
        result = self.worker.run('name = input("Your name? ")')
        self.assertFalse(result['success'])
        self.assertEqual(result['state'], 'preserved')
        self.assertEqual(result['stdout'], 'Your name? ')
        self.assertTrue(result['error'].endswith(
            'EOFError: input() cannot read a line: stdin is not connected in repl-mcp (a cell has no '
            'terminal and nobody to answer); put the value in the code instead'
        ), result['error'])

    def test_shell_error_ends_with_the_tail_of_stderr(self):
        result = self.worker.run('sh("echo step one; echo fatal: disk full >&2; exit 2")')
        self.assertTrue(result['error'].endswith(
            'ShellError: Shell exited with status 2; inspect exception.stderr. Its stderr ends:\nfatal: disk full'
        ), result['error'])


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

    def test_every_child_is_reported_with_the_run_it_works_for(self):
        # The server interrupts only the children of the run it interrupts (contract §5.6):
        # every way a child starts is reported once, with the run of the code that started it.
        first = self.worker.start(
            'import os, subprocess, sys, threading, time, multiprocessing\n'
            'go = threading.Event()\nlater = []\n'
            'def starter():\n    go.wait()\n    later.append(subprocess.Popen(["true"]).pid)\n'
            'threading.Thread(target=starter, daemon=True).start()\n'
            'plain = subprocess.Popen(["true"])\nplain.wait()\n'
            'forked = os.fork()\nif forked == 0:\n    os._exit(0)\nos.waitpid(forked, 0)\n'
            'spawned = os.posix_spawnp("true", ["true"], os.environ)\nos.waitpid(spawned, 0)\n'
            'kid = multiprocessing.get_context("spawn").Process(target=print)\nkid.start()\nkid.join(60)\n'
            '[plain.pid, forked, spawned, kid.pid]')
        result, _ = self.worker.collect(first)
        self.assert_ok(result)
        second = self.worker.start('go.set()\nwhile not later:\n    time.sleep(0.01)\nlater[0]')
        late, _ = self.worker.collect(second)
        self.assert_ok(late)
        runs = {}
        for frame in self.worker.processes:
            self.assertEqual((frame['type'], frame['action']), ('process', 'started'), frame)
            self.assertNotIn(frame['pid'], runs, 'each child reported once')
            runs[frame['pid']] = frame['id']
        for pid in result['value']:
            self.assertEqual(runs.get(pid), first, (pid, self.worker.processes))
        self.assertEqual(runs.get(late['value']), first, "a thread of the first run works for it in the second")
        self.assertEqual(self.worker.jobs, [])

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


@library_test
class PipUvLibraryTests(WorkerTestCase):
    """%pip in a venv made by `uv venv`, which has no pip: uv's pip installs into it."""

    def test_pip_in_a_uv_venv_uses_uv(self):
        if not os.access(UV, os.X_OK):
            raise FileNotFoundError(f'{UV}: no uv beside the data venv; run make interop-deps')
        env = {'UV_CACHE_DIR': self.path('uv-cache'), 'UV_OFFLINE': '1', 'UV_NO_CONFIG': '1'}
        venv = self.path('venv')
        subprocess.run([UV, 'venv', '--python', sys.executable, venv], check=True, timeout=60, env=dict(os.environ, **env),
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        python = os.path.join(venv, 'bin', 'python')
        self.assertNotEqual(subprocess.run([python, '-m', 'pip', '--version'], capture_output=True).returncode, 0, 'no pip in it')
        path = os.pathsep.join([os.path.dirname(UV), *os.environ['PATH'].split(os.pathsep)])
        worker = WorkerProcess(self.dir, python=python, env={'PATH': path, **env})
        self.addCleanup(worker.close)
        wheel = tiny_wheel(self.dir)
        run_id = worker.start(f'%pip install --no-index --no-deps {wheel}\nimport tinypkg, sys\n[tinypkg.VALUE, tinypkg.__file__.startswith(sys.prefix)]')
        result, _ = worker.collect(run_id, timeout=120)
        self.assertTrue(result['success'], result)
        self.assertEqual(result['value'], ['installed', True])
        self.assertTrue(result['stdout'].startswith(f"$ '{UV}' pip install --python '{python}' --no-index --no-deps {wheel}\n"), result['stdout'][:300])
        self.assertIn('tinypkg', result['stderr'])  # uv reports on stderr
