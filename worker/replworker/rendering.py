"""The rendering core of previews (docs/contract.md §5.11): the budget a rendering keeps
to, the helpers every renderer uses, and one registry that the standard library's
(stdpreviews), numpy's and pandas' (arraypreviews) and the other libraries' renderers
(libsummaries) register into; previews.py makes a preview with them.

A renderer is registered for a class named by its top-level package and its qualname
(`for_type_by_name`, as IPython's pretty printer's), and looked up by the name read from
the value's type slots, so nothing is ever imported to find one. A class is a library's
only when its module, already in sys.modules, names that very class (`name_of`): a subclass
defined in a cell, or a class claiming a library's module, is not the library's. The key
is the top-level package, not the defining module, since libraries define their classes
in private modules that move between versions (pandas.core.frame.DataFrame). A package
may also register a fallback for its classes that have no renderer of their own
(`for_package`). The worker's own classes are registered by identity (`for_type`), or
as previewing exactly like the list or dict they derive from (`like_builtin`).

No code of the user's runs here: no __repr__, __iter__, __len__, property or metaclass
hook of a class the user defined. Types are compared by identity (never `in`, which would
run a metaclass __eq__) and read through type's own slots.
"""

import math
import sys
import types

from .common import type_name
from .limits import (
    PREVIEW_DEPTH, PREVIEW_INT_BITS, PREVIEW_ITEMS, PREVIEW_NESTING, PREVIEW_STR_CHARS, TYPE_NAME_CHARS,
)
from .messages import (
    PREVIEW_BUILTIN, PREVIEW_CLASS, PREVIEW_FUNCTION, PREVIEW_INT_OMITTED, PREVIEW_MODULE, PREVIEW_MORE_BYTES,
    PREVIEW_MORE_CHARS, PREVIEW_MORE_ITEMS, PREVIEW_OMITTED, PREVIEW_OMITTED_LENGTH, PREVIEW_TOO_DEEP,
    PREVIEW_TOO_DEEP_OBJECT,
)


class NotPreviewable(Exception):
    """The value, or a part of it, is not a small exact JSON builtin."""


# ---- The registry ---------------------------------------------------------------------------

_BY_NAME = {}  # (top-level package, qualname) -> (render, tracks_itself)
_BY_PACKAGE = {}  # top-level package -> fallback
_BY_CLASS = {}  # id(class) -> (class, render): ids, since hashing a class may run its metaclass
_LIKE_BUILTIN = {}  # id(class) -> (class, list or dict)


def for_type_by_name(package, qualname, render, tracks_itself=False):
    """Render the class `qualname` of the top-level package `package` with
    render(value, cls, room, depth, state), which returns the text or None (then the
    value's preview is the omitted one). Unless `tracks_itself` (a container rendered by
    sequence() or mapping(), or a value that cannot hold itself), the value is marked
    active while it renders, so that an object array or a frame holding itself shows as
    too deep. Returns the renderer it
    replaces, or None."""
    old = _BY_NAME.get((package, qualname))
    _BY_NAME[(package, qualname)] = (render, tracks_itself)
    return None if old is None else old[0]


def for_package(package, fallback):
    """Render the classes of `package` that have no renderer of their own with
    fallback(value, cls, named, room, depth, state); its answer is final (None: omitted)."""
    _BY_PACKAGE[package] = fallback


def for_type(cls, render):
    """Render the worker's own class `cls` (exactly) with render(value, room, depth, state),
    which returns the text within room."""
    _BY_CLASS[id(cls)] = (cls, render)


def like_builtin(cls, builtin):
    """The worker's own subclass `cls` of list or dict previews, and converts to JSON,
    exactly as that builtin does."""
    _LIKE_BUILTIN[id(cls)] = (cls, builtin)


def builtin_of(cls):
    """The builtin a class registered by like_builtin stands for, else the class itself."""
    like = dict.get(_LIKE_BUILTIN, id(cls))
    return like[1] if like is not None and like[0] is cls else cls


# ---- Reading types without running their code -------------------------------------------

type_module = type.__dict__['__module__'].__get__
type_qualname = type.__dict__['__qualname__'].__get__
_type_mro = type.__dict__['__mro__'].__get__
_module_namespace = types.ModuleType.__dict__['__dict__'].__get__
_function_qualname = types.FunctionType.__dict__['__qualname__'].__get__
_builtin_qualname = types.BuiltinFunctionType.__dict__['__qualname__'].__get__

_STDLIB = frozenset(sys.stdlib_module_names)


def namespace(module_name):
    """The namespace of an already imported module, or None; nothing is imported."""
    modules = sys.modules
    module = dict.get(modules, module_name) if type(modules) is dict else None
    if type(module) is not types.ModuleType:
        return None
    found = _module_namespace(module)
    return found if type(found) is dict else None


def loaded(module_name, name):
    """`module_name.name` when that module is already imported, else None."""
    found = namespace(module_name)
    return None if found is None else dict.get(found, name)


def name_of(cls):
    """(top-level package, qualname) of a class that its own module, already imported,
    defines under that name; None for anything else (a class made in a cell, a subclass
    of a library's class defined elsewhere, a class whose __module__ lies)."""
    module = type_module(cls)
    qualname = type_qualname(cls)
    if type(module) is not str or type(qualname) is not str:
        return None
    found = namespace(module)
    if found is None or dict.get(found, qualname) is not cls:
        return None
    return module.partition('.')[0], qualname


def has_base(cls, base):
    return base is not None and any(c is base for c in _type_mro(cls))


def qualified(cls):
    """`module.QualName` from the type's slots, bare for builtins."""
    module, qualname = type_module(cls), type_qualname(cls)
    qualname = qualname if type(qualname) is str else type_name(cls)
    if type(module) is str and module != 'builtins':
        qualname = f'{module}.{qualname}'
    return qualname[:TYPE_NAME_CHARS]


def enum_member(value, cls):
    """repr() of a member of an enum (its values are its module's), else None: the
    standard library's enums get it, and a library's fallback may give it to its own."""
    return repr(value) if has_base(cls, loaded('enum', 'Enum')) else None


# ---- JSON of exact builtins -------------------------------------------------------------

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
    cls = builtin_of(cls)
    if cls is list or cls is tuple:
        if len(value) > PREVIEW_ITEMS:
            raise NotPreviewable
        return [plain_json(item, depth + 1, budget) for item in value]
    if cls is dict:
        if len(value) > PREVIEW_ITEMS:
            raise NotPreviewable
        plain = {}
        for key, item in value.items():
            if type(key) is not str or len(key) > PREVIEW_STR_CHARS:
                raise NotPreviewable
            plain[key] = plain_json(item, depth + 1, budget)
        return plain
    raise NotPreviewable


# ---- The rendering ------------------------------------------------------------------------

_LENGTH_SHOWN = (str, bytes, list, tuple, dict, set, frozenset)


def has_length(cls):
    # Identity checks only: `in` would run a metaclass __eq__.
    return any(cls is shown for shown in _LENGTH_SHOWN)


def omitted(value):
    cls = type(value)
    name = type_name(cls)
    if has_length(cls):
        return PREVIEW_OMITTED_LENGTH.format(name, len(value))
    return PREVIEW_OMITTED.format(name)


class Rendering:
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
        inner = Rendering()
        inner.active = self.active
        return inner


def fit(text, room, state):
    """`text` within `room` characters: cut at the end, as the last resort."""
    if len(text) <= room:
        return text
    state.squeeze()
    return text[:max(room, 0)]


def cut_repr(value, length, more, room, state):
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
            return fit(text, room, state)
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
        return fit(empty, room, state)
    if id(value) in state.active:
        return fit(opening + '...' + closing, room, state)
    if depth >= PREVIEW_NESTING:
        state.cut = True
        return fit(PREVIEW_TOO_DEEP.format(type_name(type(value)), length), room, state)
    state.active.add(id(value))
    try:
        return _items(pieces, length, opening, closing, room, state)
    finally:
        state.active.discard(id(value))


def _sequence_pieces(items, depth, state):
    for item in items:
        yield lambda left, item=item: render(item, left, depth + 1, state)


def _pair_pieces(pairs, depth, state):
    for key, item in pairs:
        def piece(left, key=key, item=item):
            key_text = render(key, left - 3, depth + 1, state)
            return key_text + ': ' + render(item, left - len(key_text) - 2, depth + 1, state)
        yield piece


def sequence(value, opening, closing, empty, room, depth, state):
    """The items of a list, tuple, set or deque between `opening` and `closing`, as many
    as fit, then how many more; `empty` when there are none."""
    return _container(value, len(value), opening, closing, empty,
                      _sequence_pieces(value, depth, state), room, depth, state)


def mapping(value, opening, closing, empty, room, depth, state, pairs=None):
    """The pairs of a dict (dict.items, or `pairs` in their order) as sequence() shows items."""
    pairs = dict.items(value) if pairs is None else pairs
    return _container(value, dict.__len__(value), opening, closing, empty,
                      _pair_pieces(pairs, depth, state), room, depth, state)


def render(value, room, depth, state):
    """The safe rendering of any value within `room` characters."""
    cls = type(value)
    if value is None or cls is bool or cls is float or cls is complex:
        return fit(repr(value), room, state)
    if cls is int:
        return fit(_int_text(value), room, state)
    if cls is str:
        return cut_repr(value, len(value), PREVIEW_MORE_CHARS, room, state)
    if cls is bytes or cls is bytearray:
        return cut_repr(value, len(value), PREVIEW_MORE_BYTES, room, state)
    own = dict.get(_BY_CLASS, id(cls))
    if own is not None and own[0] is cls:
        return own[1](value, room, depth, state)
    cls = builtin_of(cls)
    if cls is list:
        return sequence(value, '[', ']', '[]', room, depth, state)
    if cls is tuple:
        return sequence(value, '(', ')', '()', room, depth, state)
    if cls is dict:
        return mapping(value, '{', '}', '{}', room, depth, state)
    if cls is set:
        return sequence(value, '{', '}', 'set()', room, depth, state)
    if cls is frozenset:
        return sequence(value, 'frozenset({', '})', 'frozenset()', room, depth, state)
    if cls is range or value is Ellipsis or value is NotImplemented:
        return fit(repr(value), room, state)
    text = _described(value, cls)
    if text is not None:
        return fit(text, room, state)
    name = name_of(cls)
    if name is not None:
        if depth >= PREVIEW_NESTING or id(value) in state.active:
            state.cut = True
            return fit(PREVIEW_TOO_DEEP_OBJECT.format(type_name(cls)), room, state)
        outer = state.cut, state.squeezed
        entry = _BY_NAME.get(name)
        tracked = entry is None or not entry[1]
        if tracked:
            state.active.add(id(value))  # an object array or a frame may hold itself
        try:
            text = _library(value, cls, name, entry, room, depth, state)
        except Exception:  # the library's formatting failed: the omitted preview
            (state.cut, state.squeezed), text = outer, None
        finally:
            if tracked:
                state.active.discard(id(value))
        if text is not None:
            return fit(text, room, state)
    return fit(omitted(value), room, state)


def _described(value, cls):
    """Classes, functions and modules, named from their slots."""
    if has_base(cls, type):
        return PREVIEW_CLASS.format(qualified(value))
    if cls is types.FunctionType:
        return PREVIEW_FUNCTION.format(str(_function_qualname(value))[:TYPE_NAME_CHARS])
    if cls is types.BuiltinFunctionType:
        return PREVIEW_BUILTIN.format(str(_builtin_qualname(value))[:TYPE_NAME_CHARS])
    if cls is types.ModuleType:
        found = _module_namespace(value)
        name = dict.get(found, '__name__') if type(found) is dict else None
        return PREVIEW_MODULE.format(name[:TYPE_NAME_CHARS] if type(name) is str else '?')
    return None


def _library(value, cls, name, entry, room, depth, state):
    """The rendering of a value whose class a library (the standard library included)
    defines, or None when it has none: its own renderer, else its package's fallback,
    else, for the standard library, the repr of an enum member."""
    if entry is not None:
        return entry[0](value, cls, room, depth, state)
    fallback = _BY_PACKAGE.get(name[0])
    if fallback is not None:
        return fallback(value, cls, name, room, depth, state)
    return enum_member(value, cls) if name[0] in _STDLIB else None
