"""Tracebacks of the user's code and the source history, called directly: code compiled
under <repl:RUN_ID> names is the user's; every other frame (this test's, the worker's,
the standard library's) is left out."""

import asyncio
import json
import linecache
import traceback
import unittest

from replworker import cells, tracebacks
from replworker.bridge import ToolError
from replworker.children import ShellError, ShellResult
from replworker.limits import (
    SOURCE_BYTES, SOURCE_RUNS, TRACEBACK_CAUSE_CHARS, TRACEBACK_CHAIN, TRACEBACK_CHARS, TRACEBACK_FRAMES,
    TRACEBACK_MESSAGE_CHARS, TRACEBACK_SOURCE_CHARS, TYPE_NAME_CHARS,
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

    def test_chains_read_as_python_prints_them(self):
        exc = raised(self.sources, 'c', 'try:\n    1/0\nexcept ZeroDivisionError as e:\n    raise KeyError("k") from e\n')
        self.assertEqual(tracebacks.format_error(exc, 'c', self.sources), '\n'.join([
            'Traceback (most recent call last):',
            '  File "<repl:c>", line 2, in <module>',
            '    1/0',
            'ZeroDivisionError: division by zero',
            '',
            'The above exception was the direct cause of the following exception:',
            '',
            'Traceback (most recent call last):',
            '  File "<repl:c>", line 4, in <module>',
            '    raise KeyError("k") from e',
            "KeyError: 'k'",
        ]))
        exc = raised(self.sources, 'd', 'def f():\n    try:\n        1/0\n    except ZeroDivisionError:\n        raise KeyError("k")\nf()\n')
        error = tracebacks.format_error(exc, 'd', self.sources)
        self.assertIn('ZeroDivisionError: division by zero\n\nDuring handling of the above exception, another exception occurred:\n\nTraceback', error)
        self.assertTrue(error.endswith('  File "<repl:d>", line 5, in f\n    raise KeyError("k")\nKeyError: \'k\''), error)
        exc = raised(self.sources, 'e', 'try:\n    1/0\nexcept ZeroDivisionError:\n    raise KeyError("k") from None\n')
        self.assertNotIn('ZeroDivisionError', tracebacks.format_error(exc, 'e', self.sources))
        # A cause that was never raised has no traceback, so no head, as in Python.
        exc = raised(self.sources, 'f', 'raise ValueError("x" * 9000) from RuntimeError("y" * 9000)\n')
        error = tracebacks.format_error(exc, 'f', self.sources)
        self.assertTrue(error.startswith(f'RuntimeError: {"y" * TRACEBACK_CAUSE_CHARS}\n\nThe above exception was the direct cause'), error[:100])
        self.assertTrue(error.endswith('\nValueError: ' + 'x' * TRACEBACK_MESSAGE_CHARS))

    def test_an_exception_is_not_repeated_as_its_own_cause(self):
        # What pandas does for a missing column: raise KeyError(key) from the engine's
        # KeyError(key), raised in library code: the cause only repeats the exception.
        library = {'__name__': 'somelib'}
        exec(compile('def get(d, k):\n    try:\n        return d[k]\n    except KeyError as err:\n        raise KeyError(k) from err\n'
                     'def get_again(d, k):\n    try:\n        return d[k]\n    except KeyError:\n        raise KeyError(k)\n',
                     '/site-packages/somelib.py', 'exec'), library)
        for name in ('get', 'get_again'):
            namespace = {'__name__': '__repl__', name: library[name]}
            self.sources.add(name, f'<repl:{name}>', f'{name}({{}}, "x")\n')
            try:
                exec(compile(f'{name}({{}}, "x")\n', f'<repl:{name}>', 'exec'), namespace)
            except KeyError as caught:
                exc = caught
            self.assertEqual(tracebacks.format_error(exc, name, self.sources), '\n'.join([
                'Traceback (most recent call last):',
                f'  File "<repl:{name}>", line 1, in <module>',
                f'    {name}({{}}, "x")',
                "KeyError: 'x'",
            ]))
        exc = raised(self.sources, 'eq', 'raise KeyError("x") from KeyError("x")\n')
        self.assertEqual(tracebacks.format_error(exc, 'eq', self.sources).count("KeyError: 'x'"), 1)
        # With frames of its own, an equal cause says where it happened: it stays, as in Python.
        exc = raised(self.sources, 'own', 'try:\n    {}["x"]\nexcept KeyError as e:\n    raise KeyError("x") from e\n')
        error = tracebacks.format_error(exc, 'own', self.sources)
        self.assertEqual(error.count("KeyError: 'x'"), 2)
        self.assertIn('    {}["x"]', error)
        # A chain that loops ends where it comes back.
        exc = raised(self.sources, 'loop', 'a, b = ValueError("a"), ValueError("b")\na.__context__ = b\nb.__context__ = a\nraise a\n')
        self.assertEqual(tracebacks.format_error(exc, 'loop', self.sources).count('ValueError: '), 2)

    def test_long_chains_keep_the_newest(self):
        code = 'e = None\nfor i in range(20):\n    try:\n        raise ValueError(i)\n    except ValueError as x:\n        x.__context__ = e\n        e = x\nraise e\n'
        exc = raised(self.sources, 'long', code)
        error = tracebacks.format_error(exc, 'long', self.sources)
        self.assertTrue(error.startswith(f'[{20 - TRACEBACK_CHAIN} earlier exceptions of the chain not shown]\n\nTraceback'), error[:80])
        self.assertEqual(error.count('ValueError: '), TRACEBACK_CHAIN)
        self.assertTrue(error.endswith('ValueError: 19'))
        long_line = 'raise ValueError(str(i) * 3000)  # ' + 'c' * 600
        code = f'e = None\nfor i in range(8):\n    try:\n        {long_line}\n    except ValueError as x:\n        x.__context__ = e\n        e = x\nraise e\n'
        error = tracebacks.format_error(raised(self.sources, 'wide', code), 'wide', self.sources)
        self.assertLessEqual(len(error), TRACEBACK_CHARS)
        self.assertTrue(error.startswith('['), error[:80])  # older ones that do not fit are counted
        self.assertTrue(error.endswith('ValueError: ' + '7' * 3000))

    def test_notes_follow_the_message(self):
        # add_note() is Python 3.11+; the attribute it sets is read on every version.
        exc = raised(self.sources, 'n', 'e = ValueError("bad")\ne.__notes__ = ["while reading row 7"]\nraise e\n')
        self.assertTrue(tracebacks.format_error(exc, 'n', self.sources).endswith('ValueError: bad\nwhile reading row 7'))

    def test_bounds(self):
        exc = raised(self.sources, 'deep', 'def f(n):\n    if n:\n        return f(n - 1)\n    raise ValueError("bottom")\nf(50)\n')
        error = tracebacks.format_error(exc, 'deep', self.sources)
        self.assertEqual(error.count('File "<repl:deep>"'), TRACEBACK_FRAMES)
        self.assertIn('raise ValueError("bottom")', error)  # the innermost frames are the ones kept
        long_line = 'x = ' + '1 + ' * 2000 + '1/0\n'
        exc = raised(self.sources, 'wide', 'def g():\n    ' + long_line + 'g()\n')
        self.assertLessEqual(len(tracebacks.format_error(exc, 'wide', self.sources)), TRACEBACK_CHARS)

    def test_syntax_errors_read_as_python_prints_them(self):
        cases = [
            'x = 1\ny = (\n', 'def f(:\n    pass\n', 'if x:\npass\n', 'if x:\n\tif y:\n        pass\n', "s = 'abc\n",
            'x = 1 +* 2\n', 'print "x"\n', 'f(a for a in b, c)\n', '    x = 1\n', 'x = """\nabc\n', 'a = 1\n\tb = 2\n',
        ]
        for i, source in enumerate(cases):
            with self.subTest(source=source):
                name = f'<repl:syn{i}>'
                self.sources.add(f'syn{i}', name, source)
                with self.assertRaises(SyntaxError) as caught:
                    cells.compile_cell(source, name)
                expected = ''.join(traceback.format_exception_only(caught.exception)).rstrip('\n')
                self.assertEqual(tracebacks.format_error(caught.exception, f'syn{i}', self.sources), expected)
        # One raised by code the cell runs follows the cell's frames, as in Python.
        exc = raised(self.sources, 'inner', 'compile("a +", "<string>", "exec")\n')
        self.assertEqual(tracebacks.format_error(exc, 'inner', self.sources), '\n'.join([
            'Traceback (most recent call last):',
            '  File "<repl:inner>", line 1, in <module>',
            '    compile("a +", "<string>", "exec")',
            '  File "<string>", line 1',
            '    a +',
            '       ^',
            'SyntaxError: invalid syntax',
        ]))
        self.assertTrue(tracebacks.format_error(raised(self.sources, 'bare', 'raise SyntaxError("mine")\n'), 'bare', self.sources).endswith('\nSyntaxError: mine'))

    def test_a_long_syntax_error_line_is_shown_around_its_caret(self):
        source = 'x = [' + '1, ' * 1000 + '1 1]\n'
        self.sources.add('long', '<repl:long>', source)
        with self.assertRaises(SyntaxError) as caught:
            cells.compile_cell(source, '<repl:long>')
        lines = tracebacks.format_error(caught.exception, 'long', self.sources).split('\n')
        shown, caret = lines[1], lines[2]
        self.assertLessEqual(len(shown), 4 + TRACEBACK_SOURCE_CHARS)
        self.assertEqual(shown[caret.index('^'):caret.index('^') + 3], '1 1')  # the caret still points at it

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
