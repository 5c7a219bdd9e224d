"""Previews of values and the namespace inventory, called directly: what converts to JSON,
what is rendered and how, the bounds, that `truncated` means something was left out, and
that no user code ever runs. LibraryPreviewTests use the real pandas, numpy and matplotlib
(interop/.venv-data; see harness.library_test)."""

import collections
import datetime
import decimal
import enum
import fractions
import http
import json
import pathlib
import re
import time
import unittest
import uuid

from harness import library_test
from replworker import nbdata, previews, rendering
from replworker.children import ShellResult
from replworker.common import MISSING
from replworker.limits import INVENTORY_LISTED, NAME_CHARS, PREVIEW_BYTES, PREVIEW_NESTING
from replworker.toolresult import ToolResult

FIRED = []


def trap(*args, **kwargs):
    FIRED.append(args)
    raise RuntimeError('trap')


class Meta(type):
    __name__ = property(trap)
    __getattribute__ = trap
    __eq__ = trap
    __hash__ = trap
    __repr__ = trap


class Evil(metaclass=Meta):
    __repr__ = trap
    __str__ = trap
    __len__ = trap
    __iter__ = trap
    __getattribute__ = trap


class Sub(dict):
    __iter__ = trap
    __len__ = trap
    keys = trap
    items = trap
    __repr__ = trap


class Text(str):
    __repr__ = trap


class Box:
    """A user object: every hook a formatter could call records itself and fails."""
    __repr__ = trap
    __str__ = trap
    __format__ = trap
    __eq__ = trap
    __hash__ = trap
    __float__ = trap
    __deepcopy__ = trap
    __reduce_ex__ = trap


class Token:
    """A user object that pandas may hash (by identity) but must never format."""
    __repr__ = trap
    __str__ = trap
    __format__ = trap


class MyDate(datetime.date):
    __repr__ = trap
    __str__ = trap


class Pretender:
    """A class that claims to be datetime.date: its module does not name it so."""
    __repr__ = trap


Pretender.__module__ = 'datetime'
Pretender.__qualname__ = 'date'


class UserZone(datetime.tzinfo):
    utcoffset = trap
    tzname = trap
    dst = trap
    __repr__ = trap


class Color(enum.Enum):
    RED = 1

    def __repr__(self):
        return trap()


def preview_text(value):
    return previews.preview(value)[0]


class PreviewTests(unittest.TestCase):
    def setUp(self):
        FIRED.clear()

    def tearDown(self):
        self.assertEqual(FIRED, [], 'a user hook ran during a preview')

    def assertPreview(self, value, text, truncated=False):
        self.assertEqual(previews.preview(value), (text, MISSING, truncated))

    def test_json_builtins_convert(self):
        value = {'a': (1, 2.5, None), 'b': [True, 'x']}
        self.assertEqual(previews.preview(value), ('{"a":[1,2.5,null],"b":[true,"x"]}', {'a': [1, 2.5, None], 'b': [True, 'x']}, False))
        self.assertEqual(previews.preview(None), (None, MISSING, False))

    def test_json_that_fits_is_the_value_whatever_its_shape(self):
        # Small but beyond the old node, item, string and depth bounds: still previews whole.
        for value in ([list(range(30))] * 4, list(range(101)), ['s' * 2001], [[[[[[[1]]]]]]], {'k': 'é' * 6000}):
            shown, plain, truncated = previews.preview(value)
            self.assertEqual((json.loads(shown), plain, truncated), (json.loads(json.dumps(value)), json.loads(json.dumps(value)), False))
            self.assertLessEqual(len(shown.encode()), PREVIEW_BYTES)
        deep = 0
        for _ in range(PREVIEW_NESTING):
            deep = [deep]
        self.assertEqual(previews.preview(deep)[1], deep)
        self.assertEqual(previews.preview([deep])[1], MISSING)  # one level too deep for a value

    def test_json_too_big_is_rendered_within_the_preview(self):
        shown, plain, truncated = previews.preview(list(range(30_000)))
        self.assertTrue(shown.startswith('[0, 1, 2, 3, '), shown[:40])
        self.assertRegex(shown, r', \.\.\. \d+ more\]$')
        self.assertEqual([plain, truncated], [MISSING, True])
        self.assertTrue(19_000 < len(shown.encode()) <= PREVIEW_BYTES)
        rows = [{'id': i, 'name': f'row {i}'} for i in range(3000)]
        shown, _, truncated = previews.preview(rows)
        self.assertTrue(shown.startswith("[{'id': 0, 'name': 'row 0'}, {'id': 1, "), shown[:60])
        self.assertRegex(shown, r"'name': 'row \d+'\}, \.\.\. \d+ more\]$")  # whole rows only
        for value in ({'k': 'é' * 15_000}, ['Ж' * 3000] * 10, {str(i): 'x' * 100 for i in range(500)}):
            shown, _, truncated = previews.preview(value)
            self.assertTrue(truncated)
            self.assertLessEqual(len(shown.encode()), PREVIEW_BYTES)
            self.assertIn('... ', shown[-40:])  # says what it left out, even in multi-byte text

    def test_json_values_also_read_as_python_shows_them(self):
        # The text form's rendering of a value whose preview is its JSON.
        for value, text in [
            ((200000, 6), '(200000, 6)'), ((1,), '(1,)'), (True, 'True'), ({'a': 1}, "{'a': 1}"),
            ([None, False, 1.5, 'x'], "[None, False, 1.5, 'x']"), ('hi', "'hi'"), ('é"', '\'é"\''), ({}, '{}'),
        ]:
            self.assertEqual(nbdata.builtin_repr(value), text)
        self.assertIsNone(nbdata.builtin_repr(list(range(30_000))))  # not whole: the JSON preview stands

    def test_strings_are_json_quoted_and_bounded(self):
        self.assertEqual(previews.preview('привет'), ('"привет"', 'привет', False))
        self.assertEqual(previews.preview('y' * 3000)[1], 'y' * 3000)
        shown, plain, truncated = previews.preview('hello' * 10_000)
        self.assertTrue(shown.startswith('"hellohello'))
        self.assertTrue(19_000 < len(shown.encode()) <= PREVIEW_BYTES)
        self.assertIs(plain, MISSING)
        self.assertTrue(truncated)

    def test_builtins_that_are_not_json_render_like_repr(self):
        cases = [
            (b'abc', "b'abc'"), (bytearray(b'\x00a'), "bytearray(b'\\x00a')"),
            ({1, 2}, '{1, 2}'), (set(), 'set()'), (frozenset({3}), 'frozenset({3})'), (frozenset(), 'frozenset()'),
            ({1: 'int key'}, "{1: 'int key'}"), ([1, {2}], '[1, {2}]'), ((5, b'x'), "(5, b'x')"), ((b'x',), "(b'x',)"),
            (float('nan'), 'nan'), ([float('inf'), 1.5], '[inf, 1.5]'), (1 + 2j, '(1+2j)'),
            (2 ** 5000, '<int; 5001 bits; safe preview omitted>'), (range(2, 9, 3), 'range(2, 9, 3)'),
            (Ellipsis, 'Ellipsis'), (int, "<class 'int'>"), (Box, f"<class '{__name__}.Box'>"), (len, '<built-in function len>'),
            (preview_text, '<function preview_text>'), (json, "<module 'json'>"), (object(), '<object; safe preview omitted>'),
        ]
        for value, text in cases:
            with self.subTest(text=text):
                self.assertPreview(value, text)
        looped = [1]
        looped.append(looped)
        self.assertPreview(looped, '[1, [...]]')
        deep = {0}
        for _ in range(PREVIEW_NESTING):
            deep = [deep]
        self.assertPreview(deep, '[' * PREVIEW_NESTING + '<set; length=1; nested too deep>' + ']' * PREVIEW_NESTING, True)

    def test_large_values_are_cut_and_say_so(self):
        shown, _, truncated = previews.preview(b'\x00' * 30_000)
        self.assertTrue(truncated)
        self.assertTrue(shown.startswith("b'\\x00\\x00"))
        self.assertRegex(shown, r"'\.\.\. \d+ more bytes$")
        self.assertLessEqual(len(shown), PREVIEW_BYTES)
        shown, _, truncated = previews.preview([1, 'x' * 30_000])
        self.assertTrue(truncated)
        self.assertRegex(shown, r"^\[1, 'xxx.*x'\.\.\. \d+ more characters\]$")  # a long item shows its start
        many = set(range(1_000_000))
        started = time.monotonic()
        shown, _, truncated = previews.preview(many)
        self.assertLess(time.monotonic() - started, 1.0)  # only what is shown is visited
        self.assertTrue(truncated)
        self.assertRegex(shown, r'^\{0, 1, 2, .*, \.\.\. \d+ more\}$')

    def test_standard_library_types(self):
        od = collections.OrderedDict(a=1, b=2)
        od.move_to_end('a')
        cases = [
            (datetime.date(2024, 1, 2), 'datetime.date(2024, 1, 2)'),
            (datetime.datetime(2024, 1, 2, 3, 4, tzinfo=datetime.timezone.utc), 'datetime.datetime(2024, 1, 2, 3, 4, tzinfo=datetime.timezone.utc)'),
            (datetime.time(5, 6), 'datetime.time(5, 6)'), (datetime.timedelta(days=3), 'datetime.timedelta(days=3)'),
            (datetime.timezone(datetime.timedelta(hours=2)), 'datetime.timezone(datetime.timedelta(seconds=7200))'),
            (decimal.Decimal('1.50'), "Decimal('1.50')"), (fractions.Fraction(1, 3), 'Fraction(1, 3)'),
            (uuid.UUID(int=5), "UUID('00000000-0000-0000-0000-000000000005')"),
            (pathlib.PurePosixPath('/tmp/x'), "PurePosixPath('/tmp/x')"), (pathlib.Path('/tmp'), repr(pathlib.Path('/tmp'))),
            (collections.deque([1, 2], maxlen=3), 'deque([1, 2], maxlen=3)'), (collections.deque(), 'deque([])'),
            (collections.Counter('abracadabra'), "Counter({'a': 5, 'b': 2, 'r': 2, 'c': 1, 'd': 1})"),
            (od, "OrderedDict({'b': 2, 'a': 1})"), (collections.defaultdict(list, k=[1]), "defaultdict(<class 'list'>, {'k': [1]})"),
            (http.HTTPStatus.NOT_FOUND, '<HTTPStatus.NOT_FOUND: 404>'), (re.I | re.M, repr(re.I | re.M)),
            ([datetime.date(2024, 1, 1), decimal.Decimal(2)], "[datetime.date(2024, 1, 1), Decimal('2')]"),
            (fractions.Fraction(2 ** 5000, 3), '<Fraction; safe preview omitted>'),
        ]
        for value, text in cases:
            with self.subTest(text=text):
                self.assertPreview(value, text)

    def test_custom_objects_never_run_user_code(self):
        cases = [
            (Evil(), '<Evil; safe preview omitted>'),
            (Evil, f"<class '{__name__}.Evil'>"),  # read from the type's slots; Meta never runs
            (Sub(a=1), '<Sub; safe preview omitted>'),
            (Text('x'), '<Text; safe preview omitted>'),
            ([Evil()], '[<Evil; safe preview omitted>]'),
            ({'k': Sub()}, "{'k': <Sub; safe preview omitted>}"),
            (MyDate(2024, 1, 1), '<MyDate; safe preview omitted>'),  # a subclass of a stdlib type
            (Pretender(), '<Pretender; safe preview omitted>'),  # claims a stdlib module that does not name it
            (Color.RED, '<Color; safe preview omitted>'),  # an enum defined outside a library
            ([Box()], '[<Box; safe preview omitted>]'),
            (collections.Counter({'a': Box()}), "Counter({'a': <Box; safe preview omitted>})"),
            (collections.defaultdict(Box, a=1), f"defaultdict(<class '{__name__}.Box'>, {{'a': 1}})"),
        ]
        for value, text in cases:
            with self.subTest(text=text):
                self.assertPreview(value, text)
        zoned = datetime.datetime(2024, 1, 2, tzinfo=UserZone())
        self.assertPreview(zoned, 'datetime.datetime(2024, 1, 2, 0, 0, tzinfo=<UserZone; safe preview omitted>)')

    def test_worker_types(self):
        self.assertEqual(previews.preview(ShellResult('out\n', 'err', 1)), ('"out\\n"', 'out\n', False))
        self.assertEqual(previews.preview(ToolResult(content=[]))[1], {'content': []})
        big = ToolResult(content=[{'type': 'text', 'text': f'line {i}'} for i in range(200)])
        self.assertEqual(previews.preview(big)[1], big)  # fits the preview: no longer omitted
        runs = previews.ReplHistory({'run_id': str(i), 'lines': 1} for i in range(64))
        self.assertEqual(len(previews.preview(runs)[1]), 64)

    def test_rendering_failures_fall_back_to_the_omitted_preview(self):
        # A library's formatter that raises (here the one for Decimal, made to fail).
        original = rendering.for_type_by_name('decimal', 'Decimal', trap, tracks_itself=True)
        try:
            self.assertPreview([decimal.Decimal('1')], '[<Decimal; safe preview omitted>]')
        finally:
            rendering.for_type_by_name('decimal', 'Decimal', original, tracks_itself=True)
        FIRED.clear()


@library_test
class LibraryPreviewTests(unittest.TestCase):
    """Previews of pandas, numpy and matplotlib values: the library's own formatting of
    what is shown, bounded in size and time, and never the user's code."""

    @classmethod
    def setUpClass(cls):
        import matplotlib
        matplotlib.use('Agg')
        import matplotlib.pyplot
        import numpy
        import pandas
        cls.np, cls.pd, cls.plt = numpy, pandas, matplotlib.pyplot

    def setUp(self):
        FIRED.clear()

    def tearDown(self):
        self.assertEqual(FIRED, [], 'a user hook ran during a preview')

    def test_frame_is_pandas_own_table_with_its_shape(self):
        pd, np = self.pd, self.np
        frame = pd.DataFrame({'a': [1, 2, 3], 'b': [0.5, None, 2.25], 'when': pd.date_range('2024-01-01', periods=3, tz='UTC')})
        self.assertEqual(previews.preview(frame), (frame.to_string() + '\n\n[3 rows x 3 columns]', MISSING, False))
        series = frame['b'].rename('score')
        self.assertEqual(preview_text(series), series.to_string() + '\nName: score, Length: 3, dtype: float64')
        self.assertEqual(preview_text(pd.Series([], dtype='int8')), 'Series([], Length: 0, dtype: int8)')
        self.assertEqual(preview_text(frame.index), 'RangeIndex(start=0, stop=3, step=1)')
        self.assertEqual(preview_text(frame.columns), repr(frame.columns))
        self.assertEqual(preview_text(pd.Timestamp('2024-01-01')), "Timestamp('2024-01-01 00:00:00')")
        self.assertEqual([preview_text(pd.NA), preview_text(pd.NaT)], ['<NA>', 'NaT'])
        categories = pd.Series(pd.Categorical(['x', 'y', 'x']))
        self.assertTrue(preview_text(categories).endswith('Length: 3, dtype: category'))
        self.assertFalse(previews.preview(np.arange(3))[2])

    def test_large_frames_show_their_ends_fast(self):
        pd, np = self.pd, self.np
        frame = pd.DataFrame({'x': np.arange(1_000_000), 'y': np.linspace(0, 1, 1_000_000), 's': [f'row {i}' for i in range(1_000_000)]})
        started = time.monotonic()
        shown, plain, truncated = previews.preview(frame)
        self.assertLess(time.monotonic() - started, 1.0)
        self.assertEqual([plain, truncated], [MISSING, True])
        lines = shown.split('\n')
        self.assertEqual(lines[-1], '[1000000 rows x 3 columns]')
        self.assertEqual(len(lines), 1 + 10 + 1 + 2)  # header, 5 + 5 rows, pandas' `...` row, footer
        self.assertTrue(lines[1].startswith('0 ') and lines[6].startswith('...') and lines[11].startswith('999999 '), shown)
        self.assertIn('row 999999', shown)
        started = time.monotonic()
        shown, _, truncated = previews.preview(frame['s'])
        self.assertLess(time.monotonic() - started, 1.0)
        self.assertTrue(shown.endswith('\nName: s, Length: 1000000, dtype: ' + frame['s'].dtype.name) and truncated)
        wide = pd.DataFrame(np.zeros((3, 100)))
        shown, _, truncated = previews.preview(wide)
        self.assertTrue(truncated)
        self.assertIn(' ... ', shown.split('\n')[0])
        self.assertTrue(shown.endswith('[3 rows x 100 columns]'))
        texts = pd.DataFrame({f'c{i}': ['t' * 200] * 60 for i in range(20)})  # 60 rows of 20 wide cells
        shown, _, truncated = previews.preview(texts)
        self.assertTrue(truncated)
        self.assertLessEqual(len(shown.encode()), PREVIEW_BYTES)
        self.assertTrue(shown.endswith('[60 rows x 20 columns]'))  # fewer rows, but still a table

    def test_arrays_are_numpy_own_repr_with_shape_and_dtype(self):
        np = self.np
        big = np.arange(10_000_000, dtype=float)
        started = time.monotonic()
        shown, plain, truncated = previews.preview(big)
        self.assertLess(time.monotonic() - started, 1.0)
        body = np.array2string(big, separator=', ', prefix='array(')
        self.assertEqual((shown, plain, truncated), (f'array({body}, shape=(10000000,), dtype=float64)', MISSING, True))
        self.assertEqual(previews.preview(np.arange(4)), ('array([0, 1, 2, 3], shape=(4,), dtype=int64)', MISSING, False))
        grid = np.zeros((1000, 1000))
        self.assertEqual(preview_text(grid), f"array({np.array2string(grid, separator=', ', prefix='array(')}, shape=(1000, 1000), dtype=float64)")
        self.assertEqual(preview_text(np.array(['a', 'bb'])), "array(['a', 'bb'], shape=(2,), dtype='<U2')")
        self.assertEqual(preview_text(np.array(5)), 'array(5, shape=(), dtype=int64)')
        cube = np.broadcast_to(np.float64(0), (7,) * 12)  # 6 ** 12 edge elements: fewer edge items until it is small
        shown, _, truncated = previews.preview(cube)
        self.assertTrue(truncated)
        self.assertLessEqual(len(shown.encode()), PREVIEW_BYTES)
        for value, text in ((np.float64(1.5), 'np.float64(1.5)'), (np.int32(3), 'np.int32(3)'),
                            (np.datetime64('2024-01-01'), "np.datetime64('2024-01-01')"), (np.str_('abc'), "np.str_('abc')"),
                            ([np.float64(0.5), np.bool_(True)], '[np.float64(0.5), np.True_]')):
            self.assertEqual(preview_text(value), text)

    def test_numpy_numbers_are_json_values_beside_their_repr(self):
        # return_value reads as Python shows the value; `value` is the JSON a client
        # computes with (Codex's code mode reads np.float64(250.01) as a number).
        np = self.np
        cases = (
            (np.float64(250.01), 'np.float64(250.01)', 250.01),
            (np.int64(3), 'np.int64(3)', 3),
            (np.bool_(True), 'np.True_', True),
            (np.float32(0.5), 'np.float32(0.5)', 0.5),
            ({'mean': np.float64(2.5), 'n': np.int32(4)}, "{'mean': np.float64(2.5), 'n': np.int32(4)}", {'mean': 2.5, 'n': 4}),
            ((np.uint8(7), 1.5), '(np.uint8(7), 1.5)', [7, 1.5]),
        )
        for value, shown, plain in cases:
            self.assertEqual(previews.preview(value), (shown, plain, False))
            self.assertIs(type(previews.preview(value)[1]), type(plain))
        # No JSON number holds these exactly, or they are no numbers.
        for value in (np.float64('nan'), np.longdouble(1) / 3, np.datetime64('2024-01-01'), np.str_('a'),
                      np.complex128(1j), [np.float64(1.0), Box()]):
            self.assertIs(previews.preview(value)[1], MISSING, repr(type(value)))

        class MyFloat(np.float64):  # a subclass made in a cell is not numpy's
            pass
        self.assertIs(previews.preview(MyFloat(1.0))[1], MISSING)

    def test_user_objects_inside_library_values_are_previewed_safely(self):
        pd, np = self.pd, self.np
        cells = np.empty((3, 3), dtype=object)
        cells[:, 0] = [None, 'text', 0.5]
        cells[0, 0], cells[1, 1], cells[2, 1] = Box(), [1, 2], {'k': Box()}
        cells[:, 2] = [1, 2, 3]
        labels = pd.Index(['obj', 'mixed', Box()], dtype=object)  # nothing is hashed to build it
        frame = pd.DataFrame(cells, index=pd.Index([Box(), 'b', 'c'], dtype=object), columns=labels)
        shown, _, truncated = previews.preview(frame)
        self.assertIn('<Box; safe preview omitted>', shown)
        self.assertIn('[1, 2]', shown)
        self.assertTrue(shown.endswith('[3 rows x 3 columns]'))
        self.assertFalse(truncated)
        series = pd.Series(pd.Categorical([Token(), Token()]), name=Token())
        self.assertEqual(preview_text(series).count('<Token; safe preview omitted>'), 3)
        self.assertIn('Name: <Token; safe preview omitted>, Length: 2, dtype: category', preview_text(series))
        multi = pd.DataFrame({'v': [1, 2]}, index=pd.MultiIndex.from_arrays([[Token(), 'k'], [1, 2]]))
        self.assertIn('<Token; safe preview omitted>', preview_text(multi))
        self.assertIn('<Token; safe preview omitted>', preview_text(pd.DataFrame({'c': pd.Categorical([Token()])})))
        array = np.array([Box(), 'x', {'k': Box()}], dtype=object)
        self.assertEqual(preview_text(array), "array([<Box; safe preview omitted>, 'x',\n       {'k': <Box; safe preview omitted>}], shape=(3,), dtype=object)")
        self.assertEqual(preview_text(pd.Index([Box()], dtype=object)), '<Index; safe preview omitted>')  # pandas would repr it
        self.assertEqual(preview_text([frame.iloc[:0, :1]]).count('Empty DataFrame'), 1)

    def test_values_inside_cells_and_elements_stay_small(self):
        pd, np = self.pd, self.np
        inner = pd.DataFrame({'a': range(100)})
        nested = pd.DataFrame({'frames': [inner] * 60, 'arrays': [np.arange(3)] * 59 + [np.arange(1000)]})
        started = time.monotonic()
        shown = preview_text(nested)
        self.assertLess(time.monotonic() - started, 1.0)  # sizes, not 60 more tables
        self.assertIn('<DataFrame; shape=(100, 1)>', shown)
        self.assertIn('<ndarray; shape=(1000,)>', shown)
        self.assertIn('array([0, 1, 2], shape=(3,), dtype=int64)', shown)
        looped = np.empty(2, dtype=object)
        looped[0], looped[1] = looped, 1
        self.assertEqual(preview_text(looped), 'array([<ndarray; nested too deep>, 1], shape=(2,), dtype=object)')
        holder = pd.DataFrame({'self': [None]}, dtype=object)
        holder.iat[0, 0] = holder
        self.assertIn('<DataFrame; shape=(1, 1)>', preview_text(holder))

    def test_user_classes_and_hooks_are_never_called(self):
        pd, np = self.pd, self.np

        class MyFrame(pd.DataFrame):
            to_string = trap
            __repr__ = trap

        class MyArray(np.ndarray):
            __repr__ = trap

        self.assertEqual(preview_text(MyFrame({'a': [1]})), '<MyFrame; safe preview omitted>')
        self.assertEqual(preview_text(np.zeros(3).view(MyArray)), '<MyArray; safe preview omitted>')
        with_attrs = pd.DataFrame({'a': [1]})
        with_attrs.attrs['box'] = Box()  # pandas deep-copies attrs into every derived frame
        self.assertEqual(preview_text(with_attrs), '<DataFrame; safe preview omitted>')
        zoned = pd.Series(pd.date_range('2024', periods=2, tz=datetime.timezone.utc))
        self.assertIn('2024-01-01 00:00:00+00:00', preview_text(zoned))
        with pd.option_context('display.float_format', trap):
            self.assertIn('0.5', preview_text(pd.DataFrame({'f': [0.5]})))
        with np.printoptions(formatter={'all': trap}):
            self.assertEqual(preview_text(np.array([0.5])), 'array([0.5], shape=(1,), dtype=float64)')

    def test_a_formatter_that_raises_falls_back(self):
        pd = self.pd
        original = pd.DataFrame.to_string
        pd.DataFrame.to_string = trap  # the library's own formatting failing
        try:
            self.assertEqual(previews.preview(pd.DataFrame({'a': [1]})), ('<DataFrame; safe preview omitted>', MISSING, False))
        finally:
            pd.DataFrame.to_string = original
        FIRED.clear()

    def test_figures_and_axes_are_described(self):
        plt = self.plt
        figure, axes = plt.subplots()
        try:
            axes.set_xlabel('time')
            title = axes.set_title('Sales')
            self.assertEqual(preview_text(figure), '<Figure size 640x480 with 1 Axes>')
            self.assertEqual(preview_text(axes), "<Axes: title={'center': 'Sales'}, xlabel='time'>")
            self.assertEqual(preview_text(title), "Text(0.5, 1.0, 'Sales')")
            self.assertEqual(preview_text(axes.plot([1, 2])), '[<Line2D; safe preview omitted>]')
        finally:
            plt.close(figure)


class InventoryTests(unittest.TestCase):
    def test_names_types_and_lengths_without_user_hooks(self):
        FIRED.clear()
        namespace = {'__name__': '__repl__', 'sh': object(), 'text': 'abc', 'evil': Evil(), 'sub': Sub(), 'n': 5, 7: 'int key'}
        result = previews.inventory(namespace, frozenset({'__name__', 'sh'}))
        self.assertEqual(result['variables'], [
            {'name': 'text', 'type': 'str', 'length': 3},
            {'name': 'evil', 'type': 'Evil'},
            {'name': 'sub', 'type': 'Sub'},
            {'name': 'n', 'type': 'int'},
        ])
        self.assertEqual([result['total_namespace_entries'], result['omitted_including_helpers'], result['values_included']], [7, 3, False])
        self.assertEqual(FIRED, [])

    def test_bounds(self):
        namespace = {f'v{i}': i for i in range(INVENTORY_LISTED + 10)}
        namespace['x' * (NAME_CHARS + 1)] = 1
        self.assertEqual(len(previews.inventory(namespace, frozenset())['variables']), INVENTORY_LISTED)
        wide = {'n' * NAME_CHARS + str(i): i for i in range(400)}
        result = previews.inventory(wide, frozenset())
        self.assertLess(len(result['variables']), 400)
        self.assertLessEqual(len(str(result)), 60_000)


if __name__ == '__main__':
    unittest.main()
