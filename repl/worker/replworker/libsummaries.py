"""Safe summaries of well-known library objects that have no table or array to show
(docs/contract.md §5.11): a dask.distributed Client and cluster, a pandas Styler and
Categorical, numpy dtypes, and, where they are installed, polars frames, xarray arrays and
torch tensors; and the pandas display options a preview honours.

The rules are previews.py's: a summary is made only for the library's own class (its
module, already imported, defines it under that name, so a subclass of the user's is not
the library's), by the library's own code or from values the library keeps (addresses,
counts, shapes, dtypes), never by formatting an object the user made. Nothing is
imported here: a library that is not loaded has no objects to summarise.
"""

import sys

from . import previews
from .limits import FRAME_COLUMNS, FRAME_COLUMNS_MAX, FRAME_ROWS, FRAME_ROWS_MAX, FRAME_ROWS_SHORT
from .messages import PREVIEW_STYLER

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
    registered = previews._loaded('pandas._config.config', '_registered_options')
    option = registered.get(key) if type(registered) is dict else None
    return getattr(option, 'defval', _PANDAS_DEFAULT_WIDTH)


# ---- pandas ----------------------------------------------------------------------------------

def _styler(value, cls, room, depth, state):
    """A Styler: the preview of the frame it styles. Its formatters and styles are the
    user's functions and are never called (nothing is rendered)."""
    data = value.data
    if previews._named(type(data)) != ('pandas', 'DataFrame'):
        return None
    head = PREVIEW_STYLER + '\n'
    text = previews._frame(data, type(data), room - len(head), depth + 1, state)
    return None if text is None else head + text


# Categories checked one by one, at most: past that only plain ones (numbers, dates).
_CATEGORIES_CHECKED = 10_000


def _plain_categories(categories):
    """Whether pandas may format every category itself (see previews._formats_itself)."""
    kind = previews._index_kind(categories)
    if kind == previews._PLAIN:
        return True
    if kind != previews._OBJECTS or len(categories) > _CATEGORIES_CHECKED:
        return False
    return all(previews._formats_itself(category) for category in categories.to_numpy(dtype=object))


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
    if type(info) is dict or previews._named(type(info)) == ('distributed', 'SchedulerInfo'):
        return lambda key, default=None: dict.get(info, key, default)
    return None


def _dashboard(address, services):
    """The dashboard's link as distributed formats it, from the scheduler's services."""
    format_link = previews._loaded('distributed.utils', 'format_dashboard_link')
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
    format_bytes = previews._loaded('dask.utils', 'format_bytes')
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


# ---- polars, xarray, torch (when installed) --------------------------------------------------

def _shape(value):
    return repr(tuple(int(n) for n in value.shape))


def _polars_frame(value, cls, room, depth, state):
    """<polars DataFrame; shape=(r, c); columns: a: Int64, ...>: names are str in polars."""
    state.cut = True
    columns = ', '.join(f'{name}: {dtype}' for name, dtype in zip(value.columns, value.dtypes))
    return f'<polars DataFrame; shape={_shape(value)}; columns: {columns}>'


def _polars_series(value, cls, room, depth, state):
    state.cut = True
    return f'<polars Series {value.name!r}; length={len(value)}; dtype={value.dtype}>'


def _xarray(value, cls, room, depth, state):
    """<xarray.DataArray 'name' (x: 3, y: 4); dtype=float64>, with plain names only."""
    dims, name = value.dims, value.name
    if not all(_plain(dim, str) for dim in dims) or not _plain(name, str, type(None)):
        return None
    state.cut = True
    sized = ', '.join(f'{dim}: {int(n)}' for dim, n in zip(dims, value.shape))
    label = '' if name is None else f' {name!r}'
    return f'<xarray.DataArray{label} ({sized}); dtype={value.dtype}>'


def _torch_tensor(value, cls, room, depth, state):
    """tensor(shape=(2, 3), dtype=torch.float32, device=cpu): no element is read, so a
    tensor on a GPU is never copied back."""
    state.cut = True
    return f'tensor(shape={_shape(value)}, dtype={value.dtype}, device={value.device})'


_SUMMARIES = {
    ('pandas', 'Styler'): _styler, ('pandas', 'Categorical'): _categorical,
    ('pandas', 'CategoricalDtype'): _categorical_dtype,
    ('distributed', 'Client'): _client, ('distributed', 'LocalCluster'): _cluster,
    ('distributed', 'SpecCluster'): _cluster,
    ('polars', 'DataFrame'): _polars_frame, ('polars', 'Series'): _polars_series,
    ('xarray', 'DataArray'): _xarray, ('torch', 'Tensor'): _torch_tensor,
}


# The top-level packages that have summaries here.
SUMMARISED = frozenset({top for top, _ in _SUMMARIES} | {'numpy'})


def library_summary(value, cls, named, room, depth, state):
    """The summary of a library's object (see the module's doc), or None."""
    summary = _SUMMARIES.get(named)
    if summary is not None:
        return summary(value, cls, room, depth, state)
    if named[0] == 'numpy' and previews._has_base(cls, previews._loaded('numpy', 'dtype')):
        return repr(value)  # dtype('float64'), dtype([('x', '<i8')]): numpy's own DTypes only
    return None
