"""deepjson: json.loads at any depth. The flat decoder is held to json.loads itself, value for
value for value, and failing where it fails (JSONDecodeError; the messages of 3.13 differ),
on random documents and on broken ones; and it decodes what the
recursive decoder of CPython 3.10 and 3.11 cannot."""

import json
import math
import random
import sys
import unittest

from replworker import deepjson


def same(a, b):
    """Equal as JSON values, NaN equal to itself, types too (1 is not 1.0, True not 1)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return a == b


def outcome(decode, text):
    try:
        return 'value', decode(text)
    except ValueError as exc:
        return 'error', type(exc)


SPACES = ['', ' ', '\n', '\t ', '\r\n']
SCALARS = ['0', '-0', '12', '-7', '1.5', '-0.25e3', '2E-2', '1e400', '123456789012345678901234567890',
           'true', 'false', 'null', 'NaN', 'Infinity', '-Infinity', '""', '"a\\"b"', '"\\u00e9\\ud83d\\ude00"',
           '"tab\\t"', '"é ☃"', '"\\\\"', '"\\/"']


def random_document(rng, depth=0):
    space = lambda: rng.choice(SPACES)  # noqa: E731
    if depth > 6 or rng.random() < 0.3:
        return space() + rng.choice(SCALARS) + space()
    if rng.random() < 0.5:
        items = [random_document(rng, depth + 1) for _ in range(rng.randrange(4))]
        return space() + '[' + ','.join(items) + (space() if not items else '') + ']' + space()
    members = []
    for _ in range(rng.randrange(4)):
        key = rng.choice(['"a"', '"b"', '"a"', '"é"', '""', '"\\u0041"'])
        members.append(space() + key + space() + ':' + random_document(rng, depth + 1))
    return space() + '{' + ','.join(members) + (space() if not members else '') + '}' + space()


def mutate(rng, text):
    """text with one character removed, doubled or replaced by a JSON delimiter."""
    if not text:
        return '{'
    at = rng.randrange(len(text))
    choice = rng.randrange(3)
    if choice == 0:
        return text[:at] + text[at + 1:]
    if choice == 1:
        return text[:at] + text[at] + text[at:]
    return text[:at] + rng.choice('{}[],:"x0-\\ \x01') + text[at + 1:]


class FlatDecoderTests(unittest.TestCase):
    def test_random_documents_decode_as_json_loads_does(self):
        rng = random.Random(37)
        for _ in range(3000):
            text = random_document(rng)
            want = json.loads(text)
            got = deepjson.loads_flat(text)
            self.assertTrue(same(got, want), (text, got, want))

    def test_broken_documents_fail_as_json_loads_does(self):
        rng = random.Random(38)
        for _ in range(3000):
            text = mutate(rng, random_document(rng))
            want, got = outcome(json.loads, text), outcome(deepjson.loads_flat, text)
            self.assertEqual(want[0], got[0], text)
            if want[0] == 'value':
                self.assertTrue(same(want[1], got[1]), (text, got, want))
            else:
                self.assertEqual(want[1], got[1], text)

    def test_edge_cases(self):
        for text in ('', ' ', '[', ']', '{"a"}', '{"a":}', '{"a":1,}', '[1,]', '[1 2]', '{1:2}', '"\x01"',
                     'nul', 'tru', '01', '1.', '-', '[-]', '"\\x"', '"\\ud800"', '[]x', '{}{}', '"abc',
                     '{"a":1 "b":2}', '{"a" 1}', '[[]]]', '-Infinityx', ' {} ', '[NaN,-0.0,1E+2]'):
            want, got = outcome(json.loads, text), outcome(deepjson.loads_flat, text)
            self.assertEqual(want[0], got[0], text)
            if want[0] == 'value':
                self.assertTrue(same(want[1], got[1]), (text, got, want))
            else:
                self.assertEqual(want[1], got[1], text)

    def test_duplicate_keys_keep_the_last_value_at_the_first_place(self):
        text = '{"a":1,"b":2,"a":3}'
        self.assertEqual(list(deepjson.loads_flat(text).items()), list(json.loads(text).items()))


class DepthTests(unittest.TestCase):
    def test_any_depth(self):
        for depth in (990, 997, sys.getrecursionlimit() + 10, 100_000):
            lists = '[' * depth + '1' + ']' * depth
            value = deepjson.loads(lists)
            for _ in range(depth):
                self.assertIs(type(value), list)
                self.assertEqual(len(value), 1)
                value = value[0]
            self.assertEqual(value, 1)
            objects = '{"k":' * depth + '[]' + '}' * depth
            value = deepjson.loads(objects)
            for _ in range(depth):
                value = value['k']
            self.assertEqual(value, [])

    def test_what_the_recursive_decoder_refuses_here(self):
        """The case deepjson exists for: on CPython 3.10 and 3.11 json.loads raises
        RecursionError for a document this deep, and deepjson.loads still decodes it."""
        text = '{"v":' + '[' * 5000 + ']' * 5000 + '}'
        if sys.version_info < (3, 12):
            with self.assertRaises(RecursionError):
                json.loads(text)
        self.assertEqual(len(deepjson.loads(text)), 1)

    def test_errors_deep_inside(self):
        with self.assertRaises(json.JSONDecodeError) as caught:
            deepjson.loads_flat('[' * 3000 + '1,]' + ']' * 2999)
        self.assertEqual(caught.exception.pos, 3002)
        with self.assertRaises(json.JSONDecodeError):
            deepjson.loads('[' * 3000 + ']' * 2999)


if __name__ == '__main__':
    unittest.main()
