"""Output capture: the per-cell budget of each stream, what is kept and what is flagged,
the order of pending pieces, and the sinks' file-like surface."""

import io
import types
import unittest

from replworker import messages, output
from replworker.limits import STREAM_BUDGET


def sink(stream='stdout', cell=None, real=None):
    """A sink over a capture holder with `cell` running (None: between cells)."""
    holder = types.SimpleNamespace(cell=cell)
    return output.Sink(stream, real or io.StringIO(), holder)


class CellOutputTests(unittest.TestCase):
    def test_budget_per_stream(self):
        cell = output.CellOutput('r')
        cell.write('stdout', 'a' * (STREAM_BUDGET - 1))
        cell.write('stdout', 'bc')
        cell.write('stderr', 'e' * STREAM_BUDGET)
        self.assertEqual(cell.text('stdout'), 'a' * (STREAM_BUDGET - 1) + 'b')
        self.assertEqual(cell.text('stderr'), 'e' * STREAM_BUDGET)
        self.assertEqual(cell.truncated, {'stdout': True, 'stderr': False})
        cell.write('stderr', '')
        self.assertFalse(cell.truncated['stderr'])  # an empty write past the budget cuts nothing
        cell.write('stderr', 'x')
        self.assertTrue(cell.truncated['stderr'])

    def test_multibyte_characters_are_never_split(self):
        cell = output.CellOutput('r')
        cell.write('stdout', 'a' + '€' * 30_000)  # 3 bytes each: the budget ends inside one
        self.assertEqual(cell.text('stdout'), 'a' + '€' * 16_666)
        self.assertTrue(cell.truncated['stdout'])
        cell.write('stdout', 'z')  # the byte left still fits
        self.assertTrue(cell.text('stdout').endswith('€z'))
        self.assertEqual(len(cell.text('stdout').encode()), STREAM_BUDGET)

    def test_lone_surrogates_become_question_marks(self):
        cell = output.CellOutput('r')
        cell.write('stdout', 'a\udc80b')
        self.assertEqual(cell.text('stdout'), 'a?b')

    def test_pending_pieces_keep_write_order_across_streams(self):
        cell = output.CellOutput('r')
        for stream, text in (('stdout', 'a'), ('stdout', 'b'), ('stderr', 'c'), ('stdout', 'd')):
            cell.write(stream, text)
        pending = cell.take_pending()
        self.assertEqual(output.coalesce(pending), [('stdout', 'ab'), ('stderr', 'c'), ('stdout', 'd')])
        self.assertEqual(cell.take_pending(), [])

    def test_a_huge_write_costs_no_more_than_the_budget(self):
        cell = output.CellOutput('r')
        cell.write('stdout', 'x' * 50_000_000)
        self.assertEqual(len(cell.text('stdout')), STREAM_BUDGET)
        self.assertTrue(cell.truncated['stdout'])


class SinkTests(unittest.TestCase):
    def test_text_goes_to_the_running_cell_or_between_cells_to_the_real_stream(self):
        cell = output.CellOutput('r')
        running = sink('stderr', cell)
        self.assertEqual(running.write('hé'), 2)
        self.assertEqual(cell.text('stderr'), 'hé')
        real = io.StringIO()
        idle = sink('stdout', None, real)
        idle.write('between cells')
        self.assertEqual(real.getvalue(), 'between cells')

    def test_only_str_is_written(self):
        for value in (b'bytes', 1, None):
            with self.assertRaises(TypeError) as caught:
                sink(cell=output.CellOutput('r')).write(value)
            self.assertEqual(str(caught.exception), messages.WRITE_NOT_STR.format(type(value).__name__))

    def test_file_like_surface(self):
        s = sink('stderr', output.CellOutput('r'))
        self.assertEqual([s.name, s.encoding, s.isatty(), s.writable(), s.readable(), s.seekable()],
                         ['<stderr>', 'utf-8', False, True, False, False])
        s.close()  # ignored: later cells still write through it
        self.assertFalse(s.closed)
        s.write('after close')
        s.flush()
        print('printed', file=s)


if __name__ == '__main__':
    unittest.main()
