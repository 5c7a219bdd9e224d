"""Previews of values and the namespace inventory, called directly: what converts to JSON,
what is omitted and how, the bounds, and that no user code ever runs."""

import unittest

from replworker import previews
from replworker.bridge import McpResult
from replworker.children import ShellResult
from replworker.common import MISSING
from replworker.limits import INVENTORY_LISTED, NAME_CHARS, PREVIEW_BYTES

FIRED = []


def trap(*args):
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


class PreviewTests(unittest.TestCase):
    def setUp(self):
        FIRED.clear()

    def test_json_builtins_convert(self):
        value = {'a': (1, 2.5, None), 'b': [True, 'x']}
        self.assertEqual(previews.preview(value), ('{"a":[1,2.5,null],"b":[true,"x"]}', {'a': [1, 2.5, None], 'b': [True, 'x']}, False))
        self.assertEqual(previews.preview([[[[[1]]]]])[1], [[[[[1]]]]])
        self.assertEqual(previews.preview(None), (None, MISSING, False))

    def test_strings_are_json_quoted_and_bounded(self):
        self.assertEqual(previews.preview('привет'), ('"привет"', 'привет', False))
        self.assertEqual(previews.preview('y' * 3000)[1], 'y' * 3000)
        shown, plain, truncated = previews.preview('hello' * 10_000)
        self.assertTrue(shown.startswith('"hellohello'))
        self.assertTrue(19_000 < len(shown.encode()) <= PREVIEW_BYTES)
        self.assertIs(plain, MISSING)
        self.assertTrue(truncated)

    def test_unsupported_values_are_omitted_with_type_and_length(self):
        cases = [
            (b'abc', '<bytes; length=3; safe preview omitted>'),
            ({1, 2}, '<set; length=2; safe preview omitted>'),
            (list(range(101)), '<list; length=101; safe preview omitted>'),
            ({1: 'int key'}, '<dict; length=1; safe preview omitted>'),
            ([[[[[[1]]]]]], '<list; length=1; safe preview omitted>'),
            (float('nan'), '<float; safe preview omitted>'),
            (2 ** 5000, '<int; safe preview omitted>'),
            (['s' * 2001], '<list; length=1; safe preview omitted>'),
            ([list(range(60)), list(range(60))], '<list; length=2; safe preview omitted>'),
            (object(), '<object; safe preview omitted>'),
        ]
        for value, expected in cases:
            self.assertEqual(previews.preview(value), (expected, MISSING, True))
        big = ['é' * 2000] * 9  # within every node bound, but over 20,000 bytes of JSON
        self.assertEqual(previews.preview(big), ('<list; length=9; safe preview omitted>', MISSING, True))

    def test_custom_objects_never_run_user_code(self):
        expectations = [
            (Evil(), '<Evil; safe preview omitted>'),
            (Evil, '<Meta; safe preview omitted>'),
            (Sub(a=1), '<Sub; safe preview omitted>'),
            (Text('x'), '<Text; safe preview omitted>'),
            ([Evil()], '<list; length=1; safe preview omitted>'),
            ({'k': Sub()}, '<dict; length=1; safe preview omitted>'),
        ]
        for value, expected in expectations:
            self.assertEqual(previews.preview(value), (expected, MISSING, True))
        self.assertEqual(FIRED, [], 'a user hook ran during a preview')

    def test_worker_types(self):
        self.assertEqual(previews.preview(ShellResult('out\n', 'err', 1)), ('"out\\n"', 'out\n', False))
        self.assertEqual(previews.preview(McpResult(content=[]))[1], {'content': []})
        runs = previews.ReplHistory({'run_id': str(i), 'lines': 1} for i in range(64))
        self.assertEqual(len(previews.preview(runs)[1]), 64)  # 64 runs are 193 values: over the plain 100
        self.assertTrue(previews.preview(list(runs))[2])


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
