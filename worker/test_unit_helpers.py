"""The checks the helpers make on their arguments before anything is sent or started, and
the saved-file and cell-compiling steps, called directly. Outside a cell every bridge call
is refused before any rpc (there is no channel here to send one on)."""

import ast
import inspect
import math
import os
import platform
import tempfile
import threading
import types
import unittest
import uuid
from concurrent import futures

from replworker import artifacts, bridge, cells, children, main, messages, shelllines, toolfuncs, toolresult
from replworker.limits import ARGV_BYTES, ARGV_ITEMS, SHELL_ERROR_TAIL, SOURCE_FILE_BYTES
from replworker.tracebacks import RunFailure


class ShellTests(unittest.TestCase):
    def test_timeout_must_be_finite_and_positive(self):
        for timeout in (0, -1, math.nan, math.inf, True, '5', None):
            with self.assertRaises(ValueError) as caught:
                children.sh('true', timeout=timeout)
            self.assertEqual(str(caught.exception), messages.SHELL_BAD_TIMEOUT)

    def test_result_and_error(self):
        result = children.ShellResult('out', 'err', 2, truncated=True)
        self.assertEqual([str(result), result.stdout, result.stderr, result.returncode, result.ok, result.truncated],
                         ['out', 'out', 'err', 2, False, True])
        error = children.ShellError(result)
        self.assertIsInstance(error, RuntimeError)
        self.assertEqual([str(error), error.result, error.returncode, error.stderr],
                         [messages.SHELL_FAILED.format(2) + '. Its stderr ends:\nerr', result, 2, 'err'])
        quiet = children.ShellError(children.ShellResult('out', ' \n', 1))
        self.assertEqual(str(quiet), messages.SHELL_FAILED.format(1))  # nothing to show: the plain message

    def test_error_message_ends_with_the_tail_of_stderr(self):
        stderr = ''.join(f'warning {i}\n' for i in range(1000)) + 'fatal: no such thing\n\n'
        message = str(children.ShellError(children.ShellResult('', stderr, 128)))
        prefix = messages.SHELL_FAILED.format(128) + '. Its stderr ends:\n...'
        self.assertTrue(message.startswith(prefix), message[:100])
        self.assertTrue(message.endswith('warning 999\nfatal: no such thing'), message[-100:])
        self.assertEqual(len(message), len(prefix) + SHELL_ERROR_TAIL)


class BridgeArgumentTests(unittest.TestCase):
    def setUp(self):
        self.mcp = toolfuncs.McpBridge(bridge.RPCS)

    def test_refused_before_any_rpc(self):
        cases = [
            (lambda: self.mcp.call('s', 't', arguments={'a': 1}, a=2), ValueError, messages.MCP_BOTH_ARGUMENTS),
            (lambda: self.mcp.call('s', 't', arguments=[1]), TypeError, messages.MCP_ARGUMENTS_NOT_DICT),
            (lambda: self.mcp.list_tools('s', timeout=True), ValueError, messages.MCP_BAD_TIMEOUT),
            (lambda: self.mcp.help('s', timeout='1'), ValueError, messages.MCP_BAD_TIMEOUT),
        ]
        for timeout in (0, 0.001, 3600.5, math.nan, math.inf, -1, False):
            cases.append((lambda timeout=timeout: self.mcp.call('s', 't', timeout=timeout), ValueError, messages.MCP_BAD_TIMEOUT))
        for call, error, message in cases:
            with self.assertRaises(error) as caught:
                call()
            self.assertEqual(str(caught.exception), message)

    def test_calls_belong_to_a_running_cell(self):
        for call in (lambda: self.mcp.call('s', 't', timeout=0.01), self.mcp.servers, self.mcp.journal, lambda: self.mcp.explain('s')):
            with self.assertRaises(RuntimeError) as caught:
                call()
            self.assertEqual(str(caught.exception), messages.MCP_FOREIGN)

    def test_envelopes(self):
        envelope = {'content': [{'type': 'text', 'text': 'a'}, {'type': 'image'}, {'type': 'text', 'text': 'b'}], 'isError': False}
        self.assertEqual(toolresult.envelope_text(envelope), 'a\nb')
        self.assertIsInstance(toolresult.to_envelope(envelope), toolresult.ToolResult)
        with self.assertRaises(bridge.ToolError) as caught:
            toolresult.to_envelope({**envelope, 'isError': True, 'content': [{'type': 'text', 'text': 'x' * 5000}]})
        self.assertEqual(str(caught.exception), messages.TOOL_FAILED.format('x' * 2000))
        self.assertEqual(caught.exception.result['isError'], True)
        with self.assertRaises(bridge.ToolError):
            toolresult.to_envelope(['not', 'a', 'dict'])
        with self.assertRaises(TypeError):
            toolresult.envelope_text('text')
        self.assertEqual(repr(self.mcp), messages.MCP_REPR)


class BridgeReplyTests(unittest.TestCase):
    """The reply a blocking call waits for: settled once, by the reply from another
    thread or by a cancel, which alone sends the rpc_cancel (on_cancel)."""

    def setUp(self):
        self.cancels = []
        self.reply = bridge._Reply(lambda: self.cancels.append('rpc_cancel'))

    def settle_from_thread(self, settle, *args):
        thread = threading.Thread(target=settle, args=args)
        thread.start()
        self.addCleanup(thread.join)

    def test_the_reply_from_another_thread(self):
        self.settle_from_thread(self.reply.set_result, {'content': []})
        self.assertEqual(bridge.await_reply(self.reply, 5), {'content': []})
        self.assertFalse(self.reply.cancel(), 'a cancel after the reply')
        self.assertEqual(self.cancels, [], 'a cancel after the reply sent an rpc_cancel')
        with self.assertRaises(futures.InvalidStateError):
            self.reply.set_result('a second reply')

    def test_an_error_reply_raises_in_the_waiter(self):
        error = bridge.ToolError('MCP transport unavailable')
        self.settle_from_thread(self.reply.set_exception, error)
        with self.assertRaises(bridge.ToolError) as caught:
            bridge.await_reply(self.reply, None)
        self.assertIs(caught.exception, error)
        self.assertFalse(self.reply.cancel())
        self.assertEqual(self.cancels, [])

    def test_cancel_before_the_reply(self):
        self.assertTrue(self.reply.cancel())
        self.assertFalse(self.reply.cancel(), 'cancelled twice')
        self.assertEqual(self.cancels, ['rpc_cancel'])
        with self.assertRaises(futures.InvalidStateError):
            self.reply.set_result('late')  # the reader thread drops it
        with self.assertRaises(futures.CancelledError):
            bridge.await_reply(self.reply, 5)

    def test_a_wait_with_no_reply_times_out(self):
        with self.assertRaises(futures.TimeoutError):
            bridge.await_reply(self.reply, 0.01)
        self.assertEqual(self.cancels, [], 'the timeout itself cancels nothing; the caller does')
        self.settle_from_thread(self.reply.set_result, 'late but in time for the next wait')
        self.assertEqual(bridge.await_reply(self.reply, 5), 'late but in time for the next wait')

    def test_slot_waiters_are_still_futures(self):
        waiter = futures.Future()
        waiter.set_result(None)
        self.assertIsNone(bridge.await_reply(waiter, None))


class StartTests(unittest.TestCase):
    """What the worker makes without importing uuid and platform at every start."""

    def test_rpc_ids_are_version_4_uuids(self):
        ids = {bridge.new_rpc_id() for _ in range(1000)}
        self.assertEqual(len(ids), 1000)
        for rpc_id in ids:
            parsed = uuid.UUID(hex=rpc_id)
            self.assertEqual([len(rpc_id), parsed.hex, parsed.version, parsed.variant], [32, rpc_id, 4, uuid.RFC_4122])

    def test_python_version_is_platforms(self):
        self.assertEqual(main.python_version(), platform.python_version())


class ArtifactArgumentTests(unittest.TestCase):
    def test_refused_before_any_rpc(self):
        cases = [
            (lambda: artifacts.artifact(), ValueError, messages.ARTIFACT_ONE_SOURCE),
            (lambda: artifacts.artifact(b'x', path='f'), ValueError, messages.ARTIFACT_ONE_SOURCE),
            (lambda: artifacts.artifact(path='f', format='csv'), ValueError, messages.ARTIFACT_BAD_FORMAT),
            (lambda: artifacts.artifact(path=b'f'), TypeError, messages.NOT_STR_PATH.format('path')),
            (lambda: artifacts.artifact(b'x', format='json'), ValueError, messages.ARTIFACT_FORMAT_MISMATCH.format('json', 'bytes')),
            (lambda: artifacts.artifact('x', format='binary'), ValueError, messages.ARTIFACT_FORMAT_MISMATCH.format('binary', 'str')),
            (lambda: artifacts.artifact([1], format='text'), ValueError, messages.ARTIFACT_FORMAT_MISMATCH.format('text', 'list')),
            (lambda: artifacts.artifact_read(1), TypeError, messages.NOT_STR.format('artifact_id', 'int')),
            (lambda: artifacts.artifact_read('a', offset=-1), ValueError, messages.NEGATIVE.format('offset')),
            (lambda: artifacts.artifact_read('a', length=True), TypeError, messages.NOT_INT.format('length', 'bool')),
            (lambda: artifacts.artifact_read('a', length=65_537), ValueError, messages.ARTIFACT_BAD_LENGTH),
            (lambda: artifacts.artifact_read('a', encoding='utf-8'), ValueError, messages.ARTIFACT_BAD_ENCODING),
            (lambda: artifacts.artifact_read('a', -1), ValueError, messages.NEGATIVE.format('offset')),
            (lambda: artifacts.artifact_read('a', 0, 65_537), ValueError, messages.ARTIFACT_BAD_LENGTH),
            (lambda: artifacts.artifact_read('a', 0, 10, 'utf-8'), ValueError, messages.ARTIFACT_BAD_ENCODING),
            (lambda: artifacts.artifact_save('a', 'p', overwrite=1), TypeError, messages.NOT_BOOL_OVERWRITE),
            (lambda: artifacts.artifact_delete(None), TypeError, messages.NOT_STR.format('artifact_id', 'NoneType')),
            (lambda: artifacts.artifact_forward('a', 's', 't', 'arg', format='binary'), ValueError, messages.ARTIFACT_BAD_FORWARD_FORMAT),
            (lambda: artifacts.artifact_forward('a', 's', 7, 'arg'), TypeError, messages.NOT_STR.format('tool', 'int')),
        ]
        for call, error, message in cases:
            with self.assertRaises(error) as caught:
                call()
            self.assertEqual(str(caught.exception), message)
        with self.assertRaises(RuntimeError) as caught:  # the checks passed: only now the bridge refuses
            artifacts.artifact_read('a', offset=0, length=65_536, encoding='hex')
        self.assertEqual(str(caught.exception), messages.MCP_FOREIGN)

    def test_json_values_are_checked_without_user_code(self):
        class Custom:
            def __iter__(self):
                raise AssertionError('user code ran')
        deep = []
        for _ in range(33):
            deep = [deep]
        refused = [
            ([1, Custom()], 'found Custom', False), ({1: 2}, 'dict key of type int', False),
            ([math.nan], 'NaN or infinite float', False), ([2 ** 5000], 'int over 4096 bits', True),
            (deep, 'nesting deeper than 32', True), ([0] * 100_001, 'more than 100,000 values', True),
            (['x' * (1 << 22) + 'y'], 'strings exceed the 16 MiB budget at 4 bytes per character', True),
        ]
        for value, detail, budget in refused:
            with self.assertRaises(artifacts.NotArtifact) as caught:
                artifacts.check_artifact_json(value)
            # A value past a bound is exact JSON: the message says the bound, not the types.
            template = messages.ARTIFACT_OVER_BOUNDS if budget else messages.ARTIFACT_UNSUPPORTED_DETAIL
            self.assertEqual(str(caught.exception), template.format(detail))
            self.assertEqual(caught.exception.budget, budget)
        artifacts.check_artifact_json({'a': [None, True, 1, 2.5, 'x', (1, 2)], 'b': toolresult.ToolResult(c=1)})
        self.assertEqual([artifacts.auto_artifact_format(v) for v in ('s', b'b', [1], (1,), {}, toolresult.ToolResult(), 1, {1})],
                         ['text', 'binary', 'json', 'json', 'json', 'json', None, None])


class SavedFileTests(unittest.TestCase):
    def setUp(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.dir = tmp.name

    def file(self, name, data):
        path = os.path.join(self.dir, name)
        with open(path, 'wb') as file:
            file.write(data)
        return path

    def test_source_is_read_and_decoded_as_python_does(self):
        self.assertEqual(cells._read_source(self.file('latin.py', '# coding: latin-1\nx = "é"\n'.encode('latin-1'))), '# coding: latin-1\nx = "é"\n')
        self.assertEqual(cells._read_source(self.file('bom.py', b'\xef\xbb\xbfx = 1\n')), 'x = 1\n')
        self.assertEqual(len(cells._read_source(self.file('max.py', b'#' * SOURCE_FILE_BYTES))), SOURCE_FILE_BYTES)

    def test_refusals_are_the_whole_error(self):
        fifo = os.path.join(self.dir, 'fifo.py')
        os.mkfifo(fifo)
        cases = [
            (self.file('big.py', b'#' * (SOURCE_FILE_BYTES + 1)), messages.FILE_TOO_LARGE),
            (fifo, 'Cannot read Python source file: '),
            (os.path.join(self.dir, 'missing.py'), 'Cannot read Python source file: '),
            (self.file('bad.py', b'x = "\xff"\n'), 'Cannot decode Python source file '),
        ]
        for path, message in cases:
            with self.assertRaises(RunFailure) as caught:
                cells._read_source(path)
            self.assertTrue(str(caught.exception).startswith(message), str(caught.exception))

    def test_argv_bounds(self):
        cells._check_argv(['a'] * ARGV_ITEMS)
        cells._check_argv(['é' * (ARGV_BYTES // 2)])
        for argv, message in ((['a'] * (ARGV_ITEMS + 1), messages.ARGV_TOO_MANY), (['x' * (ARGV_BYTES + 1)], messages.ARGV_TOO_LARGE)):
            with self.assertRaises(RunFailure) as caught:
                cells._check_argv(argv)
            self.assertEqual(str(caught.exception), message)


class CompileCellTests(unittest.TestCase):
    def test_trailing_expression_is_compiled_apart(self):
        body, tail = cells.compile_cell('x = 2\nx * 3', '<repl:c>')
        namespace = {}
        exec(body, namespace)
        self.assertEqual(eval(tail, namespace), 6)
        self.assertIsNone(cells.compile_cell('x = 1', '<repl:c>')[1])
        body, tail = cells.compile_cell('import asyncio\nawait asyncio.sleep(0, 5)', '<repl:c>')
        self.assertTrue(tail.co_flags & inspect.CO_COROUTINE)  # top-level await: a coroutine to await

    def test_a_lone_expression_has_no_body(self):
        # Compiled once: nothing but the expression to evaluate.
        body, tail = cells.compile_cell('1 + 1  # comment', '<repl:c>')
        self.assertEqual([body, eval(tail, {})], [None, 2])
        # A shell line is never the trailing value: `!echo hi` alone has none.
        body, tail = cells.compile_cell('x = 1\n!echo hi', '<repl:c>', commands=True)
        self.assertEqual([body is None, tail], [False, None])

    def test_a_one_line_expression_compiles_as_the_long_way_does(self):
        # Compiled from its text at once: the same code object the parse and compile of
        # the long way make, positions and flags included.
        def long_way(source):
            module = ast.parse(source, '<repl:c>', 'exec')
            expression = ast.Expression(module.body.pop().value)
            return compile(expression, '<repl:c>', 'eval', cells._CELL_FLAGS, dont_inherit=True)

        def shape(code):
            consts = tuple(shape(c) if isinstance(c, types.CodeType) else c for c in code.co_consts)
            positions = list(code.co_positions()) if hasattr(code, 'co_positions') else None  # 3.11+
            return (code.co_code, consts, code.co_names, code.co_flags, code.co_filename, list(code.co_lines()), positions)

        for source in ('1 + 1', 'df.shape', 'await asyncio.sleep(0)', 'f(x=1)  # comment', '"text"\n\n',
                       'lambda y: [i for i in range(y)]', 'f"{x!r:>4}"', 'a if b else c'):
            fast = cells._one_line_expression(source, '<repl:c>')
            self.assertIsNotNone(fast, source)
            self.assertEqual(shape(fast), shape(long_way(source)), source)
            self.assertEqual(cells.compile_cell(source, '<repl:c>', commands=True)[0], None, source)
        # Everything else takes the long way, which gives its result or its error.
        for source in ('x = 1', '1;', '(1,\n 2)', 'x\r\ny', ' 1', '# c\n1', '!ls', '%pip list', 'x = (', '1\x00', ''):
            self.assertIsNone(cells._one_line_expression(source, '<repl:c>'), source)
        with self.assertRaises(IndentationError):
            cells.compile_cell(' 1', '<repl:c>')
        with self.assertRaises(SyntaxError):
            cells.compile_cell('x = (', '<repl:c>')

    def test_shell_lines_anywhere(self):
        # Where IPython takes them: a logical line of its own, at the top level or in a
        # block, after Python lines too; the lines keep their numbers.
        source = ('# setup\n!echo hi\nimport os\n  %pip install -q x\nfor f in range(2):\n'
                  '    !echo {f}\n    files = !ls -a\nd["k"] = !pwd\nx = 1 if y != 2 else 3\n'
                  'z = "%d" % 4\n!  ls  ')
        text, originals = shelllines.transform(source)
        pip = children.pip_command('install -q x')  # which pip is pip_command's (its own tests)
        call = shelllines.HELPER
        self.assertEqual(text.split('\n'), [
            '# setup', f"{call}('echo hi', 0)", 'import os', f'  {call}({pip!r}, 1)', 'for f in range(2):',
            f"    {call}('echo {{f}}', 0)", f"    files = {call}('ls -a', 2)", f"d[\"k\"] = {call}('pwd', 2)",
            'x = 1 if y != 2 else 3', 'z = "%d" % 4', f"{call}('ls', 0)",
        ])
        self.assertEqual(sorted(originals), [2, 4, 6, 7, 8, 11])
        self.assertEqual(originals[7], '    files = !ls -a')
        self.assertEqual(shelllines.transform('%pipx run y')[0], f"{call}('%pipx run y', 3)")  # only %pip itself

    def test_other_magics_raise_at_their_line(self):
        text, _ = shelllines.transform('x = 1\n%timeit x\n%%time\n!!ls\nt = %who\ny = %pip list')
        call = shelllines.HELPER
        self.assertEqual(text.split('\n'), [
            'x = 1', f"{call}('%timeit x', 3)", f"{call}('%%time', 3)", f"{call}('!!ls', 3)",
            f"t = {call}('%who', 3)", f"y = {call}('%pip list', 3)",
        ])
        with self.assertRaises(RuntimeError) as caught:
            shelllines.shell('%timeit x', shelllines.UNSUPPORTED)
        self.assertEqual(str(caught.exception), messages.SHELL_FORM_UNSUPPORTED.format('%timeit x'))
        self.assertNotIn('\n', str(caught.exception))

    def test_lines_inside_strings_and_brackets_are_not_shell_lines(self):
        for source in ('s = """\n!not a command\nx = !nor this\n"""', 'x = (1,\n!= 2)', 'y = (a\n % b)',
                       'f(a,\n  b = !c)', 'x = 1 + \\\n!ls', "s = '''\n%timeit\n'''"):
            text, originals = shelllines.transform(source)
            self.assertEqual((text, originals), (source, {}), source)
        self.assertEqual(shelllines.transform('x = 1\ny = x % 2 != 0'), ('x = 1\ny = x % 2 != 0', {}))

    def test_compile_cell_with_shell_lines(self):
        # Only cells have them (a saved file's first line is Python); their lines keep their numbers.
        with self.assertRaises(SyntaxError):
            cells.compile_cell('!ls', '<repl:c>')
        body, tail = cells.compile_cell('x = 1\n!ls\nx', '<repl:c>', commands=True)
        self.assertEqual((body.co_filename, eval(tail, {'x': 7})), ('<repl:c>', 7))
        with self.assertRaises(SyntaxError) as caught:
            cells.compile_cell('!ls\nx = (', '<repl:c>', commands=True)
        self.assertEqual(caught.exception.lineno, 2)
        # A `!` that is no line of its own stays a SyntaxError, with a note naming the forms.
        with self.assertRaises(SyntaxError) as caught:
            cells.compile_cell('x = 1\nprint(x); !ls', '<repl:c>', commands=True)
        self.assertEqual((caught.exception.lineno, caught.exception.__notes__), (2, [messages.SHELL_FORM_HINT]))
        # A transformed line's error shows the line as written.
        with self.assertRaises(SyntaxError) as caught:
            cells.compile_cell('1 = !ls', '<repl:c>', commands=True)
        self.assertEqual(caught.exception.text, '1 = !ls')

if __name__ == '__main__':
    unittest.main()
