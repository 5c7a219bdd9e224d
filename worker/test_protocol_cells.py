"""Runs over the wire protocol: start-up, execution, tracebacks, output bounds, previews,
the worker's lifecycle, saved files and inventories.
Every worker is started through the real bootstrap with the bundle the server sends
(harness.WorkerProcess)."""

import json
import os
import sys
import time
import unittest
import uuid

from harness import HELPERS, INVENTORY_NOTE, WorkerTestCase, library_test
from replworker.limits import MAX_FRAME


class StartupTests(WorkerTestCase):
    def test_ready_frame_is_first_and_complete(self):
        ready = self.worker.ready
        self.assertEqual(ready['type'], 'ready')
        self.assertEqual(ready['protocol'], 1)
        self.assertEqual(ready['pid'], self.worker.proc.pid)
        self.assertEqual(ready['python_version'], '%d.%d.%d' % sys.version_info[:3])
        self.assertEqual(os.path.realpath(ready['python_executable']), os.path.realpath(sys.executable))
        # The directories the start read, for the server's spare: existing, the standard
        # library's among them, the project's not.
        self.assertIn(os.path.dirname(os.__file__), ready['site_dirs'])
        self.assertTrue(all(os.path.isdir(d) for d in ready['site_dirs']), ready['site_dirs'])
        self.assertNotIn(os.path.realpath(self.dir), [os.path.realpath(d) for d in ready['site_dirs']])
        # What it would have read, had it been there: nothing that exists.
        self.assertFalse([p for p in ready['site_absent'] if os.path.exists(p)], ready['site_absent'])

    def test_startup_environment(self):
        code = (
            'import os, sys\n'
            '[os.environ.get("REPL_MCP_WORKER_FDS"), os.environ.get("REPL_MCP_WORKER_LIMITS"), sys.argv, __name__,'
            ' os.getcwd(), sys.stdin.read(), __builtins__ is __import__("builtins")]'
        )
        self.assertEqual(self.worker.value(code), [None, None, [''], '__repl__', os.path.realpath(self.dir), '', True])

    def test_baseline_names_reinstalled_after_each_cell(self):
        result = self.worker.run('__name__ = "shadowed"\n__builtins__ = None\n__name__')
        self.assertEqual(result['value'], 'shadowed')
        self.assertEqual(self.worker.value('[__name__, __builtins__ is __import__("builtins")]'), ['__repl__', True])

    def test_protocol_fds_are_not_inheritable(self):
        # The numbers the pipes came in on hold /dev/null now, and no descriptor of the
        # worker but 0, 1 and 2 would pass to a child.
        code = (
            'import os\ndef inheritable(fd):\n    try:\n        return os.get_inheritable(fd)\n'
            '    except OSError:\n        return None\n'
            '[[os.path.samestat(os.fstat(fd), os.stat(os.devnull)) for fd in %r], '
            '[fd for fd in range(3, 256) if inheritable(fd)]]'
        ) % (self.worker.child_fds,)
        self.assertEqual(self.worker.value(code), [[True, True], []])

    def test_a_cell_that_takes_fds_3_and_4_keeps_the_worker(self):
        # The pipes came in as fds 3 and 4 (the server's numbers; the harness passes its
        # own); a cell reusing those numbers (dup2, close) must not cut the worker off:
        # the next cells answer with the namespace intact.
        read_fd, write_fd = self.worker.child_fds
        code = (
            f'import os\nx = 41\nnull = os.open(os.devnull, os.O_RDWR)\n'
            f'os.dup2(null, {read_fd})\nos.dup2(null, {write_fd})\nos.close({read_fd})\nos.close(null)\n"taken"'
        )
        self.assertEqual(self.worker.value(code), 'taken')
        for _ in range(3):
            self.assertEqual(self.worker.value('x += 1\nx'), 42 + _)


class ExecutionTests(WorkerTestCase):
    def test_stdout_and_stderr_reconfigure_as_text_streams(self):
        code = (
            'import sys\nsys.stdout.reconfigure(line_buffering=True, write_through=False)\n'
            'sys.stderr.reconfigure(encoding="ascii", errors="backslashreplace")\n'
            'print("café")\nprint("café", file=sys.stderr)\n'
            '[sys.stdout.line_buffering, sys.stdout.write_through, sys.stderr.encoding, sys.stderr.errors]'
        )
        result = self.worker.run(code)
        self.assert_ok(result)
        self.assertEqual(result['value'], [True, False, 'ascii', 'backslashreplace'])
        self.assertEqual([result['stdout'], result['stderr']], ['café\n', 'caf\\xe9\n'])
        # Like a real stream's, the setting lasts: the next cell writes under it too.
        self.assertEqual(self.worker.run('import sys\nprint("é", file=sys.stderr)')['stderr'], '\\xe9\n')

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
        # As Python prints a file that does not compile: no head, the caret under the error.
        self.assertEqual(error, '  File "<repl:syn-1>", line 2\n    y = (\n        ^\nSyntaxError: \'(\' was never closed')
        self.assert_no_worker_frames(error)
        result = self.worker.run('if True:\nprint(1)', 'syn-2')
        self.assertEqual(result['error'], '  File "<repl:syn-2>", line 2\n    print(1)\n    ^^^^^\n'
                                          "IndentationError: expected an indented block after 'if' statement on line 1")

    def test_system_exit_is_an_ordinary_failure(self):
        result = self.worker.run('x = 5\nraise SystemExit(3)')
        self.assertFalse(result['success'])
        self.assertEqual(result['state'], 'preserved')
        self.assertIn('SystemExit: 3', result['error'])
        self.assertEqual(self.worker.value('x'), 5)
        self.assertIsNone(self.worker.proc.poll())

    def test_flood_of_small_prints_stays_cheap(self):
        # Every print is kept as far as its tail and the spool go: a few microseconds each.
        started = time.monotonic()
        result = self.worker.run('for i in range(300_000):\n    print(i)')
        self.assert_ok(result)
        stdout = result['stdout']
        self.assertLessEqual(len(stdout.encode()), 50_000)
        self.assertTrue(stdout.startswith('0\n1\n2\n'))
        self.assertTrue(stdout.endswith('\n299998\n299999\n'))  # the end of a long run is kept
        self.assertTrue(result['truncated']['stdout'])
        # Generous: four interpreters run this suite at once beside the Go tests; a cost
        # that grew with the output kept (quadratic) would take minutes, not seconds.
        self.assertLess(time.monotonic() - started, 60)


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
        self.assertNotIn('interrupted', result)  # only an interrupt's result says so
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

    # A group of three: two raised through a function, one with a cause, and a nested
    # group, as a cell raises them. GROUP_CODE leaves the group to define on its first line.
    GROUP_CODE = (
        'def boom(n):\n    raise ValueError(n)\nerrors = []\nfor n in (1, 2):\n    try:\n        boom(n)\n'
        '    except ValueError as e:\n        errors.append(e)\ntry:\n    raise KeyError("k")\n'
        'except KeyError as e:\n    cause = OSError("o")\n    cause.__cause__ = e\n'
        'errors.append(cause)\nraise Group("two", [*errors, Group("inner", [TypeError("t")])])'
    )
    GROUP_ERROR = [
        '  + Exception Group Traceback (most recent call last):',
        '  |   File "<repl:group>", line 16, in <module>',
        '  |     raise Group("two", [*errors, Group("inner", [TypeError("t")])])',
        '  | {name}: two (4 sub-exceptions)',
        '  +-+---------------- 1 ----------------',
        '    | Traceback (most recent call last):',
        '    |   File "<repl:group>", line 7, in <module>',
        '    |     boom(n)',
        '    |   File "<repl:group>", line 3, in boom',
        '    |     raise ValueError(n)',
        '    | ValueError: 1',
        '    +---------------- 2 ----------------',
        '    | Traceback (most recent call last):',
        '    |   File "<repl:group>", line 7, in <module>',
        '    |     boom(n)',
        '    |   File "<repl:group>", line 3, in boom',
        '    |     raise ValueError(n)',
        '    | ValueError: 2',
        '    +---------------- 3 ----------------',
        '    | Traceback (most recent call last):',
        '    |   File "<repl:group>", line 11, in <module>',
        '    |     raise KeyError("k")',
        "    | KeyError: 'k'",
        '    | ',
        '    | The above exception was the direct cause of the following exception:',
        '    | ',
        '    | OSError: o',
        '    +---------------- 4 ----------------',
        '    | {name}: inner (1 sub-exception)',
        '    +-+---------------- 1 ----------------',
        '      | TypeError: t',
        '      +------------------------------------',
    ]

    def test_exception_group_shows_its_sub_exceptions_as_python(self):
        if sys.version_info >= (3, 11):
            # Python's own ExceptionGroup: the text is what Python prints, user frames only.
            result = self.worker.run('Group = ExceptionGroup\n' + self.GROUP_CODE, 'group')
            name = 'ExceptionGroup'
        else:
            # 3.10 has no ExceptionGroup; the `exceptiongroup` backport's groups (here a
            # stand-in module of that name) are laid out the same way once it is imported.
            backport = (
                'import sys, types\nmodule = types.ModuleType("exceptiongroup")\n'
                'class BaseExceptionGroup(BaseException):\n'
                '    def __init__(self, message, exceptions):\n'
                '        super().__init__(message, exceptions)\n'
                '        self.message, self.exceptions = message, tuple(exceptions)\n'
                '    def __str__(self):\n'
                '        n = len(self.exceptions)\n'
                '        return f"{self.message} ({n} sub-exception{\'s\' if n > 1 else \'\'})"\n'
                'class ExceptionGroup(BaseExceptionGroup, Exception):\n    pass\n'
                'module.BaseExceptionGroup, module.ExceptionGroup = BaseExceptionGroup, ExceptionGroup\n'
                'sys.modules["exceptiongroup"] = module\nGroup = ExceptionGroup'
            )
            self.assert_ok(self.worker.run(backport))
            result = self.worker.run(self.GROUP_CODE.replace('def boom', '\ndef boom', 1), 'group')
            name = 'ExceptionGroup'
        self.assertEqual(result['error'], '\n'.join(self.GROUP_ERROR).format(name=name))

    def test_exception_group_bounds(self):
        # At most 15 sections a group, as Python prints; and the whole within the bound of
        # a traceback: the sections past it are counted, not shown.
        if sys.version_info < (3, 11):
            self.assertIn('NameError', self.worker.run('ExceptionGroup')['error'])  # none on 3.10
            return
        error = self.worker.run('raise ExceptionGroup("many", [ValueError(i) for i in range(17)])')['error']
        self.assertEqual(error.count('    | ValueError: '), 15)
        self.assertTrue(error.endswith(
            '    +---------------- ... ----------------\n    | and 2 more exceptions\n    +------------------------------------'), error)
        error = self.worker.run('raise ExceptionGroup("big", [ValueError("x" * 400) for i in range(60)])')['error']
        shown = error.count('    | ValueError: ')
        self.assertLess(len(error), 10_200)
        self.assertGreater(shown, 10)
        self.assertIn(f'    | and {60 - shown} more exceptions\n', error)

    def test_exception_chain_reads_as_python(self):
        result = self.worker.run('try:\n    {}["k"]\nexcept KeyError as e:\n    raise ValueError("bad") from e', 'chain')
        self.assertEqual(result['error'], '\n'.join([
            'Traceback (most recent call last):', '  File "<repl:chain>", line 2, in <module>', '    {}["k"]', "KeyError: 'k'",
            '', 'The above exception was the direct cause of the following exception:', '',
            'Traceback (most recent call last):', '  File "<repl:chain>", line 4, in <module>',
            '    raise ValueError("bad") from e', 'ValueError: bad',
        ]))
        result = self.worker.run('raise KeyError("x") from KeyError("x")', 'same')
        self.assertEqual(result['error'], 'Traceback (most recent call last):\n  File "<repl:same>", line 1, in <module>\n'
                                          '    raise KeyError("x") from KeyError("x")\nKeyError: \'x\'')

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
        stdout = result['stdout']
        self.assertLessEqual(len(stdout.encode()), 50_000)
        self.assertGreater(len(stdout.encode()), 50_000 - 256)
        head, marker, tail = stdout.partition('\n[... ')
        self.assertEqual(head, 'a' * 20_000)
        left_out, _, rest = tail.partition(' bytes left out')
        self.assertRegex(rest, r'^; the complete output was not saved: No artifact store in this test \.\.\.\]\n')
        tail = rest.partition(' ...]\n')[2]
        self.assertEqual(tail.lstrip('a'), '\nafter\n')
        self.assertEqual(int(left_out.replace(',', '')), 2_000_000 + 7 - 20_000 - len(tail))
        self.assertTrue(result['truncated']['stdout'])
        # Live output is the text as written, its latest part when it was too much to send.
        streamed = ''.join(f['text'] for f in outputs)
        self.assertRegex(streamed, r'^\[\.\.\. [0-9,]+ characters not streamed live \.\.\.\]\na+\nafter\n$')
        self.assertLessEqual(len(streamed), 2 * 65_536 + 100)

    def test_a_long_run_keeps_its_head_and_its_tail(self):
        result = self.worker.run('for i in range(20_000):\n    print(f"step {i}")\nprint("final answer: 42")')
        self.assert_ok(result)
        self.assertTrue(result['stdout'].startswith('step 0\nstep 1\n'))
        self.assertTrue(result['stdout'].endswith('step 19999\nfinal answer: 42\n'))
        self.assertRegex(result['stdout'], r'\n\[\.\.\. [0-9,]+ bytes left out; the complete output was not saved: ')

    def test_progress_bars_keep_their_last_state(self):
        code = (
            'import sys, time\n'
            'for i in range(101):\n'
            '    sys.stderr.write(f"\\r{i:3d}%|{\'#\' * (i // 10):<10}| {i}/100")\n'
            '    sys.stderr.flush()\n'
            'sys.stderr.write("\\n")\nprint("done")'
        )
        run_id = self.worker.start(code)
        result, outputs = self.worker.collect(run_id)
        self.assert_ok(result)
        self.assertEqual(result['stderr'], '100%|##########| 100/100\n')
        self.assertEqual(result['stdout'], 'done\n')
        self.assertFalse(result['truncated']['stderr'])
        streamed = ''.join(f['text'] for f in outputs if f['stream'] == 'stderr')
        self.assertEqual(streamed.count('\r'), 101)  # live output shows every update

    def test_multibyte_bound_at_character_boundary(self):
        result = self.worker.run('print("Ж" * 2_000_000, end="")')
        stdout = result['stdout']
        self.assertLessEqual(len(stdout.encode('utf-8')), 50_000)
        head, _, tail = stdout.partition('\n[... ')
        self.assertEqual(head, 'Ж' * 10_000)
        self.assertTrue(tail.partition(' ...]\n')[2].strip('Ж') == '')
        # 3-byte characters: the head's budget ends inside one, which is dropped whole.
        result = self.worker.run('import sys\nsys.stdout.write("a" + "€" * 30_000)')
        self.assertEqual(result['stdout'].partition('\n[... ')[0], 'a' + '€' * 6_666)

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
        self.worker.hold_native = True  # the bytes are still in the pipe when the cell ends
        run_id = self.worker.start('import os\nos.write(2, b"native-before")', barrier=barrier)
        result, _ = self.worker.collect(run_id)
        self.assert_ok(result)
        self.assertTrue(self.worker.barrier_written)
        # The barrier was written before the result frame, so it is already in the pipe.
        native = self.worker.drain_native(0)
        marker = b'\x1e' + barrier.encode() + b'\x1e'
        self.assertIn(marker, native)
        self.assertLess(native.index(b'native-before'), native.index(marker))

    def test_no_barrier_when_the_pipe_holds_nothing_unread(self):
        # Nothing written: nothing to wait for.
        barrier = 'barrier-' + uuid.uuid4().hex
        self.assert_ok(self.worker.run('print("python only")\n1', barrier=barrier))
        self.assertFalse(self.worker.barrier_written)
        self.assertNotIn(barrier.encode(), self.worker.drain_native(0))
        # Written, by the worker and by a child, and read by the server before the cell
        # ended: the reader already holds it all, so again no barrier.
        barrier = 'barrier-' + uuid.uuid4().hex
        code = (
            'import fcntl, os, subprocess, termios, time\n'
            'os.write(1, b"native-early\\n")\n'
            'subprocess.run(["echo", "child-early"], check=True)\n'
            'deadline = time.monotonic() + 10\n'
            'while fcntl.ioctl(1, termios.FIONREAD, bytes(4)) != bytes(4) and time.monotonic() < deadline:\n'
            '    time.sleep(0.01)\n'
        )
        self.assert_ok(self.worker.run(code, barrier=barrier))
        native = self.worker.drain_native(0)
        if sys.platform == 'linux':
            self.assertFalse(self.worker.barrier_written)
            self.assertNotIn(barrier.encode(), native)
        self.assertIn(b'native-early\nchild-early\n', native)


class StreamSurfaceTests(WorkerTestCase):
    """sys.stdout and sys.stderr in a cell have what they have in plain Python: a bytes
    buffer, a descriptor, and the attributes programs read."""

    def test_bytes_through_buffer_are_captured_in_order_with_text(self):
        code = (
            'import io, sys\n'
            'sys.stdout.write("a")\n'
            'n = sys.stdout.buffer.write(b"b")\n'
            'print("c", end="")\n'
            'sys.stdout.buffer.write("é".encode())\n'
            'sys.stdout.buffer.write(b"\\xe2\\x82")\n'  # a character split across two writes
            'sys.stdout.buffer.write(b"\\xac|")\n'
            'sys.stderr.buffer.write(b"bad \\xff byte\\n")\n'
            'sys.stdout.buffer.write(bytearray(b"["))\n'
            'sys.stdout.buffer.write(memoryview(b"a-b-c")[::2])\n'
            'sys.stdout.buffer.write(memoryview(b"]\\n").cast("c"))\n'
            'w = io.TextIOWrapper(sys.stdout.buffer, encoding="utf-8", newline="\\n")\n'
            'w.write("wrapped\\n")\n'
            'w.close()\n'  # flushes, then closes the buffer: ignored, as closing the sink is
            'sys.stdout.buffer.write(b"after close\\n")\n'
            'sys.stdout.buffer.flush()\n'
            '[n, sys.stdout.encoding, sys.stdout.errors, sys.stdout.isatty(), sys.stdout.writable(),\n'
            ' sys.stdout.buffer.writable(), sys.stdout.buffer.closed, sys.stdout.buffer.isatty(), sys.stdout.buffer.name]'
        )
        run_id = self.worker.start(code)
        result, outputs = self.worker.collect(run_id)
        self.assert_ok(result)
        self.assertEqual(result['stdout'], 'abcé€|[abc]\nwrapped\nafter close\n')
        self.assertEqual(result['stderr'], 'bad \ufffd byte\n')
        self.assertEqual(result['value'], [1, 'utf-8', 'replace', False, True, True, False, False, '<stdout>'])
        for stream in ('stdout', 'stderr'):
            self.assertEqual(''.join(f['text'] for f in outputs if f['stream'] == stream), result[stream])

    def test_a_library_writing_bytes_to_stdout(self):
        code = (
            'import json, sys\n'
            'def emit(document):\n'  # as libraries do: bytes to stdout when it has a buffer
            '    out = getattr(sys.stdout, "buffer", sys.stdout)\n'
            '    out.write(json.dumps(document).encode("utf-8") + b"\\n")\n'
            '    out.flush()\n'
            'emit({"k": "é"})\n'
            'sys.stdout.buffer.writelines([b"one\\n", b"two\\n"])'
        )
        result = self.worker.run(code)
        self.assert_ok(result)
        self.assertEqual(result['stdout'], '{"k": "\\u00e9"}\none\ntwo\n')

    def test_a_split_character_left_at_the_end_is_replaced(self):
        result = self.worker.run('import sys\nsys.stdout.buffer.write(b"x\\xe2\\x82")')
        self.assertEqual(result['stdout'], 'x\ufffd')
        result = self.worker.run('import sys\nsys.stdout.buffer.write(b"\\xe2")\nprint("y")')
        self.assertEqual(result['stdout'], '\ufffdy\n')

    def test_bytes_share_the_stream_budget(self):
        result = self.worker.run('import sys\nsys.stdout.buffer.write(b"x" * 2_000_000)\nsys.stdout.buffer.write(b"more")')
        self.assertTrue(result['stdout'].startswith('x' * 20_000 + '\n[... '))
        self.assertTrue(result['stdout'].endswith('xxxmore'))
        self.assertTrue(result['truncated']['stdout'])
        result = self.worker.run('import sys\nprint("a" * 49_998)\nsys.stdout.buffer.write("€".encode())\nsys.stdout.buffer.write(b"z")')
        self.assertTrue(result['stdout'].endswith('a\n€z'))
        self.assertTrue(result['truncated']['stdout'])

    def test_only_bytes_go_to_the_buffer(self):
        result = self.worker.run('import sys\nsys.stdout.buffer.write("text")')
        self.assertFalse(result['success'])
        self.assertIn("TypeError: a bytes-like object is required, not 'str'", result['error'])

    def test_fileno_writes_land_in_the_native_output(self):
        code = (
            'import faulthandler, os, subprocess, sys\n'
            'os.write(sys.stdout.fileno(), b"via fileno\\n")\n'
            'subprocess.run(["echo", "child"], stdout=sys.stdout, check=True)\n'
            'faulthandler.enable()\n'
            'faulthandler.dump_traceback(all_threads=False)\n'
            'faulthandler.disable()\n'
            '[sys.stdout.fileno(), sys.stderr.fileno(), sys.stderr.buffer.fileno()]'
        )
        result = self.worker.run(code)
        self.assert_ok(result)
        self.assertEqual(result['value'], [1, 2, 2])
        native = self.worker.drain_native(0)
        self.assertIn(b'via fileno\nchild\n', native)
        self.assertIn(b'Stack (most recent call first)', native)

    def test_fileno_after_fd_1_was_given_to_a_file(self):
        took = self.path('took-fd1')
        code = (
            f'import os, sys\nos.close(1)\nf = open({took!r}, "w")\n'
            'fd = sys.stdout.fileno()\n'
            'os.write(fd, b"still native\\n")\n'
            'f.close()\n'
            '[f.fileno() if not f.closed else 1, fd != 1]'
        )
        result = self.worker.run(code)
        self.assert_ok(result)
        self.assertEqual(result['value'], [1, True])
        self.assertIn(b'still native\n', self.worker.drain_native(0))
        with open(took, 'rb') as file:
            self.assertEqual(file.read(), b'')


class NativeOutputTests(WorkerTestCase):
    """fd 1 and 2 are the native-output pipe, and the barrier goes there before each result.
    A cell may close either and open a file that takes the number."""

    def run_with_barrier(self, code):
        """(result, native bytes once the result is in): the barrier is there by then."""
        barrier = 'barrier-' + uuid.uuid4().hex
        self.worker.hold_native = True  # what the cell writes natively is unread when it ends
        result = self.worker.run(code, barrier=barrier)
        self.assert_ok(result)
        return result, self.worker.drain_native(0), b'\x1e' + barrier.encode() + b'\x1e'

    def test_barrier_never_goes_into_a_file_that_took_fd_2_or_1(self):
        took2, took1, took_copy = self.path('took-fd2'), self.path('took-fd1'), self.path('took-copy')
        self.assertEqual(self.worker.value(
            'import os\npipe = os.fstat(2)\nos.close(2)\n'
            f'f2 = open({took2!r}, "w", buffering=1)\nf2.fileno()'), 2)
        for i in range(3):
            _, native, marker = self.run_with_barrier(f'os.write(1, b"native-{i}")')
            self.assertIn(marker, native)  # the server need not wait it out
            self.assertLess(native.index(f'native-{i}'.encode()), native.index(marker))
        self.assertEqual(self.worker.value(f'os.close(1)\nf1 = open({took1!r}, "w", buffering=1)\nf1.fileno()'), 1)
        _, native, marker = self.run_with_barrier(
            'print("to a file", file=f1)\nprint("captured")\nimport sys\nos.write(sys.stderr.fileno(), b"native")')
        self.assertIn(marker, native)
        self.assertLess(native.index(b'native'), native.index(marker))
        # Every descriptor still the pipe (the worker's own copy) now goes to a file too.
        closed = self.worker.value(
            'import os\nclosed = []\n'
            'for fd in range(3, 1024):\n'
            '    try:\n        st = os.fstat(fd)\n    except OSError:\n        continue\n'
            '    if (st.st_dev, st.st_ino) == (pipe.st_dev, pipe.st_ino):\n'
            f'        copy = os.open({took_copy!r}, os.O_WRONLY | os.O_CREAT | os.O_APPEND)\n'
            '        os.dup2(copy, fd)\n        os.close(copy)\n        closed.append(fd)\n'
            'len(closed)')
        self.assertGreaterEqual(closed, 1)
        result, native, marker = self.run_with_barrier('print("still answered")')
        self.assertEqual(result['stdout'], 'still answered\n')
        self.assertNotIn(marker, native)  # skipped: nothing of the worker's is the pipe any more
        self.assertFalse(self.worker.barrier_written)  # and the result says so
        self.assert_ok(self.worker.run('f1.close()\nf2.close()'))
        for path in (took2, took1, took_copy):
            with open(path, 'rb') as file:
                self.assertNotIn(b'\x1e', file.read(), path)
        with open(took1) as file:
            self.assertEqual(file.read(), 'to a file\n')


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

    def test_values_that_fit_are_shown_whole(self):
        # JSON when exact JSON: beyond the old node and depth bounds, within 20,000 bytes.
        for code in ('list(range(101))', '[[[[[[1]]]]]]', '["s" * 2001]', '[list(range(60)), list(range(60))]'):
            result = self.worker.run(code)
            self.assertEqual(result['value'], json.loads(result['return_value']), code)
            self.assertFalse(result['truncated']['return'], code)
        # Otherwise a rendering like Python's repr, and nothing was cut.
        cases = {
            'b"abc"': "b'abc'", '{1, 2}': '{1, 2}', '{1: "int key"}': "{1: 'int key'}", 'float("nan")': 'nan',
            'import datetime\ndatetime.date(2024, 1, 2)': 'datetime.date(2024, 1, 2)',
            'import decimal\n[decimal.Decimal("1.5")]': "[Decimal('1.5')]",
            'import collections\ncollections.Counter("aab")': "Counter({'a': 2, 'b': 1})",
            '2 ** 5000': '<int; 5001 bits; safe preview omitted>', 'object()': '<object; safe preview omitted>',
        }
        for code, expected in cases.items():
            result = self.worker.run(code)
            self.assertEqual(result['return_value'], expected, code)
            self.assertFalse(result['truncated']['return'], code)
            self.assertNotIn('value', result, code)
            self.assertNotIn('artifact', result, code)
        result = self.worker.run('set(range(100_000))')
        self.assertTrue(result['truncated']['return'])
        self.assertRegex(result['return_value'], r'^\{0, 1, 2, .*\.\.\. \d+ more\}$')

    def test_notebook_repr_of_builtins_only(self):
        # The text form and the notebook show Python's repr where the preview is JSON
        # text, for exact builtins only; a value whose repr equals its preview, or that
        # is not made of exact builtins, sends none.
        result = self.worker.run('{"a": (1, 2.5, None), "b": [True, "x"]}')
        self.assertEqual(result['return_repr'], "{'a': (1, 2.5, None), 'b': [True, 'x']}")
        self.assertNotIn('html', result)
        self.assertNotIn('return_repr', self.worker.run('6 * 7'))
        self.assertEqual(self.worker.run('"abc"')['return_repr'], "'abc'")
        result = self.worker.run('class S(str):\n    pass\n[S("x")]')
        self.assertNotIn('return_repr', result)

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
            'Evil': "<class '__repl__.Evil'>",
            'Sub(a=1)': '<Sub; safe preview omitted>',
            'Text("x")': '<Text; safe preview omitted>',
            '[Evil()]': '[<Evil; safe preview omitted>]',
            '{"k": Sub()}': "{'k': <Sub; safe preview omitted>}",
        }
        for expression, expected in expectations.items():
            result = self.worker.run(expression)
            self.assert_ok(result)
            self.assertEqual(result['return_value'], expected, expression)
            self.assertFalse(result['truncated']['return'])
            self.assertNotIn('return_repr', result, expression)
            self.assertNotIn('html', result, expression)
        self.assertFalse(os.path.exists(marker), 'a user hook ran during a preview')


@library_test
class LibraryPreviewProtocolTests(WorkerTestCase):
    """Trailing values of pandas, numpy and matplotlib in a worker on the data venv."""

    def test_frames_and_arrays(self):
        result = self.worker.run('import pandas as pd, numpy as np\ndf = pd.DataFrame({"a": [1, 2], "b": ["x", "y"]})\ndf')
        self.assert_ok(result)
        self.assertEqual(result['return_value'], '   a  b\n0  1  x\n1  2  y\n\n[2 rows x 2 columns]')
        self.assertFalse(result['truncated']['return'])
        self.assertNotIn('value', result)
        self.assertNotIn('artifact', result)
        # pandas' own HTML of its own classes, for the session's notebook.
        self.assertIn('<table border="1" class="dataframe">', result['html'])
        self.assertIn('<table id="T_', self.worker.run('df.style')['html'])
        self.assertNotIn('html', self.worker.run('df["a"]'))
        # describe() of a datetime column is an object column of Timestamps and numbers,
        # which pandas formats itself: HTML like every other frame.
        described = self.worker.run('pd.DataFrame({"x": [1.5, 2.5], "when": pd.date_range("2024-01-01", periods=2)}).describe()')
        self.assertIn('<table border="1" class="dataframe">', described['html'])
        self.assertIn('2024-01-01 12:00:00', described['html'])
        result = self.worker.run('np.arange(10_000_000)')
        self.assertEqual(result['return_value'], 'array([      0,       1,       2, ..., 9999997, 9999998, 9999999],\n'
                                                 '      shape=(10000000,), dtype=int64)')
        self.assertTrue(result['truncated']['return'])
        self.assertNotIn('artifact', result)
        result = self.worker.run('import matplotlib\nmatplotlib.use("Agg")\nimport matplotlib.pyplot as plt\nplt.subplots()[0]')
        self.assertEqual(result['return_value'], '<Figure size 640x480 with 1 Axes>')

    def test_user_code_inside_library_values_never_runs(self):
        marker = self.path('marker')
        code = f'''
import numpy as np, pandas as pd
def mark(*args):
    open({marker!r}, "a").write("fired\\n")
    return "marked"
class MyFrame(pd.DataFrame):
    to_string = mark
    __repr__ = mark
class Cell:
    __repr__ = mark
    __str__ = mark
'''
        self.assert_ok(self.worker.run(code))
        for expression, expected in (
            ('MyFrame({"a": [1]})', '<MyFrame; safe preview omitted>'),
            ('pd.DataFrame({"c": [Cell(), 1]})', self.worker.value('pd.DataFrame({"c": ["<Cell; safe preview omitted>", 1]}).to_string()') + '\n\n[2 rows x 1 columns]'),
            ('np.array([Cell()], dtype=object)', 'array([<Cell; safe preview omitted>], shape=(1,), dtype=object)'),
        ):
            result = self.worker.run(expression)
            self.assert_ok(result)
            self.assertEqual(result['return_value'], expected, expression)
            self.assertNotIn('html', result, expression)
        # A Styler with a function of the user's applied is not rendered either.
        self.assertNotIn('html', self.worker.run('pd.DataFrame({"a": [1]}).style.map(mark)'))
        self.assertFalse(os.path.exists(marker), 'user code ran during a preview')


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
        shell_helper = 1  # __repl_shell__, what a cell's !cmd lines call
        reserved = 2 + len(HELPERS) + bridge_names + shell_helper
        self.assertEqual(inventory['total_namespace_entries'], reserved + 7)
        self.assertEqual(inventory['omitted_including_helpers'], reserved + 1)
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


if __name__ == '__main__':
    unittest.main()
