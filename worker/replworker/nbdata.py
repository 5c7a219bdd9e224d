"""What the model and a notebook read of a value beyond its JSON preview:

- the value's repr, as Python and Jupyter show it, for exact builtins only (None, bool,
  int, float, str, and lists, tuples and dicts of them), whose repr runs no user code:
  their preview is JSON text ("a", true, [200000, 6]), which neither reader expects. A
  result's `return_repr` (the text form shows it, docs/contract.md §3.4, and the
  session's notebook as `text/plain`), and a display's `repr`;
- `html`: pandas' own rendering of its own DataFrame and Styler, and nothing else. No user
  code ever runs: the value's class must be exactly pandas' class, looked up in sys.modules
  (pandas is never imported here), the method called is the one that class defines, and
  only frames pandas formats alone are rendered (no object columns, whose elements' __str__
  is anyone's; no user dtypes; no Styler with functions applied), sent in the result for
  the session's record only.

Either is dropped, not cut, past its bound: half a table is no table."""

import sys

from .limits import HTML_BYTES, PREVIEW_BYTES, PREVIEW_NESTING
from .arraypreviews import formats_itself
from .toolfuncs import ToolLines
from .toolresult import ToolResult

# (module, class) of the values whose HTML is pandas' own.
PANDAS_CLASSES = (('pandas.core.frame', 'DataFrame'), ('pandas.io.formats.style', 'Styler'))

# The dtypes of pandas' own whose values pandas formats itself, besides numpy's.
PANDAS_DTYPES = (
    ('pandas.core.arrays.string_', 'StringDtype'),
    ('pandas.core.dtypes.dtypes', 'CategoricalDtype'),
    ('pandas.core.dtypes.dtypes', 'DatetimeTZDtype'),
)
LABEL_SCAN = 1_000  # column labels of an object Index looked at, at most

_class_dict = type.__dict__['__dict__'].__get__
_mro = type.__dict__['__mro__'].__get__
_SCALARS = (type(None), bool, int, float, str)


def _scalar(cls):
    # By identity: `cls in _SCALARS` would compare with ==, which a metaclass may define.
    return any(cls is scalar for scalar in _SCALARS)


def pandas_html(value):
    """The HTML pandas renders for `value`, or None: not one of pandas' own classes, holding
    something whose formatting could be user code, the rendering failed, or it is over
    HTML_BYTES."""
    frame_cls = _pandas_class(0)
    styler_cls = _pandas_class(1)
    cls = type(value)
    if frame_cls is None or cls is not frame_cls and (styler_cls is None or cls is not styler_cls):
        return None
    try:
        if cls is styler_cls and not _plain_styler(value, frame_cls):
            return None
        if cls is frame_cls and not _plain_frame(value):
            return None
        render = _class_dict(cls).get('_repr_html_')
        html = None if render is None else render(value)
    except Exception:  # the preview stands without it; the notebook shows text/plain only
        return None
    if type(html) is not str:
        return None
    return html if len(html.encode('utf-8', 'replace')) <= HTML_BYTES else None


def _pandas_class(i):
    module_name, class_name = PANDAS_CLASSES[i]
    module = sys.modules.get(module_name)
    return None if module is None else vars(module).get(class_name)


def _plain_styler(styler, frame_cls):
    """A Styler pandas renders alone: no functions of the user's applied or formatting."""
    state = styler.__dict__
    return (type(state.get('_todo')) is list and not state['_todo'] and not state.get('_display_funcs')
            and type(state.get('data')) is frame_cls and _plain_frame(state['data']))


def _plain_frame(frame):
    """A DataFrame whose cells and labels pandas formats itself: numeric, boolean,
    datetime, string or categorical-of-those columns, or object columns of at most
    LABEL_SCAN cells in all each of which pandas formats itself (what describe() makes of
    a datetime column: Timestamps and floats), never user extension types nor objects
    whose __str__ would be the user's; a non-object index; at most LABEL_SCAN column
    labels, each an exact scalar."""
    objects = [i for i, dtype in enumerate(frame.dtypes) if not _plain_dtype(dtype)]
    if objects and not _plain_objects(frame, objects):
        return False
    if not _plain_dtype(frame.index.dtype):
        return False
    columns = frame.columns
    if _plain_dtype(columns.dtype):
        return True
    if len(columns) > LABEL_SCAN:
        return False
    return all(_scalar(type(label)) for label in columns)


def _plain_objects(frame, columns):
    """Whether the columns at these positions are object columns of at most LABEL_SCAN
    cells in all, each a value pandas formats itself (arraypreviews.formats_itself reads only
    type slots)."""
    numpy = sys.modules.get('numpy')
    if numpy is None or len(frame) * len(columns) > LABEL_SCAN:
        return False
    for i in columns:
        dtype = frame.dtypes.iloc[i]
        if not _derives(type(dtype), numpy.dtype) or dtype.kind != 'O':
            return False  # a user extension type, say
        cells = frame.iloc[:, i].to_numpy()  # an object column's own array: no element code runs
        if not all(formats_itself(value) for value in cells):
            return False
    return True


def _plain_dtype(dtype):
    numpy = sys.modules.get('numpy')
    cls = type(dtype)
    if numpy is not None and _derives(cls, numpy.dtype):
        return dtype.kind in 'biufcmM'
    for module_name, class_name in PANDAS_DTYPES:
        module = sys.modules.get(module_name)
        if module is not None and vars(module).get(class_name) is cls:
            if class_name == 'CategoricalDtype':
                return _plain_dtype(dtype.categories.dtype)
            return True
    return False


def _derives(cls, base):
    return any(c is base for c in _mro(cls))


def builtin_repr(value):
    """repr(value) when value is made of exact builtins only and its repr is within
    PREVIEW_BYTES; else None."""
    budget = [PREVIEW_BYTES]
    if not _builtins_only(value, 0, budget):
        return None
    try:
        text = repr(value)
    except Exception:  # the int digit limit, say: the preview stands
        return None
    if len(text.encode('utf-8', 'replace')) > PREVIEW_BYTES:
        return None
    return text


def _builtins_only(value, depth, budget):
    """Whether value is exact builtins throughout, within PREVIEW_NESTING and about
    PREVIEW_BYTES items, so that its repr is Python's own and bounded."""
    budget[0] -= 1
    if budget[0] < 0:
        return False
    cls = type(value)
    if _scalar(cls):
        if cls is str:
            budget[0] -= len(value)
        return budget[0] >= 0
    if depth >= PREVIEW_NESTING:
        return False
    if cls is list or cls is tuple or cls is ToolLines:  # mcp.search's lines show one per line
        return all(_builtins_only(item, depth + 1, budget) for item in value)
    if cls is dict or cls is ToolResult:  # a tool's result: the envelope, a dict of JSON
        return all(_scalar(type(k)) and _builtins_only(k, depth + 1, budget) and _builtins_only(v, depth + 1, budget)
                   for k, v in value.items())
    return False
