"""The `mcp` bridge: cell code calls the session's downstream MCP servers through the
repl-mcp server with `rpc` frames, each answered by one `rpc_result`."""

import asyncio
import binascii
import collections
import json
import os
import threading
from concurrent import futures

from .common import RUN_ID, type_name
from .limits import (
    MAX_FRAME, MCP_CALL_TIMEOUT, MCP_CATALOGUE_TIMEOUT, MCP_OP_WAIT, MCP_REPLY_SLACK, MCP_TIMEOUT_MAX,
    MCP_TIMEOUT_MIN, RPC_PENDING, RPC_QUEUED, TOOL_ERROR_CHARS,
)
from .messages import (
    MCP_ARGUMENTS_NOT_DICT, MCP_BAD_TIMEOUT, MCP_BOTH_ARGUMENTS, MCP_BUSY, MCP_FOREIGN,
    MCP_FRAME_TOO_LARGE, MCP_HELP_HINT, MCP_HELP_NO_SERVERS, MCP_HELP_SERVERS, MCP_MALFORMED,
    MCP_NO_REPLY, MCP_NO_SUCH_SERVER, MCP_REPR, MCP_TEXT_NOT_ENVELOPE, MCP_UNKNOWN_TOOL, TOOL_FAILED,
)
from . import toolfuncs
from .toolresult import ToolResult, envelope_text as _envelope_text


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


# The envelope's class under its earlier name: previews and artifacts treat it as a dict.
McpResult = ToolResult


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


def _encode_rpc(frame):
    return _RPC_ENCODER.encode(frame).encode('utf-8', 'replace') + b'\n'


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
            data = _encode_rpc({'type': 'rpc', 'id': rpc_id, 'run_id': run_id, 'op': op, 'params': params})
            if payload is not None:
                # Base64 needs no JSON escaping: it goes in as it is, after the object's
                # other members, never through json.dumps.
                data = b''.join((data[:-2], b',"data":"', binascii.b2a_base64(payload, newline=False), b'"}\n'))
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


def _check_timeout(timeout):
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise ValueError(MCP_BAD_TIMEOUT)
    if not MCP_TIMEOUT_MIN <= timeout <= MCP_TIMEOUT_MAX:  # NaN fails too
        raise ValueError(MCP_BAD_TIMEOUT)


def call_params(server, tool, arguments, timeout, kwargs):
    """The `call` op's params; every check comes before the rpc is sent."""
    if arguments is not None and kwargs:
        raise ValueError(MCP_BOTH_ARGUMENTS)
    if arguments is not None and not isinstance(arguments, dict):
        raise TypeError(MCP_ARGUMENTS_NOT_DICT)
    _check_timeout(timeout)
    return {'server': server, 'tool': tool, 'arguments': kwargs if arguments is None else arguments, 'timeout': timeout}


def envelope_text(envelope):
    """mcp.text(): the text of every `text` block of an envelope, joined with newlines."""
    if not isinstance(envelope, dict):
        raise TypeError(MCP_TEXT_NOT_ENVELOPE.format(type_name(type(envelope))))
    return _envelope_text(envelope)


def to_envelope(result):
    """A `call` result as the envelope mcp.call returns; a tool error raises ToolError."""
    if type(result) is not dict:
        raise ToolError(MCP_MALFORMED.format('call'))
    envelope = ToolResult(result)
    if envelope.get('isError') is True:
        raise ToolError(TOOL_FAILED.format(envelope_text(envelope)[:TOOL_ERROR_CHARS]), result=envelope)
    return envelope


def _field(op, result, key):
    if type(result) is not dict or key not in result:
        raise ToolError(MCP_MALFORMED.format(op))
    return result[key]


class McpBridge:
    """`mcp`: the session's downstream MCP servers, reached through the repl-mcp server. Calls
    are legal only from the running cell's own code path (not from threads or later cells);
    use the async forms for concurrency. Failures raise ToolError.

    mcp.<server>.<tool>(...) -> ToolResult: each allowlisted tool as a Python function with
        the signature of its inputSchema (help() shows it; wrong arguments raise TypeError
        before anything is sent); .acall(...) awaits the same call. Names that are not
        identifiers: mcp["files-writer"]["write file"], or normalised (mcp.files_writer).
    search(query, limit=10) -> lines `server.tool(signature) — first sentence`, best first
    help() prints the servers; help(server) its tools' signatures; help(server, tool) one
    call(server, tool, *, arguments=None, timeout=120.0, **kwargs) -> ToolResult, the full
        CallToolResult envelope (a dict with .text, .data, .images, .is_error); tool
        arguments come from arguments={...} or keywords, not both (use arguments= for tool
        parameters named timeout, server, tool or arguments)
    acall(...) -> the same, awaitable; cancelling the task cancels only that call
    servers(), list_tools(server, *, timeout=30.0) (JSON schemas), refresh(), journal(),
    ajournal(), explain(server, tool=None), text(envelope)"""

    text = staticmethod(envelope_text)

    def __init__(self, rpcs):
        self._rpcs = rpcs
        self._names = None  # the broker's server names, asked once per cell (a bridge lives one)
        # What the preview of `mcp` itself says (toolfuncs.alearn): why the servers could
        # not be listed, and why some server's tools were not.
        self._preview_error = None
        self._unlisted = {}

    def __repr__(self):
        return MCP_REPR

    async def _alearn(self):
        await toolfuncs.alearn(self)

    def _preview(self):
        return toolfuncs.bridge_preview(self)

    def _server_names(self):
        if self._names is None:
            self._names = toolfuncs.Names(self.servers())
        return self._names

    def __getattr__(self, attr):
        if attr.startswith('__'):
            raise AttributeError(attr)
        names = self._server_names()
        server = names.resolve(attr)
        if server is None:
            raise AttributeError(MCP_NO_SUCH_SERVER.format(attr))
        return toolfuncs.ServerTools(self._rpcs, server, toolfuncs.server_label(names, server))

    def __getitem__(self, server):
        names = self._server_names()
        if server not in names.real:
            raise KeyError(MCP_NO_SUCH_SERVER.format(server))
        return toolfuncs.ServerTools(self._rpcs, server, toolfuncs.server_label(names, server))

    def __dir__(self):
        members = [name for name in type(self).__dict__ if not name.startswith('_')]
        return sorted(set(members) | set(self._server_names().attrs()))

    def call(self, server, tool, *, arguments=None, timeout=MCP_CALL_TIMEOUT, **kwargs):
        params = call_params(server, tool, arguments, timeout, kwargs)
        return to_envelope(self._rpcs.call('call', params, timeout + MCP_REPLY_SLACK))

    async def acall(self, server, tool, *, arguments=None, timeout=MCP_CALL_TIMEOUT, **kwargs):
        params = call_params(server, tool, arguments, timeout, kwargs)
        return to_envelope(await self._rpcs.acall('call', params, timeout + MCP_REPLY_SLACK))

    def servers(self):
        return _field('servers', self._rpcs.call('servers', {}, MCP_OP_WAIT), 'servers')

    def list_tools(self, server, *, timeout=MCP_CATALOGUE_TIMEOUT):
        _check_timeout(timeout)
        result = self._rpcs.call('tools', {'server': server, 'timeout': timeout}, timeout + MCP_REPLY_SLACK)
        return _field('tools', result, 'tools')

    def search(self, query, limit=10):
        """The tools of every server whose names or descriptions match the words of query,
        best first, as lines `server.tool(signature) — first sentence` (at most limit, 1 to
        50; a last line counts the rest). An empty query lists every tool."""
        return toolfuncs.search(self, query, limit)

    def help(self, server=None, tool=None, *, timeout=MCP_CATALOGUE_TIMEOUT):
        """Prints, as Python: no server, the servers; a server, one line per tool with its
        signature; a tool too, its signature and whole description. At most one listing
        (waiting at most timeout seconds) and one servers rpc."""
        if server is None:
            names = self._server_names()
            lines = [MCP_HELP_SERVERS] + [f'  {toolfuncs.server_label(names, s)}' for s in names.real] if names.real else [MCP_HELP_NO_SERVERS]
            print('\n'.join(lines + [MCP_HELP_HINT]))
            return
        _check_timeout(timeout)
        if tool is None:
            print('\n'.join(toolfuncs.server_help(self, server, timeout)))
            return
        text = toolfuncs.tool_help(self, server, tool, timeout)
        if text is None:
            raise ValueError(MCP_UNKNOWN_TOOL.format(tool))
        print(text)

    def refresh(self):
        self._names = None
        toolfuncs.CATALOGUES.clear()
        return self._rpcs.call('refresh', {}, MCP_OP_WAIT)

    def journal(self):
        return _field('journal', self._rpcs.call('journal', {}, MCP_OP_WAIT), 'records')

    async def ajournal(self):
        return _field('journal', await self._rpcs.acall('journal', {}, MCP_OP_WAIT), 'records')

    def explain(self, server, tool=None):
        return self._rpcs.call('explain', {'server': server, 'tool': tool}, MCP_OP_WAIT)
