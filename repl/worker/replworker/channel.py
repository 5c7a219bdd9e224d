"""The wire protocol (PROTOCOL.md): frames, one JSON object per line, on the two protocol
fds. Outgoing frames are written whole under one lock; incoming ones are bounded, parsed,
checked and queued by a daemon reader thread."""

import collections
import json
import os
import select
import threading

from .children import exit_now
from .limits import INBOX_SLOTS, MAX_FRAME, READ_CHUNK
from .messages import (
    BAD_FDS, FRAME_NOT_JSON, FRAME_TOO_LARGE, FRAME_UNKNOWN, INBOX_FULL, PROTOCOL_ERROR,
)

PROTOCOL_VERSION = 1
EXIT_PROTOCOL_ERROR = 2


def protocol_error(message):
    """One line about a broken protocol on fd 2, then exit 2."""
    try:
        os.write(2, PROTOCOL_ERROR.format(message).encode('utf-8', 'replace'))
    finally:
        exit_now(EXIT_PROTOCOL_ERROR)


def encode_frame(frame):
    # Lone surrogates (from user strings) become '?', which keeps the line valid UTF-8 JSON;
    # NaN and infinities (say in bridge arguments) are refused, as JSON has none.
    text = json.dumps(frame, ensure_ascii=False, separators=(',', ':'), allow_nan=False)
    return text.encode('utf-8', 'replace') + b'\n'


def parse_command(line):
    """The frame a line from the server holds; anything else is a protocol error."""
    try:
        frame = json.loads(line.decode('utf-8'))
    except (ValueError, RecursionError):
        protocol_error(FRAME_NOT_JSON)
    kind = frame.get('type') if isinstance(frame, dict) else None
    if kind == 'shutdown':
        return frame
    if kind == 'execute' and _valid_execute(frame):
        return frame
    if kind == 'rpc_result' and isinstance(frame.get('id'), str) and isinstance(frame.get('error', ''), (str, type(None))):
        return frame
    protocol_error(FRAME_UNKNOWN.format(repr(kind)[:100]))


def _valid_execute(frame):
    argv = frame.get('argv', [])
    return (
        all(isinstance(frame.get(key), str) for key in ('id', 'code', 'barrier'))
        and isinstance(frame.get('source_path', ''), str)
        and isinstance(argv, list)
        and all(isinstance(arg, str) for arg in argv)
        and isinstance(frame.get('inventory', False), bool)
    )


class Channel:
    """The two protocol fds. `on_rpc_result` is called by the reader thread with each
    `rpc_result` frame, which is never queued: the main thread may be waiting for it.

    A command is always somewhere command_incoming() looks, from the moment its first byte is
    in the pipe until the main thread takes it: a SIGINT the server sends right after a
    command must not be mistaken for one between cells."""

    def __init__(self, on_rpc_result):
        spec = os.environ.pop('REPL_MCP_WORKER_FDS', '')
        try:
            read_fd, write_fd = (int(part) for part in spec.split(','))
            # User subprocesses must never hold the protocol pipes.
            os.set_inheritable(read_fd, False)
            os.set_inheritable(write_fd, False)
        except (ValueError, OSError) as exc:
            protocol_error(BAD_FDS.format(spec, exc))
        self._on_rpc_result = on_rpc_result
        self._read_fd = read_fd
        self._writer = open(write_fd, 'wb', buffering=0)
        self._write_lock = threading.Lock()
        self._commands = collections.deque()  # parsed and not yet taken; at most INBOX_SLOTS
        self._arrived = threading.Condition(threading.Lock())
        self._receiving = False  # the reader holds bytes of a command it has not queued yet

    def send(self, frame):
        self.send_encoded(encode_frame(frame))

    def send_encoded(self, data):
        data = memoryview(data)
        with self._write_lock:
            try:
                while data:
                    data = data[self._writer.write(data):]
            except OSError:
                exit_now(0)  # the server closed its end: there is nobody left to report to

    def start_reader(self):
        threading.Thread(target=self._read_forever, name='repl-mcp-reader', daemon=True).start()

    def wait_for_command(self):
        with self._arrived:
            while not self._commands:
                self._arrived.wait()

    def take_command(self):
        return self._commands.popleft()

    def command_incoming(self):
        """Whether a command the main thread has not taken is in the pipe, being read or
        queued. Checked in the order a command moves, so one moving meanwhile is still seen."""
        pipe = select.poll()
        pipe.register(self._read_fd, select.POLLIN)
        return bool(pipe.poll(0)) or self._receiving or bool(self._commands)

    def _read_forever(self):
        ready = select.poll()
        ready.register(self._read_fd, select.POLLIN)
        received = bytearray()
        while True:
            ready.poll()
            # Set while the bytes are still in the pipe, and cleared only once they are
            # queued (see command_incoming).
            self._receiving = True
            try:
                data = os.read(self._read_fd, READ_CHUNK)
            except OSError:
                data = b''
            if not data:
                exit_now(0)  # EOF, even in the middle of a cell: the server is gone or stopping us
            received += data
            self.queue_frames(received)
            self._receiving = bool(received)

    def queue_frames(self, received):
        """Queue every complete frame of `received`, leaving a partial one in it."""
        start = 0
        end = received.find(b'\n')
        while end >= 0:
            if end - start >= MAX_FRAME:
                protocol_error(FRAME_TOO_LARGE)
            frame = parse_command(bytes(received[start:end]))
            if frame['type'] == 'rpc_result':
                self._on_rpc_result(frame)
            else:
                self._queue(frame)
            start = end + 1
            end = received.find(b'\n', start)
        del received[:start]
        if len(received) >= MAX_FRAME:
            protocol_error(FRAME_TOO_LARGE)

    def _queue(self, command):
        with self._arrived:
            if len(self._commands) >= INBOX_SLOTS:
                protocol_error(INBOX_FULL)
            self._commands.append(command)
            self._arrived.notify()
