"""Images a run shows (docs/contract.md §7.9): the display() helper, the figures of
matplotlib (through the worker's backend module, mplbackend, which this module selects when
matplotlib is imported and nobody chose a backend), and their way to the server: `image`
frames beside the result (PROTOCOL.md, Images), or artifacts once past the bounds, so that a
plot never evicts the user's artifacts unless it has to.

Nothing here imports matplotlib or PIL: their classes are looked up in sys.modules, so a
worker that never imports them pays nothing, and display() never imports them either."""

import binascii
import io
import sys
import threading

from .artifacts import artifact
from .common import PACKAGE, type_name
from .limits import DISPLAY_BYTES, DISPLAY_COUNT, IMAGE_ARTIFACTS, IMAGE_BYTES, IMAGE_CHUNK, IMAGE_COUNT
from .messages import (
    DISPLAY_NO_CELL, FIGURE_FAILED, IMAGE_ARTIFACTS_FULL, IMAGE_DAMAGED, IMAGE_NOT_KEPT,
    IMAGE_PAST_BYTES, IMAGE_PAST_COUNT, IMAGE_REPR_NOT_BYTES, IMAGE_REPR_NOT_IMAGE, STR_FAILED,
)
from .nbdata import builtin_repr, pandas_html
from .previews import preview

# The backend module's name, as matplotlib imports it: `module://` names are imported with
# importlib.import_module, which the bootstrap's finder answers for the private package.
BACKEND_MODULE = PACKAGE + '.mplbackend'
MPL_BACKEND = 'module://' + BACKEND_MODULE

# The methods display() calls on an object passed to it explicitly, in this order.
REPR_METHODS = (('_repr_png_', 'PNG'), ('_repr_jpeg_', 'JPEG'))
NOTE_CHARS = 500  # characters of an exception's message in a note on stderr

_PNG = b'\x89PNG\r\n\x1a\n'
_JPEG_FRAMES = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}  # SOF markers: they carry the size
_JPEG_STANDALONE = frozenset({0x01, 0xD8, *range(0xD0, 0xD8)})  # markers without a length

_mro = type.__dict__['__mro__'].__get__
_class_dict = type.__dict__['__dict__'].__get__


def sniff(data):
    """(MIME type, width, height) of image bytes known by their magic number (PNG, JPEG,
    GIF, WebP), or None when `data` starts like none of them. A known signature whose
    header gives no size raises ValueError: a truncated or damaged file."""
    if data[:8] == _PNG:
        return _sized('image/png', 'PNG', data[12:16] == b'IHDR', data, 16, 20, 'big', 4)
    if data[:6] in (b'GIF87a', b'GIF89a'):
        return _sized('image/gif', 'GIF', True, data, 6, 8, 'little', 2)
    if data[:3] == b'\xff\xd8\xff':
        return _jpeg_size(data)
    if data[:4] == b'RIFF' and data[8:12] == b'WEBP':
        return _webp_size(data)
    return None


def _sized(mime, kind, valid, data, w_at, h_at, order, length):
    width = int.from_bytes(data[w_at:w_at + length], order)
    height = int.from_bytes(data[h_at:h_at + length], order)
    if not valid or len(data) < max(w_at, h_at) + length or width <= 0 or height <= 0:
        raise ValueError(IMAGE_DAMAGED.format(kind))
    return mime, width, height


def _jpeg_size(data):
    """The size in a JPEG's frame header (SOFn), found by walking its marker segments."""
    at, end = 2, len(data)
    while at + 1 < end:
        if data[at] != 0xFF:
            break
        marker = data[at + 1]
        if marker == 0xFF:  # fill byte
            at += 1
            continue
        at += 2
        if marker in _JPEG_STANDALONE:
            continue
        if marker in (0xD9, 0xDA) or at + 2 > end:  # the image ends, or its scan starts, before a frame header
            break
        length = int.from_bytes(data[at:at + 2], 'big')
        if marker in _JPEG_FRAMES:
            return _sized('image/jpeg', 'JPEG', length >= 7, data, at + 5, at + 3, 'big', 2)
        if length < 2:
            break
        at += length
    raise ValueError(IMAGE_DAMAGED.format('JPEG'))


def _webp_size(data):
    chunk = data[12:16]
    if chunk == b'VP8 ':  # lossy: the key frame's start code, then 14-bit sizes
        if data[23:26] != b'\x9d\x01\x2a' or len(data) < 30:
            raise ValueError(IMAGE_DAMAGED.format('WebP'))
        width = int.from_bytes(data[26:28], 'little') & 0x3FFF
        height = int.from_bytes(data[28:30], 'little') & 0x3FFF
    elif chunk == b'VP8L':  # lossless: a signature byte, then 14-bit sizes minus one
        if len(data) < 25 or data[20] != 0x2F:
            raise ValueError(IMAGE_DAMAGED.format('WebP'))
        bits = int.from_bytes(data[21:25], 'little')
        width, height = (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    elif chunk == b'VP8X':  # extended: the canvas size, 24 bits each, minus one
        if len(data) < 30:
            raise ValueError(IMAGE_DAMAGED.format('WebP'))
        width = int.from_bytes(data[24:27], 'little') + 1
        height = int.from_bytes(data[27:30], 'little') + 1
    else:
        raise ValueError(IMAGE_DAMAGED.format('WebP'))
    if width <= 0 or height <= 0:
        raise ValueError(IMAGE_DAMAGED.format('WebP'))
    return 'image/webp', width, height


def _derives(cls, base):
    """Whether `base` is in cls's MRO, by identity: no metaclass hook runs."""
    return any(klass is base for klass in _mro(cls))


def _loaded_class(module, name):
    """A class of an already imported module (matplotlib.figure, PIL.Image), or None."""
    loaded = sys.modules.get(module)
    cls = getattr(loaded, name, None) if loaded is not None else None
    return cls if isinstance(cls, type) else None


def _defines(cls, name):
    """Whether a class of cls's MRO defines `name` itself: read from the classes'
    dicts, so a __getattr__ that answers every name (a mock, a proxy) counts for nothing."""
    return any(name in _class_dict(klass) for klass in _mro(cls))


def _describe(exc):
    try:
        message = str(exc)
    except Exception:
        message = STR_FAILED
    return f'{type_name(type(exc))}: {message[:NOTE_CHARS]}' if message else type_name(type(exc))


def render_figure(figure):
    """A matplotlib Figure as PNG, drawn by its own savefig as Jupyter's inline backend
    draws it: cropped to what is drawn (bbox_inches='tight'), so an axis label outside
    the axes is not cut off at the figure's edge; the user's other rcParams apply."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format='png', bbox_inches='tight')
    return buffer.getvalue()


def _render_pil(image):
    """A PIL image as PNG, saved by PIL; a mode PNG cannot hold (CMYK, say) is converted first."""
    buffer = io.BytesIO()
    try:
        image.save(buffer, format='PNG')
    except (OSError, KeyError, ValueError):
        buffer = io.BytesIO()
        image.convert('RGBA' if 'A' in image.getbands() else 'RGB').save(buffer, format='PNG')
    return buffer.getvalue()


def _repr_image(obj, cls):
    """The image an explicit display(obj) gets from obj's _repr_png_ or _repr_jpeg_, or
    None when it has neither (or each returns None, IPython's "no such representation").
    Its exceptions propagate: calling the method was the user's request."""
    for method, _kind in REPR_METHODS:
        if not _defines(cls, method):
            continue
        data = getattr(obj, method)()
        if data is None:
            continue
        if type(data) is tuple and data:  # IPython's (data, metadata)
            data = data[0]
        if type(data) is str:  # IPython allows base64 text
            try:
                data = binascii.a2b_base64(data)
            except binascii.Error:
                raise ValueError(IMAGE_REPR_NOT_IMAGE.format(type_name(cls), method)) from None
        if type(data) not in (bytes, bytearray, memoryview):
            raise TypeError(IMAGE_REPR_NOT_BYTES.format(type_name(cls), method, type_name(type(data))))
        data = bytes(data)
        if sniff(data) is None:
            raise ValueError(IMAGE_REPR_NOT_IMAGE.format(type_name(cls), method))
        return data
    return None


class _Images:
    """The running run's images: at most IMAGE_COUNT shown inline, within IMAGE_BYTES, each
    sent at once as `image` frames; past either bound an image becomes an artifact (at most
    IMAGE_ARTIFACTS), listed in `image_artifacts` with the reason. One lock serializes them,
    so the chunks of one image are never interleaved with another's, and display() from
    any thread joins whichever run is in progress, as print() does."""

    def __init__(self, upload=artifact):
        self._channel = None
        self._upload = upload  # artifact(): the same rpcs as a cell's own upload
        self._lock = threading.Lock()
        self._run_id = None  # the run images join; None between runs
        self._shown = []  # metadata of the images sent inline
        self._bytes = 0
        self._artifacts = []
        self._artifact_slots = 0
        self._figures = set()  # ids of the figures shown in this run
        self._displays = []  # what display() printed of objects that are no image, for the notebook
        self._display_bytes = 0

    def start(self, channel):
        self._channel = channel

    def begin(self, run_id):
        with self._lock:
            self._run_id, self._shown, self._bytes = run_id, [], 0
            self._artifacts, self._artifact_slots, self._figures = [], 0, set()
            self._displays, self._display_bytes = [], 0

    def end(self):
        """The run's result fields (`images`, `image_artifacts`; each absent when empty).
        Later images are refused until the next run begins."""
        with self._lock:
            fields = {}
            if self._shown:
                fields['images'] = self._shown
            if self._artifacts:
                fields['image_artifacts'] = self._artifacts
            if self._displays:
                fields['displays'] = self._displays
            self._run_id = None
            self._figures = set()
            return fields

    def display(self, *objs):
        for obj in objs:
            image = self._render(obj)
            if image is None:
                shown = preview(obj)[0]
                text = 'None' if shown is None else shown
                sys.stdout.write(text + '\n')
                self._note_display(obj, text)
            else:
                self.show(image)

    def _note_display(self, obj, text):
        """Keep what display() printed of obj, with pandas' HTML or a builtin's repr, for
        the session's notebook (a `display_data` output there): at most DISPLAY_COUNT per
        run within DISPLAY_BYTES, the rest stays printed only."""
        entry = {'text': text}
        html, plain = pandas_html(obj), builtin_repr(obj)
        if html is not None:
            entry['html'] = html
        if plain is not None and plain != text:
            entry['repr'] = plain
        size = sum(len(v.encode('utf-8', 'replace')) for v in entry.values())
        with self._lock:
            if self._run_id is None or len(self._displays) >= DISPLAY_COUNT or self._display_bytes + size > DISPLAY_BYTES:
                return
            self._displays.append(entry)
            self._display_bytes += size

    def _render(self, obj):
        """The image bytes obj is displayed as, or None for its preview. Only explicit
        arguments get here: the calls below are the user's request."""
        cls = type(obj)
        if cls is bytes or cls is bytearray or cls is memoryview:
            data = obj.tobytes() if cls is memoryview else bytes(obj)
            return data if sniff(data) is not None else None
        figure = _loaded_class('matplotlib.figure', 'Figure')
        if figure is not None and _derives(cls, figure):
            data = render_figure(obj)
            with self._lock:
                self._figures.add(id(obj))
            return data
        pil = _loaded_class('PIL.Image', 'Image')
        if pil is not None and _derives(cls, pil):
            return _render_pil(obj)
        return _repr_image(obj, cls)

    def show(self, data):
        """Show image bytes (already known to sniff()) in the running run: inline, or as an
        artifact past the bounds; an image that fits neither is named on stderr."""
        mime, width, height = sniff(data)
        with self._lock:
            if self._run_id is None:
                raise RuntimeError(DISPLAY_NO_CELL)
            reason = None
            if len(self._shown) >= IMAGE_COUNT:
                reason = IMAGE_PAST_COUNT
            elif self._bytes + len(data) > IMAGE_BYTES:
                reason = IMAGE_PAST_BYTES
            if reason is None:
                self._send(data, mime, width, height)
                return
            run_id, full = self._run_id, self._artifact_slots >= IMAGE_ARTIFACTS
            if not full:
                self._artifact_slots += 1
        if full:
            sys.stderr.write(IMAGE_NOT_KEPT.format(mime, len(data), reason, IMAGE_ARTIFACTS_FULL))
            return
        try:
            reference = self._upload(data)
        except Exception as exc:  # the store's refusal, say: the run goes on without the image
            sys.stderr.write(IMAGE_NOT_KEPT.format(mime, len(data), reason, _describe(exc)))
            return
        with self._lock:
            if self._run_id == run_id:
                self._artifacts.append({**reference, 'mime': mime, 'width': width, 'height': height, 'reason': reason})

    def _send(self, data, mime, width, height):
        """The image's frames, IMAGE_CHUNK raw bytes each (under the lock)."""
        index = len(self._shown)
        for offset in range(0, len(data), IMAGE_CHUNK):
            chunk = binascii.b2a_base64(data[offset:offset + IMAGE_CHUNK], newline=False).decode('ascii')
            self._channel.send({
                'type': 'image', 'id': self._run_id, 'index': index, 'mime': mime, 'bytes': len(data),
                'width': width, 'height': height, 'offset': offset, 'data': chunk,
            })
        self._shown.append({'mime': mime, 'bytes': len(data), 'width': width, 'height': height})
        self._bytes += len(data)

    def show_figure(self, figure):
        """plt.show(), Figure.show() and the end of a run: one figure, through savefig."""
        data = render_figure(figure)
        with self._lock:
            self._figures.add(id(figure))
        self.show(data)

    def figures_open(self):
        backend = sys.modules.get(BACKEND_MODULE)
        return backend is not None and bool(backend.open_managers())

    async def show_figures(self):
        """The figures of the worker's backend still open at the end of a run, oldest
        first, except those this run showed already; a figure that fails to draw is named
        on stderr (the run's own outcome stands)."""
        for manager in sys.modules[BACKEND_MODULE].open_managers():
            figure = manager.canvas.figure
            with self._lock:
                shown = id(figure) in self._figures
            if shown:
                continue
            try:
                self.show_figure(figure)
            except Exception as exc:
                sys.stderr.write(FIGURE_FAILED.format(manager.num, _describe(exc)))

    def close_figures(self):
        """Close every figure of the worker's backend, as Jupyter does after a cell: the
        next run starts with none and shows none again."""
        backend = sys.modules.get(BACKEND_MODULE)
        if backend is not None:
            backend.close_all()


IMAGES = _Images()


def display(*objs):
    """Show each object in this run's result: a matplotlib Figure (drawn with savefig) or a
    PIL image (saved by PIL) as a PNG image; PNG, JPEG, GIF or WebP bytes as they are; an
    object whose class defines _repr_png_ or _repr_jpeg_ as what that returns; anything
    else as its safe preview on stdout (no __repr__ runs). At most 8 images and 512 KiB per
    run are shown; the rest become artifacts, listed in image_artifacts. plt.show() and the
    figures still open when the cell ends are shown (and closed) without display()."""
    IMAGES.display(*objs)


# -- choosing the backend ---------------------------------------------------------------

def select_backend(matplotlib):
    """Make the worker's backend matplotlib's when nobody chose one: neither MPLBACKEND nor
    a matplotlibrc set `backend` (rcParams still holds matplotlib's "choose automatically"
    sentinel, which is read without triggering that choice). Never breaks the import: on
    any surprise (an unknown matplotlib) matplotlib keeps its own choice."""
    try:
        sentinel = matplotlib.rcsetup._auto_backend_sentinel
        if dict.get(matplotlib.rcParams, 'backend') is sentinel:
            matplotlib.rcParams['backend'] = MPL_BACKEND
    except Exception:
        pass


class _SelectAfterExec:
    """matplotlib's loader, wrapped for the one exec_module that runs the package: the real
    loader is put back first (matplotlib and importlib.resources see only it), then the
    package runs, then select_backend."""

    def __init__(self, loader, spec):
        self._loader = loader
        self._spec = spec

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._spec.loader = module.__loader__ = self._loader
        self._loader.exec_module(module)
        select_backend(module)

    def __getattr__(self, name):
        return getattr(self._loader, name)


class MatplotlibHook:
    """A finder on sys.meta_path that finds nothing itself: for `matplotlib` it asks the
    finders after it and wraps the loader they return, so the backend is chosen the moment
    matplotlib is imported, before pyplot can choose one, and matplotlib is never imported
    at the worker's start (that would cost every cold start)."""

    def find_spec(self, name, path=None, target=None):
        if name != 'matplotlib':
            return None
        finders = sys.meta_path
        for finder in finders[finders.index(self) + 1:] if self in finders else ():
            find = getattr(finder, 'find_spec', None)
            spec = find(name, path, target) if find is not None else None
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, 'exec_module'):
                    spec.loader = _SelectAfterExec(spec.loader, spec)
                return spec
        return None


def install_matplotlib_hook():
    """Put the hook on sys.meta_path right after the worker's own finder; when something
    imported matplotlib before the worker started, choose for it now."""
    if 'matplotlib' in sys.modules:
        select_backend(sys.modules['matplotlib'])
        return
    sys.meta_path.insert(1 if sys.meta_path else 0, MatplotlibHook())
