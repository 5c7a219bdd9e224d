"""The worker's fast paths, each timed against the plain path it replaces, on the same input
(`make bench-micro`, beside the Go pairs; docs/design.md, "Fast paths, and what each
saves"). Standard library only; it imports replworker's own functions, so what is timed is
the worker's code. Where the plain path no longer exists in the worker (it was replaced),
it is built here from the worker's own pieces, as small as it can be.

Each pair runs in interleaved rounds (fast, plain, fast, plain, ...) of timeit; the table
gives each side's median time per operation and the ratio plain / fast, so only the ratio
means anything on a loaded machine. `--quick` runs one tiny round of every pair, which
TestWorkerBenchMicro does on every test run so this script cannot rot.

Run it with REPL_MCP_WORKER_LIMITS set (the worker's modules read it as they load); the
Go test sets it."""

import argparse
import binascii
import os
import queue
import select
import statistics
import sys
import threading
import timeit
from concurrent import futures
from unittest import mock

sys.dont_write_bytecode = True  # no __pycache__ in the package directory the Go build embeds
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from replworker import bridge, cells, channel, native, output, sinks, threads  # noqa: E402
from replworker.common import type_name  # noqa: E402
from replworker.messages import WRITE_NOT_STR  # noqa: E402

PAIRS = []


def pair(name, saves):
    """Register a pair: the decorated function gets `n` (operations per timing) and returns
    (fast, plain, done): two callables doing n operations each, and a clean-up."""
    def register(make):
        PAIRS.append((name, saves, make))
        return make
    return register


# ---- cells.py: a one-line expression compiled from its text ----------------------------------

@pair('compile_one_line', "cells.compile_cell: `df.shape` compiled at once, not parsed to an AST first")
def _compile(n):
    source, filename = 'df.shape', '<repl:bench>'

    def fast():
        for _ in range(n):
            cells.compile_cell(source, filename, commands=True)

    def plain():  # the long way, which every other cell takes
        with mock.patch.object(cells, '_one_line_expression', lambda source, filename: None):
            for _ in range(n):
                cells.compile_cell(source, filename, commands=True)
    return fast, plain, None


# ---- channel.py: the main thread reads the next command itself ---------------------------------

@pair('command_handoff', 'channel.wait_for_command: read on the main thread, no wake-up of the reader')
def _handoff(n):
    server_read, worker_write = os.pipe()
    worker_read, server_write = os.pipe()
    with mock.patch.dict(os.environ, {'REPL_MCP_WORKER_FDS': f'{worker_read},{worker_write}'}):
        chan = channel.Channel(on_rpc_result=lambda frame: None)
    chan.start_reader()
    frame = b'{"type":"execute","id":"r","code":"x","barrier":"b"}\n'

    def fast():
        chan.park_reader()
        for _ in range(n):
            os.write(server_write, frame)
            chan.wait_for_command()
            chan.take_command()

    def plain():
        # The reader thread reads every command and wakes the main thread, which only
        # waits: the hand-off the main thread's own read replaced.
        chan.need_reader()
        wake = select.poll()
        wake.register(chan._main_wake_r, select.POLLIN)
        for _ in range(n):
            os.write(server_write, frame)
            while True:
                with chan._arrived:
                    if chan._commands:
                        chan._main_waiting = False
                        break
                    chan._main_waiting = True
                wake.poll()
                channel._drain(chan._main_wake_r)
            chan.take_command()
        chan.park_reader()

    def done():
        chan.close()
        for fd in (server_read, server_write):
            os.close(fd)
    return fast, plain, done


# ---- sinks.py and output.py: prints in a cell ------------------------------------------------------

class _Frames:
    """The protocol channel of an Output: frames kept, nothing sent."""

    def __init__(self):
        self.frames = []

    def send(self, frame):
        self.frames.append(frame)

    def need_reader(self):
        pass


def _session(lane):
    out = output.Output(_Frames())
    stdout = sinks.Sink('stdout', 1, out, native.NativeOutput())
    if lane:
        out.attach_lane(stdout)
    return out, stdout


def _cell(out, body):
    with mock.patch.object(threads.THREADS, 'alone', return_value=True):  # the bench's own threads
        out.begin('bench')
    try:
        body()
    finally:
        out.end()


LINE = 'step 12 of 100: loss 0.0421\n'


@pair('stdout_lane', "sinks.Sink.lane_on: a cell's print() is C code into a list, not Sink.write")
def _lane(n):
    lane_out, lane_stdout = _session(lane=True)
    plain_out, plain_stdout = _session(lane=False)

    def prints(stdout):
        def body():
            for _ in range(n):
                print(LINE, end='', file=stdout)
        return body
    return (lambda: _cell(lane_out, prints(lane_stdout)), lambda: _cell(plain_out, prints(plain_stdout)), None)


@pair('sink_write_inline', 'sinks.Sink.write: the capture found and written inline, not through Output.write')
def _inline(n):
    out, stdout = _session(lane=False)

    def plain_write(text):
        # Sink.write's checks, then Output.write: what the inline code stands for.
        if not isinstance(text, str):
            raise TypeError(WRITE_NOT_STR.format(type_name(type(text))))
        if stdout._transcoding is not None:
            text = sinks.transcode(text, *stdout._transcoding)
        out.write('stdout', text)
        return len(text)

    def fast():
        for _ in range(n):
            stdout.write(LINE)

    def plain():
        for _ in range(n):
            plain_write(LINE)
    return (lambda: _cell(out, fast), lambda: _cell(out, plain), None)


@pair('capture_batch', 'output.Capture.write: writes taken into the streams RAW_BATCH characters at a time')
def _batch(n):
    out, stdout = _session(lane=False)

    def writes():
        for _ in range(n):
            stdout.write(LINE)

    def plain():  # every write taken into its stream at once
        with mock.patch.object(sinks, 'RAW_BATCH', 0), mock.patch.object(output, 'RAW_BATCH', 0):
            _cell(out, writes)
    return (lambda: _cell(out, writes), plain, None)


# ---- bridge.py: the reply of a blocking call, and the rpc frame --------------------------------

@pair('reply_handoff', 'bridge._Reply: a blocking call woken by a bare lock, not a Future')
def _reply(n):
    jobs = queue.SimpleQueue()

    def reader():  # the channel's reader thread, settling each reply it is handed
        while (reply := jobs.get()) is not None:
            reply.set_result({'content': []})
    thread = threading.Thread(target=reader, daemon=True)
    thread.start()

    def fast():
        for _ in range(n):
            reply = bridge._Reply(lambda: None)
            jobs.put(reply)
            bridge.await_reply(reply, None)

    def plain():
        for _ in range(n):
            reply = futures.Future()
            jobs.put(reply)
            bridge.await_reply(reply, None)

    def done():
        jobs.put(None)
        thread.join()
    return fast, plain, done


_RPC = {'type': 'rpc', 'id': bridge.new_rpc_id(), 'run_id': 'bench', 'op': 'call',
        'params': {'server': 'files', 'tool': 'read_text_file', 'arguments': {'path': '/tmp/x.csv'}, 'timeout': 120.0}}


@pair('rpc_encoder', "bridge: rpc frames by an encoder made once, not channel.encode_frame's json.dumps")
def _encoder(n):
    def fast():
        for _ in range(n):
            bridge.encode_rpc(_RPC)

    def plain():
        for _ in range(n):
            channel.encode_frame(_RPC)
    return fast, plain, None


@pair('rpc_data_splice', "bridge: an upload chunk's base64 spliced into the frame, not encoded as JSON")
def _splice(n):
    chunk = os.urandom(262_144)  # an artifact upload's chunk
    frame = {**_RPC, 'op': 'artifact.append', 'params': {'upload_id': 'u', 'offset': 0}}

    def fast():
        for _ in range(n):
            bridge.encode_rpc(frame, chunk)

    def plain():
        for _ in range(n):
            channel.encode_frame({**frame, 'data': binascii.b2a_base64(chunk, newline=False).decode('ascii')})
    return fast, plain, None


# ---- Running ----------------------------------------------------------------------------------------

# Operations per timing, and rounds of each side, by pair; --quick runs one operation once.
SIZES = {'compile_one_line': 2000, 'command_handoff': 500, 'stdout_lane': 5000, 'sink_write_inline': 5000,
         'capture_batch': 5000, 'reply_handoff': 1000, 'rpc_encoder': 5000, 'rpc_data_splice': 50}
ROUNDS = 7


def measure(make, n, rounds):
    """(fast, plain) median seconds per operation over interleaved rounds."""
    fast, plain, done = make(n)
    try:
        times = {fast: [], plain: []}
        for _ in range(rounds):
            for side in (fast, plain):
                times[side].append(timeit.timeit(side, number=1) / n)
        return statistics.median(times[fast]), statistics.median(times[plain])
    finally:
        if done is not None:
            done()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--quick', action='store_true', help='one operation, one round of each pair (a smoke test)')
    parser.add_argument('--run', default='', help='only the pairs whose name contains this')
    args = parser.parse_args(argv)
    print(f'Python {sys.version.split()[0]}; times per operation, medians of {1 if args.quick else ROUNDS} interleaved rounds')
    print(f'{"pair":<18} {"fast":>10} {"plain":>10} {"plain/fast":>10}  what the fast path saves')
    for name, saves, make in PAIRS:
        if args.run not in name:
            continue
        fast, plain = measure(make, 1 if args.quick else SIZES[name], 1 if args.quick else ROUNDS)
        print(f'{name:<18} {_duration(fast):>10} {_duration(plain):>10} {plain / fast:>9.2f}x  {saves}')


def _duration(seconds):
    for unit, scale in (('s', 1), ('ms', 1e-3), ('µs', 1e-6)):
        if seconds >= scale:
            return f'{seconds / scale:.3g} {unit}'
    return f'{seconds / 1e-9:.3g} ns'


if __name__ == '__main__':
    main()
