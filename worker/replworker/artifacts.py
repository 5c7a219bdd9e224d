"""Artifacts: values and files the server keeps for the session outside the result
(docs/contract.md §7.7, §9), and the cell helpers that make, read, save, delete and forward them.

A value is streamed in ARTIFACT_CHUNK raw chunks (artifact.begin, artifact.append with the
running offset and the chunk as its frame's base64 `data`, artifact.commit) and never copied
whole: memory stays bounded by about one chunk beyond the value itself."""

import json
import math
import os

from .bridge import RPCS, ToolError
from .common import type_name, utf8_prefix
from .limits import (
    ARTIFACT_ABORT_WAIT, ARTIFACT_CHUNK, ARTIFACT_ERROR_BYTES, ARTIFACT_JSON_DEPTH, ARTIFACT_JSON_NODES,
    ARTIFACT_MAX_BYTES, ARTIFACT_READ_MAX, ARTIFACT_STRING_BUDGET, ARTIFACT_TEXT_SLICE, MCP_OP_WAIT,
    PREVIEW_INT_BITS,
)
from .messages import (
    ARTIFACT_BAD_ENCODING, ARTIFACT_BAD_FORMAT, ARTIFACT_BAD_FORWARD_FORMAT, ARTIFACT_BAD_KEY,
    ARTIFACT_BAD_LENGTH, ARTIFACT_BAD_TYPE, ARTIFACT_FORMAT_MISMATCH, ARTIFACT_INT_TOO_LARGE,
    ARTIFACT_NOT_FINITE, ARTIFACT_ONE_SOURCE, ARTIFACT_OVER_BOUNDS, ARTIFACT_STRINGS_TOO_LARGE,
    ARTIFACT_TOO_DEEP, ARTIFACT_TOO_LARGE, ARTIFACT_TOO_MANY_VALUES, ARTIFACT_UNSUPPORTED_DETAIL, MCP_MALFORMED,
    NEGATIVE, NOT_BOOL_OVERWRITE, NOT_INT, NOT_STR, NOT_STR_PATH,
)
from .toolresult import ToolResult, to_envelope

ARTIFACT_FORMATS = ('json', 'text', 'binary')
ARTIFACT_READ_ENCODINGS = ('text', 'base64', 'hex')
ARTIFACT_FORWARD_FORMATS = ('json', 'text', 'base64')


class NotArtifact(Exception):
    """A value artifact() refuses. `budget`: a size limit was passed (depth, nodes,
    string budget, int size, 16 MiB), as opposed to a type JSON does not have."""

    def __init__(self, detail, budget, message=None):
        template = ARTIFACT_OVER_BOUNDS if budget else ARTIFACT_UNSUPPORTED_DETAIL
        super().__init__(message or template.format(detail))
        self.budget = budget


class _JsonBudget:
    __slots__ = ('nodes', 'string_bytes', 'size')

    def __init__(self):
        # The bound counts the values a container holds, at any depth; the value itself
        # is not one of them, so a list of exactly 100,000 ints is within it.
        self.nodes = ARTIFACT_JSON_NODES + 1
        self.string_bytes = ARTIFACT_STRING_BUDGET
        self.size = 0  # a lower bound of the encoded JSON's size in bytes


def check_artifact_json(value):
    """Raise NotArtifact unless `value` is made of exact JSON builtins within the budgets.
    Type identity checks only, and the containers' own builtin iteration: no user code
    (repr, __eq__, __iter__, __class__, properties) runs."""
    budget = _JsonBudget()
    _check_json_node(value, 0, budget)
    if budget.size > ARTIFACT_MAX_BYTES:
        raise NotArtifact(None, True, ARTIFACT_TOO_LARGE)  # its JSON text surely would


def _count_string(text, budget):
    budget.string_bytes -= 4 * len(text)
    if budget.string_bytes < 0:
        raise NotArtifact(ARTIFACT_STRINGS_TOO_LARGE, True)
    budget.size += len(text) + 2


def _check_json_node(value, depth, budget):
    budget.nodes -= 1
    if budget.nodes < 0:
        raise NotArtifact(ARTIFACT_TOO_MANY_VALUES, True)
    cls = type(value)
    if value is None or cls is bool:
        budget.size += 4
    elif cls is int:
        bits = value.bit_length()
        if bits > PREVIEW_INT_BITS:
            raise NotArtifact(ARTIFACT_INT_TOO_LARGE, True)
        budget.size += bits * 3 // 10 + 1  # decimal digits, at least
    elif cls is float:
        if not math.isfinite(value):
            raise NotArtifact(ARTIFACT_NOT_FINITE, False)
        budget.size += 3
    elif cls is str:
        _count_string(value, budget)
    elif cls is list or cls is tuple:
        if depth >= ARTIFACT_JSON_DEPTH:
            raise NotArtifact(ARTIFACT_TOO_DEEP, True)
        budget.size += 1 + len(value)
        for item in value:
            _check_json_node(item, depth + 1, budget)
    elif cls is dict or cls is ToolResult:
        if depth >= ARTIFACT_JSON_DEPTH:
            raise NotArtifact(ARTIFACT_TOO_DEEP, True)
        budget.size += 1 + len(value)
        for key, item in dict.items(value):
            if type(key) is not str:
                raise NotArtifact(ARTIFACT_BAD_KEY.format(type_name(type(key))), False)
            _count_string(key, budget)
            _check_json_node(item, depth + 1, budget)
    else:
        raise NotArtifact(ARTIFACT_BAD_TYPE.format(type_name(cls)), False)


def _artifact_format(value, format):
    """The upload format of artifact(value, format=...); refuses before anything is sent."""
    if format is not None and not (type(format) is str and format in ARTIFACT_FORMATS):
        raise ValueError(ARTIFACT_BAD_FORMAT)
    cls = type(value)
    natural = 'text' if cls is str else 'binary' if cls is bytes else 'json'
    format = format or natural
    if format == 'json':
        if cls is bytes:
            raise ValueError(ARTIFACT_FORMAT_MISMATCH.format(format, 'bytes'))
        check_artifact_json(value)  # raises NotArtifact, which artifact() reports as ValueError
    elif format != natural:
        raise ValueError(ARTIFACT_FORMAT_MISMATCH.format(format, type_name(cls)))
    return format


def _text_pieces(text):
    """UTF-8 of `text`, a slice at a time (lone surrogates become '?', as in frames)."""
    for start in range(0, len(text), ARTIFACT_TEXT_SLICE):
        yield text[start:start + ARTIFACT_TEXT_SLICE].encode('utf-8', 'replace')


def _json_pieces(value):
    """UTF-8 of the compact JSON of a checked value, produced incrementally."""
    encoder = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(',', ':'))
    batch, size = [], 0
    for text in encoder.iterencode(value):
        if len(text) > ARTIFACT_TEXT_SLICE:  # a long string: its bytes go a slice at a time
            if batch:
                yield ''.join(batch).encode('utf-8', 'replace')
                batch, size = [], 0
            yield from _text_pieces(text)
            continue
        batch.append(text)
        size += len(text)
        if size >= ARTIFACT_TEXT_SLICE:
            yield ''.join(batch).encode('utf-8', 'replace')
            batch, size = [], 0
    if batch:
        yield ''.join(batch).encode('utf-8', 'replace')


def _binary_pieces(data):
    view = memoryview(data)
    for start in range(0, len(view), ARTIFACT_CHUNK):
        yield view[start:start + ARTIFACT_CHUNK]


def _value_pieces(value, format):
    if format == 'binary':
        return _binary_pieces(value)
    if format == 'text':
        return _text_pieces(value)
    return _json_pieces(value)


def _artifact_call(op, params, wait=MCP_OP_WAIT, data=None):
    """One artifact op from the running cell's code path; its result must be an object."""
    result = RPCS.call(op, params, wait, data)
    if type(result) is not dict:
        raise ToolError(MCP_MALFORMED.format(op))
    return result


def _upload_value(value, format):
    """Stream a checked value into a new artifact; returns its reference."""
    if _known_too_large(value, format):
        raise ValueError(ARTIFACT_TOO_LARGE)
    return upload_pieces(_value_pieces(value, format), format)


def upload_pieces(pieces, format):
    """Stream the bytes of `pieces` (an iterable of bytes-like objects, made as they are
    needed) into a new artifact of `format`; returns its reference. Once begun, any failure
    (an interrupt included) aborts the upload, best effort, before it propagates."""
    begun = _artifact_call('artifact.begin', {'format': format})
    upload_id = begun.get('upload_id')
    if type(upload_id) is not str:
        raise ToolError(MCP_MALFORMED.format('artifact.begin'))
    try:
        chunk, limit = begun.get('chunk_bytes', ARTIFACT_CHUNK), begun.get('max_bytes', ARTIFACT_MAX_BYTES)
        if type(chunk) is not int or type(limit) is not int or chunk <= 0:
            raise ToolError(MCP_MALFORMED.format('artifact.begin'))
        chunk = min(chunk, ARTIFACT_CHUNK)
        offset, pending = 0, bytearray()
        for piece in pieces:
            if not pending and len(piece) == chunk:  # a whole chunk as it is: no copy
                offset = _append_chunk(upload_id, offset, piece, limit)
                continue
            pending += piece
            while len(pending) >= chunk:
                offset = _append_chunk(upload_id, offset, pending[:chunk], limit)
                del pending[:chunk]
        if pending:
            offset = _append_chunk(upload_id, offset, pending, limit)
        return _artifact_call('artifact.commit', {'upload_id': upload_id})
    except BaseException:
        _abort_upload(upload_id)
        raise


def _known_too_large(value, format):
    """Whether a str or bytes value surely exceeds 16 MiB, found before anything is sent.
    Text of up to 4 Mi characters always fits; longer non-ASCII text is measured a slice
    at a time."""
    if format == 'json':
        return False  # check_artifact_json has bounded it already
    if len(value) > ARTIFACT_MAX_BYTES:
        return True  # at least a byte per character
    if format == 'binary' or 4 * len(value) <= ARTIFACT_MAX_BYTES or value.isascii():
        return False
    return sum(map(len, _text_pieces(value))) > ARTIFACT_MAX_BYTES


def _append_chunk(upload_id, offset, data, limit):
    """Send one chunk at `offset`; returns the offset after it."""
    end = offset + len(data)
    if end > limit:
        raise ValueError(ARTIFACT_TOO_LARGE)
    size = _artifact_call('artifact.append', {'upload_id': upload_id, 'offset': offset}, data=data).get('size', end)
    if size != end:
        raise ToolError(MCP_MALFORMED.format('artifact.append'))
    return end


def _abort_upload(upload_id):
    try:
        RPCS.call('artifact.abort', {'upload_id': upload_id}, ARTIFACT_ABORT_WAIT)
    except Exception:
        pass  # best effort: the server also aborts a run's uploads when the run ends


def _absolute_path(path, name='path'):
    path = os.fspath(path)
    if type(path) is not str:
        raise TypeError(NOT_STR_PATH.format(name))
    return os.path.abspath(os.path.expanduser(path))


def _check_str(value, name):
    if type(value) is not str:
        raise TypeError(NOT_STR.format(name, type_name(type(value))))


def _check_count(value, name):
    if type(value) is not int:
        raise TypeError(NOT_INT.format(name, type_name(type(value))))
    if value < 0:
        raise ValueError(NEGATIVE.format(name))


def artifact(value=None, *, path=None, format=None):
    """Keep a value or a file as a server-side artifact of this session and return its
    reference {"id", "size", "format", "sha256", "lifetime", "eviction"}. Exactly one of:
    value: exact bytes (format "binary"), exact str ("text") or exact JSON builtins
    ("json": None, bool, int, finite float, str, list, tuple, dict with str keys; depth
    <= 32, <= 100,000 values), at most 16 MiB; path=: a file (~ expanded), copied by the
    server (format "binary" unless given). Read it with artifact_read, save it with
    artifact_save, pass it to a tool with artifact_forward."""
    if (value is None) == (path is None):
        raise ValueError(ARTIFACT_ONE_SOURCE)
    if path is not None:
        if format is None:
            format = 'binary'
        if not (type(format) is str and format in ARTIFACT_FORMATS):
            raise ValueError(ARTIFACT_BAD_FORMAT)
        return _artifact_call('artifact.create', {'path': _absolute_path(path), 'format': format})
    try:
        format = _artifact_format(value, format)
    except NotArtifact as exc:
        raise ValueError(str(exc)) from None
    return _upload_value(value, format)


def artifact_read(artifact_id, offset=0, length=ARTIFACT_READ_MAX, encoding='text'):
    """A range of an artifact: {"artifact", "offset", "length", "encoding", "content",
    "has_more"}. length <= 65536 bytes; encoding "text" (the range must be whole UTF-8),
    "base64" or "hex". artifact_read(id, 65536, 65536) reads the second 64 KiB."""
    _check_str(artifact_id, 'artifact_id')
    _check_count(offset, 'offset')
    _check_count(length, 'length')
    if length > ARTIFACT_READ_MAX:
        raise ValueError(ARTIFACT_BAD_LENGTH)
    if not (type(encoding) is str and encoding in ARTIFACT_READ_ENCODINGS):
        raise ValueError(ARTIFACT_BAD_ENCODING)
    params = {'id': artifact_id, 'offset': offset, 'length': length, 'encoding': encoding}
    return _artifact_call('artifact.read', params)


def artifact_save(artifact_id, path, *, overwrite=False):
    """Write an artifact to `path` (~ expanded, mode 0600) after verifying its SHA-256; an
    existing file is replaced only with overwrite=True. Returns {"artifact", "saved",
    "path"}."""
    _check_str(artifact_id, 'artifact_id')
    if type(overwrite) is not bool:
        raise TypeError(NOT_BOOL_OVERWRITE)
    params = {'id': artifact_id, 'path': _absolute_path(path), 'overwrite': overwrite}
    return _artifact_call('artifact.save', params)


def repl_export(path, *, overwrite=False):
    """Write this session's cells so far (not this one, which has not finished) as a
    Jupyter notebook to `path` (~ expanded), under artifact_save's rules: an existing file
    is replaced only with overwrite=True, its directory must exist. Returns {"path",
    "cells", "dropped", "bytes"}."""
    if type(overwrite) is not bool:
        raise TypeError(NOT_BOOL_OVERWRITE)
    return _artifact_call('notebook.export', {'path': _absolute_path(path), 'overwrite': overwrite})


def artifact_delete(artifact_id):
    """Drop an artifact; returns {"id", "deleted": true}."""
    _check_str(artifact_id, 'artifact_id')
    return _artifact_call('artifact.delete', {'id': artifact_id})


def artifact_forward(artifact_id, server, tool, argument, *, format='json'):
    """Call `tool` of MCP server `server` with the artifact's content as the tool argument
    named `argument`: parsed JSON (format "json"), UTF-8 text ("text") or a base64 string
    ("base64"); at most 512 KiB. Returns the CallToolResult envelope like mcp.call; a tool
    error raises ToolError with .result."""
    for value, name in ((artifact_id, 'artifact_id'), (server, 'server'), (tool, 'tool'), (argument, 'argument')):
        _check_str(value, name)
    if not (type(format) is str and format in ARTIFACT_FORWARD_FORMATS):
        raise ValueError(ARTIFACT_BAD_FORWARD_FORMAT)
    params = {'id': artifact_id, 'server': server, 'tool': tool, 'argument': argument, 'format': format}
    return to_envelope(RPCS.call('artifact.forward', params, MCP_OP_WAIT))


ARTIFACT_HELPERS = {
    'artifact': artifact, 'artifact_read': artifact_read, 'artifact_save': artifact_save,
    'artifact_delete': artifact_delete, 'artifact_forward': artifact_forward,
}


def auto_artifact_format(value):
    """The format of an automatic artifact for a trailing value, or None when its type
    never becomes one (docs/contract.md §9.4)."""
    cls = type(value)
    if cls is str:
        return 'text'
    if cls is bytes:
        return 'binary'
    if cls is list or cls is tuple or cls is dict or cls is ToolResult:
        return 'json'
    return None


async def auto_upload(value, format):
    """The task that uploads a trailing value (see cells.Worker._auto_artifact)."""
    return _upload_value(value, format)


async def output_upload(spool):
    """The task that uploads the complete text of a cut output stream (see
    cells.Worker._save_outputs)."""
    return upload_pieces(spool.pieces(), 'text')


def artifact_error(message):
    return utf8_prefix(message, ARTIFACT_ERROR_BYTES)[0]
