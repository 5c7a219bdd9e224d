"""Previews of values without running user code: the trailing value of a run as
`return_value` (and `value` when it is exact JSON), and the namespace inventory.

A preview (docs/contract.md §5.11) is, first that applies:

- an exact str, JSON-quoted; or a value made only of exact JSON builtins whose JSON fits
  PREVIEW_BYTES: that JSON, and `value` is the value;
- a rendering that reads like Python's repr, of exact builtins and of the well-known types
  of the standard library, numpy, pandas and matplotlib, within PREVIEW_BYTES. It says
  where it left something out (`... 29997 more`, pandas' and numpy's own `...`), and
  `truncated` is set exactly when it did;
- `<TypeName; safe preview omitted>` for anything else, and for a library value whose
  formatting raised.

No code of the user's runs: no __repr__, __iter__, __len__, property or metaclass hook of
a class the user defined. A class is a library's only when its module, read from the
type's own slot, is already in sys.modules (nothing is imported here) and names that very
class, so a subclass defined in a cell, or a class claiming a library's module, is not the
library's. A library's own formatting (pandas' to_string, numpy's array2string, a stdlib
repr) only ever sees data it can format without calling back into user code: first the
rows, columns and elements that will be shown are copied out of the value, then every
object cell, label and element in that small copy is replaced by its own safe preview.
Working on the shown part alone is also what bounds a preview's time, whatever the size of
the value: a 10,000,000-element array or a 1,000,000-row frame previews in milliseconds.

This module makes the preview, registers the worker's own types, and lists the namespace.
The rendering, reading types from their slots and the registry of renderers by class are
the core's (rendering.py); the renderers registered there are the standard library's
(stdpreviews.py), numpy's and pandas' (arraypreviews.py) and other libraries'
(libsummaries.py), all imported here so that every one is registered before a preview.
"""

import itertools
import math
import sys
import warnings

# Imported for what importing them does: register their renderers into the core.
from . import libsummaries, stdpreviews  # noqa: F401
from .arraypreviews import numpy_number
from .children import ShellResult
from .common import MISSING, json_text, type_name, utf8_prefix, utf8_size
from .limits import (
    INVENTORY_BYTES, INVENTORY_ENVELOPE, INVENTORY_LISTED, INVENTORY_SCANNED, INVENTORY_TYPE_CHARS, NAME_CHARS,
    PREVIEW_BYTES, PREVIEW_INT_BITS, PREVIEW_NESTING,
)
from .messages import PREVIEW_MORE_CHARS
from .rendering import (
    NotPreviewable, Rendering, builtin_of, cut_repr, fit, for_type, has_length, like_builtin, omitted, render,
)
from .toolfuncs import McpBridge, ToolLines, bridge_preview
from .toolresult import ToolResult


class _TooBig(Exception):
    """The value is exact JSON so far, but its JSON would not fit the preview."""


def _json_copy(value, depth, room, numbers=False):
    """A copy of `value` made of exact JSON builtins, or NotPreviewable. room[0] is a lower
    bound of the bytes its JSON may still take; passing it raises _TooBig, so the walk
    stops after at most about PREVIEW_BYTES values however big the value is. With
    `numbers`, numpy's numbers and bools count as the builtins they equal exactly."""
    cls = type(value)
    if numbers and cls is not bool and cls is not int and cls is not float:
        try:
            value = numpy_number(value, cls)
            cls = type(value)
        except NotPreviewable:
            pass
    cls = builtin_of(cls)
    if value is None or cls is bool:
        room[0] -= 4
        copy = value
    elif cls is int:
        bits = value.bit_length()
        if bits > PREVIEW_INT_BITS:
            raise NotPreviewable
        room[0] -= bits * 3 // 10 + 1  # decimal digits, at least
        copy = value
    elif cls is float:
        if not math.isfinite(value):
            raise NotPreviewable
        room[0] -= 3
        copy = value
    elif cls is str:
        room[0] -= len(value) + 2
        copy = value
    elif depth >= PREVIEW_NESTING:
        raise NotPreviewable
    elif cls is list or cls is tuple:
        room[0] -= 1 + len(value)
        if room[0] < 0:
            raise _TooBig
        copy = [_json_copy(item, depth + 1, room, numbers) for item in value]
    elif cls is dict:
        room[0] -= 1 + len(value)
        if room[0] < 0:
            raise _TooBig
        copy = {}
        for key, item in dict.items(value):
            if type(key) is not str:
                raise NotPreviewable
            room[0] -= len(key) + 3
            copy[key] = _json_copy(item, depth + 1, room, numbers)
    else:
        raise NotPreviewable
    if room[0] < 0:
        raise _TooBig
    return copy


# ---- The preview ----------------------------------------------------------------------------

def preview(value):
    """(return_value, JSON value or MISSING, truncated) without running user code;
    `truncated` says that the preview left something of the value out."""
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
        plain = _json_copy(value, 0, [PREVIEW_BYTES])
    except (NotPreviewable, _TooBig, RecursionError):
        plain = MISSING
    if plain is not MISSING:
        text = json_text(plain)
        if utf8_size(text) <= PREVIEW_BYTES:
            return text, plain, False
    try:
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')  # a library's warnings are not the cell's output
            room = PREVIEW_BYTES
            for _ in range(_BYTE_ATTEMPTS):  # rooms count characters; the bound is bytes
                state = Rendering()
                text = render(value, room, 0, state)
                size = utf8_size(text)
                if size <= PREVIEW_BYTES:
                    break
                room = room * PREVIEW_BYTES // size - 1
    except Exception:  # RecursionError, MemoryError: the preview must never fail the run
        return omitted(value), MISSING, False
    shown, _, complete = utf8_prefix(text, PREVIEW_BYTES)
    if state.cut or not complete:
        return shown, MISSING, True
    return shown, _numbers_value(value), False


def _numbers_value(value):
    """`value` for a value the preview rendered as Python shows it: its JSON when it is
    numpy numbers in exact builtin containers (np.float64(250.01), {'mean': np.float64(2.5)}),
    whose JSON a client reads as numbers; MISSING otherwise."""
    if 'numpy' not in sys.modules:
        return MISSING
    try:
        plain = _json_copy(value, 0, [PREVIEW_BYTES], numbers=True)
    except (NotPreviewable, _TooBig, RecursionError):
        return MISSING
    return plain if utf8_size(json_text(plain)) <= PREVIEW_BYTES else MISSING


# Renderings tried, each in a room shrunk by how much the last one's UTF-8 passed the
# bound, before the last is cut at PREVIEW_BYTES.
_BYTE_ATTEMPTS = 3


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
        if has_length(cls):
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


# ---- The worker's own types -------------------------------------------------------------------

def _shell_result(value, room, depth, state):
    text = str.__str__(value)  # its stdout
    return cut_repr(text, len(text), PREVIEW_MORE_CHARS, room, state)


for_type(ShellResult, _shell_result)
for_type(McpBridge, lambda value, room, depth, state: fit(bridge_preview(value), room, state))
like_builtin(ReplHistory, list)
like_builtin(ToolLines, list)
like_builtin(ToolResult, dict)
