"""Output capture: the per-cell budget of each stream, what is kept and what is flagged,
the order of pending pieces, and the sinks' file-like surface."""

import array
import io
import types
import unittest

from replworker import messages, output
from replworker.limits import STREAM_BUDGET


NATIVE = output.NativeOutput()  # this process's fd 1 and 2


def sink(stream='stdout', cell=None, real=None):
    """A sink over a capture holder with `cell` running (None: between cells)."""
    holder = types.SimpleNamespace(cell=cell)
    return output.Sink(stream, 1 if stream == 'stdout' else 2, real or io.StringIO(), holder, NATIVE)


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


class BytesTests(unittest.TestCase):
    def write(self, cell, *chunks, stream='stdout'):
        for chunk in chunks:
            cell.write_bytes(stream, memoryview(chunk))

    def test_utf8_split_across_writes_and_invalid_bytes(self):
        cell = output.CellOutput('r')
        self.write(cell, 'é'.encode(), b'\xe2', b'\x82', b'\xac', b'|\xff|', b'\xf0\x9f')
        self.write(cell, b'\x98\x80')
        self.assertEqual(cell.text('stdout'), 'é€|\ufffd|😀')
        self.assertFalse(cell.truncated['stdout'])

    def test_a_split_character_meets_text_or_the_end(self):
        cell = output.CellOutput('r')
        self.write(cell, b'a\xe2\x82')
        cell.write('stdout', 'b')
        self.write(cell, b'c\xe2', stream='stderr')
        cell.finish()
        self.assertEqual([cell.text('stdout'), cell.text('stderr')], ['a\ufffdb', 'c\ufffd'])
        self.assertEqual(output.coalesce(cell.take_pending()), [('stdout', 'a\ufffdb'), ('stderr', 'c\ufffd')])

    def test_budget_shared_with_text(self):
        cell = output.CellOutput('r')
        cell.write('stdout', 'a' * (STREAM_BUDGET - 2))
        self.write(cell, '€'.encode())  # 3 bytes, 2 of room: cut, and what it split is gone
        self.write(cell, b'z')
        self.assertEqual(cell.text('stdout'), 'a' * (STREAM_BUDGET - 2) + 'z')
        self.assertTrue(cell.truncated['stdout'])
        self.write(cell, b'y\xe2')  # fills the budget; the split start is cut off with the rest
        cell.finish()
        self.assertEqual(cell.text('stdout'), 'a' * (STREAM_BUDGET - 2) + 'zy')

    def test_replacement_characters_count_in_the_budget(self):
        cell = output.CellOutput('r')
        self.write(cell, b'\xff' * STREAM_BUDGET)  # each byte becomes a 3-byte U+FFFD
        self.assertEqual(cell.text('stdout'), '\ufffd' * (STREAM_BUDGET // 3))
        self.assertTrue(cell.truncated['stdout'])

    def test_a_huge_write_costs_no_more_than_the_budget(self):
        cell = output.CellOutput('r')
        self.write(cell, b'x' * 50_000_000)
        self.assertEqual(len(cell.text('stdout')), STREAM_BUDGET)


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
        self.assertEqual([s.name, s.encoding, s.errors, s.isatty(), s.writable(), s.readable(), s.seekable(), s.fileno()],
                         ['<stderr>', 'utf-8', 'replace', False, True, False, False, 2])
        s.close()  # ignored: later cells still write through it
        self.assertFalse(s.closed)
        s.write('after close')
        s.flush()
        print('printed', file=s)


class SinkBufferTests(unittest.TestCase):
    def test_bytes_like_objects_only(self):
        cell = output.CellOutput('r')
        buffer = sink('stdout', cell).buffer
        self.assertEqual(buffer.write(b'ab'), 2)
        self.assertEqual(buffer.write(bytearray(b'cd')), 2)
        self.assertEqual(buffer.write(memoryview(b'e-f-g')[::2]), 3)
        self.assertEqual(buffer.write(array.array('H', [0x6968])), 2)
        self.assertEqual(cell.text('stdout'), 'abcdefghi')
        for value in ('text', 1, None):
            with self.assertRaises(TypeError) as caught:
                buffer.write(value)
            self.assertEqual(str(caught.exception), messages.WRITE_NOT_BYTES.format(type(value).__name__))

    def test_surface_and_text_wrapper(self):
        cell = output.CellOutput('r')
        s = sink('stdout', cell)
        buffer = s.buffer
        self.assertEqual([buffer.name, buffer.mode, buffer.writable(), buffer.readable(), buffer.isatty(), buffer.fileno()],
                         ['<stdout>', 'wb', True, False, False, 1])
        wrapper = io.TextIOWrapper(buffer, encoding='utf-8', newline='\n')
        wrapper.write('wrapped é\n')
        wrapper.close()  # closes the buffer too: ignored
        self.assertFalse(buffer.closed)
        s.write('text after\n')
        self.assertEqual(cell.text('stdout'), 'wrapped é\ntext after\n')

    def test_between_cells_bytes_go_to_the_real_stream(self):
        real = io.TextIOWrapper(io.BytesIO(), encoding='utf-8', write_through=True)
        s = sink('stdout', None, real)
        s.write('text ')
        s.buffer.write(b'bytes')
        self.assertEqual(real.buffer.getvalue(), b'text bytes')


if __name__ == '__main__':
    unittest.main()
