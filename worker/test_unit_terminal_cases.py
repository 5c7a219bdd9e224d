"""The cases that define a stream kept as a terminal shows it, bounded
(repl/testdata/terminal_cases.json): the worker's StreamText passes each, as written and as
one write, as the server's terminalText does for native output (repl's
TestTerminalTextSharedCases); where a case says the server differs (`server`), the worker
keeps `want`."""

import json
import os
import unittest

from replworker import output

CASES = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'repl', 'testdata', 'terminal_cases.json')


def pieces(items):
    """A case's pieces, strings or [string, times], concatenated."""
    return ''.join(item if isinstance(item, str) else item[0] * item[1] for item in items)


def writes(items):
    """A case's writes: strings, or {text, repeat, writes}."""
    for item in items:
        if isinstance(item, str):
            yield item
        else:
            for _ in range(item['writes']):
                yield item['text'] * item['repeat']


class SharedCaseTests(unittest.TestCase):
    def test_the_cases_the_server_passes_too(self):
        with open(CASES, encoding='utf-8') as file:
            cases = json.load(file)['cases']
        self.assertTrue(cases)
        for case in cases:
            with self.subTest(case['name']):
                text = output.StreamText(case['limit'], case['head'], spool=False)
                for write in writes(case['writes']):
                    text.write(write)
                text.finish()
                self.assertEqual(text.text(), pieces(case['want']))
                self.assertEqual(text.gap, case['gap'])
                # How the writes were split changes nothing: stdout's fast lane and the
                # capture's batches hand the stream on in pieces of their own.
                whole = output.StreamText(case['limit'], case['head'], spool=False)
                whole.write(''.join(writes(case['writes'])))
                whole.finish()
                self.assertEqual((whole.text(), whole.gap), (text.text(), text.gap))


if __name__ == '__main__':
    unittest.main()
