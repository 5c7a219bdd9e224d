"""Previews of numpy and pandas values (docs/contract.md §5.11): numpy arrays, scalars and
dtypes; pandas DataFrames, Series, Indexes and scalars; and the cells, labels and elements
inside them, each replaced by its own safe preview before numpy or pandas formats the
copy. Also the pandas display options a frame's preview honours.

The rules are the rendering core's (rendering.py), into which this module registers its
renderers: only the rows, columns and elements that will be shown are copied out of the
value, and nothing of the user's runs.
"""

import math
import sys

from .common import type_name
from .limits import (
    ARRAY_EDGE_ITEMS, ARRAY_ITEM_CHARS, ARRAY_SHOWN_ITEMS, ARRAY_THRESHOLD, FRAME_COLUMNS, FRAME_COLUMNS_MAX,
    FRAME_COLWIDTH, FRAME_ROWS, FRAME_ROWS_MAX, FRAME_ROWS_SHORT, INDEX_ITEMS, PREVIEW_INT_BITS, PREVIEW_ITEMS,
)
from .messages import (
    PREVIEW_ARRAY, PREVIEW_ARRAY_OMITTED, PREVIEW_FRAME_SHAPE, PREVIEW_MORE_BYTES, PREVIEW_MORE_CHARS,
    PREVIEW_SIZED,
)
from .rendering import (
    NotPreviewable, cut_repr, enum_member, fit, for_package, for_type_by_name, has_base, loaded, name_of, plain_json,
    render, type_qualname,
)
from .stdpreviews import PATHS, repr_of, safe_tz

# ---- numpy ----------------------------------------------------------------------------------

class _Shown:
    """An element of an object array replaced by its safe preview: numpy formats object
    elements with repr(), which here is our own."""

    __slots__ = ('text',)

    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return self.text


def _numpy_dtype(dtype):
    """Whether a dtype is numpy's own (a user-defined DType is not)."""
    named = name_of(type(dtype))
    return named is not None and named[0] == 'numpy'


def _dtype_text(dtype):
    """The dtype as numpy's repr writes it: `float64`, `'<U5'`, `'datetime64[ns]'`."""
    name = dtype.name
    if dtype.names is None and dtype.kind not in 'USV' and dtype.isnative and name.isalnum():
        return name
    return repr(str(dtype))


def _ndarray(value, cls, room, depth, state):
    np = sys.modules['numpy']
    dtype = value.dtype
    if not _numpy_dtype(dtype):
        return None
    objects = dtype.kind in 'OUST'  # elements numpy would repr(), or strings of any length
    if dtype.hasobject and dtype.kind != 'O':
        return None  # structured, with objects inside
    shape = tuple(int(n) for n in value.shape)
    tail = PREVIEW_ARRAY.format(repr(shape), _dtype_text(dtype))
    sub, threshold, edge = value, sys.maxsize, ARRAY_EDGE_ITEMS
    if value.size > ARRAY_THRESHOLD:
        for edge in range(ARRAY_EDGE_ITEMS, 0, -1):
            if math.prod(min(n, 2 * edge) for n in shape) <= ARRAY_SHOWN_ITEMS:
                break
        else:
            state.cut = True
            return PREVIEW_ARRAY_OMITTED.format(repr(shape), _dtype_text(dtype))
        # Copy out the shown edges, plus one middle element along each long axis so that
        # numpy itself still summarises that axis with its `...`.
        for axis, n in enumerate(shape):
            if n > 2 * edge:
                sub = np.take(sub, [*range(edge), n // 2, *range(n - edge, n)], axis=axis)
        threshold = 0
        state.cut = True
    if objects:
        elements = sub.astype(object) if dtype.kind != 'O' else sub
        shown = np.empty(sub.shape, dtype=object)
        inner = state.inner()
        for index in np.ndindex(sub.shape):
            shown[index] = _Shown(_part(elements[index], ARRAY_ITEM_CHARS, depth + 1, inner))
        state.cut = state.cut or inner.cut
        sub = shown
    # printoptions also resets any formatter and override_repr the user installed.
    with np.printoptions(threshold=threshold, edgeitems=edge):
        body = np.array2string(sub, separator=', ', prefix='array(')
        width = np.get_printoptions()['linewidth']
    # As numpy's repr: shape and dtype on a line of their own when the last one is full.
    head = 'array(' + body + ','
    last = len(head) - (head.rfind('\n') + 1)
    return head + (' ' if last + len(tail) + 1 <= width else '\n      ') + tail


def _numpy_scalar(value, cls, room, depth, state):
    np = sys.modules['numpy']
    if has_base(cls, np.void):
        return None if value.dtype.hasobject else repr(value)
    for base, more in ((str, PREVIEW_MORE_CHARS), (bytes, PREVIEW_MORE_BYTES)):
        if has_base(cls, base):  # np.str_ and np.bytes_: the text may be long
            data = base(value)
            return f'np.{type_qualname(cls)}(' + cut_repr(data, len(data), more, room - 12, state) + ')'
    return repr(value)


def numpy_number(value, cls):
    """The JSON builtin a numpy bool, integer or floating scalar equals exactly, or
    NotPreviewable: `value` carries it (docs/contract.md §4.1), so that a client reading
    JSON gets 250.01 where Python shows np.float64(250.01). Only numpy's own classes
    (name_of: not a subclass made in a cell), and only values a JSON number holds exactly:
    finite floats of at most 64 bits, integers within PREVIEW_INT_BITS."""
    named = name_of(cls)
    if named is None or named[0] != 'numpy':
        raise NotPreviewable
    if has_base(cls, loaded('numpy', 'bool_')):
        return bool(value)
    if has_base(cls, loaded('numpy', 'integer')):
        number = int(value)
        if number.bit_length() > PREVIEW_INT_BITS:
            raise NotPreviewable
        return number
    if has_base(cls, loaded('numpy', 'floating')) and value.dtype.itemsize <= 8:
        number = float(value)
        if math.isfinite(number):
            return number
    raise NotPreviewable


# ---- pandas ---------------------------------------------------------------------------------

# pandas' own extension dtypes; any other (one a user registered) may run user code.
_PANDAS_PLAIN_DTYPES = frozenset({
    'BooleanDtype', 'Int8Dtype', 'Int16Dtype', 'Int32Dtype', 'Int64Dtype', 'UInt8Dtype',
    'UInt16Dtype', 'UInt32Dtype', 'UInt64Dtype', 'Float32Dtype', 'Float64Dtype', 'PeriodDtype',
})
_PANDAS_INDEXES = frozenset({
    'Index', 'RangeIndex', 'DatetimeIndex', 'TimedeltaIndex', 'PeriodIndex', 'CategoricalIndex',
    'IntervalIndex', 'MultiIndex',
})
PLAIN, OBJECTS = 'plain', 'objects'


def _dtype_kind(dtype):
    """PLAIN: the library formats these values itself; OBJECTS: the values are Python
    objects (or strings of any length), to be replaced by their safe previews; None: not
    previewable without running code that may be the user's."""
    named = name_of(type(dtype))
    if named is None:
        return None
    top, qualname = named
    if top == 'numpy':
        if dtype.kind in 'OUST':
            return OBJECTS if not dtype.hasobject or dtype.kind == 'O' else None
        return None if dtype.hasobject else PLAIN
    if top != 'pandas':
        return None
    if qualname in _PANDAS_PLAIN_DTYPES:
        return PLAIN
    if qualname == 'StringDtype':
        return OBJECTS
    if qualname == 'DatetimeTZDtype':
        return PLAIN if safe_tz(dtype.tz) else None
    if qualname in ('IntervalDtype', 'SparseDtype'):
        subtype = dtype.subtype
        return PLAIN if subtype is None or _dtype_kind(subtype) == PLAIN else None
    if qualname == 'CategoricalDtype':
        categories = dtype.categories
        return PLAIN if categories is None else index_kind(categories)
    return None


def index_kind(index):
    """_dtype_kind for a pandas Index (of a MultiIndex, the least previewable level)."""
    named = name_of(type(index))
    if named is None or named[0] != 'pandas' or named[1] not in _PANDAS_INDEXES:
        return None
    if named[1] == 'MultiIndex':
        kinds = [index_kind(level) for level in index.levels]
        return None if None in kinds else OBJECTS if OBJECTS in kinds else PLAIN
    return _dtype_kind(index.dtype)


def _plain_attrs(value):
    """pandas deep-copies `attrs` into every derived frame: only plain JSON there is safe."""
    try:
        plain_json(value.attrs, 0, [PREVIEW_ITEMS])
    except NotPreviewable:
        return False
    return True


_CELL_SCALARS = frozenset({
    ('decimal', 'Decimal'), ('datetime', 'date'), ('datetime', 'timedelta'), ('uuid', 'UUID'),
    ('pandas', 'Timedelta'), ('pandas', 'Period'), ('pandas', 'NAType'), ('pandas', 'NaTType'),
    *(('pathlib', name) for name in PATHS),
})
_ZONED_SCALARS = frozenset({('datetime', 'datetime'), ('datetime', 'time'), ('pandas', 'Timestamp')})


def formats_itself(value):
    """Whether pandas may format `value` itself: its str() and repr() are library code
    that calls nothing of the user's."""
    cls = type(value)
    if value is None or cls is bool or cls is float or cls is complex or cls is str:
        return True
    if cls is int:
        return value.bit_length() <= PREVIEW_INT_BITS
    named = name_of(cls)
    if named is None:
        return False
    if named in _CELL_SCALARS:
        return True
    if named in _ZONED_SCALARS:
        return safe_tz(value.tzinfo)
    # numpy's numbers, bools, datetimes; not its strings, bytes and structured scalars.
    return named[0] == 'numpy' and has_base(cls, loaded('numpy', 'generic')) and not has_base(cls, loaded('numpy', 'flexible'))


def _cell(value, depth, state):
    """What an object cell, label or element becomes before pandas formats it: the value
    itself when pandas may format it, else its safe preview."""
    if type(value) is str:
        if len(value) <= FRAME_COLWIDTH:
            return value
        state.cut = True
        return value[:FRAME_COLWIDTH + 1]  # pandas cuts it to the column width with its `...`
    if formats_itself(value):
        return value
    return _part(value, FRAME_COLWIDTH + 1, depth + 1, state)


# Arrays with at most this many elements show whole inside a cell or an element.
_SMALL_ARRAY = 10


def _part(value, room, depth, state):
    """The preview of a cell of a frame or an element of an array, in a small room: a
    frame, a Series, an Index or a larger array in there is only named with its size, so
    a table of tables costs one table's time."""
    named = name_of(type(value))
    if named is not None and named[0] in ('pandas', 'numpy'):
        kind, name = named[1], type_name(type(value))
        if kind == 'DataFrame' or kind in _PANDAS_INDEXES or kind == 'Series' or (kind == 'ndarray' and value.size > _SMALL_ARRAY):
            state.cut = True
            return PREVIEW_SIZED.format(name, repr(tuple(int(n) for n in value.shape)))
    return render(value, room, depth, state)


def _cells(values, depth, state):
    """The previews of the values of a Series or an Index, as an object array."""
    np = sys.modules['numpy']
    # to_numpy, a real method: np.asarray would probe attributes such as
    # __array_interface__ that a Series lacks, and pandas' __getattr__ then looks the name
    # up among the index labels, hashing them, which may be user objects.
    values = values.to_numpy(dtype=object)
    shown = np.empty(len(values), dtype=object)
    for i, value in enumerate(values):
        shown[i] = _cell(value, depth, state)
    return shown


def _label(name, depth, state):
    """A label or name as pandas may show it: plain ones as they are, others previewed."""
    cls = type(name)
    if name is None or cls is bool or cls is int or cls is float or cls is str:
        return _cell(name, depth, state)
    return _part(name, FRAME_COLWIDTH, depth + 1, state)


def _shown_index(index, depth, state):
    """The labels of the shown rows or columns with every object replaced by its preview."""
    pd = sys.modules['pandas']
    if name_of(type(index)) == ('pandas', 'MultiIndex'):
        levels = []
        for i in range(index.nlevels):
            values = index.get_level_values(i)
            levels.append(_cells(values, depth, state) if index_kind(values) == OBJECTS else values)
        return pd.MultiIndex.from_arrays(levels, names=[_label(name, depth, state) for name in index.names])
    name = _label(index.name, depth, state)
    if index_kind(index) == OBJECTS:
        return pd.Index(_cells(index, depth, state), dtype=object, name=name)
    return index if name is index.name else index.rename(name)


def _positions(n, whole, short):
    """(positions to copy, max_rows or max_cols for pandas): all when at most `whole`;
    else the first and last short//2 and one in the middle, which pandas elides as `...`."""
    if n <= whole:
        return list(range(n)), None
    half = short // 2
    return [*range(half), n // 2, *range(n - half, n)], 2 * half


# ---- pandas' display options ------------------------------------------------------------------

# pandas' defaults of the options a preview honours, where its registry cannot be read.
_PANDAS_DEFAULT_WIDTH = 80


def _bounded(option, default, cap):
    """A row or column count the user set in pandas' display options, as pandas reads it
    (None: no limit; 0: pandas picks, here our default), within cap."""
    if option is None:
        return cap
    if type(option) is not int or option <= 0:
        return default
    return min(option, cap)


def pandas_bounds():
    """(rows shown whole, rows shown of a longer frame, columns, line width or None): the
    bounds of a frame's or Series' first attempt, from the display options the user set
    (display.max_rows, display.min_rows, display.max_columns, display.width), as Jupyter
    honours them; ours (pandas' defaults) otherwise. A longer frame shows min_rows rows,
    or max_rows when min_rows is larger or unset, as pandas does."""
    get = sys.modules['pandas'].get_option  # a pandas value is being previewed
    whole = _bounded(get('display.max_rows'), FRAME_ROWS, FRAME_ROWS_MAX)
    min_rows = get('display.min_rows')
    short = whole if not min_rows else min(_bounded(min_rows, FRAME_ROWS_SHORT, FRAME_ROWS_MAX), whole)
    columns = _bounded(get('display.max_columns'), FRAME_COLUMNS, FRAME_COLUMNS_MAX)
    width = get('display.width')
    line_width = width if type(width) is int and width > 0 and width != _pandas_default('display.width') else None
    return whole, max(short, 2), max(columns, 2), line_width


def frame_attempts(attempts):
    """(the bounds a frame or Series preview tries in turn, `attempts` with the first
    made of the display options the user set and no later one showing more than it;
    the line width the user set, or None)."""
    whole, short, columns, line_width = pandas_bounds()
    first = (whole, short, columns, attempts[0][3])
    later = [(min(w, whole), min(s, short), min(c, columns), colwidth) for w, s, c, colwidth in attempts[1:]]
    return [first, *later], line_width


def _pandas_default(key):
    """The registered default of a pandas option (its private registry), or ours."""
    registered = loaded('pandas._config.config', '_registered_options')
    option = registered.get(key) if type(registered) is dict else None
    return getattr(option, 'defval', _PANDAS_DEFAULT_WIDTH)


# The bounds tried in turn until the table fits the preview: rows shown whole up to,
# rows shown of a longer frame, columns, column width.
_FRAME_ATTEMPTS = (
    (FRAME_ROWS, FRAME_ROWS_SHORT, FRAME_COLUMNS, FRAME_COLWIDTH),
    (FRAME_ROWS_SHORT, FRAME_ROWS_SHORT, FRAME_COLUMNS, FRAME_COLWIDTH),
    (FRAME_ROWS_SHORT, FRAME_ROWS_SHORT, FRAME_COLUMNS // 2, FRAME_COLWIDTH // 2),
)


def render_frame(value, cls, room, depth, state):
    pd = sys.modules['pandas']
    kinds = [_dtype_kind(dtype) for dtype in value.dtypes]
    if None in kinds or index_kind(value.index) is None or index_kind(value.columns) is None:
        return None
    if not _plain_attrs(value):
        return None
    rows, columns = value.shape
    footer = '\n\n' + PREVIEW_FRAME_SHAPE.format(rows, columns)
    text = ''
    attempts, line_width = frame_attempts(_FRAME_ATTEMPTS)  # the user's display options first
    for whole, short, width, colwidth in attempts:
        attempt = state.inner()
        row_positions, max_rows = _positions(rows, whole, short)
        column_positions, max_cols = _positions(columns, width, width)
        # Take along the axis that leaves less to copy first.
        if len(row_positions) * columns <= rows * len(column_positions):
            sub = value.take(row_positions).take(column_positions, axis=1)
        else:
            sub = value.take(column_positions, axis=1).take(row_positions)
        # The labels first: from then on nothing in `shown` is the user's but object cells,
        # which are replaced next.
        shown = sub.copy()
        shown.index = _shown_index(sub.index, depth, attempt)
        shown.columns = _shown_index(sub.columns, depth, attempt)
        for j, position in enumerate(column_positions):
            if kinds[position] == OBJECTS:
                shown.isetitem(j, _cells(shown.iloc[:, j], depth, attempt))
        with pd.option_context('display.float_format', None):
            text = shown.to_string(max_rows=max_rows, max_cols=max_cols, max_colwidth=colwidth, line_width=line_width)
        attempt.cut = attempt.cut or max_rows is not None or max_cols is not None
        if len(text) + len(footer) <= room:
            break
    state.cut = state.cut or attempt.cut
    return fit(text, room - len(footer), state) + footer


def _series(value, cls, room, depth, state):
    pd = sys.modules['pandas']
    kind = _dtype_kind(value.dtype)
    if kind is None or index_kind(value.index) is None or not _plain_attrs(value):
        return None
    length = len(value)
    footer = [f'Length: {length}', f'dtype: {value.dtype.name}']
    if value.name is not None:
        named = state.inner()
        footer.insert(0, f'Name: {_label(value.name, depth, named)}')
        state.cut = state.cut or named.cut
    footer = ', '.join(footer)
    if length == 0:
        return f'Series([], {footer})'
    text = ''
    for whole, short, _, colwidth in frame_attempts(_FRAME_ATTEMPTS)[0]:
        attempt = state.inner()
        positions, max_rows = _positions(length, whole, short)
        sub = value.take(positions)
        index = _shown_index(sub.index, depth, attempt)
        if kind == OBJECTS:
            shown = pd.Series(_cells(sub, depth, attempt), index=index, dtype=object)
        else:
            shown = sub.copy()
            shown.index = index
            shown.name = None  # shown in the footer, as its preview
        with pd.option_context('display.float_format', None, 'display.max_colwidth', colwidth):
            text = shown.to_string(max_rows=max_rows)
        attempt.cut = attempt.cut or max_rows is not None
        if len(text) + len(footer) + 1 <= room:
            break
    state.cut = state.cut or attempt.cut
    return fit(text, room - len(footer) - 1, state) + '\n' + footer


def _index(value, cls, room, depth, state):
    pd = sys.modules['pandas']
    kind = index_kind(value)
    if kind is None:
        return None
    labels = state.inner()
    names = [_label(name, depth, labels) for name in value.names]
    state.cut = state.cut or labels.cut
    if any(shown is not name for shown, name in zip(names, value.names)):
        value = value.set_names(names)
    if kind == OBJECTS:
        # pandas formats only the first and last few labels: those must be safe as they are.
        for edge in (value[:INDEX_ITEMS], value[-INDEX_ITEMS:]):  # slices: nothing is hashed
            for i in range(edge.nlevels):
                labels = edge.get_level_values(i)
                if index_kind(labels) == OBJECTS and not all(formats_itself(label) for label in labels):
                    return None
    if len(value) > INDEX_ITEMS:
        state.cut = True
    with pd.option_context('display.max_seq_items', INDEX_ITEMS):
        return repr(value)


def _zoned_timestamp(value, cls, room, depth, state):
    return repr(value) if safe_tz(value.tzinfo) else None


def _numpy_other(value, cls, named, room, depth, state):
    """numpy's classes with no renderer of their own: its scalars, its own dtypes
    (dtype('float64'), dtype([('x', '<i8')]), numpy's DTypes only) and its enums."""
    if has_base(cls, loaded('numpy', 'generic')):
        return _numpy_scalar(value, cls, room, depth, state)
    if has_base(cls, loaded('numpy', 'dtype')):
        return repr(value)
    return enum_member(value, cls)


def _pandas_other(value, cls, named, room, depth, state):
    return enum_member(value, cls)  # a member of an enum pandas defines: its values are pandas'


for _render, _names in (
    (_ndarray, [('numpy', 'ndarray')]),
    (render_frame, [('pandas', 'DataFrame')]), (_series, [('pandas', 'Series')]),
    (_zoned_timestamp, [('pandas', 'Timestamp')]),
    (repr_of, [('pandas', name) for name in ('Timedelta', 'Period', 'NAType', 'NaTType')]),
    (_index, [('pandas', name) for name in _PANDAS_INDEXES]),
):
    for _package, _qualname in _names:
        for_type_by_name(_package, _qualname, _render)
for_package('numpy', _numpy_other)
for_package('pandas', _pandas_other)
