"""Summaries of library objects (replworker/libsummaries.py, docs/contract.md §5.11): a
pandas Styler, Categorical and CategoricalDtype, numpy dtypes, the pandas display options
a frame's preview honours, polars frames and Series, xarray DataArrays and Datasets, each
only for the library's own class. A Dask Client
and cluster are summarised with a real cluster in testscripts/data/data_dask.txtar."""

import unittest

from harness import library_test
from replworker import previews
from replworker.common import MISSING
from replworker.messages import PREVIEW_STYLER

FIRED = []


class Token:
    """A category whose repr is user code."""

    def __repr__(self):
        FIRED.append('repr')
        return 'token'

    def __hash__(self):
        return 1

    def __eq__(self, other):
        return self is other


@library_test
class LibrarySummaryTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        import numpy
        import pandas
        cls.np, cls.pd = numpy, pandas

    def setUp(self):
        FIRED.clear()
        self.frame = self.pd.DataFrame({'a': range(20), 'b': [x * 0.125 for x in range(20)]})

    def tearDown(self):
        self.assertEqual(FIRED, [], 'a user hook ran during a preview')

    def test_numpy_dtypes_are_numpys_repr(self):
        np = self.np
        self.assertEqual(previews.preview(np.dtype('float64')), ("dtype('float64')", MISSING, False))
        self.assertEqual(previews.preview(np.dtype([('x', '<i8'), ('y', 'O')]))[0], "dtype([('x', '<i8'), ('y', 'O')])")
        self.assertEqual(previews.preview(np.float32(1.5))[0], 'np.float32(1.5)')

    def test_styler_previews_its_frame(self):
        styled = self.frame.head(3).style.format(lambda v: FIRED.append('formatter') or str(v))
        text, value, truncated = previews.preview(styled)
        self.assertEqual(text, PREVIEW_STYLER + '\n' + previews.preview(self.frame.head(3))[0])
        self.assertEqual((value, truncated), (MISSING, False))

    def test_categorical_is_pandas_repr(self):
        pd = self.pd
        small = pd.Categorical(['a', 'b', 'a'])
        self.assertEqual(previews.preview(small), (repr(small), MISSING, False))
        text, _, truncated = previews.preview(pd.Categorical(list(range(1000))))
        self.assertIn('Length: 1000', text)
        self.assertIn('...', text)
        self.assertTrue(truncated)
        dtype = pd.CategoricalDtype(['x', 'y'])
        self.assertEqual(previews.preview(dtype)[0], repr(dtype))

    def test_categories_of_user_objects_are_not_formatted(self):
        categorical = self.pd.Categorical([Token(), Token()])
        self.assertEqual(previews.preview(categorical)[0], '<Categorical; safe preview omitted>')

    def test_a_subclass_is_not_the_librarys(self):
        pd = self.pd

        class MyCategorical(pd.Categorical):
            def __repr__(self):
                FIRED.append('repr')
                return 'mine'

        self.assertEqual(previews.preview(MyCategorical(['a']))[0], '<MyCategorical; safe preview omitted>')

    def test_display_max_rows_is_honoured(self):
        pd = self.pd
        with pd.option_context('display.max_rows', 8):
            text = previews.preview(self.frame)[0]
            series = previews.preview(self.frame['b'])[0]
        self.assertEqual(text, self.frame.to_string(max_rows=8) + '\n\n[20 rows x 2 columns]')
        self.assertEqual([line.split()[0] for line in text.splitlines()[1:10]], ['0', '1', '2', '3', '..', '16', '17', '18', '19'])
        self.assertEqual(series.splitlines()[4].split(), ['...'])
        with pd.option_context('display.max_rows', 30, 'display.min_rows', 4):
            text = previews.preview(pd.DataFrame({'a': range(40)}))[0]
        self.assertEqual([line.split()[0] for line in text.splitlines()[1:6]], ['0', '1', '..', '38', '39'])
        with pd.option_context('display.max_rows', None):
            text = previews.preview(pd.DataFrame({'a': range(100)}))[0]
        self.assertIn('\n99  99\n', text, 'no limit: all 100 rows, within the preview bound')

    def test_display_columns_precision_and_width_are_honoured(self):
        pd = self.pd
        wide = pd.DataFrame({f'c{i}': [1.23456] for i in range(8)})
        with pd.option_context('display.max_columns', 4):
            self.assertEqual(previews.preview(wide)[0], wide.to_string(max_cols=4) + '\n\n[1 rows x 8 columns]')
        with pd.option_context('display.precision', 2):
            self.assertIn('1.23', previews.preview(wide)[0])
        with pd.option_context('display.width', 30):
            text = previews.preview(wide)[0]
        self.assertEqual(text, wide.to_string(line_width=30) + '\n\n[1 rows x 8 columns]')
        self.assertTrue(all(len(line) <= 30 for line in text.splitlines()), text)
        self.assertEqual(previews.preview(wide)[0], wide.to_string() + '\n\n[1 rows x 8 columns]', 'the default width: one line a row')


class Opaque:
    """An object whose repr and str are user code."""

    def __repr__(self):
        FIRED.append('repr')
        return 'opaque'

    __str__ = __repr__


@library_test
class LibraryPolarsTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        import polars
        cls.pl = polars

    def setUp(self):
        FIRED.clear()

    def tearDown(self):
        self.assertEqual(FIRED, [], 'a user hook ran during a preview')

    def test_a_frame_is_polars_table(self):
        pl = self.pl
        frame = pl.DataFrame({'a': [1, 2, 3], 'b': [0.5, 1.5, 2.5], 'c': ['x', 'y', 'z']})
        self.assertEqual(previews.preview(frame), (repr(frame), MISSING, False), 'a small frame: polars\' own repr, whole')
        lines = previews.preview(frame)[0].splitlines()
        self.assertEqual(lines[0], 'shape: (3, 3)')
        self.assertEqual([cell.strip() for cell in lines[2].strip('│').split('┆')], ['a', 'b', 'c'])
        self.assertEqual([cell.strip() for cell in lines[4].strip('│').split('┆')], ['i64', 'f64', 'str'])
        self.assertEqual([cell.strip() for cell in lines[6].strip('│').split('┆')], ['1', '0.5', 'x'])

    def test_a_long_frame_shows_its_first_and_last_rows(self):
        pl = self.pl
        frame = pl.DataFrame({'n': range(1000), 'w': [f'w{i}' for i in range(1000)]})
        text, value, truncated = previews.preview(frame)
        self.assertTrue(text.startswith('shape: (1_000, 2)\n'), text)
        rows = [line.strip('│').split('┆')[0].strip() for line in text.splitlines()[6:-1]]
        self.assertEqual(rows, ['0', '1', '2', '3', '4', '…', '995', '996', '997', '998', '999'])
        self.assertEqual((value, truncated), (MISSING, True))

    def test_a_shortened_cell_is_truncated(self):
        pl = self.pl
        cells = {
            'string': pl.Series(['x' * 200]), 'category': pl.Series(['x' * 200], dtype=pl.Categorical),
            'list': pl.Series([list(range(7))]), 'array': pl.Series([list(range(7))], dtype=pl.Array(pl.Int64, 7)),
        }
        for kind, series in cells.items():
            with self.subTest(kind):
                text, _, truncated = previews.preview(series.to_frame('c'))
                self.assertTrue(text.startswith('shape: (1, 1)'), text)
                self.assertNotIn('x' * 51, text)
                self.assertTrue(truncated)
        whole = pl.DataFrame({'s': ['x' * 50], 'l': [list(range(6))], 'a': pl.Series([[1, 2]], dtype=pl.Array(pl.Int64, 2))})
        text, _, truncated = previews.preview(whole)
        self.assertIn('x' * 50, text)
        self.assertIn('[0, 1, 2, 3, 4, 5]', text)
        self.assertFalse(truncated, text)

    def test_a_series_is_polars_repr(self):
        series = self.pl.Series('b', [0.5, 1.5])
        self.assertEqual(previews.preview(series), ("shape: (2,)\nSeries: 'b' [f64]\n[\n\t0.5\n\t1.5\n]", MISSING, False))

    def test_the_users_polars_config_is_left_as_it_was(self):
        pl = self.pl
        frame = pl.DataFrame({'n': range(100)})
        with pl.Config(tbl_rows=3, float_precision=2):
            before = pl.Config.state(if_set=True)
            text = previews.preview(pl.DataFrame({'f': [1.23456]}))[0]
            self.assertIn('1.23', text, 'float_precision the user set is honoured')
            self.assertNotIn('1.2346', text)
            previews.preview(frame)
            self.assertEqual(pl.Config.state(if_set=True), before)

    def test_python_objects_are_not_formatted(self):
        pl = self.pl
        frame = pl.DataFrame({'o': pl.Series([Opaque()], dtype=pl.Object), 'a': [1]})
        self.assertEqual(previews.preview(frame), (
            '<polars DataFrame; shape=(1, 2); columns: o: Object, a: Int64; rows not shown: a column holds Python objects>',
            MISSING, True))
        self.assertEqual(previews.preview(frame['o']), (
            "<polars Series 'o'; length=1; dtype=Object; rows not shown: a column holds Python objects>", MISSING, True))

    def test_a_users_extension_dtype_is_not_formatted(self):
        pl = self.pl

        class Money(pl.BaseExtension):
            def __init__(self):
                super().__init__('test.money', pl.Int64)

            def _string_repr(self):
                FIRED.append('_string_repr')
                return 'money'

        pl.register_extension_type('test.money', Money)
        self.addCleanup(pl.unregister_extension_type, 'test.money')
        series = pl.Series([1, 2]).ext.to(Money())
        FIRED.clear()
        self.assertEqual(previews.preview(series.to_frame('m')), ('<DataFrame; safe preview omitted>', MISSING, False))
        self.assertEqual(previews.preview(series)[0], '<Series; safe preview omitted>')

    def test_a_subclass_is_not_the_librarys(self):
        pl = self.pl

        class MyFrame(pl.DataFrame):
            def __repr__(self):
                FIRED.append('repr')
                return 'mine'

        self.assertEqual(previews.preview(MyFrame({'a': [1]}))[0], '<MyFrame; safe preview omitted>')


@library_test
class LibraryXarrayTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        import numpy
        import pandas
        import xarray
        cls.np, cls.pd, cls.xr = numpy, pandas, xarray

    def setUp(self):
        FIRED.clear()
        np = self.np
        self.array = self.xr.DataArray(
            np.arange(6.0).reshape(2, 3), dims=('time', 'x'), name='temp',
            coords={'time': self.pd.to_datetime(['2020-01-01', '2020-01-02']), 'lat': ('x', np.arange(3.0))},
            attrs={'units': 'K', 'source': Opaque()},
        )

    def tearDown(self):
        self.assertEqual(FIRED, [], 'a user hook ran during a preview')

    def test_a_data_array_shows_dims_values_coordinates(self):
        self.assertEqual(previews.preview(self.array), (
            "<xarray.DataArray 'temp' (time: 2, x: 3)>\n"
            'array([[0., 1., 2.],\n       [3., 4., 5.]], shape=(2, 3), dtype=float64)\n'
            'Coordinates:\n'
            '  * time     (time) datetime64[us]\n'
            '    lat      (x) float64\n'
            'Attributes: units, source',
            MISSING, True))

    def test_a_bare_data_array_is_whole(self):
        self.assertEqual(previews.preview(self.xr.DataArray(self.np.arange(3))), (
            '<xarray.DataArray (dim_0: 3)>\narray([0, 1, 2], shape=(3,), dtype=int64)', MISSING, False))

    def test_lazy_data_is_not_loaded(self):
        import dask.array
        lazy = self.xr.DataArray(dask.array.ones((4, 2), chunks=2), dims=('a', 'b'), name='d')
        self.assertEqual(previews.preview(lazy), (
            "<xarray.DataArray 'd' (a: 4, b: 2)>\n<values not loaded: dask.array.core.Array; dtype=float64>", MISSING, True))

    def test_a_dataset_lists_its_variables(self):
        dataset = self.array.to_dataset()
        dataset['p'] = ('time', self.np.ones(2, dtype='float32'))
        self.assertEqual(previews.preview(dataset), (
            '<xarray.Dataset> Dimensions: (time: 2, x: 3)\n'
            'Coordinates:\n'
            '  * time     (time) datetime64[us]\n'
            '    lat      (x) float64\n'
            'Data variables:\n'
            '    temp     (time, x) float64\n'
            '    p        (time) float32',
            MISSING, True))

    def test_a_subclass_or_a_users_name_is_not_the_librarys(self):
        xr = self.xr

        class Name(str):
            def __repr__(self):
                FIRED.append('repr')
                return 'name'

        named = xr.DataArray(self.np.zeros(2), name=Name('n'))
        self.assertEqual(previews.preview(named)[0], '<DataArray; safe preview omitted>')
        with self.assertWarns(Warning):  # xarray warns of a subclass without __slots__

            class MyArray(xr.DataArray):
                def __repr__(self):
                    FIRED.append('repr')
                    return 'mine'

        self.assertEqual(previews.preview(MyArray(self.np.zeros(2)))[0], '<MyArray; safe preview omitted>')


if __name__ == '__main__':
    unittest.main()
