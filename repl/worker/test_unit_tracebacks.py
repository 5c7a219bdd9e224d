"""Tracebacks of the user's code and the source history, called directly: code compiled
under <repl:RUN_ID> names is the user's; every other frame (this test's, the worker's,
the standard library's) is left out."""

import asyncio
import json
import linecache
import unittest

from replworker import cells, tracebacks
from replworker.bridge import ToolError
from replworker.children import ShellError, ShellResult
from replworker.limits import (
    SOURCE_BYTES, SOURCE_RUNS, TRACEBACK_CAUSE_CHARS, TRACEBACK_CHARS, TRACEBACK_FRAMES, TRACEBACK_MESSAGE_CHARS,
    TYPE_NAME_CHARS,
)
from replworker.messages import INTERRUPTED, SOURCE_UNKNOWN


def raised(sources, run_id, source):
    """The exception running `source` as cell `run_id` raises."""
    filename = f'<repl:{run_id}>'
    sources.add(run_id, filename, source)
    try:
        exec(compile(source, filename, 'exec'), {'__name__': '__repl__'})
    except BaseException as exc:  # noqa: B902 - the cell's own exception, whatever it is
        return exc
    raise AssertionError('the cell raised nothing')


class FormatErrorTests(unittest.TestCase):
    def setUp(self):
        self.sources = tracebacks.SourceHistory()

    def test_user_frames_only_with_their_lines(self):
        exc = raised(self.sources, 'r1', 'import json\ndef f(n):\n    return json.loads(n)\nf("{")\n')
        error = tracebacks.format_error(exc, 'r1', self.sources)
        lines = error.split('\n')
        self.assertEqual(lines[0], 'Traceback (most recent call last):')
        self.assertEqual(lines[1:5], [
            '  File "<repl:r1>", line 4, in <module>', '    f("{")',
            '  File "<repl:r1>", line 3, in f', '    return json.loads(n)',
        ])
        self.assertTrue(lines[5].startswith('json.decoder.JSONDecodeError: Expecting property name'), error)
        for needle in ('test_unit_tracebacks', 'json/', 'replworker'):
            self.assertNotIn(needle, error)

    def test_exception_names(self):
        class Local(Exception):
            pass
        Local.__module__ = '__repl__'
        cases = [
            (ValueError, 'ValueError'), (json.JSONDecodeError, 'json.decoder.JSONDecodeError'),
            (Local, 'FormatErrorTests.test_exception_names.<locals>.Local'),
            (ToolError, 'ToolError'), (ShellError, 'ShellError'),  # the worker's own are bare
        ]
        for cls, name in cases:
            self.assertEqual(tracebacks.exception_name(cls), name)
        long = type('L' * 300, (Exception,), {})
        self.assertEqual(len(tracebacks.exception_name(long)), TYPE_NAME_CHARS)
        error = tracebacks.format_error(ShellError(ShellResult('', '', 3)), 'r', self.sources)
        self.assertTrue(error.endswith('\nShellError: Shell exited with status 3; inspect exception.stderr'), error)

    def test_chains(self):
        exc = raised(self.sources, 'c', 'try:\n    1/0\nexcept ZeroDivisionError as e:\n    raise KeyError("k") from e\n')
        self.assertTrue(tracebacks.format_error(exc, 'c', self.sources).endswith("KeyError: 'k'\n(caused by ZeroDivisionError: division by zero)"))
        exc = raised(self.sources, 'd', 'try:\n    1/0\nexcept ZeroDivisionError:\n    raise KeyError("k")\n')
        self.assertTrue(tracebacks.format_error(exc, 'd', self.sources).endswith('(raised while handling ZeroDivisionError: division by zero)'))
        exc = raised(self.sources, 'e', 'try:\n    1/0\nexcept ZeroDivisionError:\n    raise KeyError("k") from None\n')
        self.assertTrue(tracebacks.format_error(exc, 'e', self.sources).endswith("KeyError: 'k'"))
        exc = raised(self.sources, 'f', 'raise ValueError("x" * 9000) from RuntimeError("y" * 9000)\n')
        last = tracebacks.format_error(exc, 'f', self.sources).split('\n')[-2:]
        self.assertEqual(last, ['ValueError: ' + 'x' * TRACEBACK_MESSAGE_CHARS, f'(caused by RuntimeError: {"y" * TRACEBACK_CAUSE_CHARS})'])

    def test_bounds(self):
        exc = raised(self.sources, 'deep', 'def f(n):\n    if n:\n        return f(n - 1)\n    raise ValueError("bottom")\nf(50)\n')
        error = tracebacks.format_error(exc, 'deep', self.sources)
        self.assertEqual(error.count('File "<repl:deep>"'), TRACEBACK_FRAMES)
        self.assertIn('raise ValueError("bottom")', error)  # the innermost frames are the ones kept
        long_line = 'x = ' + '1 + ' * 2000 + '1/0\n'
        exc = raised(self.sources, 'wide', 'def g():\n    ' + long_line + 'g()\n')
        self.assertLessEqual(len(tracebacks.format_error(exc, 'wide', self.sources)), TRACEBACK_CHARS)

    def test_syntax_error_shows_the_line(self):
        self.sources.add('syn', '<repl:syn>', 'x = 1\ny = (\n')
        with self.assertRaises(SyntaxError) as caught:
            cells.compile_cell('x = 1\ny = (\n', '<repl:syn>')
        error = tracebacks.format_error(caught.exception, 'syn', self.sources)
        self.assertIn('File "<repl:syn>", line 2\n    y = (', error)
        self.assertIn('SyntaxError: ', error)

    def test_interrupts_and_run_failures_are_their_message(self):
        for exc in (KeyboardInterrupt(), asyncio.CancelledError()):
            self.assertEqual(tracebacks.format_error(exc, 'r9', self.sources), INTERRUPTED.format('r9'))
        self.assertEqual(tracebacks.format_error(tracebacks.RunFailure('said'), 'r9', self.sources), 'said')


class SourceHistoryTests(unittest.TestCase):
    def test_linecache_and_eviction_by_count(self):
        sources = tracebacks.SourceHistory()
        for i in range(SOURCE_RUNS + 1):
            sources.add(f'h{i}', f'<repl:h{i}>', f'x = {i}\n')
        self.assertEqual(len(sources.history()), SOURCE_RUNS)
        self.assertNotIn('<repl:h0>', linecache.cache)
        self.assertEqual(linecache.getline('<repl:h1>', 1), 'x = 1\n')
        with self.assertRaises(ValueError) as caught:
            sources.source('h0')
        self.assertEqual(str(caught.exception), SOURCE_UNKNOWN)
        self.assertTrue(sources.shows('<repl:h0>'))  # cell code stays the user's once evicted

    def test_eviction_by_bytes_keeps_the_latest(self):
        sources = tracebacks.SourceHistory()
        sources.add('a', '<repl:a>', 'a' * (SOURCE_BYTES // 2))
        sources.add('b', '<repl:b>', 'b' * (SOURCE_BYTES // 2))
        self.assertEqual([run['run_id'] for run in sources.history()], ['b'])
        sources.add('c', '<repl:c>', 'c' * (SOURCE_BYTES * 2))  # alone over the budget: kept
        self.assertEqual([run['run_id'] for run in sources.history()], ['c'])

    def test_a_saved_file_keeps_its_latest_run_only(self):
        sources = tracebacks.SourceHistory()
        sources.add('f1', '/p/script.py', 'print(1)\n')
        sources.add('f2', '/p/script.py', 'print(2)\nprint(3)\n')
        self.assertEqual(sources.history(), [{'run_id': 'f2', 'lines': 2}])
        self.assertTrue(sources.shows('/p/script.py'))
        self.assertEqual(sources.line('/p/script.py', 2), 'print(3)')
        self.assertFalse(sources.shows('/p/other.py'))
        self.assertFalse(sources.shows('<repl-mcp worker>/cells.py'))


if __name__ == '__main__':
    unittest.main()
