"""stdout's fast lane (sinks.Sink.lane_on): prints gathered by C code keep what the plain
path keeps, byte for byte (the text, its marker and counts, the spool, the live text and
the order of the two streams); and a line redrawn many times in one write is folded at
once."""

import random
import threading
import unittest
from unittest import mock

from replworker import native, output, sinks, threads
from replworker.limits import LANE_CHUNK, LINE_CHARS, LIVE_PENDING_CHARS, STREAM_BUDGET, STREAM_HEAD

NATIVE = native.NativeOutput()


class Channel:
    def __init__(self):
        self.frames = []
        self.lock = threading.Lock()

    def send(self, frame):
        with self.lock:
            self.frames.append(frame)

    def need_reader(self):
        pass

    def take(self):
        with self.lock:
            frames, self.frames = self.frames, []
        return frames


class Session:
    """An Output with its two sinks, stdout's lane attached or not."""

    def __init__(self, lane):
        self.channel = Channel()
        self.output = output.Output(self.channel)
        self.stdout = sinks.Sink('stdout', 1, self.output, NATIVE)
        self.stderr = sinks.Sink('stderr', 2, self.output, NATIVE)
        if lane:
            self.output.attach_lane(self.stdout)

    def run(self, writes):
        """Run `writes` as one cell: (the capture, the live output as [(stream, text)])."""
        self.channel.take()
        with mock.patch.object(threads.THREADS, 'alone', return_value=True):  # this process has other threads
            self.output.begin('r')
        for kind, value in writes:
            if kind == 'print':
                print(value, end='', file=self.stdout)
            elif kind == 'write':
                self.stdout.write(value)
            elif kind == 'bytes':
                self.stdout.buffer.write(value)
            elif kind == 'stderr':
                self.stderr.write(value)
            else:  # a tick of the output pump (whose own ticks send too)
                self.output._flush(self.output.cell)
        capture = self.output.end()
        return capture, output.coalesce([(frame['stream'], frame['text']) for frame in self.channel.take()])


TOKENS = ['a', 'bc', 'line', 'é', '€', '😀', '\udc80', '\n', '\n', '\r', '\r\n', 'x' * 100, 'progress 50%']


def random_writes(rng, count, big):
    writes = []
    for _ in range(count):
        text = ''.join(rng.choice(TOKENS) for _ in range(rng.randint(0, 12)))
        roll = rng.random()
        if big and roll < 0.02:
            text = rng.choice(['y', 'Ж']) * rng.choice([LINE_CHARS + 5, LANE_CHUNK + 3, STREAM_BUDGET])
        if roll < 0.4:
            writes.append(('print', text))
        elif roll < 0.7:
            writes.append(('write', text))
        elif roll < 0.8:
            data = text.replace('\udc80', '?').encode('utf-8') + rng.choice([b'', b'\xe2', b'\xe2\x82', b'\xff'])
            cut = rng.randint(0, len(data))
            writes += [('bytes', data[:cut]), ('bytes', data[cut:])]
        elif roll < 0.9:
            writes.append(('stderr', text))
        else:
            writes.append(('tick', None))
    return writes


def wire(live):
    return [(stream, text.encode('utf-8', 'replace').decode('utf-8')) for stream, text in live]


def spooled(stream):
    return None if stream.spool is None else b''.join(stream.spool.pieces())


class LaneTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.lane, cls.plain = Session(lane=True), Session(lane=False)

    def compare(self, writes, live=True):
        with_lane, live_lane = self.lane.run(writes)
        plain, live_plain = self.plain.run(writes)
        try:
            for name in output.STREAMS:
                a, b = with_lane.streams[name], plain.streams[name]
                self.assertEqual(a.text(), b.text(), name)
                self.assertEqual((a.gap, a.total, a.lines, a.cut), (b.gap, b.total, b.lines, b.cut), name)
                self.assertEqual(spooled(a), spooled(b), name)
            if live:  # as the channel sends it: a lone surrogate is '?' on the wire either way
                self.assertEqual(wire(live_lane), wire(live_plain))
        finally:
            with_lane.close()
            plain.close()

    def test_the_lane_is_taken_and_left(self):
        capture, _ = self.lane.run([('print', 'x')])
        self.assertNotIn('write', vars(self.lane.stdout))  # the plain path between cells
        self.assertEqual(capture.streams['stdout'].text(), 'x')
        self.lane.output.begin('r')  # another thread is alive here: no lane
        self.assertNotIn('write', vars(self.lane.stdout))
        self.lane.output.end().close()

    def test_small_cells_keep_the_same_text_and_live_output(self):
        rng = random.Random(38)
        for round in range(150):
            writes = random_writes(rng, rng.randint(1, 40), big=False)
            with self.subTest(round=round, writes=writes):
                self.assertLess(sum(len(v) for _, v in writes if v), LIVE_PENDING_CHARS)
                self.compare(writes)

    def test_large_cells_keep_the_same_head_marker_tail_counts_and_spool(self):
        rng = random.Random(3838)
        for round in range(12):
            writes = random_writes(rng, rng.randint(200, 3000), big=True)
            with self.subTest(round=round):
                self.compare(writes, live=False)

    def test_a_flood_of_prints_past_the_budget(self):
        self.compare([('print', f'{i}\n') for i in range(100_000)], live=False)
        self.compare([('print', f'\r{i}') for i in range(5_000)] + [('print', '\n')])

    def test_a_user_write_and_a_reconfigured_stream_leave_the_lane(self):
        session = Session(lane=True)
        seen = []
        with mock.patch.object(threads.THREADS, 'alone', return_value=True):
            session.output.begin('r')
        self.assertTrue(session.stdout.lane_is_on)
        print('a', file=session.stdout)
        session.stdout.write = seen.append
        print('b', file=session.stdout)
        capture = session.output.end()
        self.assertEqual(seen, ['b', '\n'])
        self.assertEqual(vars(session.stdout)['write'], seen.append)  # the user's, kept
        self.assertEqual(capture.streams['stdout'].text(), 'a\n')
        capture.close()
        del session.stdout.write
        with mock.patch.object(threads.THREADS, 'alone', return_value=True):
            session.output.begin('r')
        print('é', file=session.stdout)
        session.stdout.reconfigure(encoding='ascii', errors='replace')
        self.assertFalse(session.stdout.lane_is_on)
        print('é', file=session.stdout)
        capture = session.output.end()
        self.assertEqual(capture.streams['stdout'].text(), 'é\n?\n')
        capture.close()


class BackgroundTests(unittest.TestCase):
    def test_a_result_with_nothing_printed_in_the_background_keeps_its_capture(self):
        session = Session(lane=False)
        kept = session.output.background
        self.assertIsNone(session.output.take_background())
        self.assertIs(session.output.background, kept)  # nothing made or finished for it
        for write in ('line\n', 'part'):
            session.output.background.write('stderr', write)
            printed, _ = session.output.take_background()
            self.assertEqual(printed['stderr'], write)
            self.assertIsNot(session.output.background, kept)
            kept = session.output.background
        session.output.background.write_bytes('stdout', memoryview(b'\xe2'))  # a character begun
        self.assertEqual(session.output.take_background()[0]['stdout'], '\ufffd')


class FoldTests(unittest.TestCase):
    def test_a_line_redrawn_in_one_write_is_folded_at_once(self):
        text = output.StreamText(STREAM_BUDGET, STREAM_HEAD, spool=False)
        puts = []
        plain_put = text._put
        text._put = lambda piece: (puts.append(piece), plain_put(piece))
        text.write('start\n' + ''.join(f'\r{i:4d}/1000 {"#" * (i // 100)}' for i in range(1001)) + '\n')
        text.finish()
        self.assertEqual(text.text(), 'start\n1000/1000 ##########\n')
        self.assertLessEqual(len(puts), 1)

    def test_folding_is_what_one_rewrite_at_a_time_shows(self):
        rng = random.Random(7)
        for _ in range(300):
            pieces = [''.join(rng.choice('ab\r\nxyz') for _ in range(rng.randint(0, 8))) for _ in range(rng.randint(1, 30))]
            whole = output.StreamText(STREAM_BUDGET, STREAM_HEAD, spool=False)
            whole.write(''.join(pieces))
            whole.finish()
            one = output.StreamText(STREAM_BUDGET, STREAM_HEAD, spool=False)
            for piece in ''.join(pieces):  # a character at a time: no folding
                one.write(piece)
            one.finish()
            with self.subTest(pieces=pieces):
                self.assertEqual(whole.text(), one.text())


if __name__ == '__main__':
    unittest.main()
