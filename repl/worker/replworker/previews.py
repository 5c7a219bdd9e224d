"""Previews of values without running user code: the trailing value of a run as
`return_value` (and `value` when it is exact JSON), and the namespace inventory."""

import itertools
import math

from .bridge import McpResult
from .children import ShellResult
from .common import MISSING, json_text, type_name, utf8_prefix, utf8_size
from .limits import (
    HISTORY_PREVIEW_NODES, INVENTORY_BYTES, INVENTORY_ENVELOPE, INVENTORY_LISTED, INVENTORY_SCANNED,
    INVENTORY_TYPE_CHARS, NAME_CHARS, PREVIEW_BYTES, PREVIEW_DEPTH, PREVIEW_INT_BITS, PREVIEW_ITEMS,
    PREVIEW_NODES, PREVIEW_STR_CHARS,
)
from .messages import PREVIEW_OMITTED, PREVIEW_OMITTED_LENGTH


class NotPreviewable(Exception):
    """The value, or a part of it, is not a small exact JSON builtin."""


def plain_json(value, depth, budget):
    """A copy of `value` made of exact JSON builtins (tuples become lists). Only exact
    builtin types are touched, so no user code (repr, iter, len, properties) can run."""
    budget[0] -= 1
    if budget[0] < 0:
        raise NotPreviewable
    cls = type(value)
    if value is None or cls is bool:
        return value
    if cls is int:
        if value.bit_length() > PREVIEW_INT_BITS:
            raise NotPreviewable
        return value
    if cls is float:
        if not math.isfinite(value):
            raise NotPreviewable
        return value
    if cls is str:
        if len(value) > PREVIEW_STR_CHARS:
            raise NotPreviewable
        return value
    if depth >= PREVIEW_DEPTH:
        raise NotPreviewable
    if cls is list or cls is tuple or cls is ReplHistory:
        if len(value) > PREVIEW_ITEMS:
            raise NotPreviewable
        return [plain_json(item, depth + 1, budget) for item in value]
    if cls is dict or cls is McpResult:
        if len(value) > PREVIEW_ITEMS:
            raise NotPreviewable
        plain = {}
        for key, item in value.items():
            if type(key) is not str or len(key) > PREVIEW_STR_CHARS:
                raise NotPreviewable
            plain[key] = plain_json(item, depth + 1, budget)
        return plain
    raise NotPreviewable


_LENGTH_SHOWN = (str, bytes, list, tuple, dict, set, frozenset)


def _has_length(cls):
    # Identity checks only: `in` would run a metaclass __eq__.
    return any(cls is shown for shown in _LENGTH_SHOWN)


def _omitted(value):
    cls = type(value)
    name = type_name(cls)
    if _has_length(cls):
        return PREVIEW_OMITTED_LENGTH.format(name, len(value))
    return PREVIEW_OMITTED.format(name)


def preview(value):
    """(return_value, JSON value or MISSING, truncated) without running user code."""
    if value is None:
        return None, MISSING, False
    cls = type(value)
    if cls is str or cls is ShellResult:
        value = str.__str__(value)  # a ShellResult previews as its stdout, an exact str
        shown, _, complete = utf8_prefix(json_text(value[:PREVIEW_BYTES]), PREVIEW_BYTES)
        if complete and len(value) <= PREVIEW_BYTES:
            return shown, value, False
        return shown, MISSING, True
    try:
        plain = plain_json(value, 0, [HISTORY_PREVIEW_NODES if cls is ReplHistory else PREVIEW_NODES])
    except NotPreviewable:
        return _omitted(value), MISSING, True
    text = json_text(plain)
    if utf8_size(text) <= PREVIEW_BYTES:
        return text, plain, False
    return _omitted(value), MISSING, True


def inventory(namespace, reserved):
    """repl_namespace(): names, exact type names and builtin lengths of the user's variables.
    No value is read beyond its type slot and the length of exact builtins."""
    variables = []
    room = INVENTORY_BYTES - INVENTORY_ENVELOPE
    for name, value in list(itertools.islice(namespace.items(), INVENTORY_SCANNED)):
        if len(variables) >= INVENTORY_LISTED:
            break
        if type(name) is not str or len(name) > NAME_CHARS or name in reserved:
            continue
        cls = type(value)
        entry = {'name': name, 'type': type_name(cls)[:INVENTORY_TYPE_CHARS]}
        if _has_length(cls):
            entry['length'] = len(value)
        room -= utf8_size(json_text(entry)) + 1
        if room < 0:
            break
        variables.append(entry)
    return {
        'variables': variables,
        'total_namespace_entries': len(namespace),
        'omitted_including_helpers': len(namespace) - len(variables),
        'values_included': False,
    }


class ReplHistory(list):
    """What repl_history() returns: a list whose preview may hold every retained run."""

