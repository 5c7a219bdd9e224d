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

This module owns the preview, the rendering and its dispatch by class, reading types from
their slots, and the standard library's and matplotlib's types; numpy's arrays and
pandas' frames are arraypreviews.py's, library objects with no table to show
libsummaries.py's. Both use this module's helpers and are imported at its end.
"""

import itertools
import math
import sys
import types
import warnings

from .bridge import McpBridge, McpResult
from .children import ShellResult
from .toolfuncs import ToolLines
from .common import MISSING, json_text, type_name, utf8_prefix, utf8_size
from .limits import (
    INVENTORY_BYTES, INVENTORY_ENVELOPE, INVENTORY_LISTED, INVENTORY_SCANNED, INVENTORY_TYPE_CHARS,
    NAME_CHARS, PREVIEW_BYTES, PREVIEW_DEPTH, PREVIEW_INT_BITS, PREVIEW_ITEMS, PREVIEW_NESTING,
    PREVIEW_SORT_ITEMS, PREVIEW_STR_CHARS, TYPE_NAME_CHARS,
)
from .messages import (
    PREVIEW_BUILTIN, PREVIEW_CLASS, PREVIEW_FUNCTION, PREVIEW_INT_OMITTED, PREVIEW_MODULE,
    PREVIEW_MORE_BYTES, PREVIEW_MORE_CHARS, PREVIEW_MORE_ITEMS, PREVIEW_OMITTED, PREVIEW_OMITTED_LENGTH,
    PREVIEW_TOO_DEEP, PREVIEW_TOO_DEEP_OBJECT,
)


class NotPreviewable(Exception):
    """The value, or a part of it, is not a small exact JSON builtin."""


def plain_json(value, depth, budget):
    """A copy of `value` made of small exact JSON builtins (tuples become lists), within
    the bounds checkpoints keep to (docs/contract.md §7.2). Only exact builtin types are
    touched, so no user code (repr, iter, len, properties) can run."""
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
    if cls is list or cls is tuple or cls is ReplHistory or cls is ToolLines:
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
    elif cls is list or cls is tuple or cls is ReplHistory or cls is ToolLines:
        room[0] -= 1 + len(value)
        if room[0] < 0:
            raise _TooBig
        copy = [_json_copy(item, depth + 1, room, numbers) for item in value]
    elif cls is dict or cls is McpResult:
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


# ---- Reading types without running their code -------------------------------------------

_type_module_slot = type.__dict__['__module__'].__get__
_type_qualname_slot = type.__dict__['__qualname__'].__get__
_type_mro_slot = type.__dict__['__mro__'].__get__
_module_namespace = types.ModuleType.__dict__['__dict__'].__get__
_function_qualname = types.FunctionType.__dict__['__qualname__'].__get__
_builtin_qualname = types.BuiltinFunctionType.__dict__['__qualname__'].__get__

_STDLIB = frozenset(sys.stdlib_module_names)
# Libraries whose enum members and objects are recognised besides the standard library's.
_LIBRARIES = frozenset({'numpy', 'pandas', 'matplotlib', 'mpl_toolkits'})


def _namespace(module_name):
    """The namespace of an already imported module, or None; nothing is imported."""
    modules = sys.modules
    module = dict.get(modules, module_name) if type(modules) is dict else None
    if type(module) is not types.ModuleType:
        return None
    namespace = _module_namespace(module)
    return namespace if type(namespace) is dict else None


def _loaded(module_name, name):
    """`module_name.name` when that module is already imported, else None."""
    namespace = _namespace(module_name)
    return None if namespace is None else dict.get(namespace, name)


def _named(cls):
    """(top-level package, qualname) of a class that its own module, already imported,
    defines under that name; None for anything else (a class made in a cell, a subclass
    of a library's class defined elsewhere, a class whose __module__ lies)."""
    module = _type_module_slot(cls)
    qualname = _type_qualname_slot(cls)
    if type(module) is not str or type(qualname) is not str:
        return None
    namespace = _namespace(module)
    if namespace is None or dict.get(namespace, qualname) is not cls:
        return None
    return module.partition('.')[0], qualname


def _has_base(cls, base):
    return base is not None and any(c is base for c in _type_mro_slot(cls))


def _qualified(cls):
    """`module.QualName` from the type's slots, bare for builtins."""
    module, qualname = _type_module_slot(cls), _type_qualname_slot(cls)
    qualname = qualname if type(qualname) is str else type_name(cls)
    if type(module) is str and module != 'builtins':
        qualname = f'{module}.{qualname}'
    return qualname[:TYPE_NAME_CHARS]


# ---- The rendering ------------------------------------------------------------------------

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


class _Rendering:
    """What one preview's rendering shares. `cut`: something of the value was left out
    (the result's `truncated`); `squeezed`: something was left out for lack of room, so
    a container shows no more items after it; `active`: the containers being rendered
    (one that contains itself shows as [...], as in Python)."""

    __slots__ = ('cut', 'squeezed', 'active')

    def __init__(self):
        self.cut = False
        self.squeezed = False
        self.active = set()

    def squeeze(self):
        self.cut = self.squeezed = True

    def inner(self):
        """A state for the parts of one value (cells, elements, labels): what they leave
        out makes the value cut, but does not squeeze the container holding the value."""
        inner = _Rendering()
        inner.active = self.active
        return inner


def _fit(text, room, state):
    """`text` within `room` characters: cut at the end, as the last resort."""
    if len(text) <= room:
        return text
    state.squeeze()
    return text[:max(room, 0)]


def _cut_repr(value, length, more, room, state):
    """repr() of an exact str, bytes or bytearray, or of its longest prefix that fits
    `room` with the note of what was left out. Only the prefix is ever copied."""
    if length <= room:
        text = repr(value)
        if len(text) <= room:
            return text
    state.squeeze()
    keep = max(room - 40, 0)
    while True:
        text = repr(value[:keep]) + more.format(length - keep)
        if len(text) <= room or keep == 0:
            return _fit(text, room, state)
        keep = max(keep * room // len(text) - 1, 0)  # escapes made it longer: shrink


def _int_text(value):
    bits = value.bit_length()
    return repr(value) if bits <= PREVIEW_INT_BITS else PREVIEW_INT_OMITTED.format(bits)


# An item that does not fit whole is still shown, cut, when this much room is left for it.
_CUT_ITEM_ROOM = 200


def _items(pieces, length, opening, closing, room, state):
    """`opening item, item, ... N more closing`: `pieces` yields functions that render one
    item within a room; items are shown whole, in order, as long as they fit."""
    out, used, shown = [opening], len(opening) + len(closing), 0
    for piece in pieces:
        separator = ', ' if shown else ''
        left = room - used - len(separator) - len(PREVIEW_MORE_ITEMS.format(length)) - 2
        if left <= 0:
            break
        outer, state.squeezed = state.squeezed, False
        text = piece(left)
        squeezed, state.squeezed = state.squeezed, outer
        if squeezed and shown and left < _CUT_ITEM_ROOM:
            break  # a later item that would show little of itself is left out, not shown cut
        out.append(separator + text)
        used += len(separator) + len(text)
        shown += 1
        if squeezed:
            break
    if shown < length:
        out.append((', ' if shown else '') + PREVIEW_MORE_ITEMS.format(length - shown))
        state.squeeze()
    elif length == 1 and opening == '(':
        out.append(',')  # a one-item tuple
    out.append(closing)
    return ''.join(out)


def _container(value, length, opening, closing, empty, pieces, room, depth, state):
    if length == 0:
        return _fit(empty, room, state)
    if id(value) in state.active:
        return _fit(opening + '...' + closing, room, state)
    if depth >= PREVIEW_NESTING:
        state.cut = True
        return _fit(PREVIEW_TOO_DEEP.format(type_name(type(value)), length), room, state)
    state.active.add(id(value))
    try:
        return _items(pieces, length, opening, closing, room, state)
    finally:
        state.active.discard(id(value))


def _sequence_pieces(items, depth, state):
    for item in items:
        yield lambda left, item=item: _render(item, left, depth + 1, state)


def _pair_pieces(pairs, depth, state):
    for key, item in pairs:
        def piece(left, key=key, item=item):
            key_text = _render(key, left - 3, depth + 1, state)
            return key_text + ': ' + _render(item, left - len(key_text) - 2, depth + 1, state)
        yield piece


def _list(value, opening, closing, empty, room, depth, state):
    return _container(value, len(value), opening, closing, empty,
                      _sequence_pieces(value, depth, state), room, depth, state)


def _dict(value, opening, closing, empty, room, depth, state, pairs=None):
    pairs = dict.items(value) if pairs is None else pairs
    return _container(value, dict.__len__(value), opening, closing, empty,
                      _pair_pieces(pairs, depth, state), room, depth, state)


def _render(value, room, depth, state):
    """The safe rendering of any value within `room` characters."""
    cls = type(value)
    if value is None or cls is bool or cls is float or cls is complex:
        return _fit(repr(value), room, state)
    if cls is int:
        return _fit(_int_text(value), room, state)
    if cls is str:
        return _cut_repr(value, len(value), PREVIEW_MORE_CHARS, room, state)
    if cls is bytes or cls is bytearray:
        return _cut_repr(value, len(value), PREVIEW_MORE_BYTES, room, state)
    if cls is ShellResult:
        text = str.__str__(value)
        return _cut_repr(text, len(text), PREVIEW_MORE_CHARS, room, state)
    if cls is list or cls is ReplHistory or cls is ToolLines:
        return _list(value, '[', ']', '[]', room, depth, state)
    if cls is McpBridge:
        return _fit(McpBridge._preview(value), room, state)
    if cls is tuple:
        return _list(value, '(', ')', '()', room, depth, state)
    if cls is dict or cls is McpResult:
        return _dict(value, '{', '}', '{}', room, depth, state)
    if cls is set:
        return _list(value, '{', '}', 'set()', room, depth, state)
    if cls is frozenset:
        return _list(value, 'frozenset({', '})', 'frozenset()', room, depth, state)
    if cls is range or value is Ellipsis or value is NotImplemented:
        return _fit(repr(value), room, state)
    text = _described(value, cls)
    if text is not None:
        return _fit(text, room, state)
    named = _named(cls)
    if named is not None:
        if depth >= PREVIEW_NESTING or id(value) in state.active:
            state.cut = True
            return _fit(PREVIEW_TOO_DEEP_OBJECT.format(type_name(cls)), room, state)
        outer = state.cut, state.squeezed
        tracked = named not in _STDLIB_TYPES  # the stdlib's containers track themselves
        if tracked:
            state.active.add(id(value))  # an object array or a frame may hold itself
        try:
            text = _library(value, cls, named, room, depth, state)
        except Exception:  # the library's formatting failed: the omitted preview
            (state.cut, state.squeezed), text = outer, None
        finally:
            if tracked:
                state.active.discard(id(value))
        if text is not None:
            return _fit(text, room, state)
    return _fit(_omitted(value), room, state)


def _described(value, cls):
    """Classes, functions and modules, named from their slots."""
    if _has_base(cls, type):
        return PREVIEW_CLASS.format(_qualified(value))
    if cls is types.FunctionType:
        return PREVIEW_FUNCTION.format(str(_function_qualname(value))[:TYPE_NAME_CHARS])
    if cls is types.BuiltinFunctionType:
        return PREVIEW_BUILTIN.format(str(_builtin_qualname(value))[:TYPE_NAME_CHARS])
    if cls is types.ModuleType:
        namespace = _module_namespace(value)
        name = dict.get(namespace, '__name__') if type(namespace) is dict else None
        return PREVIEW_MODULE.format(name[:TYPE_NAME_CHARS] if type(name) is str else '?')
    return None


# ---- The standard library -----------------------------------------------------------------

def _safe_tz(tz):
    """Whether a tzinfo's methods are the library's: none, or the stdlib's, pytz's or
    dateutil's own classes. pandas and datetime call utcoffset() to format a time."""
    if tz is None:
        return True
    named = _named(type(tz))
    return named is not None and (named in (('datetime', 'timezone'), ('zoneinfo', 'ZoneInfo'))
                                  or named[0] in ('pytz', 'dateutil'))


def _repr(value, cls, room, depth, state):
    return repr(value)


def _zoned(value, cls, room, depth, state):
    """A datetime or time: its repr, with a tzinfo of the user's previewed on its own."""
    tz = value.tzinfo
    if _safe_tz(tz):
        return repr(value)
    naive = repr(value.replace(tzinfo=None))
    return naive[:-1] + ', tzinfo=' + _render(tz, 200, depth + 1, state.inner()) + ')'


def _fraction(value, cls, room, depth, state):
    if max(value.numerator.bit_length(), value.denominator.bit_length()) > PREVIEW_INT_BITS:
        return None
    return repr(value)


def _deque(value, cls, room, depth, state):
    maxlen = value.maxlen
    closing = '])' if maxlen is None else f'], maxlen={maxlen})'
    return _list(value, 'deque([', closing, 'deque([]' + closing[1:], room, depth, state)


def _counter(value, cls, room, depth, state):
    pairs = dict.items(value)
    size = dict.__len__(value)
    if size <= PREVIEW_SORT_ITEMS and all(type(count) is int for count in dict.values(value)):
        # most_common() order, as Counter's repr; the counts are exact ints, so sorting runs
        # no user code.
        pairs = sorted(pairs, key=lambda pair: pair[1], reverse=True)
    return _dict(value, 'Counter({', '})', 'Counter()', room, depth, state, pairs)


def _ordered_dict(value, cls, room, depth, state):
    # Its own order (move_to_end changes it), from the exact class's own items().
    return _dict(value, 'OrderedDict({', '})', 'OrderedDict()', room, depth, state, cls.items(value))


def _defaultdict(value, cls, room, depth, state):
    factory = _render(value.default_factory, 200, depth + 1, state.inner())
    return _dict(value, f'defaultdict({factory}, {{', '})', f'defaultdict({factory}, {{}})', room, depth, state)


_PATHS = ('PurePath', 'PurePosixPath', 'PureWindowsPath', 'Path', 'PosixPath', 'WindowsPath')

_STDLIB_TYPES = {
    ('datetime', 'date'): _repr, ('datetime', 'timedelta'): _repr, ('datetime', 'timezone'): _repr,
    ('datetime', 'datetime'): _zoned, ('datetime', 'time'): _zoned, ('zoneinfo', 'ZoneInfo'): _repr,
    ('decimal', 'Decimal'): _repr, ('fractions', 'Fraction'): _fraction, ('uuid', 'UUID'): _repr,
    ('collections', 'deque'): _deque, ('collections', 'Counter'): _counter,
    ('collections', 'OrderedDict'): _ordered_dict, ('collections', 'defaultdict'): _defaultdict,
    **{('pathlib', name): _repr for name in _PATHS},
}


def _library(value, cls, named, room, depth, state):
    """The rendering of a value whose class a library (the standard library included)
    defines, or None when it has none."""
    render = _STDLIB_TYPES.get(named) or _PANDAS_TYPES.get(named) or _NUMPY_TYPES.get(named)
    if render is not None:
        return render(value, cls, room, depth, state)
    top = named[0]
    if top == 'numpy' and _has_base(cls, _loaded('numpy', 'generic')):
        return _numpy_scalar(value, cls, room, depth, state)
    if top in ('matplotlib', 'mpl_toolkits'):
        return _matplotlib(value, cls, named, room, depth, state)
    summary = library_summary(value, cls, named, room, depth, state) if top in _SUMMARISED else None
    if summary is not None:
        return summary
    if (top in _STDLIB or top in _LIBRARIES) and _has_base(cls, _loaded('enum', 'Enum')):
        return repr(value)  # a member of an enum the library defines: its values are the library's
    return None


# ---- matplotlib -----------------------------------------------------------------------------

def _matplotlib(value, cls, named, room, depth, state):
    """Figures and Axes as matplotlib describes them (their size and Axes; their titles
    and labels), Text with its position and string. The image is display()'s business."""
    qualname = named[1]
    if qualname in ('Figure', 'SubFigure'):
        return repr(value)  # <Figure size 640x480 with 1 Axes>
    if _has_base(cls, _loaded('matplotlib.axes._base', '_AxesBase')):
        return repr(value)  # <Axes: title={'center': 'x'}, xlabel='t'>: strings only
    if named == ('matplotlib', 'Text'):
        x, y = value.get_position()
        inner = state.inner()
        parts = [_render(part, 100, depth + 1, inner) for part in (x, y, value.get_text())]
        state.cut = state.cut or inner.cut
        return 'Text(' + ', '.join(parts) + ')'
    return None


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
                state = _Rendering()
                text = _render(value, room, 0, state)
                size = utf8_size(text)
                if size <= PREVIEW_BYTES:
                    break
                room = room * PREVIEW_BYTES // size - 1
    except Exception:  # RecursionError, MemoryError: the preview must never fail the run
        return _omitted(value), MISSING, False
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


# Imported last: the numpy and pandas previews and the summaries use this module's helpers.
from .arraypreviews import _NUMPY_TYPES, _PANDAS_TYPES, _numpy_scalar, numpy_number  # noqa: E402
from .libsummaries import SUMMARISED as _SUMMARISED, library_summary  # noqa: E402

# libsummaries reads these as previews._NAME.
from .arraypreviews import _OBJECTS, _PLAIN, _formats_itself, _frame, _index_kind  # noqa: E402, F401
