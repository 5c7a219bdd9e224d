"""Output capture: each stream as a terminal shows it (\\r rewrites a line), bounded to its
head and tail with a marker, the spool of a cut stream's complete text, the live queue,
the routing of writes to the running cell or the background, and the sinks' file-like
surface."""

import array
import io
import os
import sys
import threading
import types
import unittest

from replworker import messages, native, output, sinks
from replworker.limits import (
    ARTIFACT_MAX_BYTES, BACKGROUND_BUDGET, LINE_CHARS, LIVE_PENDING_CHARS, SPOOL_HEAD, STREAM_BUDGET,
    STREAM_HEAD, STREAM_MARKER,
)


NATIVE = native.NativeOutput()  # this process's fd 1 and 2


def sink(stream='stdout', cell=None):
    """A sink over a capture holder with `cell` running (None: between cells)."""
    holder = types.SimpleNamespace(cell=cell, background=output.background_capture())
    holder.write = lambda stream, text: output.Output.write(holder, stream, text)
    holder.write_bytes = lambda stream, data: output.Output.write_bytes(holder, stream, data)
    holder._capture = lambda: output.Output._capture(holder)
    return sinks.Sink(stream, 1 if stream == 'stdout' else 2, holder, NATIVE)


def finished(capture, stream='stdout'):
    """A stream's text once its capture is over."""
    capture.finish()
    return capture.streams[stream].text()


def terminal(*writes, budget=STREAM_BUDGET):
    text = output.StreamText(budget, STREAM_HEAD, spool=False)
    for piece in writes:
        text.write(piece)
    text.finish()
    return text.text()


class TerminalTests(unittest.TestCase):
    def test_carriage_return_rewrites_the_line(self):
        self.assertEqual(terminal('abc\rX'), 'Xbc')
        self.assertEqual(terminal('abc', '\r', 'XY', 'Z', '\n'), 'XYZ\n')
        self.assertEqual(terminal('abc\r\n'), 'abc\n')  # \r\n ends the line unchanged
        self.assertEqual(terminal('first\nabc\rdefg\nlast'), 'first\ndefg\nlast')
        self.assertEqual(terminal('long line\rshort\n'), 'shortline\n')  # as a terminal leaves it
        self.assertEqual(terminal('a\rb\rc'), 'c')

    def test_a_progress_bar_keeps_its_last_state(self):
        writes = [f'\r{i:3d}%|{"#" * (i // 10):<10}|' for i in range(101)] + ['\n', 'done\n']
        self.assertEqual(terminal(*writes), '100%|##########|\ndone\n')

    def test_whole_lines_after_a_carriage_return(self):
        # The first line of a write overwrites the rewritten line; later ones are plain.
        self.assertEqual(terminal('12345\r', 'ab\ncd\nef'), 'ab345\ncd\nef')

    def test_an_endless_line_is_final_past_line_chars(self):
        # As if wrapped at LINE_CHARS: a \r rewrites only what followed, however it was written.
        want = 'x' * LINE_CHARS + 'y' + 'x' * 9
        self.assertEqual(terminal('x' * (LINE_CHARS + 10), '\r', 'y', budget=4 * LINE_CHARS), want)
        self.assertEqual(terminal(*['x'] * (LINE_CHARS + 10), '\ry', budget=4 * LINE_CHARS), want)
        text = terminal('x' * (3 * LINE_CHARS + 1) + '\ry', budget=8 * LINE_CHARS)
        self.assertEqual(text, 'x' * 3 * LINE_CHARS + 'y')


class BoundTests(unittest.TestCase):
    def test_within_the_budget_all_is_kept(self):
        capture = output.cell_capture('r')
        capture.write('stdout', 'a' * (STREAM_BUDGET - 1))
        capture.write('stdout', 'b')
        capture.write('stderr', 'e' * 10)
        self.assertEqual(finished(capture), 'a' * (STREAM_BUDGET - 1) + 'b')
        self.assertEqual(capture.streams['stderr'].text(), 'e' * 10)
        self.assertFalse(capture.streams['stdout'].cut)
        capture.close()

    def test_past_the_budget_head_marker_and_tail(self):
        capture = output.cell_capture('r')
        lines = [f'line {i}\n' for i in range(100_000)]
        for line in lines:
            capture.write('stdout', line)
        text = finished(capture)
        stream = capture.streams['stdout']
        self.assertTrue(stream.cut)
        complete = ''.join(lines)
        head, _, rest = text.partition('\n[... ')
        marker, _, tail = rest.partition(' ...]\n')
        self.assertEqual(len(head.encode()), STREAM_HEAD)
        self.assertTrue(complete.startswith(head))
        self.assertTrue(complete.endswith(tail))
        self.assertTrue(tail.endswith('line 99999\n'))
        self.assertLessEqual(len(text.encode()), STREAM_BUDGET)
        self.assertGreater(len(text.encode()), STREAM_BUDGET - STREAM_MARKER)
        left_out = int(marker.split(' bytes left out')[0].replace(',', ''))
        self.assertEqual(left_out, len(complete) - len(head) - len(tail))
        self.assertEqual(stream.total, len(complete))
        # The gap says where the marker is and what it stands for, newlines included,
        # for the server's later cuts.
        data, gap = text.encode(), stream.gap
        self.assertEqual(data[gap['at']:gap['at'] + gap['marker']].decode(), '\n[... ' + marker + ' ...]\n')
        self.assertEqual(gap['bytes'], left_out)
        self.assertEqual(gap['lines'], complete.count('\n') - head.count('\n') - tail.count('\n'))
        capture.close()

    def test_the_marker_says_what_became_of_the_complete_output(self):
        capture = output.cell_capture('r')
        capture.write('stdout', 'x' * 100_000)
        capture.finish()
        stream = capture.streams['stdout']
        text = stream.text(messages.OUTPUT_SAVED, stream.total, 'stdout')
        self.assertIn('bytes left out; all 100,000 bytes are in output_artifacts.stdout ...]\n', text)
        self.assertLessEqual(len(text.encode()), STREAM_BUDGET)
        capture.close()

    def test_multibyte_characters_are_never_split(self):
        capture = output.cell_capture('r')
        capture.write('stdout', 'a' + '€' * 30_000)  # 3 bytes each: the head ends inside one
        text = finished(capture)
        head, _, rest = text.partition('\n[...')
        self.assertEqual(head, 'a' + '€' * 6_666)
        self.assertTrue(rest.endswith('€€€'))
        text.encode('utf-8')  # whole characters only
        capture.close()

    def test_lone_surrogates_become_question_marks(self):
        capture = output.cell_capture('r')
        capture.write('stdout', 'a\udc80b')
        self.assertEqual(finished(capture), 'a?b')

    def test_a_huge_write_is_bounded(self):
        capture = output.background_capture()
        capture.write('stdout', 'x' * 50_000_000)
        text = finished(capture)
        self.assertLessEqual(len(text), BACKGROUND_BUDGET)
        self.assertIn('[... 49,983,', text)
        self.assertTrue(capture.streams['stdout'].cut)


class SpoolTests(unittest.TestCase):
    def complete(self, stream):
        return b''.join(stream.spool.pieces()).decode('utf-8')

    def test_a_cut_stream_keeps_its_complete_text_in_an_unlinked_file(self):
        capture = output.cell_capture('r')
        lines = [f'{i} é\n' for i in range(30_000)]
        for line in lines:
            capture.write('stderr', line)
        capture.finish()
        stream = capture.streams['stderr']
        self.assertTrue(stream.cut)
        self.assertEqual(os.fstat(stream.spool._fd).st_nlink, 0)
        self.assertTrue(stream.spool.whole)
        self.assertEqual(self.complete(stream), ''.join(lines))
        self.assertEqual(stream.spool.size, stream.total)
        self.assertIsNone(capture.streams['stdout'].spool)  # never cut: nothing to keep
        capture.close()
        self.assertIsNone(stream.spool)

    def test_past_the_artifact_bound_its_head_and_its_latest_bytes(self):
        capture = output.cell_capture('r')
        block = ''.join(f'{i:07d} Ж\n' for i in range(100_000))  # 1,100,000 bytes
        for _ in range(20):
            capture.write('stdout', block)
        capture.write('stdout', 'the end\n')
        capture.finish()
        stream = capture.streams['stdout']
        spool = stream.spool
        self.assertFalse(spool.whole)
        data = b''.join(spool.pieces())
        self.assertLessEqual(len(data), ARTIFACT_MAX_BYTES)
        text = data.decode('utf-8')  # cut at character boundaries
        complete = block * 20 + 'the end\n'
        head, marker, tail = text.partition('\n[... ')
        self.assertTrue(complete.startswith(head))
        self.assertGreater(len(head.encode()), SPOOL_HEAD - 4)
        tail = tail.partition(' ...]\n')[2]
        self.assertTrue(complete.endswith(tail))
        self.assertTrue(tail.endswith('the end\n'))
        self.assertEqual(len(head.encode()) + len(tail.encode()) + int(text.split('[... ')[1].split(' ')[0].replace(',', '')),
                         len(complete.encode()))
        capture.close()

    def test_the_background_has_no_spool(self):
        capture = output.background_capture()
        capture.write('stdout', 'x' * (BACKGROUND_BUDGET * 2))
        capture.finish()
        self.assertTrue(capture.streams['stdout'].cut)
        self.assertIsNone(capture.streams['stdout'].spool)


class LiveTests(unittest.TestCase):
    def test_pending_pieces_keep_write_order_across_streams(self):
        capture = output.cell_capture('r')
        for stream, text in (('stdout', 'a'), ('stdout', 'b'), ('stderr', 'c'), ('stdout', 'd')):
            capture.write(stream, text)
        self.assertEqual(output.coalesce(capture.take_pending()), [('stdout', 'ab'), ('stderr', 'c'), ('stdout', 'd')])
        self.assertEqual(capture.take_pending(), [])

    def test_live_text_is_as_written_and_bounded_to_the_latest(self):
        capture = output.cell_capture('r')
        capture.write('stderr', 'ab\rc')
        self.assertEqual(capture.take_pending(), [('stderr', 'ab\rc')])
        for i in range(100_000):
            capture.write('stdout', f'{i}\n')
        pending = output.coalesce(capture.take_pending())
        self.assertEqual(pending[0][0], 'stdout')
        self.assertRegex(pending[0][1], r'^\[\.\.\. [0-9,]+ characters not streamed live \.\.\.\]\n')
        live = pending[-1][1]
        self.assertTrue(live.endswith('99999\n'))
        self.assertLessEqual(sum(len(text) for _, text in pending[1:]), 2 * LIVE_PENDING_CHARS)
        capture.close()


class BytesTests(unittest.TestCase):
    def write(self, capture, *chunks, stream='stdout'):
        for chunk in chunks:
            capture.write_bytes(stream, memoryview(chunk))

    def test_utf8_split_across_writes_and_invalid_bytes(self):
        capture = output.cell_capture('r')
        self.write(capture, 'é'.encode(), b'\xe2', b'\x82', b'\xac', b'|\xff|', b'\xf0\x9f')
        self.write(capture, b'\x98\x80')
        self.assertEqual(finished(capture), 'é€|\ufffd|😀')

    def test_a_split_character_meets_text_or_the_end(self):
        capture = output.cell_capture('r')
        self.write(capture, b'a\xe2\x82')
        capture.write('stdout', 'b')
        self.write(capture, b'c\xe2', stream='stderr')
        capture.finish()
        self.assertEqual([capture.streams['stdout'].text(), capture.streams['stderr'].text()], ['a\ufffdb', 'c\ufffd'])
        self.assertEqual(output.coalesce(capture.take_pending()), [('stdout', 'a\ufffdb'), ('stderr', 'c\ufffd')])

    def test_bytes_share_the_stream_with_text(self):
        capture = output.cell_capture('r')
        capture.write('stdout', 'a' * (STREAM_BUDGET - 2))
        self.write(capture, '€'.encode(), b'z')
        text = finished(capture)
        self.assertTrue(capture.streams['stdout'].cut)
        self.assertTrue(text.endswith('a€z'), text[-10:])
        capture.close()

    def test_replacement_characters_count_as_their_bytes(self):
        capture = output.cell_capture('r')
        self.write(capture, b'\xff' * 1000)  # each byte becomes a 3-byte U+FFFD
        self.assertEqual(finished(capture), '\ufffd' * 1000)
        self.assertEqual(capture.streams['stdout'].total, 3000)


class SinkTests(unittest.TestCase):
    def test_the_running_cell_takes_the_main_thread_and_the_background_the_rest(self):
        cell = output.cell_capture('r')
        running = sink('stderr', cell)
        self.assertEqual(running.write('hé'), 2)
        other = threading.Thread(target=running.write, args=('from a thread of no cell',))
        other.start()
        other.join()
        self.assertEqual(finished(cell, 'stderr'), 'hé')
        background = running._output.background
        self.assertEqual(finished(background, 'stderr'), 'from a thread of no cell')
        idle = sink('stdout', None)
        idle.write('between cells')
        idle.buffer.write(b' and bytes')
        self.assertEqual(finished(idle._output.background), 'between cells and bytes')

    def test_a_capture_that_ended_passes_the_write_on(self):
        cell = output.cell_capture('r')
        s = sink('stdout', cell)
        cell.finish()
        # Output.end: the finished capture may still be what a writer picked
        s._output._capture = lambda: s._output.background
        s.write('late')
        self.assertEqual(finished(s._output.background), 'late')

    def test_only_str_is_written(self):
        for value in (b'bytes', 1, None):
            with self.assertRaises(TypeError) as caught:
                sink(cell=output.cell_capture('r')).write(value)
            self.assertEqual(str(caught.exception), messages.WRITE_NOT_STR.format(type(value).__name__))

    def test_file_like_surface(self):
        s = sink('stderr', output.cell_capture('r'))
        self.assertEqual([s.name, s.encoding, s.errors, s.isatty(), s.writable(), s.readable(), s.seekable(), s.fileno()],
                         ['<stderr>', 'utf-8', 'replace', False, True, False, False, 2])
        s.close()  # ignored: later cells still write through it
        self.assertFalse(s.closed)
        s.write('after close')
        s.flush()
        print('printed', file=s)


class SinkBufferTests(unittest.TestCase):
    def test_bytes_like_objects_only(self):
        cell = output.cell_capture('r')
        buffer = sink('stdout', cell).buffer
        self.assertEqual(buffer.write(b'ab'), 2)
        self.assertEqual(buffer.write(bytearray(b'cd')), 2)
        self.assertEqual(buffer.write(memoryview(b'e-f-g')[::2]), 3)
        self.assertEqual(buffer.write(array.array('H', [0x6968])), 2)
        self.assertEqual(finished(cell), 'abcdefghi')
        for value in ('text', 1, None):
            with self.assertRaises(TypeError) as caught:
                buffer.write(value)
            self.assertEqual(str(caught.exception), messages.WRITE_NOT_BYTES.format(type(value).__name__))

    def test_surface_and_text_wrapper(self):
        cell = output.cell_capture('r')
        s = sink('stdout', cell)
        buffer = s.buffer
        self.assertEqual([buffer.name, buffer.mode, buffer.writable(), buffer.readable(), buffer.isatty(), buffer.fileno()],
                         ['<stdout>', 'wb', True, False, False, 1])
        wrapper = io.TextIOWrapper(buffer, encoding='utf-8', newline='\n')
        wrapper.write('wrapped é\n')
        wrapper.close()  # closes the buffer too: ignored
        self.assertFalse(buffer.closed)
        s.write('text after\n')
        self.assertEqual(finished(cell), 'wrapped é\ntext after\n')


class ReconfigureTests(unittest.TestCase):
    """sys.stdout.reconfigure() as on a real text stream."""

    def test_line_buffering_and_write_through_are_kept(self):
        cell = output.cell_capture('r')
        s = sink('stdout', cell)
        self.assertEqual([s.line_buffering, s.write_through], [False, True])
        self.assertIsNone(s.reconfigure(line_buffering=True, write_through=False))
        self.assertEqual([s.line_buffering, s.write_through, s.encoding, s.errors], [True, False, 'utf-8', 'replace'])
        print('still captured', file=s)
        self.assertEqual(finished(cell), 'still captured\n')

    def test_encoding_and_errors_as_a_terminal_would_show_them(self):
        cell = output.cell_capture('r')
        s = sink('stdout', cell)
        s.reconfigure(encoding='ascii', errors='backslashreplace')
        self.assertEqual([s.encoding, s.errors], ['ascii', 'backslashreplace'])
        s.write('café\n')
        s.reconfigure(errors='strict')
        with self.assertRaises(UnicodeEncodeError):
            s.write('é')
        s.reconfigure(encoding='utf-8')  # an encoding alone resets errors to 'strict'
        self.assertEqual(s.errors, 'strict')
        with self.assertRaises(UnicodeEncodeError):
            s.write('lone \udc80')
        s.reconfigure(errors='replace', newline='\r\n')
        s.write('a\nb\n')  # \r\n ends a line as \n does
        self.assertEqual(finished(cell), 'caf\\xe9\na\nb\n')

    def test_bad_arguments_are_refused_as_a_text_stream_refuses_them(self):
        s = sink('stderr')
        cases = [
            ({'encoding': 'no-such-codec'}, LookupError, 'unknown encoding: no-such-codec'),
            ({'encoding': 'hex'}, LookupError, "'hex' is not a text encoding; use codecs.open() to handle arbitrary codecs"),
            ({'encoding': 5}, TypeError, "reconfigure() argument 'encoding' must be str or None, not int"),
            ({'errors': 'no-such-handler'}, LookupError, "unknown error handler name 'no-such-handler'"),
            ({'newline': 'x'}, ValueError, 'illegal newline value: x'),
        ]
        for kwargs, error, message in cases:
            with self.assertRaises(error, msg=kwargs) as caught:
                s.reconfigure(**kwargs)
            self.assertEqual(str(caught.exception), message)
        with self.assertRaises(TypeError):
            s.reconfigure('utf-8')  # keyword-only, as on TextIOWrapper
        self.assertEqual([s.encoding, s.errors, s.newline], ['utf-8', 'replace', None])  # nothing changed


class InputTests(unittest.TestCase):
    def test_input_fails_at_once_and_says_why(self):
        cell = output.cell_capture('r')
        s = sink('stdout', cell)
        real = sys.stdout
        sys.stdout = s
        try:
            with self.assertRaises(EOFError) as caught:
                sinks.no_input('Name? ')
        finally:
            sys.stdout = real
        self.assertEqual(str(caught.exception), messages.INPUT_NO_STDIN)
        self.assertEqual(finished(cell), 'Name? ')


if __name__ == '__main__':
    unittest.main()
