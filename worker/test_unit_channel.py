"""Frames: encoding, the checks on each command, and the bounds on what the reader queues.
The modules are imported directly; protocol_error, which would end the process, raises."""

import math
import os
import threading
import time
import unittest
from unittest import mock

from replworker import channel, messages
from replworker.limits import INBOX_SLOTS, MAX_FRAME


class ProtocolError(Exception):
    pass


def open_fds():
    """The descriptors open in this process (fstat up to a bound, so that it works without
    /proc)."""
    found = set()
    for fd in range(1024):
        try:
            os.fstat(fd)
        except OSError:
            continue
        found.add(fd)
    return found


_FDS_BEFORE = set()


def setUpModule():
    _FDS_BEFORE.update(open_fds())


def tearDownModule():
    # Every pipe and file a test opened, or a Channel took over, is closed again.
    left = open_fds() - _FDS_BEFORE
    if left:
        raise AssertionError(f'test_unit_channel left descriptors open: {sorted(left)}')


def refuse(message):
    raise ProtocolError(message)


class EncodingTests(unittest.TestCase):
    def test_compact_utf8_line(self):
        self.assertEqual(channel.encode_frame({'type': 'output', 'text': 'é\n'}), '{"type":"output","text":"é\\n"}\n'.encode())

    def test_lone_surrogates_become_question_marks(self):
        self.assertEqual(channel.encode_frame({'text': 'a\udc80b\ud800'}), b'{"text":"a?b?"}\n')

    def test_nan_and_infinities_are_refused(self):
        for value in (math.nan, math.inf, -math.inf):
            with self.assertRaises(ValueError):
                channel.encode_frame({'params': {'x': value}})


class CommandTests(unittest.TestCase):
    def setUp(self):
        patcher = mock.patch.object(channel, 'protocol_error', side_effect=refuse)
        patcher.start()
        self.addCleanup(patcher.stop)

    def parse(self, text):
        return channel.parse_command(text.encode('utf-8') if isinstance(text, str) else text)

    def test_valid_commands(self):
        execute = '{"type":"execute","id":"r","code":"1","barrier":"b"'
        for line in (
            execute + '}',
            execute + ',"timeout":5,"source_path":"/x.py","argv":["a",""],"inventory":false}',
            execute + ',"inventory":true}',
            '{"type":"shutdown"}',
            '{"type":"rpc_result","id":"x","result":{"a":1}}',
            '{"type":"rpc_result","id":"x","error":null}',
            '{"type":"rpc_result","id":"x","error":"failed"}',
        ):
            self.assertIsInstance(self.parse(line), dict, line)

    def test_malformed_commands_are_protocol_errors(self):
        cases = {
            b'\xff': messages.FRAME_NOT_JSON,
            'not json': messages.FRAME_NOT_JSON,
            '[' * 100_000: messages.FRAME_NOT_JSON,
            '[]': messages.FRAME_UNKNOWN.format('None'),
            '{"type":"ready"}': messages.FRAME_UNKNOWN.format("'ready'"),
            '{"type":"execute","id":"r","code":"1"}': messages.FRAME_UNKNOWN.format("'execute'"),
            '{"type":"execute","id":"r","code":1,"barrier":"b"}': messages.FRAME_UNKNOWN.format("'execute'"),
            '{"type":"execute","id":"r","code":"","barrier":"b","argv":"a"}': messages.FRAME_UNKNOWN.format("'execute'"),
            '{"type":"execute","id":"r","code":"","barrier":"b","argv":[1]}': messages.FRAME_UNKNOWN.format("'execute'"),
            '{"type":"execute","id":"r","code":"","barrier":"b","source_path":1}': messages.FRAME_UNKNOWN.format("'execute'"),
            '{"type":"execute","id":"r","code":"","barrier":"b","inventory":1}': messages.FRAME_UNKNOWN.format("'execute'"),
            '{"type":"rpc_result","id":1}': messages.FRAME_UNKNOWN.format("'rpc_result'"),
            '{"type":"rpc_result","id":"x","error":5}': messages.FRAME_UNKNOWN.format("'rpc_result'"),
            '{"type":"' + 'x' * 500 + '"}': messages.FRAME_UNKNOWN.format(repr('x' * 500)[:100]),
        }
        for line, message in cases.items():
            with self.assertRaises(ProtocolError, msg=line[:50]) as caught:
                self.parse(line)
            self.assertEqual(str(caught.exception), message)

    def test_replies_of_any_depth_decode(self):
        # About 990 levels is what CPython 3.10 and 3.11 could not decode (a downstream
        # server's result, which the broker passes up to 1,000 levels deep); any depth works.
        for depth in (990, 997, 50_000):
            frame = self.parse('{"type":"rpc_result","id":"x","result":{"v":' + '[' * depth + ']' * depth + '}}')
            value, levels = frame['result']['v'], 1
            while value:
                value, levels = value[0], levels + 1
            self.assertEqual(levels, depth)

    def test_undecodable_frames_fail_only_their_call_or_run(self):
        reply = self.parse(b'{"type":"rpc_result","id":"0a1b","result":{"t":"\xff"}}')
        self.assertEqual(set(reply), {'type', 'id', 'error'})
        self.assertEqual((reply['type'], reply['id']), ('rpc_result', '0a1b'))
        self.assertEqual(reply['error'], messages.MCP_REPLY_UNDECODABLE.format(
            "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff in position 48: invalid start byte"))
        reply = self.parse('{"type":"rpc_result","id":"r-2","result":{"a":1,}}')
        self.assertEqual(reply['id'], 'r-2')
        self.assertTrue(reply['error'].startswith('MCP reply could not be decoded in the worker (JSONDecodeError: '), reply)
        run = self.parse(b'{"type":"execute","id":"run_1","code":"\xfe","barrier":"b"}')
        self.assertEqual((run['type'], run['id']), ('undecodable', 'run_1'))
        self.assertTrue(run['error'].startswith('The worker could not decode the request of this run (UnicodeDecodeError: '), run)
        long_reason = self.parse('{"type":"rpc_result","id":"x","result":"' + 'é' * 300 + '\\x"}')['error']
        self.assertLess(len(long_reason), len(messages.MCP_REPLY_UNDECODABLE) + 200)
        # A line that begins as neither names nothing to fail: the protocol is broken.
        for line in (b'{"id":"x","type":"rpc_result",', b'{"type":"shutdown"', b'{"type":"rpc_result","id":"a\\u0062"}x'):
            with self.assertRaises(ProtocolError, msg=line) as caught:
                self.parse(line)
            self.assertEqual(str(caught.exception), messages.FRAME_NOT_JSON)


class ReaderQueueTests(unittest.TestCase):
    def setUp(self):
        patcher = mock.patch.object(channel, 'protocol_error', side_effect=refuse)
        patcher.start()
        self.addCleanup(patcher.stop)
        read_fd, write_fd = os.pipe()
        # The channel moves the pipes and leaves /dev/null at these numbers.
        self.addCleanup(lambda: [os.close(fd) for fd in (read_fd, write_fd)])
        self.results = []
        with mock.patch.dict(os.environ, {'REPL_MCP_WORKER_FDS': f'{read_fd},{write_fd}'}):
            self.channel = channel.Channel(self.results.append)
            self.assertNotIn('REPL_MCP_WORKER_FDS', os.environ)  # taken away from user code
        self.addCleanup(self.channel.close)
        self.assertFalse(os.get_inheritable(self.channel._read_fd) or os.get_inheritable(self.channel._writer.fileno()))

    def test_complete_frames_are_queued_a_partial_one_kept(self):
        received = bytearray(b'{"type":"shutdown"}\n{"type":"rpc_result","id":"a"}\n{"type":"shu')
        self.channel.queue_frames(received)
        self.assertEqual(received, b'{"type":"shu')
        self.assertEqual(self.results, [{'type': 'rpc_result', 'id': 'a'}])  # never queued
        self.assertEqual(self.channel.take_command(), {'type': 'shutdown'})
        self.assertFalse(self.channel.command_incoming())

    def test_frame_bounds(self):
        line = b'{"type":"shutdown","pad":"' + b'x' * (MAX_FRAME - 29) + b'"}'
        self.assertEqual(len(line) + 1, MAX_FRAME)  # the largest frame, newline included
        self.channel.queue_frames(bytearray(line + b'\n'))
        self.assertEqual(self.channel.take_command()['type'], 'shutdown')
        for received in (bytearray(line + b'x\n'), bytearray(b'x' * MAX_FRAME)):
            with self.assertRaises(ProtocolError) as caught:
                self.channel.queue_frames(received)
            self.assertEqual(str(caught.exception), messages.FRAME_TOO_LARGE)

    def test_inbox_bound(self):
        self.channel.queue_frames(bytearray(b'{"type":"shutdown"}\n' * INBOX_SLOTS))
        with self.assertRaises(ProtocolError) as caught:
            self.channel.queue_frames(bytearray(b'{"type":"shutdown"}\n'))
        self.assertEqual(str(caught.exception), messages.INBOX_FULL)

    def test_bad_fds(self):
        for spec in ('', '3', 'a,b', '999999,999998'):
            with mock.patch.dict(os.environ, {'REPL_MCP_WORKER_FDS': spec}), self.assertRaises(ProtocolError) as caught:
                channel.Channel(self.results.append)
            self.assertTrue(str(caught.exception).startswith(f'REPL_MCP_WORKER_FDS={spec!r} is not two open fds'))


if __name__ == '__main__':
    unittest.main()


class ReadingTests(unittest.TestCase):
    """Who reads the command pipe: the main thread between cells, the reader thread while
    a cell runs and asks for it; a frame is never lost or split between them."""

    def setUp(self):
        self.command_r, self.command_w = os.pipe()
        self.event_r, self.event_w = os.pipe()
        fds = (self.command_r, self.command_w, self.event_r, self.event_w)
        self.addCleanup(lambda: [os.close(fd) for fd in fds])
        self.results = []
        with mock.patch.dict(os.environ, {'REPL_MCP_WORKER_FDS': f'{self.command_r},{self.event_w}'}):
            self.channel = channel.Channel(self.results.append)
        self.addCleanup(self.channel.close)  # first, as cleanups run last in, first out

    def execute(self, run_id):
        return ('{"type":"execute","id":"%s","code":"1","barrier":"b"}\n' % run_id).encode()

    def test_the_main_thread_reads_a_command_itself(self):
        os.write(self.command_w, self.execute('a')[:10])
        threading.Timer(0.05, os.write, (self.command_w, self.execute('a')[10:])).start()
        self.channel.wait_for_command()  # no reader thread started
        self.assertEqual(self.channel.take_command()['id'], 'a')
        self.assertFalse(self.channel.command_incoming())

    def test_the_reader_routes_replies_and_wakes_the_main_thread(self):
        self.channel.start_reader()
        self.channel.need_reader()
        os.write(self.command_w, b'{"type":"rpc_result","id":"x","result":1}\n' + self.execute('b')[:20])
        deadline = time.monotonic() + 10
        while not self.results and time.monotonic() < deadline:
            time.sleep(0.01)
        self.assertEqual([r['id'] for r in self.results], ['x'])  # routed with no main thread reading
        threading.Timer(0.05, os.write, (self.command_w, self.execute('b')[20:])).start()
        self.channel.wait_for_command()
        self.assertEqual(self.channel.take_command()['id'], 'b')
        self.channel.park_reader()
        os.write(self.command_w, self.execute('c'))
        self.channel.wait_for_command()
        self.assertEqual(self.channel.take_command()['id'], 'c')
