"""Safe summaries of well-known library objects that have no table or array of their own
to show (docs/contract.md §5.11): matplotlib's Figures, Axes and Text, a dask.distributed
Client and cluster, a pandas Styler and Categorical, and, where they are installed,
polars frames, xarray arrays and torch tensors.

The rules are the rendering core's (rendering.py), into which this module registers its
summaries: a summary is made only for the library's own class (its module, already
imported, defines it under that name, so a subclass of the user's is not the library's),
by the library's own code or from values the library keeps (addresses, counts, shapes,
dtypes), never by formatting an object the user made. Nothing is imported here: a library
that is not loaded has no objects to summarise.
"""

import itertools
import sys

from .arraypreviews import OBJECTS, PLAIN, formats_itself, index_kind, render_frame
from .limits import ARRAY_EDGE_ITEMS, FRAME_COLUMNS, FRAME_COLUMNS_MAX, FRAME_COLWIDTH, FRAME_ROWS, FRAME_ROWS_SHORT
from .messages import PREVIEW_POLARS_OBJECTS, PREVIEW_STYLER, PREVIEW_XARRAY_DATA
from .rendering import fit, for_package, for_type_by_name, has_base, loaded, name_of, qualified, render

# ---- pandas ----------------------------------------------------------------------------------

def _styler(value, cls, room, depth, state):
    """A Styler: the preview of the frame it styles. Its formatters and styles are the
    user's functions and are never called (nothing is rendered)."""
    data = value.data
    if name_of(type(data)) != ('pandas', 'DataFrame'):
        return None
    head = PREVIEW_STYLER + '\n'
    text = render_frame(data, type(data), room - len(head), depth + 1, state)
    return None if text is None else head + text


# Categories checked one by one, at most: past that only plain ones (numbers, dates).
_CATEGORIES_CHECKED = 10_000


def _plain_categories(categories):
    """Whether pandas may format every category itself (see formats_itself)."""
    kind = index_kind(categories)
    if kind == PLAIN:
        return True
    if kind != OBJECTS or len(categories) > _CATEGORIES_CHECKED:
        return False
    return all(formats_itself(category) for category in categories.to_numpy(dtype=object))


def _categorical(value, cls, room, depth, state):
    """A Categorical as pandas' repr: its first and last values, length and categories."""
    if not _plain_categories(value.categories):
        return None
    pd = sys.modules['pandas']
    if len(value) > FRAME_ROWS:
        state.cut = True
    with pd.option_context('display.max_rows', FRAME_ROWS, 'display.max_categories', 8):
        return repr(value)


def _categorical_dtype(value, cls, room, depth, state):
    categories = value.categories
    if categories is not None and not _plain_categories(categories):
        return None
    return repr(value)


# ---- dask.distributed ------------------------------------------------------------------------

def _plain(value, *types):
    return any(type(value) is t for t in types)


def _scheduler_info(info):
    """The scheduler's identity as distributed keeps it (a dict, or its SchedulerInfo
    dict), read with dict's own get; None for anything else."""
    if type(info) is dict or name_of(type(info)) == ('distributed', 'SchedulerInfo'):
        return lambda key, default=None: dict.get(info, key, default)
    return None


def _dashboard(address, services):
    """The dashboard's link as distributed formats it, from the scheduler's services."""
    format_link = loaded('distributed.utils', 'format_dashboard_link')
    port = services.get('dashboard') if type(services) is dict else None
    if format_link is None or type(port) is not int or type(address) is not str or '://' not in address:
        return None
    host = address.split('://', 1)[1].split('/')[0].rpartition(':')[0] or 'localhost'
    link = format_link(host, port)
    return link if type(link) is str else None


def _client(value, cls, room, depth, state):
    """<Client: scheduler='tcp://...', workers=2, threads=4, memory=7.45 GiB,
    dashboard='http://...'>, from what the client last heard from its scheduler (no
    I/O: the library's own repr avoids it too)."""
    info = _scheduler_info(value._scheduler_identity)
    if info is None or not _plain(info('address'), str):
        return '<Client: no scheduler connected>'
    workers, threads, memory = (info(key, 0) for key in ('n_workers', 'total_threads', 'total_memory'))
    if not all(_plain(n, int) for n in (workers, threads, memory)):
        return None
    format_bytes = loaded('dask.utils', 'format_bytes')
    parts = [f"scheduler={info('address')!r}", f'workers={workers}', f'threads={threads}']
    if format_bytes is not None:
        parts.append(f'memory={format_bytes(memory)}')
    dashboard = _dashboard(info('address'), info('services'))
    if dashboard:
        parts.append(f'dashboard={dashboard!r}')
    return '<Client: ' + ', '.join(parts) + '>'


def _cluster(value, cls, room, depth, state):
    """A cluster as distributed's repr (name, scheduler address, workers, threads,
    memory), then its dashboard; only with a name distributed made or a plain one."""
    if not _plain(value.name, str, int):
        return None
    info = _scheduler_info(value.scheduler_info)
    if info is None or type(info('workers')) is not dict:
        return None
    text = repr(value)  # LocalCluster(name, 'tcp://...', workers=2, threads=4, memory=7.45 GiB)
    dashboard = _dashboard(value.scheduler_address, info('services'))
    if dashboard and text.endswith(')'):
        text = text[:-1] + f', dashboard={dashboard!r})'
    return text


# ---- polars (when installed) -----------------------------------------------------------------

def _shape(value):
    return repr(tuple(int(n) for n in value.shape))


# polars' dtypes whose values polars formats by calling Python: an Object holds the user's
# objects, an extension type is formatted by its (possibly the user's) class.
_POLARS_OPAQUE = frozenset({'Object', 'Extension', 'BaseExtension'})


def _polars_renders_itself(dtype):
    """Whether polars formats the values of `dtype` in its own code: a dtype polars
    defines, none of them opaque, nested ones (List, Array, Struct) all the way down."""
    named = name_of(type(dtype))
    if named is None or named[0] != 'polars' or named[1] in _POLARS_OPAQUE:
        return False
    if named[1] in ('List', 'Array'):
        return _polars_renders_itself(dtype.inner)
    if named[1] == 'Struct':
        return all(_polars_renders_itself(field.dtype) for field in dtype.fields)
    return True


def _polars_dtypes_known(dtypes):
    """Whether every dtype is polars' own class, so that str() of it is polars' code."""
    return all((name_of(type(dtype)) or ('',))[0] == 'polars' for dtype in dtypes)


# The bounds tried in turn until polars' table fits the preview: rows shown of a longer
# frame, columns, characters of a string cell.
_POLARS_ATTEMPTS = (
    (FRAME_ROWS_SHORT, FRAME_COLUMNS, FRAME_COLWIDTH),
    (FRAME_ROWS_SHORT, FRAME_COLUMNS // 2, FRAME_COLWIDTH // 2),
)


def _polars_table(value, rows, columns, room, state):
    """polars' own repr (shape, names, dtypes, the first and last rows) within our bounds
    and room, or None when polars' Config is not polars' own. The other display options
    the user set (float format, separators, table style) are honoured, as in Jupyter."""
    config = loaded('polars', 'Config')
    if name_of(config) != ('polars', 'Config'):
        return None
    text = ''
    for short, width, colwidth in _POLARS_ATTEMPTS:
        shown_rows = rows if rows <= FRAME_ROWS else short
        options = {
            'tbl_rows': shown_rows, 'tbl_cols': width, 'fmt_str_lengths': colwidth,
            'fmt_table_cell_list_len': _POLARS_LIST_ITEMS, 'tbl_hide_dataframe_shape': False,
            'tbl_hide_column_data_types': False, 'tbl_hide_column_names': False,
        }
        with config(**options):
            text = repr(value)
        if len(text) <= room:
            break
    state.cut = state.cut or rows > shown_rows or columns > width or _polars_cells_cut(value, colwidth)
    return fit(text, room, state)


def _polars_cells_cut(value, colwidth):
    """Whether polars' table shortened a cell: a string or category past `colwidth`
    characters, a list or array past the items shown, or a struct (its fields are not
    measured here). polars measures, in its own code."""
    frame = value.to_frame() if name_of(type(value)) == ('polars', 'Series') else value
    for name, dtype in zip(frame.columns, frame.dtypes):
        kind = name_of(type(dtype))[1]
        column = frame.get_column(name)
        if kind == 'Struct':
            return True
        if kind == 'String' and (column.str.len_chars().max() or 0) > colwidth:
            return True
        if kind in ('Categorical', 'Enum') and (column.cat.len_chars().max() or 0) > colwidth:
            return True
        if kind == 'List' and (column.list.len().max() or 0) > _POLARS_LIST_ITEMS:
            return True
        if kind == 'Array' and dtype.size > _POLARS_LIST_ITEMS:
            return True
    return False


# Items of a list cell polars' table shows.
_POLARS_LIST_ITEMS = ARRAY_EDGE_ITEMS * 2


def _polars_frame(value, cls, room, depth, state):
    """polars' own table of the first and last rows; when a column holds Python objects,
    only the shape and each column's dtype (its values are never formatted)."""
    dtypes = value.dtypes
    if not _polars_dtypes_known(dtypes):
        return None
    rows, columns = (int(n) for n in value.shape)
    if all(_polars_renders_itself(dtype) for dtype in dtypes):
        return _polars_table(value, rows, columns, room, state)
    state.cut = True
    shown = ', '.join(f'{name}: {dtype}' for name, dtype in zip(value.columns[:FRAME_COLUMNS_MAX], dtypes))
    more = f', ... {columns - FRAME_COLUMNS_MAX} more' if columns > FRAME_COLUMNS_MAX else ''
    text = f'<polars DataFrame; shape={_shape(value)}; columns: {shown}{more}; {PREVIEW_POLARS_OBJECTS}>'
    return fit(text, room, state)


def _polars_series(value, cls, room, depth, state):
    """Likewise for a Series: polars' own repr, or its name, length and dtype."""
    dtype = value.dtype
    if not _polars_dtypes_known([dtype]):
        return None
    if _polars_renders_itself(dtype):
        return _polars_table(value, len(value), 1, room, state)
    state.cut = True
    return fit(f'<polars Series {value.name!r}; length={len(value)}; dtype={dtype}; {PREVIEW_POLARS_OBJECTS}>', room, state)


# ---- xarray (when installed) -----------------------------------------------------------------

# The classes of the data an xarray variable may hold whose shape and dtype are the
# library's own attributes: numpy's array, dask's, and xarray's adapters (a pandas index,
# a lazily loaded file).
_XARRAY_DATA_TOPS = frozenset({'xarray', 'dask'})

# Variables listed in one section at most, then how many more there are.
_XARRAY_LISTED = 20


def _plain_names(names):
    return all(type(name) is str for name in names)


def _xarray_dtype(dtype):
    """numpy's or pandas' text of a dtype (float64, datetime64[ns], <U5, category)."""
    named = name_of(type(dtype))
    if named is None or named[0] not in ('numpy', 'pandas'):
        return None
    return str(dtype)


def _xarray_variable(variable):
    """(dims, shape, dtype text) of an xarray Variable whose data is numpy's, dask's or
    xarray's own, with plain str dims; None for anything else (its data is a duck array
    that could be the user's)."""
    named = name_of(type(variable))
    if named not in (('xarray', 'Variable'), ('xarray', 'IndexVariable')):
        return None
    dims, data = variable._dims, variable._data
    if type(dims) is not tuple or not _plain_names(dims):
        return None
    data_named = name_of(type(data))
    if data_named is None or (data_named != ('numpy', 'ndarray') and data_named[0] not in _XARRAY_DATA_TOPS):
        return None
    shape, dtype = tuple(int(n) for n in data.shape), _xarray_dtype(data.dtype)
    if len(shape) != len(dims) or dtype is None:
        return None
    return dims, shape, dtype


def _sized(dims, shape):
    return '(' + ', '.join(f'{dim}: {n}' for dim, n in zip(dims, shape)) + ')'


def _xarray_section(title, variables, dims_of_index):
    """xarray's listing of variables, without their values: `  * time  (time) datetime64[ns]`,
    the star marking a dimension's coordinate; None when one is not summarisable."""
    lines = []
    for name, variable in itertools.islice(variables, _XARRAY_LISTED):
        summary = _xarray_variable(variable)
        if summary is None:
            return None
        dims, _, dtype = summary
        marker = '*' if name in dims_of_index and dims == (name,) else ' '
        lines.append(f'  {marker} {name:<8} ({", ".join(dims)}) {dtype}')
    return [title + ':', *lines] if lines else []


def _xarray_more(count):
    return [f'    ... {count - _XARRAY_LISTED} more'] if count > _XARRAY_LISTED else []


def _xarray_attributes(attrs):
    """The names of the attributes (their values are the user's objects)."""
    if type(attrs) is not dict or not attrs:
        return [] if attrs is None or type(attrs) is dict else None
    names = list(dict.keys(attrs))
    if not _plain_names(names):
        return None
    return ['Attributes: ' + ', '.join(names[:_XARRAY_LISTED]) + (f', ... {len(names) - _XARRAY_LISTED} more' if len(names) > _XARRAY_LISTED else '')]


def _xarray_coordinates(coords, dims):
    if type(coords) is not dict or not _plain_names(coords):
        return None
    section = _xarray_section('Coordinates', dict.items(coords), dims)
    return None if section is None else section + _xarray_more(len(coords))


def _xarray_array(value, cls, room, depth, state):
    """A DataArray as xarray's repr: its name and dims with sizes, then its values (numpy's
    data previewed as an array is, with its dtype; other data only named, with its
    dtype, never loaded), its coordinates' dims and dtypes and its attributes' names."""
    name, summary = value._name, _xarray_variable(value._variable)
    if summary is None or not _plain(name, str, type(None)):
        return None
    dims, shape, dtype = summary
    coords = _xarray_coordinates(value._coords, dims)
    attributes = _xarray_attributes(value._variable._attrs)
    if coords is None or attributes is None:
        return None
    label = '' if name is None else f' {name!r}'
    head = f'<xarray.DataArray{label} {_sized(dims, shape)}>'
    tail = '\n'.join([*coords, *attributes])
    state.cut = state.cut or bool(tail)  # the coordinates' and attributes' values are not shown
    data = value._variable._data
    inner_room = room - len(head) - len(tail) - 2
    if name_of(type(data)) == ('numpy', 'ndarray'):
        values = render(data, inner_room, depth + 1, state)  # ends with its dtype
    else:
        state.cut = True
        values = PREVIEW_XARRAY_DATA.format(qualified(type(data)), dtype)
    return fit('\n'.join(part for part in (head, values, tail) if part), room, state)


def _xarray_dataset(value, cls, room, depth, state):
    """A Dataset as xarray's repr without values: its dimensions with sizes, coordinates,
    data variables (dims and dtype of each) and the names of its attributes."""
    sizes, variables, coord_names = value._dims, value._variables, value._coord_names
    if type(sizes) is not dict or type(variables) is not dict or type(coord_names) is not set:
        return None
    if not _plain_names(sizes) or not _plain_names(variables) or not all(_plain(n, int) for n in dict.values(sizes)):
        return None
    coords = {name: v for name, v in dict.items(variables) if name in coord_names}
    data_vars = [(name, v) for name, v in dict.items(variables) if name not in coord_names]
    coord_lines = _xarray_coordinates(coords, sizes)
    data_lines = _xarray_section('Data variables', data_vars, ())
    attributes = _xarray_attributes(value._attrs)
    if coord_lines is None or data_lines is None or attributes is None:
        return None
    state.cut = True  # no value is shown
    head = '<xarray.Dataset> Dimensions: ' + _sized(list(sizes), list(dict.values(sizes)))
    lines = [head, *coord_lines, *data_lines, *_xarray_more(len(data_vars)), *attributes]
    return fit('\n'.join(lines), room, state)


# ---- torch (when installed) ------------------------------------------------------------------

# Untested: torch is not in the data venv (interop/requirements-data.in), its wheels being
# too large for the tests' install; the code below is kept as first written.
def _torch_tensor(value, cls, room, depth, state):
    """tensor(shape=(2, 3), dtype=torch.float32, device=cpu): no element is read, so a
    tensor on a GPU is never copied back."""
    state.cut = True
    return f'tensor(shape={_shape(value)}, dtype={value.dtype}, device={value.device})'


# ---- matplotlib -----------------------------------------------------------------------------

def _matplotlib(value, cls, named, room, depth, state):
    """Figures and Axes as matplotlib describes them (their size and Axes; their titles
    and labels), Text with its position and string. The image is display()'s business."""
    qualname = named[1]
    if qualname in ('Figure', 'SubFigure'):
        return repr(value)  # <Figure size 640x480 with 1 Axes>
    if has_base(cls, loaded('matplotlib.axes._base', '_AxesBase')):
        return repr(value)  # <Axes: title={'center': 'x'}, xlabel='t'>: strings only
    if named == ('matplotlib', 'Text'):
        x, y = value.get_position()
        inner = state.inner()
        parts = [render(part, 100, depth + 1, inner) for part in (x, y, value.get_text())]
        state.cut = state.cut or inner.cut
        return 'Text(' + ', '.join(parts) + ')'
    return None


_SUMMARIES = {
    ('pandas', 'Styler'): _styler, ('pandas', 'Categorical'): _categorical,
    ('pandas', 'CategoricalDtype'): _categorical_dtype,
    ('distributed', 'Client'): _client, ('distributed', 'LocalCluster'): _cluster,
    ('distributed', 'SpecCluster'): _cluster,
    ('polars', 'DataFrame'): _polars_frame, ('polars', 'Series'): _polars_series,
    ('xarray', 'DataArray'): _xarray_array, ('xarray', 'Dataset'): _xarray_dataset,
    ('torch', 'Tensor'): _torch_tensor,
}

for (_package, _qualname), _summary in _SUMMARIES.items():
    for_type_by_name(_package, _qualname, _summary)
# matplotlib's classes are all summarised here, or omitted (its enums too).
for_package('matplotlib', _matplotlib)
for_package('mpl_toolkits', _matplotlib)
