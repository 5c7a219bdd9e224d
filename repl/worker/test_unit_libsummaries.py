"""Summaries of library objects (replworker/libsummaries.py, docs/contract.md §5.11): a
pandas Styler, Categorical and CategoricalDtype, numpy dtypes, and the pandas display
options a frame's preview honours, each only for the library's own class. A Dask Client
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


if __name__ == '__main__':
    unittest.main()
