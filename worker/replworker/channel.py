"""The wire protocol (PROTOCOL.md): frames, one JSON object per line, on the two protocol
fds. Outgoing frames are written whole under one lock; incoming ones are bounded, parsed,
checked and queued by a daemon reader thread."""

import collections
import fcntl
import json
import os
import re
import select
import threading

from .children import exit_now
from .deepjson import loads
from .limits import FRAME_REASON_CHARS, INBOX_SLOTS, MAX_FRAME, READ_CHUNK
from .messages import (
    BAD_FDS, FRAME_NOT_JSON, FRAME_TOO_LARGE, FRAME_UNKNOWN, INBOX_FULL, MCP_REPLY_UNDECODABLE, PROTOCOL_ERROR,
    RUN_UNDECODABLE,
)

PROTOCOL_VERSION = 1
EXIT_PROTOCOL_ERROR = 2
# Where the protocol pipes move, away from the fds 3 and 4 the server passed them as
# (a placement, not a bound: any free number at or above it will do).
PROTOCOL_FD_FLOOR = 64


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


# How the server begins every rpc_result and execute frame (Go encodes a frame's members in
# their declared order): what names the call or run of a frame that cannot be decoded.
_FRAME_HEAD = re.compile(rb'\{"type":"(rpc_result|execute)","id":"([0-9A-Za-z_-]{1,128})"')


def parse_command(line):
    """The frame a line from the server holds; anything else is a protocol error. A frame
    that is not UTF-8 JSON but begins as an rpc_result or an execute does fails only its
    call or its run (undecodable): a reply a downstream server shaped is no reason to lose
    the session."""
    try:
        frame = loads(line.decode('utf-8'))
    except (ValueError, RecursionError, MemoryError) as exc:
        return undecodable(line, exc)
    kind = frame.get('type') if isinstance(frame, dict) else None
    if kind == 'shutdown':
        return frame
    if kind == 'execute' and _valid_execute(frame):
        return frame
    if kind == 'snapshot' and _valid_snapshot(frame):
        return frame
    if kind == 'rpc_result' and isinstance(frame.get('id'), str) and isinstance(frame.get('error', ''), (str, type(None))):
        return frame
    protocol_error(FRAME_UNKNOWN.format(repr(kind)[:100]))


def undecodable(line, exc):
    """What stands for a frame that cannot be decoded: an rpc_result that fails its call, or
    an `undecodable` command that fails its run, with the decoder's reason; a line that
    begins as neither is a protocol error."""
    head = _FRAME_HEAD.match(line)
    if head is None:
        protocol_error(FRAME_NOT_JSON)
    reason = f'{type(exc).__name__}: {exc}'
    if len(reason) > FRAME_REASON_CHARS:
        reason = reason[:FRAME_REASON_CHARS - 1] + '…'
    kind, ident = head.group(1).decode('ascii'), head.group(2).decode('ascii')
    if kind == 'rpc_result':
        return {'type': 'rpc_result', 'id': ident, 'error': MCP_REPLY_UNDECODABLE.format(reason)}
    return {'type': 'undecodable', 'id': ident, 'error': RUN_UNDECODABLE.format(reason)}


def _valid_execute(frame):
    argv = frame.get('argv', [])
    return (
        all(isinstance(frame.get(key), str) for key in ('id', 'code', 'barrier'))
        and isinstance(frame.get('source_path', ''), str)
        and isinstance(argv, list)
        and all(isinstance(arg, str) for arg in argv)
        and isinstance(frame.get('inventory', False), bool)
        and isinstance(frame.get('bindings', False), bool)
        and ('restore' not in frame or _valid_place(frame['restore'], ('adopt', bool)))
    )


def _valid_place(spec, *extra):
    """A snapshot's place as a `snapshot` frame or an execute's `restore` names it."""
    return (
        isinstance(spec, dict)
        and all(isinstance(spec.get(key), str) for key in ('dir', 'snapshot', 'key', 'project'))
        and all(isinstance(spec.get(key, kind()), kind) for key, kind in extra)
    )


def _valid_snapshot(frame):
    return (
        _valid_place(frame)
        and all(isinstance(frame.get(key), str) for key in ('id', 'session_id', 'session_name', 'server_id'))
        and all(type(frame.get(key)) is int and frame[key] >= 0 for key in ('budget', 'generation'))
    )


class Channel:
    """The two protocol fds. `on_rpc_result` is called with each `rpc_result` frame, which
    is never queued: the main thread may be waiting for it.

    Who reads the command pipe: between cells the main thread itself, in
    wait_for_command, so a command reaches the cell loop with one wake-up and no hand-off
    between threads. While a cell runs, the reader thread, once something asks for it
    (need_reader: an rpc about to be sent, or the output pump's first tick of a running
    cell); a trivial cell never wakes it. Either reads only under _read_lock, from a
    non-blocking pipe, into one buffer, so frames are never split or reordered between
    them. park_reader, called before each result, sends the reader back to waiting.

    A command is always somewhere command_incoming() looks, from the moment its first byte is
    in the pipe until the main thread takes it: a SIGINT the server sends right after a
    command must not be mistaken for one between cells."""

    def __init__(self, on_rpc_result):
        spec = os.environ.pop('REPL_MCP_WORKER_FDS', '')
        try:
            read_fd, write_fd = (int(part) for part in spec.split(','))
            os.fstat(read_fd)
            os.fstat(write_fd)
            read_fd, write_fd = private_fd(read_fd), private_fd(write_fd)
            # Two threads may find it readable and only one gets the bytes.
            os.set_blocking(read_fd, False)
        except (ValueError, OSError) as exc:
            protocol_error(BAD_FDS.format(spec, exc))
        self._on_rpc_result = on_rpc_result
        self._read_fd = read_fd
        self._writer = open(write_fd, 'wb', buffering=0)
        self._write_lock = threading.Lock()
        self._commands = collections.deque()  # parsed and not yet taken; at most INBOX_SLOTS
        self._arrived = threading.Lock()  # guards _commands and _main_waiting together
        self._main_waiting = False  # the main thread is (about to be) polling for a command
        self._receiving = False  # a reader holds bytes of a command it has not queued yet
        self._read_lock = threading.Lock()  # held by whichever thread reads and parses
        self._received = bytearray()  # read and not yet a whole frame; under _read_lock
        self._reader_on = threading.Event()  # the reader thread reads while this is set
        # Wake-up pipes: one tells the main thread that the reader queued a command, the
        # other tells the reader to stop polling (park_reader).
        self._main_wake_r, self._main_wake_w = _wake_pipe()
        self._reader_wake_r, self._reader_wake_w = _wake_pipe()
        self._reader = None  # the reader thread, once started
        self._closing = False  # close() was called: the reader thread returns
        os.register_at_fork(after_in_child=self._disown)

    def _disown(self):
        """In the child of a bare os.fork() in a cell: the protocol pipes are the worker's
        alone, or parent and child would split the commands and both answer. /dev/null
        takes their numbers (closing them would let a later open() reuse one), so what the
        child sends is lost and its next read of a command is EOF, which ends it as the
        server going would. Locks another thread held at the fork are made anew."""
        for fd in (self._read_fd, self._writer.fileno()):
            null_over(fd)
        self._write_lock = threading.Lock()
        self._read_lock = threading.Lock()
        self._arrived = threading.Lock()
        self._received = bytearray()
        self._reader_on = threading.Event()

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
        self._reader = threading.Thread(target=self._read_forever, name='repl-mcp-reader', daemon=True)
        self._reader.start()

    def close(self):
        """Stop the reader thread and close every descriptor the channel holds. The worker
        never needs it (it ends with os._exit); a test that makes channels does, so that no
        thread reads a descriptor number after it was closed and reused."""
        self._closing = True
        if self._reader is not None:
            self._reader_on.set()
            _kick(self._reader_wake_w)
            self._reader.join()
        self._writer.close()
        for fd in (self._read_fd, self._main_wake_r, self._main_wake_w, self._reader_wake_r, self._reader_wake_w):
            os.close(fd)

    def need_reader(self):
        """Have the reader thread read while the main thread cannot: from any thread, before
        anything waits for a frame from the server during a cell."""
        if not self._reader_on.is_set():
            self._reader_on.set()

    def park_reader(self):
        """The main thread reads again from here on (called before a result): the reader
        thread, if it was woken, goes back to waiting."""
        if self._reader_on.is_set():
            self._reader_on.clear()
            _kick(self._reader_wake_w)

    def wait_for_command(self):
        """Until a command is queued: read the pipe on the main thread, or be told the reader
        thread queued one."""
        ready = select.poll()
        ready.register(self._read_fd, select.POLLIN)
        ready.register(self._main_wake_r, select.POLLIN)
        while True:
            with self._arrived:
                if self._commands:
                    self._main_waiting = False
                    return
                self._main_waiting = True
            with self._read_lock:
                self._read_available()
            if self._commands:
                continue
            for fd, _ in ready.poll():
                if fd == self._main_wake_r:
                    _drain(fd)

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
        ready.register(self._reader_wake_r, select.POLLIN)
        while True:
            self._reader_on.wait()
            if self._closing:
                return
            for fd, _ in ready.poll():
                if fd == self._reader_wake_r:
                    _drain(fd)
                else:
                    with self._read_lock:
                        self._read_available()

    def _read_available(self):
        """Read what the pipe holds and queue or route every whole frame in it; the caller
        holds _read_lock. EOF, even in the middle of a cell, ends the worker: the server is
        gone or stopping us."""
        # Set while the bytes are still in the pipe, and cleared only once they are queued
        # (see command_incoming).
        self._receiving = True
        try:
            data = os.read(self._read_fd, READ_CHUNK)
        except BlockingIOError:
            data = None  # the other reader took them
        except OSError:
            data = b''
        if data == b'':
            exit_now(0)
        if data:
            self._received += data
            self.queue_frames(self._received)
        self._receiving = bool(self._received)

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
            wake = self._main_waiting and threading.get_ident() != _MAIN_THREAD
        if wake:
            _kick(self._main_wake_w)


_MAIN_THREAD = threading.main_thread().ident


def private_fd(fd):
    """A close-on-exec copy of fd at PROTOCOL_FD_FLOOR or above, with /dev/null left at the
    original number: user subprocesses never hold the protocol pipes, and a cell that takes
    fds 3 and 4 for its own (dup2, close, a library's fd juggling) cannot cut the worker off
    from the server. The placeholder keeps the worker's own later pipes off those numbers."""
    try:
        private = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, PROTOCOL_FD_FLOOR)
    except OSError:  # a descriptor limit below the floor: any free number will do
        private = os.dup(fd)
    null_over(fd)
    return private


def null_over(fd):
    """Put a non-inheritable /dev/null at fd, closing what was there."""
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, fd, inheritable=False)
    os.close(null)


def _wake_pipe():
    """A private, non-blocking pipe whose only use is to end a poll() in another thread."""
    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)
    os.set_blocking(write_end, False)
    return read_end, write_end


def _kick(fd):
    try:
        os.write(fd, b'.')
    except BlockingIOError:
        pass  # full: the other side has plenty of wake-ups to read


def _drain(fd):
    try:
        while os.read(fd, 4096):
            pass
    except BlockingIOError:
        pass
