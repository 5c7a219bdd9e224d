"""The bridge's transport: a cell's calls of the session's downstream MCP servers and of
the artifact store go to the repl-mcp server as `rpc` frames
(PROTOCOL.md, "Worker → server"), each answered by one `rpc_result`. What cells call it
through is toolfuncs.py's (`mcp`) and artifacts.py's."""

import asyncio
import binascii
import collections
import json
import os
import threading
from concurrent import futures

from .common import RUN_ID
from .limits import MAX_FRAME, RPC_PENDING, RPC_QUEUED
from .messages import MCP_BUSY, MCP_FOREIGN, MCP_FRAME_TOO_LARGE, MCP_NO_REPLY


def new_rpc_id():
    """A fresh random (version 4) UUID as 32 hex digits, made as uuid.uuid4().hex makes it:
    importing uuid (which imports platform on some versions) would slow every start."""
    data = bytearray(os.urandom(16))
    data[6] = data[6] & 0x0F | 0x40
    data[8] = data[8] & 0x3F | 0x80
    return data.hex()


class ToolError(RuntimeError):
    """A bridge call failed. .result is the complete CallToolResult envelope when the tool
    itself reported an error (isError), else None (the broker or the transport failed)."""

    def __init__(self, message, result=None):
        super().__init__(message)
        self.result = result


def await_reply(future, wait):
    """Block the cell until the reply (a _Reply or a Future) or `wait` seconds; a SIGINT
    interrupts it like user code (see interrupts.INTERRUPTIBLE_WORKER_CODE). A _Reply is
    waited for here, in this frame, so that a SIGINT finds the cell waiting in it."""
    if type(future) is _Reply:
        if not future._arrived.acquire(True, -1 if wait is None else wait):
            raise futures.TimeoutError
        return future._outcome()
    return future.result(wait)


_PENDING, _ANSWERED, _FAILED, _CANCELLED = 'pending', 'answered', 'failed', 'cancelled'


class _Reply:
    """The reply a blocking call waits for (await_reply): what a concurrent Future offers
    the bridge, cheaper for the one waiter that blocks. The reader thread hands the reply
    over by releasing a bare lock the cell waits on, which wakes the main thread once; a
    Future's condition wakes it and then makes it wait for the condition's own lock, which
    the reader thread still holds. Settled once: answered, failed or cancelled, whichever
    comes first; cancelling calls on_cancel (the bridge's rpc_cancel) in the cancelling
    thread, as a Future's done callback would."""

    __slots__ = ('_arrived', '_settle_lock', '_state', '_value', '_on_cancel')

    def __init__(self, on_cancel):
        self._arrived = threading.Lock()
        self._arrived.acquire()  # released once, when the reply is settled
        self._settle_lock = threading.Lock()
        self._state = _PENDING
        self._value = None
        self._on_cancel = on_cancel

    def _settle(self, state, value):
        with self._settle_lock:
            if self._state is not _PENDING:
                return False
            self._state, self._value = state, value
        self._arrived.release()
        return True

    def set_result(self, result):
        if not self._settle(_ANSWERED, result):
            raise futures.InvalidStateError(self._state)

    def set_exception(self, exception):
        if not self._settle(_FAILED, exception):
            raise futures.InvalidStateError(self._state)

    def cancel(self):
        """Cancel a call not yet settled (a no-op once it is), as Future.cancel does."""
        if not self._settle(_CANCELLED, None):
            return False
        self._on_cancel()
        return True

    def _outcome(self):
        """The reply once settled: its result, or its exception raised (dropped here, so
        that its traceback and this reply do not keep each other alive)."""
        if self._state is _ANSWERED:
            return self._value
        if self._state is _FAILED:
            exception, self._value = self._value, None
            raise exception
        raise futures.CancelledError


# The encoder of rpc frames, made once: json.dumps with options makes a new one for every
# frame. Its options and the encoding below are channel.encode_frame's.
_RPC_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(',', ':'), allow_nan=False)


def encode_rpc(frame, payload=None):
    """An rpc frame's line; `payload`, bytes-like, goes as its `data` member, in base64.
    Base64 needs no JSON escaping: it goes in as it is, after the object's other members,
    never through the encoder."""
    data = _RPC_ENCODER.encode(frame).encode('utf-8', 'replace') + b'\n'
    if payload is None:
        return data
    return b''.join((data[:-2], b',"data":"', binascii.b2a_base64(payload, newline=False), b'"}\n'))


class _Slots:
    """The RPC_PENDING calls that may await their reply at once (the server serves as many
    per run), and a queue of at most RPC_QUEUED calls waiting for one, first come first
    served: `asyncio.gather` of hundreds of mcp.acall completes instead of failing.

    A waiter is a concurrent Future, set when a slot is handed to it. Its
    set_running_or_notify_cancel decides, once and for all threads, whether the hand-over
    or the waiter's cancellation came first, so a slot is never lost and never given
    twice; a waiter that gives up before its turn never sent anything."""

    def __init__(self):
        self._free = RPC_PENDING
        self._waiters = collections.deque()
        self._lock = threading.Lock()

    def take(self):
        """A slot now (None), or a Future to wait on for one; MCP_BUSY when the queue is full."""
        with self._lock:
            if self._free > 0 and not self._waiters:
                self._free -= 1
                return None
            if len(self._waiters) >= RPC_QUEUED:
                raise RuntimeError(MCP_BUSY)
            waiter = futures.Future()
            self._waiters.append(waiter)
            return waiter

    def give_back(self):
        """A slot is free: the first waiter still waiting gets it."""
        while True:
            with self._lock:
                if not self._waiters:
                    self._free += 1
                    return
                waiter = self._waiters.popleft()
            if waiter.set_running_or_notify_cancel():
                waiter.set_result(None)
                return

    def drop_waiters(self):
        """Cancel every waiter: the cell they waited for has ended."""
        with self._lock:
            waiters = list(self._waiters)
        for waiter in waiters:
            waiter.cancel()

    def leave(self, waiter):
        """The waiter gives up (its task was cancelled, the cell interrupted). A slot it was
        handed meanwhile goes to the next one."""
        if waiter.cancel():
            with self._lock:
                try:
                    self._waiters.remove(waiter)
                except ValueError:
                    pass  # give_back took it off and saw it cancelled
            return
        self.give_back()


class _Rpcs:
    """The bridge transport: `rpc` frames out, each answered by an `rpc_result` that the
    reader thread routes to the call's pending future. Only the running cell's own code may
    call, on the main thread with the cell's run id in its context: a thread or a context
    saved from an earlier cell would otherwise act for a cell that has ended. At most
    RPC_PENDING calls await their reply at once; more wait their turn (_Slots)."""

    def __init__(self):
        self._channel = None
        self._pending = {}  # rpc id -> (run id, _Reply or Future) until answered or abandoned
        self._lock = threading.Lock()  # the reader thread resolves while the main thread calls
        self._slots = _Slots()  # one for each entry of _pending
        self._active = None  # run id of the cell whose code may call now
        self._main_thread = threading.main_thread().ident

    def start(self, channel):
        self._channel = channel

    def begin(self, run_id):
        self._active = run_id

    def end(self):
        """The cell is over: later calls are refused, the pending ones abandoned and those
        still waiting for a slot dropped (they never sent anything)."""
        self._active = None
        with self._lock:
            pending = [future for _, future in self._pending.values()]
        for future in pending:
            future.cancel()  # its callback sends the rpc_cancel
        self._slots.drop_waiters()

    def call(self, op, params, wait, data=None):
        """The result of `op`, waiting at most `wait` seconds once it is sent (and before that
        for a slot, as long as the cell runs); blocks the cell. `data`, bytes-like, goes as
        the frame's `data` (an artifact.append chunk)."""
        run_id = self._check_caller()
        waiter = self._slots.take()
        if waiter is not None:
            try:
                await_reply(waiter, None)
            except BaseException:
                self._slots.leave(waiter)
                raise
        reply = self._request(run_id, op, params, blocking=True, payload=data)
        try:
            return await_reply(reply, wait)
        except futures.TimeoutError:
            raise ToolError(MCP_NO_REPLY.format(op, wait)) from None
        finally:
            reply.cancel()  # a no-op once answered; otherwise the server drops the call

    async def acall(self, op, params, wait):
        """The result of `op`, awaited; cancelling the awaiting task cancels this call only,
        and one still waiting for a slot sends nothing."""
        run_id = self._check_caller()
        waiter = self._slots.take()
        if waiter is not None:
            try:
                await asyncio.wrap_future(waiter)
            except BaseException:
                self._slots.leave(waiter)
                raise
        future = self._request(run_id, op, params, blocking=False)
        try:
            # Cancelling the wrapper cancels `future`, whose callback sends the rpc_cancel.
            return await asyncio.wait_for(asyncio.wrap_future(future), wait)
        except asyncio.TimeoutError:
            raise ToolError(MCP_NO_REPLY.format(op, wait)) from None
        finally:
            future.cancel()

    def _check_caller(self):
        """The running cell's run id, when the caller is its own code path."""
        run_id = RUN_ID.get()
        if run_id is None or run_id != self._active or threading.get_ident() != self._main_thread:
            raise RuntimeError(MCP_FOREIGN)
        return run_id

    def _request(self, run_id, op, params, blocking, payload=None):
        """Send one `rpc` frame in the slot the caller holds and return what its reply will
        settle: a _Reply for a blocking call, a concurrent Future for an awaited one.
        `payload`, bytes-like, goes as the frame's `data`. Every refusal comes before
        anything is sent or registered, and gives the slot back."""
        try:
            if run_id != self._active:
                raise RuntimeError(MCP_FOREIGN)  # the cell ended while the call waited
            rpc_id = new_rpc_id()
            data = encode_rpc({'type': 'rpc', 'id': rpc_id, 'run_id': run_id, 'op': op, 'params': params}, payload)
            if len(data) > MAX_FRAME:
                raise ValueError(MCP_FRAME_TOO_LARGE)
            if blocking:
                future = _Reply(lambda: self._abandon(rpc_id))
            else:
                future = futures.Future()
                future.add_done_callback(lambda done: done.cancelled() and self._abandon(rpc_id))
            with self._lock:
                self._pending[rpc_id] = (run_id, future)
        except BaseException:
            self._slots.give_back()
            raise
        self._channel.need_reader()  # before the send: the reply may come at once
        self._channel.send_encoded(data)
        return future

    def _abandon(self, rpc_id):
        with self._lock:
            entry = self._pending.pop(rpc_id, None)
        if entry is not None:  # not yet answered: tell the server to drop that call only
            # The server forgets the call as it reads this frame, so the slot is free for
            # the next call, which it reads after this one.
            self._channel.send({'type': 'rpc_cancel', 'id': rpc_id, 'run_id': entry[0]})
            self._slots.give_back()

    def resolve(self, frame):
        """Called by the reader thread with an `rpc_result`. Replies for unknown or abandoned
        calls are dropped: a late reply must not reach a later cell."""
        with self._lock:
            entry = self._pending.pop(frame['id'], None)
        if entry is None:
            return
        self._slots.give_back()  # the server forgot the call before it sent this reply
        try:
            if frame.get('error'):
                entry[1].set_exception(ToolError(frame['error']))
            else:
                entry[1].set_result(frame.get('result'))
        except futures.InvalidStateError:
            pass  # cancelled meanwhile; the server already answered, so nothing to cancel


RPCS = _Rpcs()
