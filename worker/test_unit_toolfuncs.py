"""The rules behind the tool functions (docs/contract.md §7.5): name normalisation and its
collisions, ToolResult's attributes, the catalogue's freshness."""

import unittest

from replworker import toolfuncs, toolspecs
from replworker.toolresult import ToolResult


class NameTests(unittest.TestCase):
    def test_python_name(self):
        cases = {
            'files': 'files', 'files-writer': 'files_writer', 'a.b c': 'a_b_c', '2fa': '_2fa',
            'class': 'class_', 'import': 'import_', 'None': 'None_', 'match': 'match', 'é': '_',
        }
        for name, attr in cases.items():
            with self.subTest(name=name):
                self.assertEqual(toolfuncs.python_name(name), attr)

    def test_exact_name_wins_and_others_collide(self):
        names = toolfuncs.Names(['x-y', 'x_y', 'p-q', 'p.q', 'r-s'])
        self.assertEqual(names.attrs(), ['r_s', 'x_y'])
        self.assertEqual(names.resolve('x_y'), 'x_y')
        self.assertIsNone(names.attr_of('x-y'))
        self.assertEqual(names.attr_of('r-s'), 'r_s')
        with self.assertRaises(AttributeError) as caught:
            names.resolve('p_q')
        self.assertIn("'p-q', 'p.q'", str(caught.exception))
        self.assertIsNone(names.resolve('nope'))


    def test_underscore_attributes_are_never_names(self):
        names = toolfuncs.Names(['_repr_html_', '__wrapped__', '_2fa', 'ok'])
        self.assertEqual(names.attrs(), ['_2fa', 'ok'])
        self.assertIsNone(names.resolve('_repr_html_'))
        self.assertIsNone(names.attr_of('_repr_html_'))


class SpecTests(unittest.TestCase):
    def test_properties_that_are_not_parameters(self):
        definition = {'name': 't', 'inputSchema': {'type': 'object', 'required': ['dry-run', 'a'], 'properties': {
            'a': {'type': 'string'}, 'kwargs': {'type': 'integer'}, 'dry-run': {'type': 'boolean'}}}}
        spec = toolspecs.ToolSpec(definition, 'mcp.s.t')
        self.assertEqual(str(spec.signature), '(a: str, *, kwargs: int = None, **_kwargs)')
        self.assertEqual(spec.arguments(('x',), {'kwargs': 1, 'dry-run': True}), {'a': 'x', 'kwargs': 1, 'dry-run': True})
        with self.assertRaises(TypeError) as caught:
            spec.arguments(('x',), {})
        self.assertIn("missing a required argument: 'dry-run' (pass it as **{'dry-run': ...})", str(caught.exception))
        with self.assertRaises(TypeError) as caught:
            spec.arguments(('x',), {'dry-run': True, 'other': 1})
        self.assertIn("got an unexpected keyword argument 'other'", str(caught.exception))

    def test_open_schema_takes_other_keywords_and_null(self):
        definition = {'name': 't', 'inputSchema': {'type': 'object', 'additionalProperties': True, 'properties': {
            'n': {'type': ['integer', 'null']}}}}
        spec = toolspecs.ToolSpec(definition, 'mcp.s.t')
        self.assertEqual(str(spec.signature), '(*, n: int | None = None, **kwargs)')
        # None is sent where the schema admits null
        self.assertEqual(spec.arguments((), {'n': None, 'x-y': [1]}), {'n': None, 'x-y': [1]})

    def test_a_parameter_required_twice_is_one_parameter(self):
        for props in ({}, {'a': {'type': 'string'}}):
            definition = {'name': 't', 'inputSchema': {'type': 'object', 'required': ['a', 'a', 'b', 'a'], 'properties': props}}
            spec = toolspecs.ToolSpec(definition, 'mcp.s.t')
            self.assertIsNone(spec.note)
            self.assertEqual(str(spec.signature), '(a: str, b)' if props else '(a, b)')
            self.assertEqual(spec.arguments(('x', 1), {}), {'a': 'x', 'b': 1})

    def test_a_schema_that_gives_no_signature_gives_the_generic_one(self):
        nested = {'type': 'string'}
        for _ in range(5000):
            nested = {'anyOf': [nested]}
        definition = {'name': 't', 'inputSchema': {'type': 'object', 'properties': {'deep': nested}}}
        spec = toolspecs.ToolSpec(definition, 'mcp.s.t')
        self.assertTrue(spec.note.startswith('RecursionError: maximum recursion depth exceeded'), spec.note)
        self.assertEqual(str(spec.signature), '(**kwargs)')
        # What is given goes as it is (None still leaves an argument out); the broker checks it.
        self.assertEqual(spec.arguments((), {'deep': 'x', 'other': [1], 'gone': None}), {'deep': 'x', 'other': [1]})
        with self.assertRaises(TypeError):
            spec.arguments((1,), {})
        doc = toolspecs.tool_doc('s', definition, spec)
        self.assertIn('Its inputSchema gives no Python signature (RecursionError: maximum recursion depth', doc)
        self.assertNotIn('Parameters:', doc)


class ToolResultTests(unittest.TestCase):
    def test_attributes(self):
        r = ToolResult({'content': [{'type': 'text', 'text': '[1,'}, {'type': 'text', 'text': ' 2]'}], 'isError': False})
        self.assertEqual([r.text, r.data, r.is_error, r.images], ['[1,\n 2]', [1, 2], False, []])
        self.assertIsNone(ToolResult({'content': [{'type': 'text', 'text': 'plain'}]}).data)
        self.assertIsNone(ToolResult({'content': []}).data)
        self.assertEqual(ToolResult({'content': [{'type': 'text', 'text': '{}'}], 'structuredContent': {'a': 1}}).data, {'a': 1})
        self.assertTrue(ToolResult({'isError': True}).is_error)
        with self.assertRaises(ValueError):
            _ = ToolResult({'content': [{'type': 'image', 'data': 'not base64!', 'mimeType': 'image/png'}]}).images

    def test_jpeg_is_shown_as_jpeg(self):
        image, = ToolResult({'content': [{'type': 'image', 'data': '/9j/', 'mimeType': 'image/jpeg'}]}).images
        self.assertEqual([image._repr_png_(), image._repr_jpeg_()], [None, b'\xff\xd8\xff'])


class CatalogueTests(unittest.TestCase):
    def test_kept_for_ttl(self):
        now = [100.0]
        calls = []

        class Rpcs:
            def call(self, op, params, wait):
                calls.append(params)
                return {'tools': [{'name': 't', 'inputSchema': {'type': 'object'}}], 'ttlMs': 1500}

        catalogues = toolfuncs.Catalogues(clock=lambda: now[0])
        first = catalogues.get(Rpcs(), 's')
        now[0] += 1.4
        self.assertIs(catalogues.get(Rpcs(), 's'), first)
        now[0] += 0.2
        self.assertIsNot(catalogues.get(Rpcs(), 's'), first)
        self.assertEqual(len(calls), 2)
        catalogues.clear()
        catalogues.get(Rpcs(), 's', timeout=2.0)
        self.assertEqual(calls[-1], {'server': 's', 'timeout': 2.0})


if __name__ == '__main__':
    unittest.main()
